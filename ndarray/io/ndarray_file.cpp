#include "ndarray/io/ndarray_file.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "context/device.hpp"
#include "context/error.hpp"
#include "context/file.hpp"
#include "ndarray/ops/creation.hpp"

// Note [MXNet's NDArray file]
// The layout, from MXNet's sources: src/ndarray/ndarray.cc (NDArray::Save and NDArray::Load of
// one array, NDArray::LegacyLoad and LegacyTShapeLoad for old records, the list's Save/Load with
// kMXAPINDArrayListMagic, which MXNDArraySave / MXNDArrayLoad in src/c_api/c_api.cc call),
// include/mxnet/tuple.h (Tuple::Save: the shape), include/mxnet/base.h (Context::Save),
// dmlc-core's serializer.h (a vector: u64 count then the elements; a string: u64 length then its
// bytes) and mshadow/base.h (TypeFlag). Every field is little-endian.
//
//   u64 0x112 (kMXAPINDArrayListMagic), u64 reserved (0; not checked, as MXNet does not)
//   u64 array count, then each array as one record:
//     V2 (magic 0xF993FAC9), what MXNet 1.x writes: u32 magic, i32 storage type (0 dense; the
//       sparse 1 row_sparse and 2 csr carry more fields and are refused here), i32 ndim,
//       i64 extents[ndim], i32 dev_type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared), i32 dev_id,
//       i32 dtype flag, then the elements, row-major. ndim 0 ends the record: an NDArray() without
//       shape, which loads as a none array.
//     V3 (0xF993FACA): V2's layout, written by MXNet under NumPy shape semantics, where ndim 0 is a
//       0-d array of one element and ndim -1 or an extent -1 (unknown) ends the record as a none
//       array. MXNet reads V3 records only with NumPy semantics on (npx.set_np()).
//     V1 (0xF993FAC8, MXNet 0.9 to 1.0): u32 magic, i32 ndim, i64 extents[ndim], then V2's fields
//       from dev_type on (no storage type). ndim 0 is a none array.
//     legacy (no magic, MXNet before V1): u32 ndim in the magic's place, u32 extents[ndim], then as
//       V1. ndim 0 is a none array. MXNet tells it from the others by its first word alone.
//   u64 name count (0 for a list, else one per array), then each name: u64 length, its bytes.
//
// dtype flags (mshadow's TypeFlag): 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8,
// 6 int64, 7 bool, 8 int16, 9 uint16, 10 uint32, 11 uint64, 12 bfloat16.
//
// nd::save writes V2 records (a none array as MXNet does: storage type -1, ndim 0), and V3 for a
// 0-d array: V2 has no 0-d array (its ndim 0 is "no shape"), and V3 is what MXNet writes for one. MXNet's reader trusts the file: a corrupt extent
// allocates whatever it claims. Here every count and extent is checked against the bytes that
// remain, the whole file is parsed before any array is made, and bytes after the names are an
// error.

static_assert(std::endian::native == std::endian::little,
              "MXNet's NDArray file is little-endian; ndarray/io/ndarray_file.cpp reads and writes it as the host's memory");

