#pragma once
// MXNet's symbol-JSON attribute texts, read and written: what an OpDef's parse_attrs and attrs share.
// Internal.
//
//   tuples    "(3, 3)", "[3,3]", "(3,)", "3"; "()" and "None" are empty
//   booleans  "True", "False", "true", "false", "1", "0"
//   integers  "-1", "64";  reals "1e-05", "0.9", "2", "inf", "-inf", "nan"
//   "None"    an optional attribute left unset (MXNet's dmlc::optional)
//
// An op's parse_attrs reads its attributes through an AttrReader: each read names the attribute
// and gives MXNet's default when it is absent (or "None"), and finish() refuses what no read
// asked for, so that an attribute ndgluon does not know is never dropped in silence.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/core/dtype.hpp"

namespace mx::op {

using AttrList = std::vector<std::pair<std::string, std::string>>;

// Each gives nullopt for a text that is not of its kind.
std::optional<std::vector<std::int64_t>> parse_tuple(const std::string& text);
std::optional<std::vector<double>> parse_real_tuple(const std::string& text);
std::optional<bool> parse_bool(const std::string& text);
std::optional<std::int64_t> parse_int(const std::string& text);
std::optional<double> parse_real(const std::string& text);
std::optional<DType> parse_dtype(const std::string& text);  // "float32", as dtype_name writes it

// The shortest text that reads back as v, as Python's repr writes a float (and so MXNet's
// exported attributes): "0.9", "1e-05", "2.0", "inf", "nan".
std::string format_real(double v);
const char* format_bool(bool v);  // "True" or "False"

// One node's attributes, for an op's parse_attrs. Reads without a fallback are of attributes that
// MXNet requires. Every failure is an mx::ValueError naming the op, the attribute and its text.
class AttrReader {
 public:
  AttrReader(std::string op, const AttrList& attrs);

  std::int64_t integer(const char* name);
  std::int64_t integer(const char* name, std::int64_t fallback);
  int axis(const char* name);  // an integer that fits an int
  int axis(const char* name, int fallback);
  double real(const char* name);
  double real(const char* name, double fallback);
  bool boolean(const char* name, bool fallback);
  std::vector<std::int64_t> tuple(const char* name);
  std::vector<std::int64_t> tuple(const char* name, const std::vector<std::int64_t>& fallback);
  std::vector<double> real_tuple(const char* name);
  std::vector<double> real_tuple(const char* name, const std::vector<double>& fallback);
  std::string text(const char* name, const std::string& fallback);
  // One of `valid`, the values ndgluon computes (a subset of MXNet's enum).
  std::string choice(const char* name, const char* fallback, std::initializer_list<const char*> valid);
  DType dtype(const char* name);
  DType dtype(const char* name, DType fallback);
  // Whether the attribute is given as "None".
  bool is_none(const char* name);
  // Attributes accepted whatever their text: those that do not change the result.
  void ignore(std::initializer_list<const char*> names);
  // mx::ValueError for an attribute that no read asked for. NNVM's hidden attributes ("__shape__",
  // "__lr_mult__", "__profiler_scope__", ...) annotate the graph and are not the op's: skipped.
  void finish() const;
  // mx::ValueError "<op>: attribute <name>=\"<text>\" <why>".
  [[noreturn]] void fail(const char* name, const std::string& why) const;

 private:
  template <class T>
  T read(const char* name, std::optional<T> fallback, std::optional<T> (*parse)(const std::string&),
         const char* kind);
  const std::string* find(const char* name);
  int narrow(const char* name, std::int64_t v) const;

  std::string op_;
  const AttrList& attrs_;
  std::vector<bool> read_;            // per attribute: asked for
  std::vector<std::string> known_;    // the names asked for, for the message of an unknown one
};

// MXNet's layout attribute of a convolution or pooling with `spatial` axes (0: not known, any):
// absent, "None", or channels first (NCW, NCHW, NCDHW), which is what ndgluon computes; a
// channels-last layout (NWC, NHWC, NDHWC) is refused.
void read_layout(AttrReader& a, std::size_t spatial);
// Convolution's layout attribute, as ConvolutionOptions::layout reads it: "" for absent or "None".
std::string read_conv_layout(AttrReader& a);
// Whether layout ("" or one of NCW/NCHW/NCDHW/NWC/NHWC/NDHWC) is channels last, for a window of
// `spatial` axes; mx::ValueError naming op, the layout and the valid ones otherwise.
bool channels_last_layout(const char* op, const std::string& layout, int spatial);

// shape, ctx and dtype of an op without inputs (_full, _arange, the random draws): the output
// array that the caller allocates from them carries them (invoke_into checks it), so they are
// accepted; a dtype ndgluon has no arrays of is refused.
void read_output_attrs(AttrReader& a);

}  // namespace mx::op
