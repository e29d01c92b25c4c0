// libFuzzer target: the parameter-file reader (gluon::load_parameter_bytes), which reads MXNet's
// NDArray files (list magic 0x112; V2, V1 and legacy records) and ndgluon's earlier format.
//
// A file the reader accepts must survive a round trip: written again as MXNet's format and read
// back, it gives the same names, dtypes, shapes and bytes. Any other outcome than acceptance must
// be an mx::Error (FileError, DTypeError, ...): anything else escaping, a crash, a leak or an
// allocation beyond -rss_limit_mb is a finding.
//
// ndgluon's earlier format ends with a CRC-32 that random mutations never match, which would keep
// the fuzzer out of its records: an input whose last byte is odd gets its checksum recomputed
// (over all but that byte) before it is read.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "context/error.hpp"
#include "gluon/parameter_file.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

// All but the last byte, with the CRC-32 of what precedes the last four put in them.
std::string with_checksum(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size - 1);
  if (bytes.size() < 4) return bytes;
  const std::size_t body = bytes.size() - 4;
  const auto crc = static_cast<std::uint32_t>(crc32_z(crc32(0L, Z_NULL, 0), data, body));
  std::memcpy(bytes.data() + body, &crc, 4);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool fix_checksum = size > 8 && std::memcmp(data, "NDGLUONP", 8) == 0 && (data[size - 1] & 1);
  const std::string bytes = fix_checksum ? with_checksum(data, size)
                                         : std::string(reinterpret_cast<const char*>(data), size);
  std::vector<std::pair<std::string, mx::nd::NDArray>> entries;
  try {
    entries = mx::gluon::load_parameter_bytes(bytes, "fuzz.params");
  } catch (const mx::Error&) {
    return 0;
  }
  std::vector<std::string> names;
  std::vector<mx::nd::NDArray> arrays;
  for (auto& [name, array] : entries) {
    names.push_back(name);
    arrays.push_back(array);
  }
  const mx::nd::LoadedArrays again = mx::nd::load_frombuffer(mx::nd::save_tobuffer(names, arrays));
  ndg_fuzz::expect(again.names == names, "names survive a round trip");
  ndg_fuzz::expect(again.arrays.size() == arrays.size(), "the array count survives a round trip");
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const mx::nd::NDArray& a = arrays[i];
    const mx::nd::NDArray& b = again.arrays[i];
    ndg_fuzz::expect(a.is_none() == b.is_none(), "none arrays survive a round trip");
    if (a.is_none()) continue;
    ndg_fuzz::expect(a.dtype() == b.dtype() && a.shape() == b.shape(), "dtype and shape survive a round trip");
    const std::size_t n = static_cast<std::size_t>(a.size()) * mx::dtype_size(a.dtype());
    ndg_fuzz::expect(n == 0 || std::memcmp(a.data(), b.data(), n) == 0, "values survive a round trip");
  }
  return 0;
}