namespace mx::nd {
namespace {

constexpr std::uint64_t kListMagic = 0x112;     // kMXAPINDArrayListMagic
constexpr std::uint32_t kV1Magic = 0xF993FAC8;  // NDARRAY_V1_MAGIC
constexpr std::uint32_t kV2Magic = 0xF993FAC9;  // NDARRAY_V2_MAGIC
constexpr std::uint32_t kV3Magic = 0xF993FACA;  // NDARRAY_V3_MAGIC
constexpr std::int32_t kDenseStorage = 0;       // kDefaultStorage
constexpr std::int32_t kUndefinedStorage = -1;  // an NDArray() saved by MXNet before 1.5
constexpr std::int32_t kCpuDevice = 1, kGpuDevice = 2;
// NumPy's limit on axes. A legacy record's first word (its ndim) above it is not a dimension count
// but a bad magic, and no V1-V3 record of MXNet has more.
constexpr std::int64_t kMaxNdim = 32;

struct TypeFlag {
  std::int32_t flag;
  const char* name;
  std::size_t size;              // bytes per element
  std::optional<DType> dtype;    // ndgluon's, when it has the type
};

constexpr TypeFlag kTypeFlags[] = {
    {0, "float32", 4, DType::float32}, {1, "float64", 8, DType::float64}, {2, "float16", 2, DType::float16},
    {3, "uint8", 1, DType::uint8},     {4, "int32", 4, DType::int32},     {5, "int8", 1, {}},
    {6, "int64", 8, DType::int64},     {7, "bool", 1, {}},                {8, "int16", 2, {}},
    {9, "uint16", 2, {}},              {10, "uint32", 4, {}},             {11, "uint64", 8, {}},
    {12, "bfloat16", 2, DType::bfloat16}};

const TypeFlag* find_type_flag(std::int32_t flag) {
  for (const TypeFlag& t : kTypeFlags) {
    if (t.flag == flag) return &t;
  }
  return nullptr;
}

std::int32_t type_flag_of(DType dtype) {
  for (const TypeFlag& t : kTypeFlags) {
    if (t.dtype == dtype) return t.flag;
  }
  throw DTypeError(std::string("save: MXNet's NDArray file has no dtype flag for ") + dtype_name(dtype));
}

// "float32, float64, uint8, int32, int64": the dtypes both have.
std::string supported_dtypes() {
  std::string out;
  for (const TypeFlag& t : kTypeFlags) {
    if (t.dtype) out += (out.empty() ? "" : ", ") + std::string(t.name);
  }
  return out;
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llX", static_cast<unsigned long long>(value));
  return text;
}

std::string storage_name(std::int32_t stype) {
  switch (stype) {
    case 1: return "row_sparse";
    case 2: return "csr";
    default: return "unknown";
  }
}

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads fields in order, throwing mx::FileError that names the source, the part being read
// ("record 2 of 5") and the position.
class Reader {
 public:
  Reader(std::string_view bytes, std::string source, const char* noun)
      : bytes_(bytes), source_(std::move(source)), noun_(noun) {}

  void enter(std::string part) { part_ = std::move(part); }
  const std::string& part() const { return part_; }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }

  template <class T>
  T get(std::string_view what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
  const char* take(std::size_t n, std::string_view what) {
    if (n > remaining()) {
      throw FileError(source_ + " is truncated: " + part_ + " needs " + std::to_string(n) + " bytes for " +
                      std::string(what) + " at byte " + std::to_string(pos_) + ", but " + noun_ + " ends at byte " +
                      std::to_string(bytes_.size()));
    }
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  // mx::FileError "'net.params': record 2 of 5 <what>".
  [[noreturn]] void fail(const std::string& what) const { throw FileError(source_ + ": " + part_ + " " + what); }
  const std::string& source() const { return source_; }

 private:
  std::string_view bytes_;
  std::string source_;  // "'net.params'" or "the buffer"
  const char* noun_;    // "the file" or "the buffer"
  std::string part_;
  std::size_t pos_ = 0;
};

// One record, checked: a none array, or a shape, a dtype and where its elements are.
struct Record {
  bool none = false;
  Shape shape;
  const TypeFlag* type = nullptr;
  const char* data = nullptr;
};

// The extents of a V1-V3 record after its ndim; nullopt for V3's unknown extent (-1), which makes
// the record a none array.
std::optional<std::vector<std::int64_t>> read_extents(Reader& reader, std::int32_t ndim, bool v3) {
  if (ndim < 0 || ndim > kMaxNdim) reader.fail("claims " + std::to_string(ndim) + " dimensions");
  std::vector<std::int64_t> dims(static_cast<std::size_t>(ndim));
  if (ndim > 0) std::memcpy(dims.data(), reader.take(dims.size() * 8, "its extents"), dims.size() * 8);
  for (std::int64_t d : dims) {
    if (v3 && d == -1) return std::nullopt;
  }
  for (std::int64_t d : dims) {
    if (d < 0) {
      reader.fail("claims extents " + Shape(dims).tuple_str() + ", and extents cannot be negative");
    }
  }
  return dims;
}

Record read_record(Reader& reader) {
  Record record;
  const auto magic = reader.get<std::uint32_t>("its magic");
  std::vector<std::int64_t> dims;
  if (magic == kV2Magic || magic == kV3Magic) {
    const bool v3 = magic == kV3Magic;
    const auto stype = reader.get<std::int32_t>("its storage type");
    if (stype != kDenseStorage && stype != kUndefinedStorage) {
      reader.fail("has storage type " + std::to_string(stype) + " (" + storage_name(stype) +
                  "); ndgluon reads dense arrays only (storage type 0)");
    }
    const auto ndim = reader.get<std::int32_t>("its dimension count");
    if ((v3 && ndim == -1) || (!v3 && ndim == 0)) {
      record.none = true;
      return record;
    }
    auto extents = read_extents(reader, ndim, v3);
    if (!extents) {
      record.none = true;
      return record;
    }
    dims = std::move(*extents);
    if (stype == kUndefinedStorage) {
      reader.fail("has the undefined storage type (-1) of an array without a shape, but shape " +
                  Shape(dims).tuple_str());
    }
  } else if (magic == kV1Magic) {
    const auto ndim = reader.get<std::int32_t>("its dimension count");
    if (ndim == 0) {
      record.none = true;
      return record;
    }
    dims = *read_extents(reader, ndim, false);
  } else {
    // A legacy record: its first word is its ndim.
    if (magic > kMaxNdim) {
      reader.fail("starts with " + hex(magic) + ", which is no NDArray record's magic (V1 " + hex(kV1Magic) +
                  ", V2 " + hex(kV2Magic) + ", V3 " + hex(kV3Magic) +
                  ") nor the dimension count of a legacy record (at most " + std::to_string(kMaxNdim) + ")");
    }
    if (magic == 0) {
      record.none = true;
      return record;
    }
    std::vector<std::uint32_t> narrow(magic);
    std::memcpy(narrow.data(), reader.take(narrow.size() * 4, "its extents"), narrow.size() * 4);
    dims.assign(narrow.begin(), narrow.end());
  }
  record.shape = Shape(dims);

  const auto dev_type = reader.get<std::int32_t>("its device type");
  const auto dev_id = reader.get<std::int32_t>("its device id");
  if ((dev_type != kCpuDevice && dev_type != kGpuDevice && dev_type != 3 && dev_type != 5) || dev_id < 0) {
    reader.fail("names device (type " + std::to_string(dev_type) + ", id " + std::to_string(dev_id) +
                "), which MXNet does not have (types: 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)");
  }
  const auto flag = reader.get<std::int32_t>("its dtype flag");
  record.type = find_type_flag(flag);
  if (record.type == nullptr) reader.fail("has unknown dtype flag " + std::to_string(flag));

  // The element bytes, checked against what remains before anything is allocated.
  std::int64_t bytes = static_cast<std::int64_t>(record.type->size);
  for (std::int64_t d : dims) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      reader.fail("claims extents " + record.shape.tuple_str() + " of " + record.type->name +
                  ", more bytes than fit in 63 bits");
    }
  }
  record.data = reader.take(static_cast<std::size_t>(bytes),
                            "its " + record.shape.tuple_str() + " " + record.type->name + " data");
  return record;
}

}  // namespace

