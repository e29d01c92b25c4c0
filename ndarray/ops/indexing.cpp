// The indexing family: take (with _backward_take), Embedding, where (with _backward_where), clip
// (with _backward_clip), SequenceMask, SequenceLast (with _backward_SequenceLast) and
// SequenceReverse, as registered ops with MXNet's names and attributes. Here: the front ends,
// inference, gradients and CPU loops; the launches are in cuda/ops/indexing.cu, the element
// functions both share in indexing_kernels.hpp.
#include "ndarray/ops/indexing.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/indexing_kernels.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const char* mode_name(TakeMode m) { return m == TakeMode::wrap ? "wrap" : m == TakeMode::raise ? "raise" : "clip"; }

// out[i] = element(i) for every element of inv's output i, over all cores.
template <class T, class Element>
void fill_output(const Invocation& inv, std::size_t output, Element&& element) {
  T* out = static_cast<T*>(inv.outputs[output].data());
  parallel_for(inv.outputs[output].size(), [&](std::int64_t i) { out[i] = element(i); });
}

// --- take, _backward_take and Embedding --------------------------------------------------------------

bool is_embedding(const Invocation& inv);

void take_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &a = inv.inputs[0], &indices = inv.inputs[1];
  const auto& p = inv.params.as<TakeParams>();
  const int axis = normalize_axis("take", p.axis, a.shape());
  if (a.shape()[axis] == 0 && indices.size() > 0) {
    throw IndexError("take: axis " + std::to_string(p.axis) + " of " + nd::describe(a) +
                     " has no element to take for indices " + nd::describe(indices));
  }
  std::vector<std::int64_t> dims(a.shape().begin(), a.shape().begin() + axis);
  dims.insert(dims.end(), indices.shape().begin(), indices.shape().end());
  dims.insert(dims.end(), a.shape().begin() + axis + 1, a.shape().end());
  if (dims.empty()) dims.push_back(1);
  out = {{Shape(dims), a.dtype()}};
}

void embedding_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &data = inv.inputs[0], &weight = inv.inputs[1];
  const auto& p = inv.params.as<EmbeddingParams>();
  if (weight.shape() != Shape{p.input_dim, p.output_dim}) {
    throw ShapeError("Embedding: weight " + nd::describe(weight) + " does not match input_dim=" +
                     std::to_string(p.input_dim) + ", output_dim=" + std::to_string(p.output_dim) + "; expected (" +
                     std::to_string(p.input_dim) + ", " + std::to_string(p.output_dim) + ")");
  }
  std::vector<std::int64_t> dims = data.shape().dims();
  dims.push_back(p.output_dim);
  out = {{Shape(dims), weight.dtype()}};
}

// Note [take's raise mode on a GPU]
// mode="raise" checks the indices on cpu(0), which throws mx::IndexError naming the first index
// out of range. On a GPU, checking would read the indices back on the host: a wait for the device
// in every call, and a step that a captured CUDA graph could not hold. MXNet 1.x's GPU kernel
// clips there, and so does ndgluon's.
template <class I>
void check_raise(const Invocation& inv, const I* index, std::int64_t count, std::int64_t length) {
  for (std::int64_t j = 0; j < count; ++j) {
    const double v = static_cast<double>(index[j]);
    if (!(v > -1 && v < static_cast<double>(length))) {  // truncated toward zero: [0, length - 1]; NaN too
      throw IndexError("take: index " + std::to_string(v) + " (element " + std::to_string(j) + " of indices " +
                       nd::describe(inv.inputs[1]) + ") is out of range [0, " + std::to_string(length - 1) +
                       "] for axis " + std::to_string(inv.params.as<TakeParams>().axis) + " of " +
                       nd::describe(inv.inputs[0]) + " (mode \"raise\")");
    }
  }
}

void take_cpu(const ExecContext&, const Invocation& inv) {
  const TakeShape s = take_shape(inv);
  const TakeOperands in = take_operands(inv);
  dispatch_data_index(inv, in.data, in.index, [&](auto data_tag, auto index_tag) {
    using T = decltype(data_tag);
    using I = decltype(index_tag);
    const T* data = input_of<T>(inv, in.data);
    const I* index = input_of<I>(inv, in.index);
    if (!is_embedding(inv) && inv.params.as<TakeParams>().mode == TakeMode::raise) check_raise(inv, index, s.count, s.length);
    fill_output<T>(inv, 0, [&](std::int64_t i) { return take_element(data, index, s, in.wrap, i); });
  });
}

