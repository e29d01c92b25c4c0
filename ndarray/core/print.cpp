#include "ndarray/core/print.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

// Note [numpy printing]: format_values reproduces numpy/core/arrayprint.py (NumPy 1.21 and later,
// default print options, legacy=False) for str(x.asnumpy()). Each function below names the numpy
// function it mirrors. Dragon4's digit generation (unique=True) is rebuilt from std::to_chars:
// - the shortest round-trip digits of to_chars(x) are Dragon4's unique digits at the element
//   type's precision (float32 prints 0.1f as 0.1);
// - when those need more than `precision` digits after the '.', Dragon4 stops at the cutoff and
//   rounds the exact binary value, which is to_chars(x, format, precision);
// - min_digits asks for more digits than the unique ones; Dragon4 then prints the exact value's
//   digits, rounded, which is again to_chars(x, format, digits).

namespace mx::nd {
namespace {

// numpy's default print options (np.get_printoptions()).
constexpr int kPrecision = 8;
constexpr std::size_t kThreshold = 1000;
constexpr std::int64_t kEdgeItems = 3;
constexpr std::ptrdiff_t kLineWidth = 75;

// In a list of indices along an axis, the place of numpy's summary_insert "...".
constexpr std::int64_t kSummary = -1;

// ---- Digits of one float, as Dragon4 with unique=True and trim='.' ----

template <class T, class... Format>
std::string to_chars_string(T x, Format... format) {
  std::array<char, 512> buffer;  // enough for any double in fixed notation
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x, format...);
  return std::string(buffer.data(), result.ptr);
}

// float16 and bfloat16: with a precision, the digits of the exact value (a float holds it); without
// one, the fewest significant digits that read back as the same 16-bit value, as numpy's Dragon4
// prints float16.
template <class H, std::enable_if_t<is_half_v<H>, int> = 0>
std::string to_chars_string(H x, std::chars_format format, int precision) {
  return to_chars_string(static_cast<float>(x), format, precision);
}
template <class H, std::enable_if_t<is_half_v<H>, int> = 0>
std::string to_chars_string(H x, std::chars_format format) {
  const float value = static_cast<float>(x);
  if (value == 0 || !std::isfinite(value)) return to_chars_string(value, format);
  for (int digits = 0;; ++digits) {  // digits after the first significant one
    const std::string scientific = to_chars_string(value, std::chars_format::scientific, digits);
    float back = 0;
    std::from_chars(scientific.data(), scientific.data() + scientific.size(), back);
    if (H(back).bits != x.bits) continue;
    if (format == std::chars_format::scientific) return scientific;
    const int exponent = std::stoi(scientific.substr(scientific.find('e') + 1));
    return to_chars_string(value, std::chars_format::fixed, std::max(0, digits - exponent));
  }
}

// Digits after the '.' ("1.25" -> 2, "3" -> 0).
std::size_t fraction_length(const std::string& digits) {
  const auto dot = digits.find('.');
  return dot == std::string::npos ? 0 : digits.size() - dot - 1;
}

// Digits before the '.', sign included.
std::size_t integer_length(const std::string& digits) {
  return std::min(digits.find('.'), digits.size());
}

// Dragon4's trim='.': trailing zeros after the '.' removed, the '.' kept
// ("2.50" -> "2.5", "3" -> "3.").
std::string trim_zeros(std::string digits) {
  if (digits.find('.') == std::string::npos) return digits + '.';
  digits.erase(digits.find_last_not_of('0') + 1);
  return digits;
}

// dragon4_positional(x, precision=8, unique=True, fractional=True, trim='.'): "-12.5", "3.".
template <class T>
std::string positional_digits(T x) {
  std::string digits = to_chars_string(x, std::chars_format::fixed);
  if (fraction_length(digits) > kPrecision) {
    digits = to_chars_string(x, std::chars_format::fixed, kPrecision);
  }
  return trim_zeros(digits);
}

// A float in scientific notation: "-1.5e+10" is mantissa "-1.5", exponent "+10".
struct Scientific {
  std::string mantissa;
  std::string exponent;
};

Scientific split_scientific(const std::string& digits) {
  const auto e = digits.find('e');
  return {digits.substr(0, e), digits.substr(e + 1)};
}

// dragon4_scientific(x, precision=8, unique=True, trim='.'): mantissa "1.5", "2.".
template <class T>
Scientific scientific_digits(T x) {
  Scientific parts = split_scientific(to_chars_string(x, std::chars_format::scientific));
  if (fraction_length(parts.mantissa) > kPrecision) {
    parts = split_scientific(to_chars_string(x, std::chars_format::scientific, kPrecision));
  }
  parts.mantissa = trim_zeros(parts.mantissa);
  return parts;
}

// The same with min_digits: at least that many digits after the '.' ("2.0" for 2 and 1).
template <class T>
Scientific scientific_digits(T x, int min_digits) {
  Scientific parts = scientific_digits(x);
  if (fraction_length(parts.mantissa) < static_cast<std::size_t>(min_digits)) {
    parts = split_scientific(to_chars_string(x, std::chars_format::scientific, min_digits));
  }
  return parts;
}

std::string pad_left(const std::string& s, std::size_t width, char fill = ' ') {
  return std::string(width > s.size() ? width - s.size() : 0, fill) + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

// ---- Element formatters ----

// numpy's FloatingFormat with floatmode='maxprec', sign='-', suppress=False: every element is
// padded to the same width, with the '.' of all elements lined up ("[ 1.  -2.5]").
template <class T>
class FloatingFormat {
 public:
  explicit FloatingFormat(const std::vector<T>& data) { fill_format(data); }

  // FloatingFormat.__call__
  std::string operator()(T x) const {
    if (!std::isfinite(x)) {
      const std::string word = std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
      return pad_left(word, pad_left_ + pad_right_ + 1);
    }
    if (exp_format_) {
      const Scientific parts = scientific_digits(x, precision_);
      return pad_left(parts.mantissa, pad_left_ + fraction_length(parts.mantissa) + 1) + 'e' +
             parts.exponent[0] + pad_left(parts.exponent.substr(1), exp_size_, '0');
    }
    const std::string digits = positional_digits(x);
    return pad_right(pad_left(digits, pad_left_ + fraction_length(digits) + 1),
                     pad_left_ + pad_right_ + 1);
  }

 private:
  // FloatingFormat.fillFormat: the notation and the paddings, from a first pass over the data.
  void fill_format(const std::vector<T>& data) {
    std::vector<T> finite;
    bool has_negative_inf = false;
    for (T x : data) {
      if (std::isfinite(x)) finite.push_back(x);
      if (std::isinf(x) && x < 0) has_negative_inf = true;
    }
    exp_format_ = needs_exponential(finite);
    if (exp_format_) {
      fill_exponential(finite);
    } else {
      fill_positional(finite);
    }
    if (finite.size() != data.size()) {
      // Widen the integer part so that "nan", "inf" and "-inf" fit.
      const std::ptrdiff_t offset = static_cast<std::ptrdiff_t>(pad_right_) + 1;
      const std::ptrdiff_t inf_length = has_negative_inf ? 4 : 3;
      pad_left_ = static_cast<std::size_t>(
          std::max({static_cast<std::ptrdiff_t>(pad_left_), 3 - offset, inf_length - offset}));
    }
  }

  // Exponential notation when the non-zero finite magnitudes reach 1e8, go below 1e-4, or
  // span more than three decades. The ratio is computed in T, as numpy divides two T scalars,
  // and compared in double, as NumPy 1.x compares a T scalar with a Python float.
  static bool needs_exponential(const std::vector<T>& finite) {
    std::vector<T> magnitudes;
    for (T x : finite) {
      if (x != 0) magnitudes.push_back(static_cast<T>(std::abs(x)));
    }
    if (magnitudes.empty()) return false;
    const auto [min_it, max_it] = std::minmax_element(magnitudes.begin(), magnitudes.end());
    const T max_val = *max_it;
    const T min_val = *min_it;
    const T ratio = static_cast<T>(max_val / min_val);
    return max_val >= 1e8 || min_val < 1e-4 || ratio > 1000.0;
  }

  void fill_exponential(const std::vector<T>& finite) {
    std::size_t exponent_length = 0;
    for (T x : finite) {
      const Scientific parts = scientific_digits(x);
      exponent_length = std::max(exponent_length, parts.exponent.size());
      precision_ = std::max(precision_, static_cast<int>(fraction_length(parts.mantissa)));
      pad_left_ = std::max(pad_left_, integer_length(parts.mantissa));
    }
    exp_size_ = exponent_length - 1;  // the sign is not a digit
    pad_right_ = exp_size_ + 2 + static_cast<std::size_t>(precision_);
  }

  void fill_positional(const std::vector<T>& finite) {
    for (T x : finite) {
      const std::string digits = positional_digits(x);
      pad_left_ = std::max(pad_left_, integer_length(digits));
      pad_right_ = std::max(pad_right_, fraction_length(digits));
    }
  }

  bool exp_format_ = false;
  int precision_ = 0;          // exponential: digits after the '.' of every mantissa
  std::size_t exp_size_ = 0;   // exponential: digits of every exponent (at least 2)
  std::size_t pad_left_ = 0;   // characters before the '.'
  std::size_t pad_right_ = 0;  // characters after the '.'
};

// numpy's IntegerFormat: right-aligned to the longer of str(max) and str(min).
template <class T>
class IntegerFormat {
 public:
  explicit IntegerFormat(const std::vector<T>& data) {
    const auto [min_it, max_it] = std::minmax_element(data.begin(), data.end());
    width_ = std::max(std::to_string(*max_it).size(), std::to_string(*min_it).size());
  }

  std::string operator()(T x) const { return pad_left(std::to_string(x), width_); }

 private:
  std::size_t width_ = 0;
};

// ---- Layout: _leading_trailing and _formatArray ----

// The indices shown along an axis of extent n: all of them, or, when summarising an axis longer
// than 2 * edgeitems, the first and last edgeitems around kSummary.
std::vector<std::int64_t> shown_indices(std::int64_t n, bool summarise) {
  std::vector<std::int64_t> indices;
  const bool show_summary = summarise && n > 2 * kEdgeItems;
  for (std::int64_t i = 0; i < n; ++i) {
    if (show_summary && i == kEdgeItems) {
      indices.push_back(kSummary);
      i = n - kEdgeItems;
    }
    indices.push_back(i);
  }
  return indices;
}

// numpy's _extendLine: starts a new line at the hanging indent when the word would pass
// line_width, unless the line holds nothing but the indent.
void extend_line(std::string& s, std::string& line, const std::string& word,
                 std::ptrdiff_t line_width, const std::string& next_line_prefix) {
  const bool needs_wrap =
      static_cast<std::ptrdiff_t>(line.size() + word.size()) > line_width &&
      line.size() > next_line_prefix.size();
  if (needs_wrap) {
    s += line.substr(0, line.find_last_not_of(' ') + 1) + '\n';
    line = next_line_prefix;
  }
  line += word;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size());
  std::int64_t stride = 1;
  for (std::size_t axis = dims.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= dims[axis];
  }
  return strides;
}

// numpy's _leading_trailing: the elements that a summarised print shows, in row-major order.
template <class T>
void collect_shown(const std::vector<T>& values, const std::vector<std::int64_t>& dims,
                   const std::vector<std::int64_t>& strides, std::size_t axis,
                   std::int64_t offset, std::vector<T>& out) {
  if (axis == dims.size()) {
    out.push_back(values[static_cast<std::size_t>(offset)]);
    return;
  }
  for (std::int64_t i : shown_indices(dims[axis], true)) {
    if (i != kSummary) {
      collect_shown(values, dims, strides, axis + 1, offset + i * strides[axis], out);
    }
  }
}

template <class T>
std::vector<T> leading_trailing(const std::vector<T>& values, const Shape& shape) {
  std::vector<T> out;
  collect_shown(values, shape.dims(), row_major_strides(shape.dims()), 0, 0, out);
  return out;
}

// numpy's _formatArray: row-major values with their shape, printed with nested brackets.
template <class T, class Format>
class ArrayPrinter {
 public:
  ArrayPrinter(const std::vector<T>& values, const Shape& shape, bool summarise,
               const Format& format)
      : values_(values), dims_(shape.dims()), strides_(row_major_strides(dims_)),
        summarise_(summarise), format_(format) {}

