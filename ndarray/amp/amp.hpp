#pragma once
// Automatic mixed precision, as mx.amp: inside an autocast scope, ops rewrite the dtypes of their
// floating inputs by MXNet's amp lists before they run:
//   - products and convolutions (FullyConnected, Convolution, Deconvolution, dot) run in the low
//     precision: their float32 inputs are cast to it;
//   - ops that need the range or the precision (softmax, log_softmax, SoftmaxOutput, exp, log,
//     sum and what builds on it: mean, norm, the losses) run in float32: their 16-bit inputs are
//     cast up;
//   - elementwise ops with operands of different floating dtypes (a float16 product plus a
//     float32 bias) run in the widest of them;
//   - every other op runs in the dtype it is given (activations, pooling, BatchNorm, which keeps
//     float32 statistics for 16-bit data).
// The casts are ordinary Cast ops: autograd records them, so float32 parameters get float32
// gradients, and hybridize traces them into its graph.
//
//   {
//     auto amp = mx::amp::autocast(mx::DType::bfloat16);
//     auto loss = loss_fn(net(x), y);  // Dense layers in bfloat16, the loss in float32
//   }
#include <cstdint>
#include <optional>
#include <vector>

#include "ndarray/core/dtype.hpp"

namespace mx::op {
struct OpDef;
}

namespace mx::amp {

// The scope's effect on the ops of this thread; nested scopes restore the outer one on exit.
class AutocastScope {
 public:
  explicit AutocastScope(std::optional<DType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  std::optional<DType> previous_;
};

// Mixed precision in dtype (float16 or bfloat16; anything else is an mx::DTypeError) until the
// scope ends. autocast(std::nullopt) turns it off inside an outer scope.
[[nodiscard]] AutocastScope autocast(std::optional<DType> dtype = DType::float16);

// The low-precision dtype in force on this thread, if any.
std::optional<DType> autocast_dtype();

// How an op's inputs are treated under autocast (MXNet's FP16_FUNCS, FP32_FUNCS, WIDEST_TYPE_CASTS).
enum class CastPolicy : std::uint8_t { keep, low_precision, float32, widest };
CastPolicy cast_policy(const op::OpDef& op);
// The names of the ops of a list (by their registered names), for documentation and tests.
const std::vector<const char*>& ops_of(CastPolicy policy);

}  // namespace mx::amp
