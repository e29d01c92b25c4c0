// The sort family: topk, sort, argsort and _backward_topk (the values' gradient scattered back),
// as registered ops with MXNet's names and attributes. Here: the front ends, inference, gradients
// and the CPU loops (a sort of each row's positions, partial when k is below the extent); the
// launches are in cuda/ops/sort.cu.
#include "ndarray/ops/sort.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "ndarray/ops/sort_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const char* return_name(TopkReturn r) {
  switch (r) {
    case TopkReturn::value: return "value";
    case TopkReturn::mask: return "mask";
    case TopkReturn::both: return "both";
    default: return "indices";
  }
}

const char* kind_name(SortKind kind) { return kind == SortKind::topk ? "topk" : kind == SortKind::sort ? "sort" : "argsort"; }

// The largest integer below which every integer of the dtype is exact: indices must stay below it.
double exact_integers(DType dtype) {
  switch (dtype) {
    case DType::uint8: return 256;
    case DType::float16: return 2049;
    case DType::bfloat16: return 257;
    case DType::float32: return 16777217;
    case DType::int32: return 2147483648.0;
    default: return 9007199254740992.0;
  }
}

// The data as rows around the axis (the flattened data without one), k resolved and checked.
SortShape shape_of(const SortParams& p, const Shape& data) {
  const char* op = kind_name(p.kind);
  SortShape s;
  if (p.has_axis) {
    const ReduceShape r = around_axis(data, normalize_axis(op, p.axis, data));
    s = {r.outer, r.length, r.inner, r.length};
  } else {
    s = {1, data.numel(), 1, data.numel()};
  }
  if (p.kind == SortKind::topk && p.k >= 1) {
    if (p.k > s.length) {
      throw ValueError(std::string("topk: k=") + std::to_string(p.k) + " is above the " + std::to_string(s.length) +
                       " elements along " + (p.has_axis ? "axis " + std::to_string(p.axis) : std::string("the flattened data")) +
                       " of data " + data.tuple_str());
    }
    s.k = p.k;
  }
  return s;
}

void sort_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<SortParams>();
  const NDArray& data = inv.inputs[0];
  const SortShape s = shape_of(p, data.shape());
  const SortOutputs o = sort_outputs(p);
  if (o.indices >= 0 && static_cast<double>(s.length) > exact_integers(p.dtype)) {
    throw ValueError(std::string(kind_name(p.kind)) + ": dtype " + dtype_name(p.dtype) + " cannot hold the indices of " +
                     std::to_string(s.length) + " elements exactly (data " + nd::describe(data) +
                     "); ask for a wider dtype");
  }
  std::vector<std::int64_t> dims{s.k};
  if (p.has_axis) {
    dims = data.shape().dims();
    dims[static_cast<std::size_t>(normalize_axis(kind_name(p.kind), p.axis, data.shape()))] = s.k;
  }
  out.assign(static_cast<std::size_t>(std::max({o.values, o.indices, o.mask}) + 1), OutputSpec{});
  if (o.values >= 0) out[static_cast<std::size_t>(o.values)] = {Shape(dims), data.dtype()};
  if (o.indices >= 0) {
    const bool hidden = o.values == 0 && (p.kind == SortKind::sort || p.ret == TopkReturn::value);
    out[static_cast<std::size_t>(o.indices)] = {Shape(dims), hidden ? DType::int64 : p.dtype};
  }
  if (o.mask >= 0) out[static_cast<std::size_t>(o.mask)] = {data.shape(), data.dtype()};
}

void sort_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<SortParams>();
  const SortShape s = sort_shape(inv);
  const SortOutputs o = sort_outputs(p);
  const auto output = [&](int i) { return i < 0 ? nullptr : inv.outputs[static_cast<std::size_t>(i)].data(); };
  dispatch_dtype(inv.inputs[0].dtype(), [&](auto data_tag) {
    dispatch_dtype(o.indices >= 0 ? inv.outputs[static_cast<std::size_t>(o.indices)].dtype() : DType::int64, [&](auto index_tag) {
      using T = decltype(data_tag);
      using I = decltype(index_tag);
      using C = ComputeType<T>;
      const T* data = static_cast<const T*>(inv.inputs[0].data());
      T* values = static_cast<T*>(output(o.values));
      I* indices = static_cast<I*>(output(o.indices));
      T* mask = static_cast<T*>(output(o.mask));
      parallel_for(s.outer * s.inner, [&](std::int64_t row) {
        const std::int64_t outer = row / s.inner, in = row % s.inner;
        const T* line = data + outer * s.length * s.inner + in;
        std::vector<std::int64_t> order(static_cast<std::size_t>(s.length));
        std::iota(order.begin(), order.end(), 0);
        const auto before = [&](std::int64_t a, std::int64_t b) {
          const C x = C(line[a * s.inner]), y = C(line[b * s.inner]);
          if (p.is_ascend ? sorts_before(x, y) : sorts_before(y, x)) return true;
          if (p.is_ascend ? sorts_before(y, x) : sorts_before(x, y)) return false;
          return a < b;  // ties (and NaN with NaN) by position
        };
        if (s.k < s.length) std::partial_sort(order.begin(), order.begin() + s.k, order.end(), before);
        else std::sort(order.begin(), order.end(), before);
        for (std::int64_t j = 0; j < s.k; ++j) {
          const std::int64_t at = (outer * s.k + j) * s.inner + in, from = order[static_cast<std::size_t>(j)];
          if (values) values[at] = line[from * s.inner];
          if (indices) indices[at] = static_cast<I>(from);
        }
        if (mask) {
          for (std::int64_t j = 0; j < s.length; ++j) mask[(outer * s.length + j) * s.inner + in] = T(0);
          for (std::int64_t j = 0; j < s.k; ++j) mask[(outer * s.length + order[static_cast<std::size_t>(j)]) * s.inner + in] = T(1);
        }
      }, s.outer * s.inner * s.length);
    });
  });
}

