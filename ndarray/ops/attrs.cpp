#include "ndarray/ops/attrs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "context/error.hpp"

namespace mx::op {
namespace {

std::string trimmed(const std::string& text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  const auto first = std::find_if_not(text.begin(), text.end(), space);
  const auto last = std::find_if_not(text.rbegin(), text.rend(), space).base();
  return first < last ? std::string(first, last) : std::string();
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The whole of text as a T by from_chars (nothing before or after).
template <class T>
std::optional<T> whole(const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, v);
  if (error != std::errc() || at != end) return std::nullopt;
  return v;
}

// The items of a tuple: "(a, b)", "[a,b]", "(a,)", "a"; none for "()", "[]", "" and "None". A
// trailing comma is allowed, an empty item is not.
std::optional<std::vector<std::string>> tuple_items(const std::string& raw) {
  std::string text = trimmed(raw);
  if (text == "None") return std::vector<std::string>{};
  if (!text.empty() && (text.front() == '(' || text.front() == '[')) {
    if (text.back() != (text.front() == '(' ? ')' : ']')) return std::nullopt;
    text = trimmed(text.substr(1, text.size() - 2));
  }
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    items.push_back(trimmed(text.substr(begin, comma - begin)));
    if (items.back().empty()) return std::nullopt;
    begin = comma + 1;
  }
  return items;
}

template <class T>
std::optional<std::vector<T>> parse_items(const std::string& text, std::optional<T> (*parse)(const std::string&)) {
  const auto items = tuple_items(text);
  if (!items) return std::nullopt;
  std::vector<T> values;
  for (std::string item : *items) {
    if (item.size() > 1 && item.back() == 'L') item.pop_back();  // Python 2's long: "(3L, 3L)"
    const std::optional<T> v = parse(item);
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  return values;
}

// "None": MXNet's unset optional attribute.
bool is_none_text(const std::string* text) { return text && trimmed(*text) == "None"; }

bool hidden(const std::string& name) {
  return name.size() > 4 && name.compare(0, 2, "__") == 0 && name.compare(name.size() - 2, 2, "__") == 0;
}

}  // namespace

std::optional<std::vector<std::int64_t>> parse_tuple(const std::string& text) { return parse_items(text, &parse_int); }

std::optional<std::vector<double>> parse_real_tuple(const std::string& text) { return parse_items(text, &parse_real); }

std::optional<bool> parse_bool(const std::string& text) {
  const std::string t = lowercase(trimmed(text));
  if (t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  return std::nullopt;
}

std::optional<std::int64_t> parse_int(const std::string& text) { return whole<std::int64_t>(trimmed(text)); }

std::optional<double> parse_real(const std::string& text) { return whole<double>(trimmed(text)); }

std::optional<DType> parse_dtype(const std::string& text) {
  for (std::size_t i = 0; i < kNumDTypes; ++i) {
    if (text == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return std::nullopt;
}

// Python's repr: the shortest digits that read back; scientific notation below 1e-4 and from
// 1e16 on, else positional with at least one decimal.
std::string format_real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto written = [&](std::chars_format format) {
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, v, format).ptr);
  };
  const std::string scientific = written(std::chars_format::scientific);
  const int exponent = std::atoi(scientific.c_str() + scientific.find('e') + 1);
  if (exponent < -4 || exponent >= 16) return scientific;
  const std::string fixed = written(std::chars_format::fixed);
  return fixed.find('.') == std::string::npos ? fixed + ".0" : fixed;
}

const char* format_bool(bool v) { return v ? "True" : "False"; }

// --- AttrReader -----------------------------------------------------------------------------------

AttrReader::AttrReader(std::string op, const AttrList& attrs)
    : op_(std::move(op)), attrs_(attrs), read_(attrs.size(), false) {}

const std::string* AttrReader::find(const char* name) {
  if (std::find(known_.begin(), known_.end(), name) == known_.end()) known_.emplace_back(name);
  const std::string* text = nullptr;
  for (std::size_t i = 0; i < attrs_.size(); ++i) {
    if (attrs_[i].first != name) continue;
    if (text) fail(name, "is given twice");
    read_[i] = true;
    text = &attrs_[i].second;
  }
  return text;
}

void AttrReader::fail(const char* name, const std::string& why) const {
  for (const auto& [key, text] : attrs_) {
    if (key == name) throw ValueError(op_ + ": attribute " + name + "=\"" + text + "\" " + why);
  }
  throw ValueError(op_ + ": attribute " + name + " " + why);
}

template <class T>
T AttrReader::read(const char* name, std::optional<T> fallback, std::optional<T> (*parse)(const std::string&),
                   const char* kind) {
  const std::string* text = find(name);
  if (!text || is_none_text(text)) {
    if (!fallback) fail(name, "is required: MXNet gives it no default");
    return *fallback;
  }
  const std::optional<T> v = parse(*text);
  if (!v) fail(name, std::string("is not ") + kind);
  return *v;
}

std::int64_t AttrReader::integer(const char* name) { return read<std::int64_t>(name, {}, &parse_int, "an integer"); }
std::int64_t AttrReader::integer(const char* name, std::int64_t fallback) {
  return read<std::int64_t>(name, fallback, &parse_int, "an integer");
}

int AttrReader::axis(const char* name) { return narrow(name, integer(name)); }
int AttrReader::axis(const char* name, int fallback) { return narrow(name, integer(name, fallback)); }

int AttrReader::narrow(const char* name, std::int64_t v) const {
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) fail(name, "is out of range");
  return static_cast<int>(v);
}

