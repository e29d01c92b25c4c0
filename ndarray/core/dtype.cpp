#include "ndarray/core/dtype.hpp"

#include <ostream>

namespace mx {

const char* dtype_name(DType dt) {
#define NDG_DTYPE_NAME(NAME, TYPE) \
  case DType::NAME: return #NAME;
  switch (dt) { NDG_DTYPES(NDG_DTYPE_NAME) }
#undef NDG_DTYPE_NAME
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

}  // namespace mx
