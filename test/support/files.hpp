#pragma once
// Files the tests write: temporary directories, whole files as bytes, and the CRC-32 that zlib
// and the parameter files use (to forge files whose checksum is right but whose contents are not).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ndg_test {

// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  // The directory's name is `prefix` followed by the process id, a time stamp and a counter.
  explicit TempDir(const std::string& prefix = "ndgluon_test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// One float32 array on cpu(0) in MXNet's NDArray file.
struct MXNetRecord {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};
// The bytes MXNet's nd.save writes for a dict of these arrays (MXNet's save_parameters, export),
// built field by field from its documented layout (Note [MXNet's NDArray file] in
// ndarray/io/ndarray_file.cpp): list magic 0x112, reserved 0, the records (V2 magic 0xF993FAC9,
// dense storage, ndim, int64 extents, cpu(0), float32, the data), then the names.
std::string mxnet_ndarray_file(const std::vector<MXNetRecord>& records);

// zlib's CRC-32 (polynomial 0xEDB88320); the tests do not link zlib.
std::uint32_t crc32(const std::string& bytes);

}  // namespace ndg_test
