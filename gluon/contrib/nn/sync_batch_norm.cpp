#include "gluon/contrib/nn/sync_batch_norm.hpp"

#include "ndarray/ops/nn.hpp"

namespace mx::gluon::contrib::nn {

SyncBatchNorm::SyncBatchNorm(const gluon::nn::BatchNormOptions& options, int num_devices)
    : BatchNorm("SyncBatchNorm", "syncbatchnorm", options), num_devices_(num_devices) {
  if (options.axis != 1) {
    throw ValueError("SyncBatchNorm: channels are on axis 1 (MXNet's has no axis option), got axis " +
                     std::to_string(options.axis));
  }
  if (num_devices < 0) {
    throw ValueError("SyncBatchNorm: num_devices must be >= 0 (0 = the contexts of its parameters), got " +
                     std::to_string(num_devices));
  }
}

nd::NDArray SyncBatchNorm::forward(const nd::NDArray& x) {
  const auto [gamma, beta, mean, var] = parameters_for(x);
  const int ndev = num_devices_ > 0 ? num_devices_ : static_cast<int>(this->gamma().list_ctx().size());
  const gluon::nn::BatchNormOptions& o = options();
  return nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var,
                                    {.eps = o.epsilon, .momentum = o.momentum, .fix_gamma = !o.scale,
                                     .use_global_stats = o.use_global_stats, .ndev = ndev, .key = prefix()});
}

}  // namespace mx::gluon::contrib::nn