  // _formatArray's recurser, from the outermost axis with hanging indent " " and width 75.
  std::string format() const { return recurse(0, 0, " ", kLineWidth); }

 private:
  std::string element(std::int64_t offset) const {
    return format_(values_[static_cast<std::size_t>(offset)]);
  }

  std::string recurse(std::size_t axis, std::int64_t offset, const std::string& hanging_indent,
                      std::ptrdiff_t width) const {
    if (axis == dims_.size()) return element(offset);
    const std::string body = axis + 1 == dims_.size()
                                 ? format_row(axis, offset, hanging_indent, width)
                                 : format_rows(axis, offset, hanging_indent, width);
    // Remove the hanging indent of the first line and wrap in [].
    return '[' + body.substr(hanging_indent.size()) + ']';
  }

  // The last axis: elements separated by ' ', wrapped when a line would pass the width
  // less one for the closing ']'.
  std::string format_row(std::size_t axis, std::int64_t offset, const std::string& hanging_indent,
                         std::ptrdiff_t width) const {
    const std::vector<std::int64_t> indices = shown_indices(dims_[axis], summarise_);
    std::string s;
    std::string line = hanging_indent;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const std::int64_t i = indices[k];
      const std::string word = i == kSummary ? "..." : element(offset + i * strides_[axis]);
      extend_line(s, line, word, width - 1, hanging_indent);
      if (k + 1 < indices.size()) line += ' ';
    }
    return s + line;
  }

