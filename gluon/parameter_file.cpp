#include "gluon/parameter_file.hpp"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "ndarray/creation.hpp"

namespace mx::gluon {
namespace {

constexpr char kMagic[8] = {'N', 'D', 'G', 'L', 'U', 'O', 'N', 'P'};
constexpr std::uint32_t kVersion = 1;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::uint32_t crc32_of(const char* data, std::size_t size) {
  return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data),
                                          static_cast<uInt>(size)));
}

// Reads fields from a byte buffer, throwing FileError with the position when it runs out.
class Reader {
 public:
  Reader(const std::string& path, const std::string& bytes, std::size_t end) : path_(path), bytes_(bytes), end_(end) {}
  template <class T>
  T get(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
  const char* take(std::size_t n, const char* what) {
    if (n > end_ - pos_) {
      throw FileError("'" + path_ + "' is truncated: needed " + std::to_string(n) + " bytes for " + what +
                      " at byte " + std::to_string(pos_) + ", but the data ends at byte " + std::to_string(end_));
    }
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::size_t pos() const { return pos_; }

 private:
  const std::string& path_;
  const std::string& bytes_;
  std::size_t end_;
  std::size_t pos_ = 0;
};

}  // namespace

void save_parameter_file(const std::string& path, const std::vector<std::pair<std::string, nd::NDArray>>& entries) {
  std::string out(kMagic, sizeof(kMagic));
  put(out, kVersion);
  put(out, static_cast<std::uint32_t>(entries.size()));
  for (const auto& [name, array] : entries) {
    put(out, static_cast<std::uint32_t>(name.size()));
    out += name;
    put(out, static_cast<std::uint8_t>(array.dtype()));
    put(out, static_cast<std::uint32_t>(array.ndim()));
    for (auto d : array.shape()) put(out, static_cast<std::int64_t>(d));
    const std::uint64_t bytes = static_cast<std::uint64_t>(array.size()) * dtype_size(array.dtype());
    put(out, bytes);
    const std::size_t at = out.size();
    out.resize(at + bytes);
    const nd::NDArray host = array.copyto(cpu());
    std::memcpy(out.data() + at, host.data(), bytes);
  }
  put(out, crc32_of(out.data(), out.size()));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!file) throw FileError("save_parameters: cannot write '" + path + "'");
}

std::vector<std::pair<std::string, nd::NDArray>> load_parameter_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw FileError("load_parameters: cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  constexpr std::size_t kMinimum = sizeof(kMagic) + 4 + 4 + 4;
  if (bytes.size() < kMinimum) {
    throw FileError("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                    " bytes, shorter than the smallest parameter file (" + std::to_string(kMinimum) + ")");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw FileError("'" + path + "' is not an ndgluon parameter file (bad magic header)");
  }
  const std::size_t body = bytes.size() - 4;
  Reader reader(path, bytes, body);
  reader.take(sizeof(kMagic), "the magic header");
  const auto version = reader.get<std::uint32_t>("the version");
  if (version != kVersion) {
    throw FileError("'" + path + "' has format version " + std::to_string(version) + "; this ndgluon reads version " +
                    std::to_string(kVersion));
  }
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + body, 4);
  if (stored_crc != crc32_of(bytes.data(), body)) {
    throw FileError("'" + path + "' is corrupted or truncated: its CRC-32 checksum does not match its contents");
  }
  const auto count = reader.get<std::uint32_t>("the entry count");
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto name_size = reader.get<std::uint32_t>("a name length");
    std::string name(reader.take(name_size, "a name"), name_size);
    const auto dtype_code = reader.get<std::uint8_t>("a dtype");
    if (dtype_code > static_cast<std::uint8_t>(DType::uint8)) {
      throw FileError("'" + path + "': parameter '" + name + "' has unknown dtype code " + std::to_string(dtype_code));
    }
    const DType dtype = static_cast<DType>(dtype_code);
    const auto ndim = reader.get<std::uint32_t>("a dimension count");
    if (ndim > 32) throw FileError("'" + path + "': parameter '" + name + "' claims " + std::to_string(ndim) + " dimensions");
    std::vector<std::int64_t> dims;
    for (std::uint32_t d = 0; d < ndim; ++d) dims.push_back(reader.get<std::int64_t>("an extent"));
    const Shape shape(dims);
    const auto data_bytes = reader.get<std::uint64_t>("a byte count");
    if (shape.numel() < 0 || data_bytes != static_cast<std::uint64_t>(shape.numel()) * dtype_size(dtype)) {
      throw FileError("'" + path + "': parameter '" + name + "' of shape " + shape.tuple_str() + " " +
                      dtype_name(dtype) + " claims " + std::to_string(data_bytes) + " bytes");
    }
    const char* data = reader.take(data_bytes, ("the values of '" + name + "'").c_str());
    entries.emplace_back(std::move(name), nd::array(data, dtype, shape, cpu(), dtype));
  }
  if (reader.pos() != body) {
    throw FileError("'" + path + "' has " + std::to_string(body - reader.pos()) + " unexpected bytes after its last entry");
  }
  return entries;
}

}  // namespace mx::gluon