std::map<std::string, NDArray> LoadedArrays::as_map() const {
  if (names.empty() && !arrays.empty()) {
    throw ValueError("LoadedArrays::as_map: the file holds a list of " + std::to_string(arrays.size()) +
                     " arrays without names (mx.nd.save of a list); read them from .arrays");
  }
  std::map<std::string, NDArray> out;
  for (std::size_t i = 0; i < arrays.size(); ++i) out[names[i]] = arrays[i];
  return out;
}

std::string save_tobuffer(const std::vector<std::string>& names, const std::vector<NDArray>& arrays) {
  if (!names.empty() && names.size() != arrays.size()) {
    throw ValueError("save: " + std::to_string(names.size()) + " names for " + std::to_string(arrays.size()) +
                     " arrays; give one name per array, or none for a list");
  }
  std::size_t total = 3 * 8 + 8;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const NDArray& array = arrays[i];
    if (array.is_none()) {
      total += 3 * 4;
      continue;
    }
    total += 4 * 4 + 8 * static_cast<std::size_t>(array.ndim()) + 3 * 4 +
             static_cast<std::size_t>(array.size()) * dtype_size(array.dtype());
  }
  for (const std::string& name : names) total += 8 + name.size();

  std::string out;
  out.reserve(total);
  put<std::uint64_t>(out, kListMagic);
  put<std::uint64_t>(out, 0);  // reserved
  put<std::uint64_t>(out, arrays.size());
  for (const NDArray& array : arrays) {
    if (array.is_none()) {
      // As MXNet's NDArray::Save writes an NDArray() : V2, undefined storage, no shape, no data.
      put<std::uint32_t>(out, kV2Magic);
      put<std::int32_t>(out, kUndefinedStorage);
      put<std::int32_t>(out, 0);
      continue;
    }
    // V3 for a 0-d array, the one record that has them (Note [MXNet's NDArray file]).
    put<std::uint32_t>(out, array.ndim() == 0 ? kV3Magic : kV2Magic);
    put<std::int32_t>(out, kDenseStorage);
    put<std::int32_t>(out, array.ndim());
    for (std::int64_t d : array.shape()) put<std::int64_t>(out, d);
    const Context ctx = array.context();
    put<std::int32_t>(out, ctx.is_gpu() ? kGpuDevice : kCpuDevice);
    put<std::int32_t>(out, ctx.device_id());
    put<std::int32_t>(out, type_flag_of(array.dtype()));
    // Row-major elements from host memory: a contiguous copy of a view, a GPU array copied over.
    const NDArray host = ctx.is_cpu() ? array.contiguous() : array.copyto(cpu());
    host.wait_to_read();
    const std::size_t bytes = static_cast<std::size_t>(host.size()) * dtype_size(host.dtype());
    if (bytes > 0) out.append(static_cast<const char*>(host.data()), bytes);
  }
  put<std::uint64_t>(out, names.size());
  for (const std::string& name : names) {
    put<std::uint64_t>(out, name.size());
    out += name;
  }
  return out;
}

