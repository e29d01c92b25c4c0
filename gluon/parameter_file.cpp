#include "gluon/parameter_file.hpp"

#include <zlib.h>

#include <cstring>

#include "context/file.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::gluon {
namespace {

constexpr char kMagic[8] = {'N', 'D', 'G', 'L', 'U', 'O', 'N', 'P'};
constexpr std::uint32_t kVersion = 1;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::uint32_t crc32_of(const char* data, std::size_t size) {
  return static_cast<std::uint32_t>(crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data), size));
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

// ndgluon's earlier format, whose magic has matched.
std::vector<std::pair<std::string, nd::NDArray>> load_ndgluon_parameter_file(const std::string& path,
                                                                             const std::string& bytes) {
  constexpr std::size_t kMinimum = sizeof(kMagic) + 4 + 4 + 4;
  if (bytes.size() < kMinimum) {
    throw FileError("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                    " bytes, shorter than the smallest parameter file (" + std::to_string(kMinimum) + ")");
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
    // "'net.params': record 0 of 4 ('0.weight')", the prefix of every message about this entry.
    const std::string where = "'" + path + "': record " + std::to_string(i) + " of " + std::to_string(count) +
                              " ('" + name + "')";
    const auto dtype_code = reader.get<std::uint8_t>("a dtype");
    if (dtype_code > static_cast<std::uint8_t>(DType::uint8)) {
      throw FileError(where + " has unknown dtype code " + std::to_string(dtype_code));
    }
    const DType dtype = static_cast<DType>(dtype_code);
    const auto ndim = reader.get<std::uint32_t>("a dimension count");
    if (ndim > 32) throw FileError(where + " claims " + std::to_string(ndim) + " dimensions");
    std::vector<std::int64_t> dims;
    for (std::uint32_t d = 0; d < ndim; ++d) dims.push_back(reader.get<std::int64_t>("an extent"));
    const Shape shape(dims);
    // The claimed extents are checked here, before an array is made of them: a header forged with a
    // valid checksum is a bad file, not a bad shape.
    std::int64_t expected_bytes = static_cast<std::int64_t>(dtype_size(dtype));
    for (std::int64_t d : dims) {
      if (d < 0) throw FileError(where + " claims extents " + shape.tuple_str() + ", and extents cannot be negative");
    }
    for (std::int64_t d : dims) {
      if (__builtin_mul_overflow(expected_bytes, d, &expected_bytes)) {
        throw FileError(where + " claims extents " + shape.tuple_str() + " of " + dtype_name(dtype) +
                        ", more bytes than fit in 63 bits");
      }
    }
    const auto data_bytes = reader.get<std::uint64_t>("a byte count");
    if (data_bytes != static_cast<std::uint64_t>(expected_bytes)) {
      throw FileError(where + " of shape " + shape.tuple_str() + " " + dtype_name(dtype) + " claims " +
                      std::to_string(data_bytes) + " bytes; that shape holds " + std::to_string(expected_bytes));
    }
    const char* data = reader.take(data_bytes, ("the values of '" + name + "'").c_str());
    entries.emplace_back(std::move(name), nd::array(data, dtype, shape, cpu(), dtype));
  }
  if (reader.pos() != body) {
    throw FileError("'" + path + "' has " + std::to_string(body - reader.pos()) + " unexpected bytes after its last entry");
  }
  return entries;
}

}  // namespace

void save_ndgluon_parameter_file(const std::string& path,
                                 const std::vector<std::pair<std::string, nd::NDArray>>& entries) {
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
  write_file_atomically(path, out, "save_parameters");
}

void save_parameter_file(const std::string& path, const std::vector<std::pair<std::string, nd::NDArray>>& entries,
                         const char* op) {
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  for (const auto& [name, array] : entries) {
    names.push_back(name);
    arrays.push_back(array);
  }
  write_file_atomically(path, nd::save_tobuffer(names, arrays), op);
}

std::vector<std::pair<std::string, nd::NDArray>> load_parameter_file(const std::string& path, const char* op) {
  return load_parameter_bytes(read_file(path, op), path);
}

