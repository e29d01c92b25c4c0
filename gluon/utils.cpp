#include "gluon/utils.hpp"

#include <string>

#include "context/error.hpp"
#include "ndarray/ops/manipulation.hpp"

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

}  // namespace mx::gluon::utils