// _backward_take: inputs (output gradient, indices), output the data's gradient (outer, length,
// inner): each row k of it sums the gradient rows whose index selects k. The indices are bucketed
// by position first (a counting sort), so that the rows are summed in parallel without races and
// in the indices' order, in ComputeType (float32 for 16-bit gradients).
void take_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &g = inv.inputs[0], &indices = inv.inputs[1];
  const auto& p = inv.params.as<TakeParams>();
  const int axis = p.axis < 0 ? p.axis + p.ndim : p.axis;
  if (p.ndim < 1 || axis < 0 || axis >= p.ndim || g.ndim() < axis) {
    throw ShapeError("_backward_take: output gradient " + nd::describe(g) + " and indices " + nd::describe(indices) +
                     " do not fit data of " + std::to_string(p.ndim) + " axes along axis " + std::to_string(p.axis));
  }
  std::vector<std::int64_t> dims(g.shape().begin(), g.shape().begin() + axis);
  dims.push_back(p.length);
  const int after = axis + indices.ndim();
  if (after < g.ndim()) dims.insert(dims.end(), g.shape().begin() + after, g.shape().end());
  out = {{Shape(dims), g.dtype()}};
}

void take_backward_cpu(const ExecContext&, const Invocation& inv) {
  const TakeShape s = take_shape(inv);
  const bool wrap = inv.params.as<TakeParams>().mode == TakeMode::wrap;
  dispatch_floating(inv.inputs[0].dtype(), "_backward_take", [&](auto grad_tag) {
    dispatch_dtype(inv.inputs[1].dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      using C = ComputeType<T>;
      const T* g = static_cast<const T*>(inv.inputs[0].data());
      const I* index = static_cast<const I*>(inv.inputs[1].data());
      T* dx = static_cast<T*>(inv.outputs[0].data());
      // first[k] .. first[k + 1]: the indices (in order) that select position k.
      std::vector<std::int64_t> first(static_cast<std::size_t>(s.length) + 1, 0), order(static_cast<std::size_t>(s.count));
      std::vector<std::int64_t> position(static_cast<std::size_t>(s.count));
      for (std::int64_t j = 0; j < s.count; ++j) {
        position[static_cast<std::size_t>(j)] = pick_position(index[j], s.length, wrap);
        ++first[static_cast<std::size_t>(position[static_cast<std::size_t>(j)]) + 1];
      }
      for (std::int64_t k = 0; k < s.length; ++k) first[static_cast<std::size_t>(k) + 1] += first[static_cast<std::size_t>(k)];
      std::vector<std::int64_t> next(first.begin(), first.end() - 1);
      for (std::int64_t j = 0; j < s.count; ++j) order[static_cast<std::size_t>(next[static_cast<std::size_t>(position[static_cast<std::size_t>(j)])]++)] = j;
      parallel_for(s.outer * s.length, [&](std::int64_t row) {
        const std::int64_t o = row / s.length, k = row % s.length;
        const auto sum_into = [&](C* sum) {
          for (std::int64_t in = 0; in < s.inner; ++in) sum[in] = C(0);
          for (std::int64_t q = first[static_cast<std::size_t>(k)]; q < first[static_cast<std::size_t>(k) + 1]; ++q) {
            const T* from = g + (o * s.count + order[static_cast<std::size_t>(q)]) * s.inner;
#pragma omp simd
            for (std::int64_t in = 0; in < s.inner; ++in) sum[in] += C(from[in]);
          }
        };
        if constexpr (std::is_same_v<T, C>) {
          sum_into(dx + row * s.inner);  // the sums in place: no buffer per row
        } else {
          std::vector<C> sum(static_cast<std::size_t>(s.inner));
          sum_into(sum.data());
          for (std::int64_t in = 0; in < s.inner; ++in) dx[row * s.inner + in] = static_cast<T>(sum[static_cast<std::size_t>(in)]);
        }
      }, s.outer * s.length * s.inner + s.count * s.inner);
    });
  });
}

