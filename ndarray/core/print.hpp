#pragma once
// Printing as MXNet does: a blank line, the values as NumPy prints them, then
// "<NDArray 2x3 @gpu(0)>". Large arrays are summarised with "..." past NumPy's threshold.
#include <iosfwd>
#include <string>

#include "ndarray/core/array.hpp"

namespace mx::nd {

std::ostream& operator<<(std::ostream& os, const NDArray& x);

// The values alone, as numpy's str(x.asnumpy()): "[[1. 2.]\n [3. 4.]]".
std::string format_values(const NDArray& x);

}  // namespace mx::nd
