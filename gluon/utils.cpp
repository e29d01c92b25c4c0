#include "gluon/utils.hpp"

#include <charconv>
#include <cmath>
#include <iostream>
#include <string>

#include "context/error.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/reduce.hpp"

namespace mx::gluon::utils {

std::vector<nd::NDArray> split_data(const nd::NDArray& data, int num_slice, int batch_axis, bool even_split) {
  const std::string args = "data of shape " + data.shape().tuple_str() + ", num_slice=" + std::to_string(num_slice) +
                           ", batch_axis=" + std::to_string(batch_axis);
  if (data.is_none()) throw ValueError("split_data: data is a null array");
  if (batch_axis < 0 || batch_axis >= data.ndim()) {
    throw IndexError("split_data: batch_axis out of range for " + args);
  }
  if (num_slice < 1) throw ValueError("split_data: num_slice must be at least 1, for " + args);
  const std::int64_t size = data.shape()[batch_axis];
  if (size < num_slice) throw ValueError("split_data: too many slices for " + args);
  if (even_split && size % num_slice != 0) {
    throw ValueError("split_data: " + args + " cannot be evenly split into " + std::to_string(num_slice) +
                     " slices; use a batch size that is a multiple of " + std::to_string(num_slice) +
                     " or even_split=false");
  }
  if (num_slice == 1) return {data};
  const std::int64_t each = size / num_slice, extras = size % num_slice;
  std::vector<nd::NDArray> slices;
  std::int64_t begin = 0;
  for (int i = 0; i < num_slice; ++i) {
    const std::int64_t end = begin + each + (i < extras ? 1 : 0);
    slices.push_back(batch_axis == 0 ? data.slice(begin, end) : nd::slice_axis(data, batch_axis, begin, end));
    begin = end;
  }
  return slices;
}

std::vector<nd::NDArray> split_and_load(const nd::NDArray& data, const std::vector<Context>& ctx_list,
                                        int batch_axis, bool even_split) {
  if (ctx_list.empty()) throw ValueError("split_and_load: ctx_list is empty");
  if (ctx_list.size() == 1) return {data.as_in_context(ctx_list[0])};
  std::vector<nd::NDArray> slices = split_data(data, static_cast<int>(ctx_list.size()), batch_axis, even_split);
  for (std::size_t i = 0; i < slices.size(); ++i) slices[i] = slices[i].as_in_context(ctx_list[i]);
  return slices;
}

double clip_global_norm(const std::vector<nd::NDArray>& arrays, double max_norm, bool check_isfinite) {
  constexpr const char* op = "clip_global_norm";
  if (arrays.empty()) throw ValueError("clip_global_norm: arrays is empty; give the arrays (gradients) to clip");
  if (!(std::isfinite(max_norm) && max_norm > 0)) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof(text), max_norm).ptr;
    throw ValueError("clip_global_norm: max_norm must be a finite number > 0, got " + std::string(text, end));
  }
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const nd::NDArray& x = arrays[i];
    nd::check_not_none(op, x);
    if (!is_floating(x.dtype())) {
      throw DTypeError("clip_global_norm: array " + std::to_string(i) + " " + nd::describe(x) +
                       " is not floating-point; the norm is that of gradients");
    }
    if (x.context() != arrays[0].context()) {
      throw ContextMismatch("clip_global_norm: array " + std::to_string(i) + " " + nd::describe(x) +
                            " is on another context than array 0 " + nd::describe(arrays[0]) +
                            ". Clip each context's arrays with a call of their own (after Trainer::allreduce_grads "
                            "every context holds the same summed gradients, so one list over several contexts "
                            "would count each gradient once per context)");
    }
  }
  // Each array's sum of squares, queued on the context; then their sum, read back once.
  std::vector<nd::NDArray> squares;
  for (const nd::NDArray& x : arrays) {
    if (x.size() == 0) continue;
    nd::NDArray flat = (x.is_contiguous() ? x : x.copy()).reshape({x.size()});
    if (is_half(flat.dtype())) flat = flat.astype(DType::float32);
    squares.push_back(nd::dot(flat, flat).astype(DType::float64));
  }
  const double sum = squares.empty() ? 0.0 : nd::sum(nd::concat(squares, 0)).asscalar<double>();
  const double total = std::sqrt(sum);
  if (check_isfinite && !std::isfinite(total)) {
    std::cerr << "Warning: clip_global_norm: nan or inf is detected. Clipping results will be undefined.\n";
  }
  // MXNet's min(max_norm / (total + 1e-8), 1): a scale of 1 changes nothing, a nan one everything.
  const double scale = max_norm / (total + 1e-8);
  if (!(scale >= 1)) {
    for (const nd::NDArray& x : arrays) {
      nd::NDArray target = x;
      target *= scale;
    }
  }
  return total;
}

}  // namespace mx::gluon::utils