const OpDef& take_backward_def() {
  static const OpDef def{"_backward_take", &take_backward_infer, &take_backward_cpu, NDG_GPU_KERNEL(gpu::take_backward),
                         nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// a's gradient into its buffer where backward offers it; none for the indices.
std::vector<NDArray> take_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  TakeParams p = inv.params.as<TakeParams>();
  const Shape& a = inv.inputs[0].shape();
  p.axis = normalize_axis("take", p.axis, a);
  p.ndim = a.ndim();
  p.length = a[p.axis];
  if (p.mode == TakeMode::raise) p.mode = TakeMode::clip;  // the forward checked them
  return {gradient_into(inv, 0, [&] { return invoke1(take_backward_def(), {g[0], inv.inputs[1]}, p); }), NDArray()};
}

// Note [Embedding's sparse_grad]
// MXNet's sparse_grad=True makes the weight's gradient a row_sparse array. ndgluon has dense arrays
// only: the attribute is kept (and exported) and the gradient is the same dense one, which holds
// the same values (zero in the rows no index selects).
std::vector<NDArray> embedding_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& e = inv.params.as<EmbeddingParams>();
  const TakeParams p{0, TakeMode::clip, 2, e.input_dim};
  return {NDArray(), gradient_into(inv, 1, [&] { return invoke1(take_backward_def(), {g[0], inv.inputs[0]}, p); })};
}

std::vector<std::pair<std::string, std::string>> take_attrs(const Params& params) {
  const auto& p = params.as<TakeParams>();
  return {{"axis", std::to_string(p.axis)}, {"mode", mode_name(p.mode)}};
}

Params take_parse(const AttrList& attrs) {
  AttrReader a("take", attrs);
  TakeParams p;
  p.axis = a.axis("axis", 0);
  const std::string mode = a.choice("mode", "clip", {"clip", "wrap", "raise"});
  p.mode = mode == "wrap" ? TakeMode::wrap : mode == "raise" ? TakeMode::raise : TakeMode::clip;
  a.finish();
  return p;
}

std::vector<std::pair<std::string, std::string>> embedding_attrs(const Params& params) {
  const auto& p = params.as<EmbeddingParams>();
  return {{"input_dim", std::to_string(p.input_dim)},
          {"output_dim", std::to_string(p.output_dim)},
          {"dtype", dtype_name(p.dtype)},
          {"sparse_grad", format_bool(p.sparse_grad)}};
}

Params embedding_parse(const AttrList& attrs) {
  AttrReader a("Embedding", attrs);
  EmbeddingParams p;
  p.input_dim = a.integer("input_dim");
  if (p.input_dim < 1) a.fail("input_dim", "must be at least 1");
  p.output_dim = a.integer("output_dim");
  if (p.output_dim < 1) a.fail("output_dim", "must be at least 1");
  p.dtype = a.dtype("dtype", DType::float32);
  p.sparse_grad = a.boolean("sparse_grad", false);
  a.finish();
  return p;
}

// --- where and _backward_where -----------------------------------------------------------------------

void where_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &condition = inv.inputs[0], &x = inv.inputs[1], &y = inv.inputs[2];
  nd::check_same_dtype("where", x, y);
  if (x.shape() != y.shape()) {
    throw ShapeError("where: x " + nd::describe(x) + " and y " + nd::describe(y) + " must have the same shape");
  }
  const bool rows = condition.ndim() == 1 && x.ndim() >= 1 && condition.shape()[0] == x.shape()[0];
  if (condition.shape() != x.shape() && !rows) {
    throw ShapeError("where: condition " + nd::describe(condition) + " must have the shape of x " + nd::describe(x) +
                     ", or be 1-D of length x.shape[0]");
  }
  out = {{x.shape(), x.dtype()}};
}

void where_cpu(const ExecContext&, const Invocation& inv) {
  const WhereShape s = where_shape(inv);
  dispatch_data_index(inv, 1, 0, [&](auto data_tag, auto condition_tag) {
    using T = decltype(data_tag);
    using C = decltype(condition_tag);
    const C* c = input_of<C>(inv, 0);
    const T *x = input_of<T>(inv, 1), *y = input_of<T>(inv, 2);
    fill_output<T>(inv, 0, [&](std::int64_t i) { return where_takes_x(c, s, i) ? x[i] : y[i]; });
  });
}