std::vector<std::pair<std::string, nd::NDArray>> load_parameter_bytes(const std::string& bytes,
                                                                      const std::string& path) {
  if (bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0) {
    return load_ndgluon_parameter_file(path, bytes);
  }
  if (bytes.size() < 8) {
    throw FileError("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                    " bytes, shorter than the 8-byte magic of a parameter file");
  }
  std::uint64_t magic;
  std::memcpy(&magic, bytes.data(), 8);
  if (magic != 0x112) {
    throw FileError("'" + path + "' is neither an MXNet NDArray file nor an ndgluon parameter file: bad magic " +
                    "header (its first 8 bytes are not MXNet's list magic 0x112 nor \"NDGLUONP\")");
  }
  nd::LoadedArrays loaded = nd::load_frombuffer(bytes, cpu(), path);
  if (!loaded.has_names() && !loaded.arrays.empty()) {
    throw FileError("'" + path + "' holds a list of " + std::to_string(loaded.arrays.size()) +
                    " arrays without names (mx.nd.save of a list), but parameters are loaded by name");
  }
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  entries.reserve(loaded.arrays.size());
  for (std::size_t i = 0; i < loaded.arrays.size(); ++i) {
    entries.emplace_back(std::move(loaded.names[i]), std::move(loaded.arrays[i]));
  }
  return entries;
}

void load_parameter_slots(const std::string& path, const char* op, const std::string& owner,
                          const std::vector<ParameterSlot>& slots,
                          const std::vector<std::pair<std::string, nd::NDArray>>& entries,
                          const std::vector<std::vector<std::size_t>>& entry_slots, const std::vector<Context>& ctxs,
                          bool allow_missing, bool ignore_extra) {
  const std::string where = std::string(op) + ": ";
  // "'0.weight' (dense3_weight)", or one name where the key is the name.
  const auto named = [](const ParameterSlot& slot) {
    return "'" + slot.key + "'" + (slot.key == slot.param.name() ? "" : " (" + slot.param.name() + ")");
  };
  // The entry that fills each slot.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> filled_by(slots.size(), kNone);
  for (std::size_t j = 0; j < entries.size(); ++j) {
    for (std::size_t i : entry_slots[j]) {
      if (filled_by[i] != kNone) {
        throw FileError(where + "'" + path + "' has two entries for parameter " + named(slots[i]) + ": '" +
                        entries[filled_by[i]].first + "' and '" + entries[j].first + "'");
      }
      filled_by[i] = j;
    }
  }
  // A shared parameter (one parameter under several keys) is filled by an entry for any of them.
  const auto entry_for = [&](std::size_t i) {
    for (std::size_t k = 0; k < slots.size() && filled_by[i] == kNone; ++k) {
      if (filled_by[k] != kNone && slots[k].param.is(slots[i].param)) return filled_by[k];
    }
    return filled_by[i];
  };
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const ParameterSlot& slot = slots[i];
    const std::size_t j = entry_for(i);
    if (j == kNone) {
      if (allow_missing) continue;
      throw FileError(where + "'" + path + "' has no parameter " + named(slot) + " that " + owner +
                      " needs (allow_missing = true loads the others)");
    }
    const nd::NDArray& value = entries[j].second;
    if (value.is_none()) {
      throw FileError(where + "'" + path + "' has no data for parameter " + named(slot) + ": its entry '" +
                      entries[j].first + "' is an array without a shape");
    }
    const Shape& want = slot.param.shape();
    bool fits = want.ndim() == value.ndim() && slot.param.dtype() == value.dtype();
    for (int d = 0; fits && d < want.ndim(); ++d) fits = want[d] == 0 || want[d] == value.shape()[d];
    if (!fits) {
      throw ShapeError(where + "parameter " + named(slot) + " is " + want.tuple_str() + " " +
                       dtype_name(slot.param.dtype()) + " in " + owner + " but " + nd::describe(value) + " in '" +
                       path + "'");
    }
  }
  if (!ignore_extra) {
    for (std::size_t j = 0; j < entries.size(); ++j) {
      if (entry_slots[j].empty()) {
        throw FileError(where + "'" + path + "' has parameter '" + entries[j].first + "' which " + owner +
                        " does not have (ignore_extra = true skips it)");
      }
    }
  }
  // Everything fits: load each parameter once.
  std::vector<Parameter> loaded;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const std::size_t j = entry_for(i);
    if (j == kNone) continue;
    Parameter param = slots[i].param;
    bool done = false;
    for (const Parameter& p : loaded) done = done || p.is(param);
    if (done) continue;
    param.load_init(entries[j].second, ctxs);
    loaded.push_back(param);
  }
}

}  // namespace mx::gluon
