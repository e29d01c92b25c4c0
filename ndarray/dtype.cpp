#include "ndarray/dtype.hpp"

#include <ostream>

namespace mx {

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::uint8: return "uint8";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

}  // namespace mx