void save(const std::string& path, const std::vector<std::string>& names, const std::vector<NDArray>& arrays) {
  write_file_atomically(path, save_tobuffer(names, arrays), "save");
}

void save(const std::string& path, const std::vector<NDArray>& arrays) { save(path, {}, arrays); }

void save(const std::string& path, std::initializer_list<NDArray> arrays) {
  save(path, std::vector<NDArray>(arrays));
}

void save(const std::string& path, const std::map<std::string, NDArray>& arrays) {
  std::vector<std::string> names;
  std::vector<NDArray> values;
  for (const auto& [name, array] : arrays) {
    names.push_back(name);
    values.push_back(array);
  }
  save(path, names, values);
}

LoadedArrays load_frombuffer(std::string_view bytes, Context ctx, const std::string& name) {
  check_context(ctx);
  Reader reader(bytes, name.empty() ? "the buffer" : "'" + name + "'", name.empty() ? "the buffer" : "the file");
  reader.enter("the header");
  const auto magic = reader.get<std::uint64_t>("the list magic");
  if (magic != kListMagic) {
    throw FileError(reader.source() + " is not an MXNet NDArray file: it starts with " + hex(magic) +
                    " where the list magic " + hex(kListMagic) + " should be");
  }
  reader.get<std::uint64_t>("the reserved field");
  const auto count = reader.get<std::uint64_t>("the array count");
  // Every record takes 4 bytes at least (a legacy record of no shape).
  if (count > reader.remaining() / 4) {
    throw FileError(reader.source() + " is truncated or corrupted: its header claims " + std::to_string(count) +
                    " arrays, but only " + std::to_string(reader.remaining()) + " bytes follow");
  }
  std::vector<Record> records;
  records.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    reader.enter("record " + std::to_string(i) + " of " + std::to_string(count));
    records.push_back(read_record(reader));
  }

  reader.enter("the names");
  const auto name_count = reader.get<std::uint64_t>("the name count");
  if (name_count != 0 && name_count != count) {
    reader.fail("count " + std::to_string(name_count) + " for " + std::to_string(count) +
                " arrays; MXNet writes none (a list) or one per array");
  }
  LoadedArrays out;
  out.names.reserve(name_count);
  for (std::uint64_t i = 0; i < name_count; ++i) {
    reader.enter("name " + std::to_string(i) + " of " + std::to_string(name_count));
    const auto size = reader.get<std::uint64_t>("its length");
    out.names.emplace_back(reader.take(size, "its bytes"), size);
  }
  if (reader.remaining() != 0) {
    throw FileError(reader.source() + " has " + std::to_string(reader.remaining()) +
                    " unexpected bytes after its last " + (name_count ? "name" : "array") + ", at byte " +
                    std::to_string(reader.pos()));
  }
  // A dtype ndgluon lacks, now that the record's name is known.
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& record = records[i];
    if (record.none || record.type->dtype) continue;
    throw DTypeError(reader.source() + ": record " + std::to_string(i) + " of " + std::to_string(count) +
                     (out.names.empty() ? "" : " ('" + out.names[i] + "')") + " is " + record.shape.tuple_str() +
                     " " + record.type->name + ", a dtype ndgluon does not have (it reads " + supported_dtypes() + ")");
  }

  out.arrays.reserve(records.size());
  for (const Record& record : records) {
    if (record.none) {
      out.arrays.emplace_back();
      continue;
    }
    const DType dtype = *record.type->dtype;
    out.arrays.push_back(array(record.data, dtype, record.shape, ctx, dtype));
  }
  return out;
}

LoadedArrays load(const std::string& path, Context ctx) {
  check_context(ctx);
  const std::string bytes = read_file(path, "load");
  return load_frombuffer(bytes, ctx, path);
}

}  // namespace mx::nd
