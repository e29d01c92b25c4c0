// GPU launch of Cast (ndarray/ops/manipulation.cpp has the op and the CPU loop).
#include "cuda/launch.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"

namespace mx::op::gpu {
namespace {

template <class From, class To>
__global__ void cast_elements(To* out, const From* in, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = static_cast<To>(in[i]);
}

}  // namespace

void cast(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    dispatch_dtype(y.dtype(), [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      cuda::launch(ec, "Cast", y.size(), &cast_elements<S, D>, static_cast<D*>(y.data()), static_cast<const S*>(x.data()),
                   y.size());
    });
  });
}

}  // namespace mx::op::gpu