// _backward_where: inputs (output gradient, condition), outputs (x's gradient, y's gradient).
void where_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& g = inv.inputs[0];
  out = {{g.shape(), g.dtype()}, {g.shape(), g.dtype()}};
}

void where_backward_cpu(const ExecContext&, const Invocation& inv) {
  const WhereShape s = where_shape(inv);
  dispatch_data_index(inv, 0, 1, [&](auto data_tag, auto condition_tag) {
    using T = decltype(data_tag);
    using C = decltype(condition_tag);
    const T* g = input_of<T>(inv, 0);
    const C* c = input_of<C>(inv, 1);
    T *dx = static_cast<T*>(inv.outputs[0].data()), *dy = static_cast<T*>(inv.outputs[1].data());
    parallel_for(inv.outputs[0].size(), [&](std::int64_t i) {
      const bool take_x = where_takes_x(c, s, i);
      dx[i] = take_x ? g[i] : T(0);
      dy[i] = take_x ? T(0) : g[i];
    });
  });
}

const OpDef& where_backward_def() {
  static const OpDef def{"_backward_where", &where_backward_infer, &where_backward_cpu,
                         NDG_GPU_KERNEL(gpu::where_backward), nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

std::vector<NDArray> where_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  std::vector<NDArray> d = invoke(where_backward_def(), {g[0], inv.inputs[0]});
  return {NDArray(), d[0], d[1]};
}

// --- clip and _backward_clip ---------------------------------------------------------------------------

void same_as_input_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[0].shape(), inv.inputs[0].dtype()}};
}

// _backward_clip: inputs (output gradient, data); the data's shape and dtype.
void clip_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[1].shape(), inv.inputs[1].dtype()}};
}

void clip_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<ClipParams>();
  dispatch_dtype(inv.inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = input_of<T>(inv, 0);
    const T lo = static_cast<T>(p.a_min), hi = static_cast<T>(p.a_max);
    fill_output<T>(inv, 0, [&](std::int64_t i) { return clip_element(x[i], lo, hi); });
  });
}

void clip_backward_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<ClipParams>();
  dispatch_floating(inv.inputs[0].dtype(), "_backward_clip", [&](auto tag) {
    using T = decltype(tag);
    const T *g = input_of<T>(inv, 0), *x = input_of<T>(inv, 1);
    const T lo = static_cast<T>(p.a_min), hi = static_cast<T>(p.a_max);
    fill_output<T>(inv, 0, [&](std::int64_t i) { return clip_gradient_element(g[i], x[i], lo, hi); });
  });
}

std::vector<std::pair<std::string, std::string>> clip_attrs(const Params& params) {
  const auto& p = params.as<ClipParams>();
  return {{"a_min", format_real(p.a_min)}, {"a_max", format_real(p.a_max)}};
}

Params clip_parse(const AttrList& attrs) {
  AttrReader a("clip", attrs);
  ClipParams p;
  p.a_min = a.real("a_min");
  p.a_max = a.real("a_max");
  a.finish();
  return p;
}

