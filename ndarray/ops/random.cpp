// Random draws: _random_uniform and _random_normal as registered ops without inputs (no gradient),
// on each context's generator (cuRAND's device generator on a GPU, cuda/ops/creation.cu; its host
// generator, or the standard library's in a CPU-only build, on cpu(0)), and the seed.
#include "ndarray/ops/random.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "ndarray/backend/backend.hpp"
#include "ndarray/backend/host_random.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/functors.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::random {
namespace {
std::atomic<std::uint64_t> seed_value{0};
std::atomic<std::uint64_t> generation{0};
}  // namespace

void seed(std::uint64_t s) {
  seed_value = s;
  ++generation;
}

std::uint64_t current_seed() { return seed_value; }
std::uint64_t seed_generation() { return generation; }

std::uint64_t get_state(Context ctx) { return backend(ctx).random_position(ctx); }
void set_state(Context ctx, std::uint64_t state) { backend(ctx).set_random_position(ctx, state); }

}  // namespace mx::random

namespace mx::op {
namespace {


void random_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const nd::NDArray& y = inv.outputs.at(0);
  if (!is_floating(y.dtype())) {
    throw DTypeError(std::string(inv.op->name) + " draws float32, float64, float16 or bfloat16, not " + dtype_name(y.dtype()));
  }
  out = {{y.shape(), y.dtype()}};
}

// float16 and bfloat16 draw in float32 (into scratch memory), are mapped there, and are rounded
// once, as on a GPU.
void random_uniform_cpu(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& y = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  const std::int64_t n = y.size();
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const Workspace staged(ec, is_half_v<T> ? static_cast<std::size_t>(n) * sizeof(U) : 0);
    U* draws = is_half_v<T> ? staged.as<U>() : static_cast<U*>(y.data());
    detail::host_random_uniform(dtype_of<U>, draws, n, p.offset);
    if (!is_half_v<T> && p.a == 0.0 && p.b == 1.0) return;
    T* values = static_cast<T*>(y.data());
    const functors::Affine<U> f{static_cast<U>(p.b - p.a), static_cast<U>(p.a)};  // (0, 1] -> (low, high]
    parallel_for_simd(n, [&](std::int64_t i) { values[i] = static_cast<T>(f(draws[i])); });
  });
}

void random_normal_cpu(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& y = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  const std::int64_t n = y.size();
  if (!is_half(y.dtype())) return detail::host_random_normal(y.dtype(), y.data(), n, p.a, p.b, p.offset);
  const Workspace staged(ec, static_cast<std::size_t>(n) * sizeof(float));
  detail::host_random_normal(DType::float32, staged.data(), n, p.a, p.b, p.offset);
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(y.data());
    parallel_for_simd(n, [&](std::int64_t i) { values[i] = static_cast<T>(staged.as<float>()[i]); });
  });
}

std::vector<std::pair<std::string, std::string>> uniform_attrs(const Params& params) {
  const auto& p = params.as<RandomParams>();
  return {{"low", format_real(p.a)}, {"high", format_real(p.b)}};
}
std::vector<std::pair<std::string, std::string>> normal_attrs(const Params& params) {
  const auto& p = params.as<RandomParams>();
  return {{"loc", format_real(p.a)}, {"scale", format_real(p.b)}};
}

// The draw's two parameters, named as MXNet names them (defaults 0 and 1), with those of the output
// (read_output_attrs). The draw continues the context's generator (offset -1).
Params random_parse(const char* op, const AttrList& attrs, const char* a_name, const char* b_name) {
  AttrReader a(op, attrs);
  const RandomParams p{a.real(a_name, 0.0), a.real(b_name, 1.0)};
  read_output_attrs(a);
  a.finish();
  return p;
}
Params uniform_parse(const AttrList& attrs) { return random_parse("_random_uniform", attrs, "low", "high"); }
Params normal_parse(const AttrList& attrs) { return random_parse("_random_normal", attrs, "loc", "scale"); }

const OpDef& uniform_def() {
  static const OpDef def{"_random_uniform", &random_infer, &random_uniform_cpu, NDG_GPU_KERNEL(gpu::random_uniform),
                         nullptr, &uniform_attrs, &uniform_parse, false, nullptr, 0, true};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& normal_def() {
  static const OpDef def{"_random_normal", &random_infer, &random_normal_cpu, NDG_GPU_KERNEL(gpu::random_normal),
                         nullptr, &normal_attrs, &normal_parse, false, nullptr, 0, true};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool random_family_registered = (uniform_def(), normal_def(), true);

}  // namespace
}  // namespace mx::op

