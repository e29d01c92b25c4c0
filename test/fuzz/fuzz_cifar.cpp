// libFuzzer target: the CIFAR binary readers (vision::detail::read_cifar_records). The first byte
// picks the format (even: CIFAR-10, 1 label byte; odd: CIFAR-100, 2 label bytes, coarse or fine by
// its second bit), the rest is a batch file.
//
// Accepted bytes must give one 32x32x3 image per label, each label in range, each pixel one of
// the record's bytes. Any other outcome than acceptance must be an mx::Error.
#include <cstdint>
#include <string_view>
#include <vector>

#include "context/error.hpp"
#include "gluon/data/vision/cifar.hpp"
#include "test/fuzz/fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool hundred = data[0] & 1, fine = data[0] & 2;
  const int label_bytes = hundred ? 2 : 1, label_index = hundred && fine ? 1 : 0;
  const int classes = !hundred ? 10 : fine ? 100 : 20;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::uint8_t> images;
  std::vector<std::int32_t> labels;
  try {
    mx::gluon::data::vision::detail::read_cifar_records(bytes, label_bytes, label_index, classes, "input", -1, images,
                                                        labels);
  } catch (const mx::Error&) {
    return 0;
  }
  ndg_fuzz::expect(images.size() == labels.size() * 3072, "one image per label");
  ndg_fuzz::expect(labels.size() * (3072 + label_bytes) == bytes.size(), "every record read");
  for (std::size_t r = 0; r < labels.size(); ++r) {
    ndg_fuzz::expect(labels[r] >= 0 && labels[r] < classes, "labels in range");
    const auto* record = reinterpret_cast<const std::uint8_t*>(bytes.data()) + r * (3072 + label_bytes) + label_bytes;
    ndg_fuzz::expect(images[r * 3072 + 3 * 5 + 1] == record[1024 + 5], "pixel 5's green is the green plane's byte 5");
  }
  return 0;
}