// _backward_topk: inputs (the values' gradient, their indices), output the data's gradient: zero
// but at the selected positions.
void sort_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<SortBackwardParams>();
  const NDArray &g = inv.inputs[0], &indices = inv.inputs[1];
  const Shape data(std::vector<std::int64_t>(p.shape, p.shape + p.ndim));
  const SortShape s = shape_of(p.sort, data);
  std::vector<std::int64_t> dims{s.k};
  if (p.sort.has_axis) {
    dims = data.dims();
    dims[static_cast<std::size_t>(normalize_axis("_backward_topk", p.sort.axis, data))] = s.k;
  }
  if (g.shape() != Shape(dims) || indices.shape() != g.shape()) {
    throw ShapeError("_backward_topk: gradient " + nd::describe(g) + " and indices " + nd::describe(indices) +
                     " do not fit data " + data.tuple_str());
  }
  out = {{data, g.dtype()}};
}

void sort_backward_cpu(const ExecContext&, const Invocation& inv) {
  const SortShape s = sort_shape(inv);
  dispatch_floating(inv.inputs[0].dtype(), "_backward_topk", [&](auto grad_tag) {
    dispatch_dtype(inv.inputs[1].dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      const T* g = static_cast<const T*>(inv.inputs[0].data());
      const I* index = static_cast<const I*>(inv.inputs[1].data());
      T* dx = static_cast<T*>(inv.outputs[0].data());
      parallel_for(s.outer * s.inner, [&](std::int64_t row) {
        const std::int64_t outer = row / s.inner, in = row % s.inner;
        for (std::int64_t j = 0; j < s.length; ++j) dx[(outer * s.length + j) * s.inner + in] = T(0);
        for (std::int64_t j = 0; j < s.k; ++j) {
          const std::int64_t at = (outer * s.k + j) * s.inner + in;
          dx[(outer * s.length + static_cast<std::int64_t>(index[at])) * s.inner + in] = g[at];
        }
      }, s.outer * s.inner * s.length);
    });
  });
}