const OpDef& clip_backward_def() {
  static const OpDef def{"_backward_clip", &clip_backward_infer, &clip_backward_cpu, NDG_GPU_KERNEL(gpu::clip_backward),
                         nullptr, &clip_attrs, &clip_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

std::vector<NDArray> clip_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {invoke1(clip_backward_def(), {g[0], inv.inputs[0]}, inv.params)};
}

// --- the sequence ops ----------------------------------------------------------------------------------

const char* sequence_op(const Invocation& inv) { return inv.op->name; }

// The data's checks, shared: at least 2 axes, axis 0 or 1, and lengths (N,) given exactly when
// use_sequence_length says so. data is input 0 (output 0 for _backward_SequenceLast).
void check_sequence(const Invocation& inv, const Shape& data) {
  const auto& p = inv.params.as<SequenceParams>();
  const std::string op = sequence_op(inv);
  if (data.ndim() < 2) {
    throw ShapeError(op + ": data " + data.tuple_str() + " needs a time axis and a batch axis");
  }
  if (p.axis != 0 && p.axis != 1) {
    throw ValueError(op + ": axis must be 0 (time first) or 1 (batch first), got " + std::to_string(p.axis));
  }
  const NDArray& lengths = inv.inputs[1];
  const std::int64_t batch = data[p.axis == 0 ? 1 : 0];
  if (p.use_sequence_length && lengths.is_none()) {
    throw ValueError(op + ": use_sequence_length=True needs sequence_length (data " + data.tuple_str() + ")");
  }
  if (!p.use_sequence_length && !lengths.is_none()) {
    throw ValueError(op + ": sequence_length " + nd::describe(lengths) +
                     " is given but use_sequence_length is False; set it to True to use it");
  }
  if (!lengths.is_none() && lengths.shape() != Shape{batch}) {
    throw ShapeError(op + ": sequence_length " + nd::describe(lengths) + " must be (" + std::to_string(batch) +
                     ",), one length per sequence of data " + data.tuple_str() + " (axis " + std::to_string(p.axis) + ")");
  }
}

void sequence_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  check_sequence(inv, inv.inputs[0].shape());
  if (inv.op->name == std::string("SequenceReverse") && inv.params.as<SequenceParams>().axis != 0) {
    throw ValueError("SequenceReverse: only axis 0 (data (T, N, ...)) is supported, as MXNet's; got axis " +
                     std::to_string(inv.params.as<SequenceParams>().axis));
  }
  out = {{inv.inputs[0].shape(), inv.inputs[0].dtype()}};
}

void sequence_last_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& data = inv.inputs[0];
  check_sequence(inv, data.shape());
  std::vector<std::int64_t> dims = data.shape().dims();
  dims.erase(dims.begin() + inv.params.as<SequenceParams>().axis);
  out = {{Shape(dims), data.dtype()}};
}

// _backward_SequenceLast: inputs (output gradient, lengths or none), output the data's gradient,
// the time axis of `steps` put back.
void sequence_last_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<SequenceParams>();
  std::vector<std::int64_t> dims = inv.inputs[0].shape().dims();
  if (p.axis < 0 || p.axis > static_cast<int>(dims.size())) {
    throw ShapeError("_backward_SequenceLast: output gradient " + nd::describe(inv.inputs[0]) + " has no axis " +
                     std::to_string(p.axis));
  }
  dims.insert(dims.begin() + p.axis, p.steps);
  check_sequence(inv, Shape(dims));
  out = {{Shape(dims), inv.inputs[0].dtype()}};
}

// The four sequence loops: out[i] = At's element i.
template <template <class, class> class At>
void sequence_cpu(const ExecContext&, const Invocation& inv) {
  dispatch_sequence<At>(inv, [&](const auto& at) { fill_output<decltype(at(0))>(inv, 0, at); });
}

std::vector<std::pair<std::string, std::string>> sequence_attrs(const Params& params) {
  const auto& p = params.as<SequenceParams>();
  return {{"use_sequence_length", format_bool(p.use_sequence_length)}, {"axis", std::to_string(p.axis)}};
}

std::vector<std::pair<std::string, std::string>> sequence_mask_attrs(const Params& params) {
  auto attrs = sequence_attrs(params);
  attrs.insert(attrs.begin() + 1, {"value", format_real(params.as<SequenceParams>().value)});
  return attrs;
}

template <bool kValue>
Params sequence_parse(const AttrList& attrs, const char* op) {
  AttrReader a(op, attrs);
  SequenceParams p;
  p.use_sequence_length = a.boolean("use_sequence_length", false);
  if constexpr (kValue) p.value = a.real("value", 0.0);
  p.axis = a.axis("axis", 0);
  a.finish();
  return p;
}
Params sequence_mask_parse(const AttrList& attrs) { return sequence_parse<true>(attrs, "SequenceMask"); }
Params sequence_last_parse(const AttrList& attrs) { return sequence_parse<false>(attrs, "SequenceLast"); }
Params sequence_reverse_parse(const AttrList& attrs) { return sequence_parse<false>(attrs, "SequenceReverse"); }

const OpDef& sequence_mask_def();
const OpDef& sequence_reverse_def();

// SequenceMask's gradient is the output gradient masked with 0; SequenceReverse's is the output
// gradient reversed the same way (a permutation that is its own inverse). None for the lengths.
std::vector<NDArray> sequence_mask_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  SequenceParams p = inv.params.as<SequenceParams>();
  p.value = 0;
  return {invoke1(sequence_mask_def(), {g[0], inv.inputs[1]}, p), NDArray()};
}

