#include "ndarray/ndarray.hpp"

#include "ndarray/backend/backend.hpp"

namespace mx::nd {

void waitall() { synchronize_all(); }

}  // namespace mx::nd
