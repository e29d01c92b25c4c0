// libFuzzer target: MXNet's RecordIO reader (mx::recordio). The input is a .rec file, read record by
// record, each record unpacked as an IRHeader and payload; or, when it starts with "IDX\n", an .idx
// up to the first NUL byte and the .rec after it, every indexed record read.
//
// Records the reader accepts must survive a round trip: written again and read back, the same
// bytes. Any other outcome than acceptance must be an mx::Error; a crash, a leak or an allocation
// beyond -rss_limit_mb is a finding. The files live in memory (memfd), reached by /proc/self/fd.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "context/error.hpp"
#include "ndarray/io/recordio.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

// An in-memory file holding bytes; its path for the reader.
struct MemFile {
  explicit MemFile(std::string_view bytes) : fd(memfd_create("fuzz", 0)) {
    ndg_fuzz::expect(fd >= 0, "memfd_create");
    ndg_fuzz::expect(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()), "write");
  }
  ~MemFile() { close(fd); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
  int fd;
};

void round_trip(const std::vector<std::string>& records) {
  const MemFile out("");
  {
    mx::recordio::MXRecordIO writer(out.path(), 'w');
    for (const std::string& r : records) writer.write(r);
    writer.close();
  }
  mx::recordio::MXRecordIO reader(out.path(), 'r');
  for (const std::string& r : records) {
    const auto again = reader.read();
    ndg_fuzz::expect(again.has_value() && *again == r, "a record written again reads back the same");
  }
  ndg_fuzz::expect(!reader.read().has_value(), "no record more than written");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> records;
  try {
    if (input.starts_with("IDX\n")) {
      const std::size_t nul = input.find('\0');
      if (nul == std::string_view::npos) return 0;
      const MemFile idx(input.substr(4, nul - 4)), rec(input.substr(nul + 1));
      const mx::recordio::MXIndexedRecordIO indexed(idx.path(), rec.path(), 'r');
      for (const std::int64_t key : indexed.keys()) {
        try {
          records.push_back(indexed.read_idx(key));
        } catch (const mx::FileError&) {
        }
      }
    } else {
      const MemFile rec(input);
      mx::recordio::MXRecordIO reader(rec.path(), 'r');
      while (auto r = reader.read()) records.push_back(std::move(*r));
    }
  } catch (const mx::Error&) {
  }
  for (const std::string& r : records) {
    try {
      const auto [header, payload] = mx::recordio::unpack(r);
      ndg_fuzz::expect(mx::recordio::pack(header, payload).size() == r.size() || header.label.size() == 1,
                       "a multi-label record packs back to its size");
    } catch (const mx::FileError&) {
    }
  }
  if (!records.empty()) round_trip(records);
  return 0;
}