double AttrReader::real(const char* name) { return read<double>(name, {}, &parse_real, "a number"); }
double AttrReader::real(const char* name, double fallback) {
  return read<double>(name, fallback, &parse_real, "a number");
}

bool AttrReader::boolean(const char* name, bool fallback) {
  return read<bool>(name, fallback, &parse_bool, "a boolean (True, False, 1 or 0)");
}

std::vector<std::int64_t> AttrReader::tuple(const char* name) {
  return read<std::vector<std::int64_t>>(name, {}, &parse_tuple, "a tuple of integers");
}
std::vector<std::int64_t> AttrReader::tuple(const char* name, const std::vector<std::int64_t>& fallback) {
  return read<std::vector<std::int64_t>>(name, fallback, &parse_tuple, "a tuple of integers");
}

std::vector<double> AttrReader::real_tuple(const char* name) {
  return read<std::vector<double>>(name, {}, &parse_real_tuple, "a tuple of numbers");
}
std::vector<double> AttrReader::real_tuple(const char* name, const std::vector<double>& fallback) {
  return read<std::vector<double>>(name, fallback, &parse_real_tuple, "a tuple of numbers");
}

std::string AttrReader::text(const char* name, const std::string& fallback) {
  const std::string* text = find(name);
  return !text || is_none_text(text) ? fallback : *text;
}

std::string AttrReader::choice(const char* name, const char* fallback, std::initializer_list<const char*> valid) {
  const std::string value = text(name, fallback);
  std::string names;
  for (const char* v : valid) {
    if (value == v) return value;
    names += std::string(names.empty() ? "" : ", ") + "\"" + v + "\"";
  }
  fail(name, "is not one that ndgluon computes: " + names);
}

DType AttrReader::dtype(const char* name) {
  return read<DType>(name, {}, &parse_dtype, "a dtype of ndgluon (float32, float64, float16, bfloat16, int32, int64, uint8)");
}
DType AttrReader::dtype(const char* name, DType fallback) {
  return read<DType>(name, fallback, &parse_dtype,
                     "a dtype of ndgluon (float32, float64, float16, bfloat16, int32, int64, uint8)");
}

bool AttrReader::is_none(const char* name) { return is_none_text(find(name)); }

void AttrReader::ignore(std::initializer_list<const char*> names) {
  for (const char* name : names) find(name);
}

void AttrReader::finish() const {
  for (std::size_t i = 0; i < attrs_.size(); ++i) {
    if (read_[i] || hidden(attrs_[i].first)) continue;
    std::string known;
    for (const std::string& name : known_) known += (known.empty() ? "" : ", ") + name;
    throw ValueError(op_ + ": unknown attribute " + attrs_[i].first + "=\"" + attrs_[i].second + "\"" +
                     (known.empty() ? "; the op has no attributes" : "; the op's are " + known));
  }
}

void read_layout(AttrReader& a, std::size_t spatial) {
  const std::string layout = a.text("layout", "None");
  const char* channels_first[] = {"NCW", "NCHW", "NCDHW"};
  for (std::size_t s = 1; s <= 3; ++s) {
    if (layout == "None" || ((spatial == 0 || spatial == s) && layout == channels_first[s - 1])) return;
  }
  a.fail("layout", spatial >= 1 && spatial <= 3
                       ? std::string("is not supported: ndgluon computes ") + channels_first[spatial - 1] + " only"
                       : std::string("is not supported: ndgluon computes NCW, NCHW and NCDHW only"));
}

std::string read_conv_layout(AttrReader& a) {
  const std::string layout = a.text("layout", "None");
  return layout == "None" ? "" : layout;
}

bool channels_last_layout(const char* op, const std::string& layout, int spatial) {
  static const char* first[] = {"NCW", "NCHW", "NCDHW"};
  static const char* last[] = {"NWC", "NHWC", "NDHWC"};
  const int s = std::clamp(spatial, 1, 3) - 1;
  if (layout.empty() || layout == first[s]) return false;
  if (layout == last[s]) return true;
  throw ValueError(std::string(op) + ": layout \"" + layout + "\" does not fit a " + std::to_string(spatial) +
                   "-D kernel; valid: \"" + first[s] + "\" or \"" + last[s] + "\"");
}

void read_output_attrs(AttrReader& a) {
  a.ignore({"shape", "ctx"});
  if (a.text("dtype", "None") != "None") a.dtype("dtype");
}

}  // namespace mx::op