const OpDef& sort_backward_def() {
  static const OpDef def{"_backward_topk", &sort_backward_infer, &sort_backward_cpu, NDG_GPU_KERNEL(gpu::sort_backward),
                         nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The values' gradient scattered back by their indices; none where no values are output (indices,
// mask, argsort) or no gradient reached them.
std::vector<NDArray> sort_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<SortParams>();
  const SortOutputs o = sort_outputs(p);
  if (o.values < 0 || g.empty() || g[0].is_none()) return {NDArray()};
  const Shape& data = inv.inputs[0].shape();
  if (data.ndim() > SortBackwardParams::kMaxDims) {
    throw ShapeError(std::string(kind_name(p.kind)) + ": the gradient supports data of at most " +
                     std::to_string(SortBackwardParams::kMaxDims) + " axes, got " + data.tuple_str());
  }
  SortBackwardParams b;
  b.sort = p;
  b.ndim = data.ndim();
  std::copy(data.begin(), data.end(), b.shape);
  return {invoke1(sort_backward_def(), {g[0], inv.outputs[static_cast<std::size_t>(o.indices)]}, b)};
}

std::string axis_text(const SortParams& p) { return p.has_axis ? std::to_string(p.axis) : "None"; }

std::vector<std::pair<std::string, std::string>> sort_attrs(const Params& params) {
  const auto& p = params.as<SortParams>();
  switch (p.kind) {
    case SortKind::topk:
      return {{"axis", axis_text(p)},
              {"k", std::to_string(p.k)},
              {"ret_typ", return_name(p.ret)},
              {"is_ascend", format_bool(p.is_ascend)},
              {"dtype", dtype_name(p.dtype)}};
    case SortKind::sort: return {{"axis", axis_text(p)}, {"is_ascend", format_bool(p.is_ascend)}};
    default:
      return {{"axis", axis_text(p)}, {"is_ascend", format_bool(p.is_ascend)}, {"dtype", dtype_name(p.dtype)}};
  }
}

template <SortKind kKind>
Params sort_parse(const AttrList& attrs) {
  AttrReader a(kind_name(kKind), attrs);
  SortParams p;
  p.kind = kKind;
  p.has_axis = !a.is_none("axis");
  if (p.has_axis) p.axis = a.axis("axis", -1);
  p.is_ascend = a.boolean("is_ascend", kKind != SortKind::topk);
  if (kKind == SortKind::topk) {
    p.k = a.integer("k", 1);
    const std::string ret = a.choice("ret_typ", "indices", {"indices", "value", "mask", "both"});
    p.ret = ret == "value" ? TopkReturn::value : ret == "mask" ? TopkReturn::mask : ret == "both" ? TopkReturn::both
                                                                                                    : TopkReturn::indices;
  } else {
    p.k = 0;
    p.ret = kKind == SortKind::sort ? TopkReturn::value : TopkReturn::indices;
  }
  if (kKind != SortKind::sort) p.dtype = a.dtype("dtype", DType::float32);
  a.finish();
  return p;
}

template <SortKind kKind>
const OpDef& sort_def() {
  static const OpDef def{kind_name(kKind), &sort_infer, &sort_cpu, NDG_GPU_KERNEL(gpu::sort), &sort_gradient,
                         &sort_attrs, &sort_parse<kKind>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool sort_family_registered =
    (sort_def<SortKind::topk>(), sort_def<SortKind::sort>(), sort_def<SortKind::argsort>(), sort_backward_def(), true);

}  // namespace

SortOutputs sort_outputs(const SortParams& p) {
  if (p.kind == SortKind::argsort) return {-1, 0, -1};
  if (p.kind == SortKind::sort) return {0, 1, -1};
  switch (p.ret) {
    case TopkReturn::indices: return {-1, 0, -1};
    case TopkReturn::mask: return {-1, -1, 0};
    default: return {0, 1, -1};  // value (indices hidden) and both
  }
}

// The data is the op's input 0, or _backward_topk's output.
SortShape sort_shape(const Invocation& inv) {
  if (inv.op == &sort_backward_def()) return shape_of(inv.params.as<SortBackwardParams>().sort, inv.outputs[0].shape());
  return shape_of(inv.params.as<SortParams>(), inv.inputs[0].shape());
}

}  // namespace mx::op

namespace mx::nd {

namespace {

op::SortParams sort_params(op::SortKind kind, std::optional<int> axis, std::int64_t k, op::TopkReturn ret, bool is_ascend,
                           DType dtype) {
  op::SortParams p;
  p.kind = kind;
  p.axis = axis.value_or(-1);
  p.has_axis = axis.has_value();
  p.k = k;
  p.ret = ret;
  p.is_ascend = is_ascend;
  p.dtype = dtype;
  return p;
}

}  // namespace

NDArray topk(const NDArray& data, std::optional<int> axis, std::int64_t k, const std::string& ret_typ, bool is_ascend,
             DType dtype) {
  detail::check_not_none("topk", data);
  if (ret_typ != "indices" && ret_typ != "value" && ret_typ != "mask") {
    throw ValueError("topk: ret_typ must be \"indices\", \"value\" or \"mask\" (\"both\": nd::topk_both), got \"" +
                     ret_typ + "\" (data " + detail::describe(data) + ")");
  }
  const op::TopkReturn ret = ret_typ == "value" ? op::TopkReturn::value
                             : ret_typ == "mask" ? op::TopkReturn::mask
                                                 : op::TopkReturn::indices;
  return op::invoke1(op::sort_def<op::SortKind::topk>(), {data},
                     sort_params(op::SortKind::topk, axis, k, ret, is_ascend, dtype));
}

std::vector<NDArray> topk_both(const NDArray& data, std::optional<int> axis, std::int64_t k, bool is_ascend, DType dtype) {
  detail::check_not_none("topk", data);
  return op::invoke(op::sort_def<op::SortKind::topk>(), {data},
                    sort_params(op::SortKind::topk, axis, k, op::TopkReturn::both, is_ascend, dtype));
}

NDArray sort(const NDArray& data, std::optional<int> axis, bool is_ascend) {
  detail::check_not_none("sort", data);
  return op::invoke1(op::sort_def<op::SortKind::sort>(), {data},
                     sort_params(op::SortKind::sort, axis, 0, op::TopkReturn::value, is_ascend, DType::int64));
}

NDArray argsort(const NDArray& data, std::optional<int> axis, bool is_ascend, DType dtype) {
  detail::check_not_none("argsort", data);
  return op::invoke1(op::sort_def<op::SortKind::argsort>(), {data},
                     sort_params(op::SortKind::argsort, axis, 0, op::TopkReturn::indices, is_ascend, dtype));
}

}  // namespace mx::nd
