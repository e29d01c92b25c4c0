#pragma once
// mx::gluon::utils: splitting a batch over contexts for data-parallel training, as gluon.utils.
//
//   auto xs = gluon::utils::split_and_load(x, mx::try_all_gpus());   // one slice per GPU
#include <cstdint>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::gluon::utils {

// data split into num_slice slices along batch_axis, as MXNet's split_data. With even_split the
// extent must divide evenly (mx::ValueError otherwise); without it the first (extent % num_slice)
// slices get one more element. Slices along axis 0 are views; other axes are copied. Throws
// mx::ValueError when there are fewer elements than slices, mx::IndexError for a bad axis.
std::vector<nd::NDArray> split_data(const nd::NDArray& data, int num_slice, int batch_axis = 0,
                                    bool even_split = true);

// split_data over ctx_list.size() slices, slice i moved to ctx_list[i] (as_in_context: a slice
// already there is not copied). One context: the whole batch, moved there.
std::vector<nd::NDArray> split_and_load(const nd::NDArray& data, const std::vector<Context>& ctx_list,
                                        int batch_axis = 0, bool even_split = true);

}  // namespace mx::gluon::utils