std::vector<NDArray> sequence_reverse_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {invoke1(sequence_reverse_def(), {g[0], inv.inputs[1]}, inv.params), NDArray()};
}

const OpDef& sequence_last_backward_def() {
  static const OpDef def{"_backward_SequenceLast", &sequence_last_backward_infer, &sequence_cpu<SequenceLastGradientAt>,
                         NDG_GPU_KERNEL(gpu::sequence_last_backward), nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

std::vector<NDArray> sequence_last_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  SequenceParams p = inv.params.as<SequenceParams>();
  p.steps = inv.inputs[0].shape()[p.axis];
  return {invoke1(sequence_last_backward_def(), {g[0], inv.inputs[1]}, p), NDArray()};
}

// --- the OpDefs --------------------------------------------------------------------------------------

const OpDef& take_def() {
  static const OpDef def{"take", &take_infer, &take_cpu, NDG_GPU_KERNEL(gpu::take), &take_gradient, &take_attrs,
                         &take_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& embedding_def() {
  static const OpDef def{"Embedding", &embedding_infer, &take_cpu, NDG_GPU_KERNEL(gpu::take), &embedding_gradient,
                         &embedding_attrs, &embedding_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
bool is_embedding(const Invocation& inv) { return inv.op == &embedding_def(); }

const OpDef& where_def() {
  static const OpDef def{"where", &where_infer, &where_cpu, NDG_GPU_KERNEL(gpu::where), &where_gradient};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& clip_def() {
  static const OpDef def{"clip", &same_as_input_infer, &clip_cpu, NDG_GPU_KERNEL(gpu::clip), &clip_gradient,
                         &clip_attrs, &clip_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The sequence ops take (data, sequence_length), the second absent (a none array) unless
// use_sequence_length: MXNet's JSON then lists data alone, and `arity` puts the none back.
OpDef sequence_op_def(const char* name, InferFn infer, KernelFn cpu, KernelFn gpu, GradientFn gradient, AttrsFn attrs,
                      ParseAttrsFn parse) {
  OpDef def{name, infer, cpu, gpu, gradient, attrs, parse};
  def.arity = 2;
  return def;
}
const OpDef& sequence_mask_def() {
  static const OpDef def = sequence_op_def("SequenceMask", &sequence_infer, &sequence_cpu<SequenceMaskAt>,
                                           NDG_GPU_KERNEL(gpu::sequence_mask), &sequence_mask_gradient,
                                           &sequence_mask_attrs, &sequence_mask_parse);
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& sequence_last_def() {
  static const OpDef def = sequence_op_def("SequenceLast", &sequence_last_infer, &sequence_cpu<SequenceLastAt>,
                                           NDG_GPU_KERNEL(gpu::sequence_last), &sequence_last_gradient, &sequence_attrs,
                                           &sequence_last_parse);
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& sequence_reverse_def() {
  static const OpDef def = sequence_op_def("SequenceReverse", &sequence_infer, &sequence_cpu<SequenceReverseAt>,
                                           NDG_GPU_KERNEL(gpu::sequence_reverse), &sequence_reverse_gradient,
                                           &sequence_attrs, &sequence_reverse_parse);
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool indexing_family_registered =
    (take_def(), take_backward_def(), embedding_def(), where_def(), where_backward_def(), clip_def(),
     clip_backward_def(), sequence_mask_def(), sequence_last_def(), sequence_last_backward_def(),
     sequence_reverse_def(), true);

}  // namespace

// take's data is its input 0 (Embedding's weight, input 1), _backward_take's its output.
TakeShape take_shape(const Invocation& inv) {
  if (is_embedding(inv)) {
    const auto& p = inv.params.as<EmbeddingParams>();
    return {1, p.input_dim, p.output_dim, inv.inputs[0].size()};
  }
  const bool backward = inv.op == &take_backward_def();
  const Shape& data = backward ? inv.outputs[0].shape() : inv.inputs[0].shape();
  const ReduceShape s = around_axis(data, normalize_axis(inv.op->name, inv.params.as<TakeParams>().axis, data));
  return {s.outer, s.length, s.inner, inv.inputs[1].size()};
}

// take: inputs (a, indices); Embedding: inputs (data, weight), the weight's rows taken, clipped.
TakeOperands take_operands(const Invocation& inv) {
  if (is_embedding(inv)) return {1, 0, false};
  return {0, 1, inv.params.as<TakeParams>().mode == TakeMode::wrap};
}

// where's condition is its input 0, _backward_where's input 1.
WhereShape where_shape(const Invocation& inv) {
  const NDArray& condition = inv.op == &where_def() ? inv.inputs[0] : inv.inputs[1];
  const NDArray& data = inv.outputs[0];
  if (condition.shape() == data.shape()) return {};
  const std::int64_t rows = condition.shape()[0];
  return {rows, rows ? data.size() / rows : 1};
}

// The data is input 0, or _backward_SequenceLast's output.
SequenceShape sequence_shape(const Invocation& inv) {
  const Shape& data = inv.op == &sequence_last_backward_def() ? inv.outputs[0].shape() : inv.inputs[0].shape();
  const bool batch_first = inv.params.as<SequenceParams>().axis == 1;
  SequenceShape s;
  s.batch_first = batch_first;
  s.steps = data[batch_first ? 1 : 0];
  s.batch = data[batch_first ? 0 : 1];
  s.rest = s.steps > 0 && s.batch > 0 ? data.numel() / (s.steps * s.batch) : 1;
  return s;
}

}  // namespace mx::op

namespace mx::nd {

NDArray take(const NDArray& a, const NDArray& indices, int axis, const std::string& mode) {
  detail::check_not_none("take", a);
  detail::check_not_none("take", indices);
  if (mode != "clip" && mode != "wrap" && mode != "raise") {
    throw ValueError("take: mode must be \"clip\", \"wrap\" or \"raise\", got \"" + mode + "\" (a " + detail::describe(a) +
                     ", indices " + detail::describe(indices) + ")");
  }
  const op::TakeMode m = mode == "wrap" ? op::TakeMode::wrap : mode == "raise" ? op::TakeMode::raise : op::TakeMode::clip;
  return op::invoke1(op::take_def(), {a, indices}, op::TakeParams{axis, m});
}

NDArray Embedding(const NDArray& data, const NDArray& weight, std::int64_t input_dim, std::int64_t output_dim,
                  DType dtype, bool sparse_grad) {
  detail::check_not_none("Embedding", data);
  detail::check_not_none("Embedding", weight);
  if (input_dim < 1 || output_dim < 1) {
    throw ValueError("Embedding: input_dim and output_dim must be at least 1, got " + std::to_string(input_dim) + " and " +
                     std::to_string(output_dim));
  }
  return op::invoke1(op::embedding_def(), {data, weight}, op::EmbeddingParams{input_dim, output_dim, dtype, sparse_grad});
}

NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y) {
  for (const NDArray* a : {&condition, &x, &y}) detail::check_not_none("where", *a);
  return op::invoke1(op::where_def(), {condition, x, y});
}

NDArray clip(const NDArray& data, double a_min, double a_max) {
  detail::check_not_none("clip", data);
  return op::invoke1(op::clip_def(), {data}, op::ClipParams{a_min, a_max});
}

namespace {

NDArray sequence(const op::OpDef& def, const NDArray& data, const NDArray& lengths, bool use, double value, int axis) {
  detail::check_not_none(def.name, data);
  return op::invoke1(def, {data, lengths}, op::SequenceParams{use, value, axis});
}

}  // namespace

NDArray SequenceMask(const NDArray& data, const NDArray& sequence_length, bool use_sequence_length, double value,
                     int axis) {
  return sequence(op::sequence_mask_def(), data, sequence_length, use_sequence_length, value, axis);
}

NDArray SequenceLast(const NDArray& data, const NDArray& sequence_length, bool use_sequence_length, int axis) {
  return sequence(op::sequence_last_def(), data, sequence_length, use_sequence_length, 0, axis);
}

NDArray SequenceReverse(const NDArray& data, const NDArray& sequence_length, bool use_sequence_length, int axis) {
  return sequence(op::sequence_reverse_def(), data, sequence_length, use_sequence_length, 0, axis);
}

}  // namespace mx::nd