namespace mx::nd::random {
namespace {

using Generate = const op::OpDef& (*)();

void generate(Generate def, const NDArray& out, double p0, double p1, std::int64_t offset) {
  op::invoke_into(def(), {}, {out}, op::RandomParams{p0, p1, offset});
}

void check_dtype(const char* op, DType dtype) {
  if (!is_floating(dtype)) throw DTypeError(std::string(op) + " draws float32, float64, float16 or bfloat16, not " + dtype_name(dtype));
}

// Draws come in multiples of 4 values: cuRAND draws normals in pairs, and Philox makes 4 values
// per counter step, so generator positions stay multiples of 4, where host and device generators
// agree on what an offset means. The result is a view of the first n values.
std::int64_t padded_size(std::int64_t n) { return (n + 3) / 4 * 4; }

// uniform's [low, high) and normal's (loc, scale) as NumPy and PyTorch accept them: finite, with
// low <= high and scale >= 0.
void check_uniform(const char* op, double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high) || low > high) {
    throw ValueError(std::string(op) + ": needs finite low <= high, got low " + std::to_string(low) + ", high " +
                     std::to_string(high));
  }
}

void check_normal(const char* op, double loc, double scale) {
  if (!std::isfinite(loc) || !std::isfinite(scale) || scale < 0) {
    throw ValueError(std::string(op) + ": needs a finite loc and a finite scale >= 0, got loc " + std::to_string(loc) +
                     ", scale " + std::to_string(scale));
  }
}

NDArray draw(const char* name, const Shape& shape, Context ctx, DType dtype, Generate def, double p0, double p1) {
  check_dtype(name, dtype);
  detail::check_shape(name, shape, dtype);
  const std::int64_t n = shape.numel();
  NDArray buffer(Shape{padded_size(n)}, ctx, dtype);
  if (n > 0) generate(def, buffer, p0, p1, -1);
  return buffer.slice(0, n).reshape(shape);
}

void fill_aligned(const char* op, const std::vector<NDArray>& arrays, Generate def, double p0, double p1) {
  if (arrays.empty()) return;
  std::uint64_t offset = 0;
  for (const NDArray& a : arrays) {
    detail::check_not_none(op, a);
    check_dtype(op, a.dtype());
    if (a.shape() != arrays[0].shape() || a.dtype() != arrays[0].dtype()) {
      throw ShapeError(std::string(op) + ": arrays differ: " + detail::describe(a) + " vs " + detail::describe(arrays[0]));
    }
    offset = std::max(offset, backend(a.context()).random_position(a.context()));
  }
  const std::int64_t n = padded_size(arrays[0].size());
  for (const NDArray& a : arrays) {
    // Draw into a padded buffer, then copy the values in (a may be a view without room to spare).
    NDArray buffer(Shape{n}, a.context(), a.dtype());
    if (n > 0) generate(def, buffer, p0, p1, static_cast<std::int64_t>(offset));
    NDArray target = a;
    buffer.slice(0, a.size()).reshape(a.shape()).copyto(target);
  }
}

}  // namespace

NDArray uniform(double low, double high, const Shape& shape, Context ctx, DType dtype) {
  check_uniform("random.uniform", low, high);
  return draw("random.uniform", shape, ctx, dtype, &op::uniform_def, low, high);
}

NDArray normal(double loc, double scale, const Shape& shape, Context ctx, DType dtype) {
  check_normal("random.normal", loc, scale);
  return draw("random.normal", shape, ctx, dtype, &op::normal_def, loc, scale);
}

void fill_uniform(const std::vector<NDArray>& arrays, double low, double high) {
  check_uniform("random.fill_uniform", low, high);
  fill_aligned("random.fill_uniform", arrays, &op::uniform_def, low, high);
}

void fill_normal(const std::vector<NDArray>& arrays, double loc, double scale) {
  check_normal("random.fill_normal", loc, scale);
  fill_aligned("random.fill_normal", arrays, &op::normal_def, loc, scale);
  // Note [normal draws across contexts]: cuRAND's host and device generators draw the same
  // uniforms, but their normal transforms (log, sincos) round differently on the CPU, by a few
  // ulps; every GPU computes them alike. So each GPU keeps its own draws, and cpu(0) copies take
  // the values of the first GPU copy. Every context has drawn, so the generators stay in step.
  const auto source = std::find_if(arrays.begin(), arrays.end(), [](const NDArray& a) { return a.context().is_gpu(); });
  if (source == arrays.end()) return;
  for (const NDArray& a : arrays) {
    if (a.context().is_gpu() || a.is(*source)) continue;
    NDArray target = a;
    source->copyto(target);
  }
}

}  // namespace mx::nd::random
