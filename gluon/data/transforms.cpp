#include "gluon/data/transforms.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/elementwise.hpp"

namespace mx::gluon::data {

nd::NDArray to_tensor(const nd::NDArray& batch) {
  nd::check_not_none("to_tensor", batch);
  const Shape& s = batch.shape();
  if (s.ndim() != 3 && s.ndim() != 4) {
    throw ShapeError("to_tensor takes a batch of images (B, H, W) or (B, H, W, C), but got " +
                     nd::describe(batch));
  }
  nd::NDArray x = batch.dtype() == DType::float32 ? batch : batch.astype(DType::float32);
  x = s.ndim() == 3 ? x.reshape({s[0], 1, s[1], s[2]})  // one channel: a view
                    : x.transpose({0, 3, 1, 2});        // a view too when C == 1
  // Divided in float32, as MXNet's ToTensor does (x / 255.0f), so that the values match it exactly.
  return x / 255.0;
}

}  // namespace mx::gluon::data
