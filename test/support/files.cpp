#include "test/support/files.hpp"

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <system_error>

#include <unistd.h>

namespace ndg_test {

TempDir::TempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  path_ = std::filesystem::temp_directory_path() /
          (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(stamp) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

std::string mxnet_ndarray_file(const std::vector<MXNetRecord>& records) {
  std::string out;
  const auto put = [&](auto value) { out.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  put(std::uint64_t{0x112});
  put(std::uint64_t{0});
  put(static_cast<std::uint64_t>(records.size()));
  for (const MXNetRecord& r : records) {
    put(std::uint32_t{0xF993FAC9});                  // V2 magic
    put(std::int32_t{0});                            // dense storage
    put(static_cast<std::int32_t>(r.shape.size()));  // ndim
    for (std::int64_t d : r.shape) put(d);           // extents
    put(std::int32_t{1});                            // cpu
    put(std::int32_t{0});                            // device 0
    put(std::int32_t{0});                            // float32
    out.append(reinterpret_cast<const char*>(r.values.data()), r.values.size() * sizeof(float));
  }
  put(static_cast<std::uint64_t>(records.size()));
  for (const MXNetRecord& r : records) {
    put(static_cast<std::uint64_t>(r.name.size()));
    out += r.name;
  }
  return out;
}

}  // namespace ndg_test
