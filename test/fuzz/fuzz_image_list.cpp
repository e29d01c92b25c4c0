// libFuzzer target: im2rec's .lst reader (mx::im2rec::parse_list, which ImageListDataset and
// ndgluon-im2rec read lists with). The input is the text of a list.
//
// A list the reader accepts must survive being written as im2rec.py writes it (format_list) and
// read again: the same indices, paths and label counts, each label within the 6 decimals of "%f"
// (or the same infinity or NaN). Any other outcome than acceptance must be an mx::Error; a crash, a
// leak or an allocation beyond -rss_limit_mb is a finding.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "context/error.hpp"
#include "ndarray/io/im2rec.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

bool same_label(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  // "%f" rounds to 6 decimals; reading that back gives the float nearest to it.
  return std::abs(double(a) - double(b)) <= 1.0000001e-6 * std::max(1.0, std::abs(double(a)) * 1e-6);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<mx::im2rec::ListItem> items;
  try {
    items = mx::im2rec::parse_list(text, "fuzz.lst");
  } catch (const mx::Error&) {
    return 0;
  }
  const std::string written = mx::im2rec::format_list(items);
  std::vector<mx::im2rec::ListItem> again;
  try {
    again = mx::im2rec::parse_list(written, "written.lst");
  } catch (const mx::Error&) {
    ndg_fuzz::expect(false, "a list written by format_list reads back");
  }
  ndg_fuzz::expect(again.size() == items.size(), "as many items read back as written");
  for (std::size_t i = 0; i < items.size(); ++i) {
    ndg_fuzz::expect(again[i].index == items[i].index, "the same index");
    ndg_fuzz::expect(again[i].path == items[i].path, "the same path");
    ndg_fuzz::expect(!items[i].labels.empty() && again[i].labels.size() == items[i].labels.size(), "the same labels");
    for (std::size_t k = 0; k < items[i].labels.size(); ++k) {
      ndg_fuzz::expect(same_label(items[i].labels[k], again[i].labels[k]), "each label within %f's rounding");
    }
  }
  return 0;
}