  // Outer axes: one sub-array per line, and one blank line more per axis below the next.
  std::string format_rows(std::size_t axis, std::int64_t offset, const std::string& hanging_indent,
                          std::ptrdiff_t width) const {
    const std::vector<std::int64_t> indices = shown_indices(dims_[axis], summarise_);
    const std::string line_separator(dims_.size() - axis - 1, '\n');
    std::string s;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const std::int64_t i = indices[k];
      s += hanging_indent;
      s += i == kSummary ? "..."
                         : recurse(axis + 1, offset + i * strides_[axis], hanging_indent + ' ',
                                   width - 1);
      if (k + 1 < indices.size()) s += line_separator;
    }
    return s;
  }

  const std::vector<T>& values_;
  const std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> strides_;  // in elements
  bool summarise_;
  const Format& format_;
};

template <class T>
using FormatFor =
    std::conditional_t<mx::is_float_v<T>, FloatingFormat<T>, IntegerFormat<T>>;

// numpy's _array2string for the non-empty row-major values of an array of the given shape. A
// summarised print fits the element format to the shown elements only. A 0-d array prints its
// one element, as np.array2string does ("1.").
template <class T>
std::string array2string(const std::vector<T>& values, const Shape& shape) {
  const bool summarise = values.size() > kThreshold;
  const FormatFor<T> format =
      summarise ? FormatFor<T>(leading_trailing(values, shape)) : FormatFor<T>(values);
  return ArrayPrinter<T, FormatFor<T>>(values, shape, summarise, format).format();
}

}  // namespace

std::string format_values(const NDArray& x) {
  if (x.size() == 0) return "[]";  // numpy prints every empty array so, whatever its shape
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return array2string(x.asvector<T>(), x.shape());
  });
}

std::ostream& operator<<(std::ostream& os, const NDArray& x) {
  return os << '\n'
            << format_values(x) << "\n<NDArray " << x.shape().str() << " @" << x.context().str()
            << '>';
}

}  // namespace mx::nd
