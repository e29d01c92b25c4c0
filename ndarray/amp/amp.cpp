#include "ndarray/amp/amp.hpp"

#include <string_view>

#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/op.hpp"
#include "context/fast_tls.hpp"

namespace mx::amp {
namespace {

NDG_FAST_TLS thread_local std::optional<DType> current;

const std::vector<const char*> kLowPrecision = {"FullyConnected",
                                                "Convolution",
                                                "Deconvolution",
                                                "dot",
                                                "batch_dot",
                                                "RNN",
                                                "_contrib_interleaved_matmul_selfatt_qk",
                                                "_contrib_interleaved_matmul_selfatt_valatt",
                                                "_contrib_interleaved_matmul_encdec_qk",
                                                "_contrib_interleaved_matmul_encdec_valatt"};
const std::vector<const char*> kFloat32 = {"softmax", "log_softmax", "SoftmaxOutput", "exp", "log", "sum"};
const std::vector<const char*> kWidest = {"add",   "subtract", "multiply",      "divide", "power",
                                          "maximum", "minimum", "equal",       "not_equal", "greater",
                                          "greater_equal", "less", "less_equal", "Concat", "stack", "where"};

bool listed(const std::vector<const char*>& names, const char* name) {
  for (const char* n : names) {
    if (std::string_view(n) == name) return true;
  }
  return false;
}

}  // namespace

AutocastScope::AutocastScope(std::optional<DType> dtype) : previous_(current) {
  if (dtype && !is_half(*dtype)) {
    throw DTypeError(std::string("amp::autocast: the low precision is float16 or bfloat16, not ") +
                     dtype_name(*dtype));
  }
  current = dtype;
}

AutocastScope::~AutocastScope() { current = previous_; }

AutocastScope autocast(std::optional<DType> dtype) { return AutocastScope(dtype); }

std::optional<DType> autocast_dtype() { return current; }

CastPolicy cast_policy(const op::OpDef& op) {
  // The op's own answer is cached in the definition's address: the lists are searched once per op.
  NDG_FAST_TLS thread_local const op::OpDef* last = nullptr;
  NDG_FAST_TLS thread_local CastPolicy last_policy = CastPolicy::keep;
  if (&op == last) return last_policy;
  CastPolicy policy = CastPolicy::keep;
  if (listed(kLowPrecision, op.name)) policy = CastPolicy::low_precision;
  else if (listed(kFloat32, op.name)) policy = CastPolicy::float32;
  else if (listed(kWidest, op.name)) policy = CastPolicy::widest;
  last = &op;
  last_policy = policy;
  return policy;
}

const std::vector<const char*>& ops_of(CastPolicy policy) {
  static const std::vector<const char*> none;
  switch (policy) {
    case CastPolicy::low_precision: return kLowPrecision;
    case CastPolicy::float32: return kFloat32;
    case CastPolicy::widest: return kWidest;
    case CastPolicy::keep: break;
  }
  return none;
}

}  // namespace mx::amp

namespace mx::op {

void autocast_inputs(const OpDef& op, std::vector<nd::NDArray>& inputs) {
  const std::optional<DType> low = amp::autocast_dtype();
  if (!low) return;
  const amp::CastPolicy policy = amp::cast_policy(op);
  if (policy == amp::CastPolicy::keep) return;
  // Which inputs change: float32 ones to the low precision; 16-bit ones to float32; under widest,
  // every floating one to the widest floating dtype present (float32 for float16 with bfloat16).
  // Integers and float64 keep their dtype, except that float64 is the widest where it is present.
  const auto rank = [](DType dt) { return dt == DType::float64 ? 3 : dt == DType::float32 ? 2 : 1; };
  DType target = policy == amp::CastPolicy::low_precision ? *low : DType::float32;
  if (policy == amp::CastPolicy::widest) {
    std::optional<DType> widest;
    bool mixed = false;
    for (const nd::NDArray& x : inputs) {
      if (x.is_none() || !is_floating(x.dtype())) continue;
      if (widest && *widest != x.dtype()) mixed = true;
      if (!widest || rank(x.dtype()) > rank(*widest)) widest = x.dtype();
    }
    if (!mixed) return;
    target = rank(*widest) == 1 ? DType::float32 : *widest;
  }
  for (nd::NDArray& x : inputs) {
    if (x.is_none() || !is_floating(x.dtype()) || x.dtype() == target) continue;
    const bool cast = policy == amp::CastPolicy::low_precision ? x.dtype() == DType::float32
                      : policy == amp::CastPolicy::float32     ? is_half(x.dtype())
                                                               : true;
    if (cast) x = nd::cast(x, target);
  }
}

}  // namespace mx::op
