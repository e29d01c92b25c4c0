#pragma once
// Every error ndgluon throws derives from mx::Error. Messages carry the values involved
// (op, contexts, shapes, sizes) so that a user can act on them without a debugger.
#include <stdexcept>
#include <string>

namespace mx {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Operands live on different contexts.
class ContextMismatch : public Error { using Error::Error; };
// Shapes that do not fit the op (broadcasting, dot, reshape, concat, ...).
class ShapeError : public Error { using Error::Error; };
// A dtype the op does not support, or operands of different dtypes.
class DTypeError : public Error { using Error::Error; };
// An index or axis out of range.
class IndexError : public Error { using Error::Error; };
// A device that does not exist, a build without CUDA, a failed CUDA/cuBLAS/cuRAND call.
class DeviceError : public Error { using Error::Error; };
// A device allocation that could not be satisfied.
class OutOfMemory : public DeviceError { using DeviceError::DeviceError; };
// A file that is missing, truncated or corrupted.
class FileError : public Error { using Error::Error; };
// Any other bad argument (unknown name, bad hyper-parameter, ...).
class ValueError : public Error { using Error::Error; };
// An inf or a nan where finite values are required (a Trainer with check_finite).
class NonFiniteError : public Error { using Error::Error; };

}  // namespace mx
