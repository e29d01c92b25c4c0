#pragma once
// Sorting along an axis, as MXNet's topk, sort and argsort. Ties keep the order of their positions
// along the axis (the first position first, in either direction) and NaN sorts above every number
// (last in ascending order, first in descending). Indices come in the dtype asked for (float32 by
// default, as MXNet's), which must count to the axis' extent exactly.
#include <optional>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// The k largest (or, is_ascend, smallest) elements along axis (absent: of the flattened data), as
// mx.nd.topk; k < 1 selects every element, k above the extent is a mx::ValueError. ret_typ
// "indices" gives their positions (data's shape with extent k on the axis; (k,) without an axis)
// in dtype, "value" their values, "mask" data's shape with 1 where an element is among them, 0
// elsewhere, in data's dtype. "both" is topk_both's. The values' gradient goes back to the selected
// positions; indices and masks have none.
NDArray topk(const NDArray& data, std::optional<int> axis = -1, std::int64_t k = 1,
             const std::string& ret_typ = "indices", bool is_ascend = false, DType dtype = DType::float32);
// topk with ret_typ "both": {values, indices}.
std::vector<NDArray> topk_both(const NDArray& data, std::optional<int> axis = -1, std::int64_t k = 1,
                               bool is_ascend = false, DType dtype = DType::float32);

// data's elements sorted along axis (absent: the flattened data), as mx.nd.sort. The gradient goes
// back to where each element came from.
NDArray sort(const NDArray& data, std::optional<int> axis = -1, bool is_ascend = true);
// The positions that sort data along axis, in dtype, as mx.nd.argsort (no gradient).
NDArray argsort(const NDArray& data, std::optional<int> axis = -1, bool is_ascend = true,
                DType dtype = DType::float32);

}  // namespace mx::nd
