#pragma once
// mx::gluon::utils: splitting a batch over contexts for data-parallel training, and clipping
// gradients by their global norm, as gluon.utils.
//
//   auto xs = gluon::utils::split_and_load(x, mx::try_all_gpus());   // one slice per GPU
//   double norm = gluon::utils::clip_global_norm(grads, 1.0);        // grads scaled to a norm <= 1
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

// MXNet's gluon.utils.clip_global_norm: the 2-norm of all the arrays together (the square root of
// the sum of every element's square), returned; when it exceeds max_norm, every array is scaled in
// place by max_norm / (norm + 1e-8), so that their global norm becomes max_norm. Each array's sum of
// squares is one pass on its context (a dot product; 16-bit arrays in float32), the sums are added
// there in float64, and one value is read back: no wait per array.
//
// A norm that is not finite (an inf or a nan among the gradients): as MXNet, with check_isfinite a
// warning on stderr ("nan or inf is detected. Clipping results will be undefined."), and the arrays
// scaled all the same, by max_norm / (norm + 1e-8): by 0 for an infinite norm (finite elements
// become 0, infinite ones nan), by nan for a nan one. check_isfinite = false leaves out the
// warning; the norm is read back either way (MXNet then returns it as an NDArray, unread).
//
// Throws, scaling nothing: mx::ValueError for an empty list, a none array or a max_norm that is
// not a finite number > 0; mx::DTypeError for an array that is not floating-point;
// mx::ContextMismatch for arrays on different contexts, naming both (MXNet adds the norms of every
// context on the first: after Trainer::allreduce_grads each context holds the same sums, so a list
// over several contexts would count every gradient once per context; clip each context's list).
double clip_global_norm(const std::vector<nd::NDArray>& arrays, double max_norm, bool check_isfinite = true);

}  // namespace mx::gluon::utils
