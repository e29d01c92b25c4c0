#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

// nd::save / nd::load: MXNet's NDArray file (Note [MXNet's NDArray file] in ndarray/io/ndarray_file.cpp).
// Round trips in every dtype between every pair of contexts, the bytes MXNet writes (built here
// from the format, field by field), MXNet's older records, and corrupt files, each rejected with
// the path and what is wrong.

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using ndg_test::read_bytes;
using ndg_test::TempDir;
using ndg_test::write_bytes;

namespace {

// A file built field by field, little-endian as the format is.
class FileBytes {
 public:
  template <class T>
  FileBytes& put(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  FileBytes& u32(std::uint32_t v) { return put(v); }
  FileBytes& i32(std::int32_t v) { return put(v); }
  FileBytes& u64(std::uint64_t v) { return put(v); }
  FileBytes& i64(std::int64_t v) { return put(v); }
  FileBytes& text(const std::string& s) {
    u64(s.size());
    bytes_ += s;
    return *this;
  }
  template <class T>
  FileBytes& values(const std::vector<T>& v) {
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    return *this;
  }
  FileBytes& raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  const std::string& str() const { return bytes_; }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

constexpr std::uint32_t kV1 = 0xF993FAC8, kV2 = 0xF993FAC9, kV3 = 0xF993FACA;

// The list header: magic 0x112, reserved 0, count.
FileBytes header(std::uint64_t count) { return FileBytes().u64(0x112).u64(0).u64(count); }

// A dense V2 record on cpu(0) from its shape, dtype flag and element bytes.
FileBytes& v2_record(FileBytes& b, const std::vector<std::int64_t>& shape, std::int32_t flag, const std::string& data,
                 std::uint32_t magic = kV2) {
  b.u32(magic).i32(0).i32(static_cast<std::int32_t>(shape.size()));
  for (std::int64_t d : shape) b.i64(d);
  return b.i32(1).i32(0).i32(flag).raw(data);
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The elements of x as they lie in memory, row-major.
std::string raw_bytes(const nd::NDArray& x) {
  const nd::NDArray host = x.copyto(mx::cpu());
  return std::string(static_cast<const char*>(host.data()), host.size() * mx::dtype_size(host.dtype()));
}

// The file of MXNet's mx.nd.save('w.nd', {'w': mx.nd.array([[0, 1, 2], [3, 4, 5]])}).
std::string one_named_array_file() {
  FileBytes b = header(1);
  v2_record(b, {2, 3}, 0, bytes_of(std::vector<float>{0, 1, 2, 3, 4, 5}));
  return b.u64(1).text("w").str();
}

// An array of every dtype with values exact in it: random in [-1, 1) for the floating ones.
nd::NDArray sample(mx::DType dtype, const mx::Shape& shape, mx::Context ctx, unsigned seed) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<double> v = ndg_test::uniform_values(n, seed);
  if (!mx::is_floating(dtype)) {
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37 + seed) % 251);
  }
  return nd::array(v, shape, ctx, dtype);
}

std::string context_name(mx::Context ctx) { return ctx.is_gpu() ? "gpu" + std::to_string(ctx.device_id()) : "cpu"; }

}  // namespace

BOOST_AUTO_TEST_SUITE(io)

BOOST_AUTO_TEST_CASE(one_named_array_is_the_bytes_mxnet_writes) {
  const TempDir dir;
  const std::string path = dir.file("w.nd");
  nd::save(path, std::map<std::string, nd::NDArray>{{"w", nd::array({{0, 1, 2}, {3, 4, 5}}, mx::cpu())}});
  // 24 header + (4 magic + 4 stype + 4 ndim + 16 extents + 8 context + 4 flag + 24 data) + 8 + 8 + 1.
  const std::string expected = one_named_array_file();
  BOOST_TEST(expected.size() == 24u + 64u + 17u);
  BOOST_TEST(read_bytes(path) == expected);
  // And it reads back as a dict.
  const nd::LoadedArrays loaded = nd::load(path);
  BOOST_TEST(loaded.has_names());
  BOOST_TEST(loaded.names == std::vector<std::string>{"w"}, tt::per_element());
  const auto map = loaded.as_map();
  BOOST_TEST_REQUIRE(map.count("w") == 1u);
  BOOST_TEST(map.at("w").shape() == (mx::Shape{2, 3}));
  BOOST_TEST(map.at("w").context() == mx::cpu());
  BOOST_TEST(map.at("w").asvector<float>() == (std::vector<float>{0, 1, 2, 3, 4, 5}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(a_list_has_no_names_and_is_no_dict) {
  const TempDir dir;
  const std::string path = dir.file("list.nd");
  const nd::NDArray x = nd::array({1, 2, 3}, mx::cpu(), mx::DType::int32);
  const nd::NDArray y = nd::array({2.5}, mx::cpu(), mx::DType::float64);
  nd::save(path, {x, y});
  FileBytes expected = header(2);
  v2_record(expected, {3}, 4, bytes_of(std::vector<std::int32_t>{1, 2, 3}));
  v2_record(expected, {1}, 1, bytes_of(std::vector<double>{2.5}));
  expected.u64(0);
  BOOST_TEST(read_bytes(path) == expected.str());
  const nd::LoadedArrays loaded = nd::load(path);
  BOOST_TEST(!loaded.has_names());
  BOOST_TEST_REQUIRE(loaded.arrays.size() == 2u);
  BOOST_TEST(loaded.arrays[0].dtype() == mx::DType::int32);
  BOOST_TEST(loaded.arrays[0].asvector<int>() == (std::vector<int>{1, 2, 3}), tt::per_element());
  BOOST_TEST(loaded.arrays[1].dtype() == mx::DType::float64);
  BOOST_TEST(loaded.arrays[1].asscalar<double>() == 2.5);
  NDG_CHECK_THROWS_WITH(loaded.as_map(), mx::ValueError, "list of 2 arrays without names");
  // An empty list is an empty map too.
  nd::save(path, std::vector<nd::NDArray>{});
  BOOST_TEST(read_bytes(path) == header(0).u64(0).str());
  BOOST_TEST(nd::load(path).as_map().empty());
}

BOOST_AUTO_TEST_CASE(round_trips_every_dtype_between_every_pair_of_contexts) {
  const TempDir dir;
  ndg_test::for_each_context([&](mx::Context saved_on) {
    std::vector<nd::NDArray> list;
    std::map<std::string, nd::NDArray> dict;
    std::vector<std::string> expected_bytes;
    unsigned seed = 1;
    for (mx::DType dtype : ndg_test::kAllDTypes) {
      const nd::NDArray x = sample(dtype, {2, 3, 4}, saved_on, seed++);
      list.push_back(x);
      dict[mx::dtype_name(dtype)] = x;
      expected_bytes.push_back(raw_bytes(x));
    }
    const std::string list_path = dir.file("list_" + context_name(saved_on) + ".nd");
    const std::string dict_path = dir.file("dict_" + context_name(saved_on) + ".nd");
    nd::save(list_path, list);
    nd::save(dict_path, dict);

    // The first record names the context it was saved from: (dev_type, dev_id) after
    // 24 header + 4 magic + 4 storage type + 4 ndim + 3 * 8 extents.
    const std::string file = read_bytes(list_path);
    std::int32_t dev[2];
    std::memcpy(dev, file.data() + 24 + 12 + 24, 8);
    BOOST_TEST(dev[0] == (saved_on.is_gpu() ? 2 : 1));
    BOOST_TEST(dev[1] == saved_on.device_id());

    // Onto cpu(0) by default, whatever the file names, and onto every context when asked.
    std::vector<mx::Context> targets{mx::cpu()};
    for (mx::Context c : ndg_test::all_contexts()) targets.push_back(c);
    for (std::size_t t = 0; t < targets.size(); ++t) {
      const mx::Context load_on = targets[t];
      BOOST_TEST_CONTEXT("loaded on " << load_on.str() << (t == 0 ? " (default)" : "")) {
        const nd::LoadedArrays as_list = t == 0 ? nd::load(list_path) : nd::load(list_path, load_on);
        BOOST_TEST(!as_list.has_names());
        BOOST_TEST_REQUIRE(as_list.arrays.size() == list.size());
        for (std::size_t i = 0; i < list.size(); ++i) {
          BOOST_TEST_CONTEXT(mx::dtype_name(list[i].dtype())) {
            BOOST_TEST(as_list.arrays[i].dtype() == list[i].dtype());
            BOOST_TEST(as_list.arrays[i].shape() == (mx::Shape{2, 3, 4}));
            BOOST_TEST(as_list.arrays[i].context() == load_on);
            BOOST_TEST(raw_bytes(as_list.arrays[i]) == expected_bytes[i]);
          }
        }
        const nd::LoadedArrays as_dict = t == 0 ? nd::load(dict_path) : nd::load(dict_path, load_on);
        // A std::map saves in its order: the names sorted.
        BOOST_TEST(as_dict.names == (std::vector<std::string>{"bfloat16", "float16", "float32", "float64", "int32", "int64", "uint8"}),
                   tt::per_element());
        const auto map = as_dict.as_map();
        for (std::size_t i = 0; i < list.size(); ++i) {
          const nd::NDArray& got = map.at(mx::dtype_name(list[i].dtype()));
          BOOST_TEST(got.dtype() == list[i].dtype());
          BOOST_TEST(got.context() == load_on);
          BOOST_TEST(raw_bytes(got) == expected_bytes[i]);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(names_keep_the_order_given_and_views_save_their_elements) {
  const TempDir dir;
  const std::string path = dir.file("ordered.nd");
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray base = nd::arange(0, 12, 1, ctx).reshape({3, 4});
    const nd::NDArray transposed = base.T();          // (4, 3), strided
    const nd::NDArray stepped = base.slice(0, 3, 2);  // rows 0 and 2
    nd::save(path, {"z", "a", "m"}, {transposed, stepped, base[1]});
    const nd::LoadedArrays loaded = nd::load(path);
    BOOST_TEST(loaded.names == (std::vector<std::string>{"z", "a", "m"}), tt::per_element());
    BOOST_TEST(loaded.arrays[0].shape() == (mx::Shape{4, 3}));
    BOOST_TEST(loaded.arrays[0].asvector<float>() ==
                   (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}),
               tt::per_element());
    BOOST_TEST(loaded.arrays[1].asvector<float>() == (std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11}),
               tt::per_element());
    BOOST_TEST(loaded.arrays[2].shape() == (mx::Shape{4}));
    BOOST_TEST(loaded.arrays[2].asvector<float>() == (std::vector<float>{4, 5, 6, 7}), tt::per_element());
  });
  NDG_CHECK_THROWS_WITH(nd::save(path, {"a"}, {nd::zeros({1}), nd::zeros({2})}), mx::ValueError, "1 names for 2 arrays");
}

// A none array is written as MXNet's NDArray::Save writes NDArray(): V2 magic, storage type -1,
// ndim 0 and nothing more; it loads back as a none array beside the others.
BOOST_AUTO_TEST_CASE(none_array_round_trips_as_mxnet_writes_it) {
  const TempDir dir;
  const std::string path = dir.file("none.nd");
  nd::save(path, {"x", "nothing"}, {nd::full({2}, 1.5), nd::NDArray()});
  const std::string bytes = read_bytes(path);
  // list header (24 bytes), x's record (4+4+4+8 + 3*4 + 8 = 40 bytes), then the none record.
  const std::size_t none_at = 24 + 40;
  std::uint32_t magic;
  std::int32_t stype, ndim;
  std::memcpy(&magic, bytes.data() + none_at, 4);
  std::memcpy(&stype, bytes.data() + none_at + 4, 4);
  std::memcpy(&ndim, bytes.data() + none_at + 8, 4);
  BOOST_TEST(magic == 0xF993FAC9u);
  BOOST_TEST(stype == -1);
  BOOST_TEST(ndim == 0);
  std::uint64_t name_count;
  std::memcpy(&name_count, bytes.data() + none_at + 12, 8);
  BOOST_TEST(name_count == 2u);
  const nd::LoadedArrays loaded = nd::load(path);
  BOOST_TEST(loaded.names == (std::vector<std::string>{"x", "nothing"}), tt::per_element());
  BOOST_TEST(loaded.arrays[0].asvector<float>() == (std::vector<float>{1.5f, 1.5f}), tt::per_element());
  BOOST_TEST(loaded.arrays[1].is_none());
}

BOOST_AUTO_TEST_CASE(zero_dimensional_and_empty_arrays) {
  const TempDir dir;
  ndg_test::for_each_context([&](mx::Context ctx) {
    const std::string path = dir.file("edge_" + context_name(ctx) + ".nd");
    const nd::NDArray scalar = nd::full(mx::Shape{}, 7.25, ctx, mx::DType::float64);
    const nd::NDArray empty = nd::zeros({0, 3}, ctx, mx::DType::int64);
    const nd::NDArray empty_1d = nd::zeros({0}, ctx);
    nd::save(path, {"scalar", "empty", "empty_1d"}, {scalar, empty, empty_1d});
    const std::string file = read_bytes(path);
    // The 0-d array is a V3 record (MXNet's NumPy-shape record), ndim 0 and one element.
    std::uint32_t magic;
    std::int32_t ndim;
    std::memcpy(&magic, file.data() + 24, 4);
    std::memcpy(&ndim, file.data() + 24 + 8, 4);
    BOOST_TEST(magic == kV3);
    BOOST_TEST(ndim == 0);
    // The empty ones are V2 records with no data: 3 records of 4 + 4 + 4 + 8 * ndim + 12 bytes,
    // 8 data bytes, then the names.
    const std::size_t records = (24 + 8) + (24 + 16) + (24 + 8);
    BOOST_TEST(file.size() == 24 + records + 8 + (8 + 6) + (8 + 5) + (8 + 8));
    std::memcpy(&magic, file.data() + 24 + 24 + 8, 4);
    BOOST_TEST(magic == kV2);

    const nd::LoadedArrays loaded = nd::load(path, ctx);
    BOOST_TEST(loaded.arrays[0].shape() == mx::Shape{});
    BOOST_TEST(loaded.arrays[0].dtype() == mx::DType::float64);
    BOOST_TEST(loaded.arrays[0].asscalar<double>() == 7.25);
    BOOST_TEST(loaded.arrays[0].context() == ctx);
    BOOST_TEST(loaded.arrays[1].shape() == (mx::Shape{0, 3}));
    BOOST_TEST(loaded.arrays[1].dtype() == mx::DType::int64);
    BOOST_TEST(loaded.arrays[1].size() == 0);
    BOOST_TEST(loaded.arrays[2].shape() == (mx::Shape{0}));
    BOOST_TEST(loaded.arrays[2].dtype() == mx::DType::float32);
  });
}

BOOST_AUTO_TEST_CASE(reads_mxnets_older_records) {
  const TempDir dir;
  const std::string path = dir.file("old.nd");
  FileBytes b = header(7);
  // V1 (MXNet 0.9 to 1.0): no storage type; int32 (2, 2), saved on gpu(1).
  b.u32(kV1).i32(2).i64(2).i64(2).i32(2).i32(1).i32(4).values(std::vector<std::int32_t>{-1, 2, -3, 4});
  // Legacy (no magic): u32 ndim 2, u32 extents (2, 3); float64.
  b.u32(2).u32(2).u32(3).i32(1).i32(0).i32(1).values(std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5});
  // An array without a shape in each kind of record: V2 with ndim 0, V2 of MXNet < 1.5 with the
  // undefined storage type, V3 with an unknown shape, and legacy ndim 0.
  b.u32(kV2).i32(0).i32(0);
  b.u32(kV2).i32(-1).i32(0);
  b.u32(kV3).i32(0).i32(2).i64(-1).i64(3);
  b.u32(0);
  // V1 with ndim 0 too.
  b.u32(kV1).i32(0);
  b.u64(7);
  for (const char* name : {"v1", "legacy", "v2_none", "v2_undefined", "v3_unknown", "legacy_none", "v1_none"}) {
    b.text(name);
  }
  write_bytes(path, b.str());
  ndg_test::for_each_context([&](mx::Context ctx) {
    const auto map = nd::load(path, ctx).as_map();
    BOOST_TEST(map.size() == 7u);
    const nd::NDArray& v1 = map.at("v1");
    BOOST_TEST(v1.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(v1.dtype() == mx::DType::int32);
    BOOST_TEST(v1.context() == ctx);  // not the gpu(1) the file names
    BOOST_TEST(v1.asvector<int>() == (std::vector<int>{-1, 2, -3, 4}), tt::per_element());
    const nd::NDArray& legacy = map.at("legacy");
    BOOST_TEST(legacy.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(legacy.dtype() == mx::DType::float64);
    BOOST_TEST(legacy.asvector<double>() == (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}), tt::per_element());
    for (const char* none : {"v2_none", "v2_undefined", "v3_unknown", "legacy_none", "v1_none"}) {
      BOOST_TEST(map.at(none).is_none(), none);
    }
  });
}

BOOST_AUTO_TEST_CASE(a_repeated_name_keeps_its_last_array_as_a_python_dict) {
  const TempDir dir;
  const std::string path = dir.file("twice.nd");
  nd::save(path, {"x", "x"}, {nd::array({1}), nd::array({2})});
  const nd::LoadedArrays loaded = nd::load(path);
  BOOST_TEST(loaded.arrays.size() == 2u);
  BOOST_TEST(loaded.as_map().at("x").asscalar<float>() == 2.0f);
}

BOOST_AUTO_TEST_CASE(every_truncation_is_a_file_error_naming_the_path) {
  const TempDir dir;
  // Three records (V2 with data, V3 0-d, V2 empty) and names: cut after every byte.
  const std::string source = dir.file("full.nd");
  nd::save(source, {"weight", "step", "nothing"},
           {nd::array({{1, 2}, {3, 4}}), nd::full(mx::Shape{}, 3, mx::cpu(), mx::DType::int64), nd::zeros({0, 2})});
  const std::string bytes = read_bytes(source);
  BOOST_TEST(nd::load(source).arrays.size() == 3u);
  const std::string path = dir.file("cut.nd");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    BOOST_TEST_CONTEXT("cut to " << n << " of " << bytes.size() << " bytes") {
      write_bytes(path, bytes.substr(0, n));
      BOOST_CHECK_EXCEPTION(nd::load(path), mx::FileError, ndg_test::message_has({"'" + path + "'", "truncated"}));
    }
  }
  // Some of the messages in full.
  write_bytes(path, bytes.substr(0, 5));
  NDG_CHECK_THROWS_WITH(nd::load(path), mx::FileError, "the header needs 8 bytes for the list magic at byte 0",
                        "ends at byte 5");
  write_bytes(path, bytes.substr(0, 24 + 4 + 4 + 4 + 16 + 12 + 8));
  NDG_CHECK_THROWS_WITH(nd::load(path), mx::FileError, "record 0 of 3 needs 16 bytes for its (2, 2) float32 data");
  write_bytes(path, bytes.substr(0, bytes.size() - 2));
  NDG_CHECK_THROWS_WITH(nd::load(path), mx::FileError, "name 2 of 3 needs 7 bytes");
  // The buffer form says so.
  NDG_CHECK_THROWS_WITH(nd::load_frombuffer(bytes.substr(0, 40)), mx::FileError, "the buffer is truncated",
                        "record 0 of 3 needs 16 bytes for its extents at byte 36", "the buffer ends at byte 40");
}

BOOST_AUTO_TEST_CASE(corrupt_files_are_file_errors_naming_path_record_and_fault) {
  const TempDir dir;
  const auto check = [&](const std::string& label, const std::string& content, const std::vector<std::string>& parts) {
    BOOST_TEST_CONTEXT(label) {
      const std::string path = dir.file(label + ".nd");
      write_bytes(path, content);
      std::vector<std::string> expected = parts;
      expected.push_back("'" + path + "'");
      BOOST_CHECK_EXCEPTION(nd::load(path), mx::FileError, ndg_test::message_has{expected});
    }
  };
  const std::string good = one_named_array_file();
  const auto patched = [&](std::size_t at, auto value) {
    std::string out = good;
    std::memcpy(out.data() + at, &value, sizeof(value));
    return out;
  };
  const std::size_t record = 24;  // record 0: magic, storage type, ndim, extents (2, 3), context, flag
  check("list_magic", patched(0, std::uint64_t{0x113}), {"not an MXNet NDArray file", "0x113", "0x112"});
  check("record_magic", patched(record, std::uint32_t{0x12345678}),
        {"record 0 of 1", "starts with 0x12345678", "no NDArray record's magic"});
  check("sparse", patched(record + 4, std::int32_t{1}), {"record 0 of 1", "storage type 1 (row_sparse)", "dense"});
  check("csr", patched(record + 4, std::int32_t{2}), {"storage type 2 (csr)"});
  check("many_dims", patched(record + 8, std::int32_t{1000}), {"record 0 of 1", "claims 1000 dimensions"});
  check("negative_ndim", patched(record + 8, std::int32_t{-3}), {"claims -3 dimensions"});
  check("negative_extent", patched(record + 12, std::int64_t{-2}), {"record 0 of 1", "(-2, 3)", "negative"});
  check("extent_overflow", patched(record + 12, std::int64_t{1} << 62),
        {"record 0 of 1", "(4611686018427387904, 3)", "float32", "63 bits"});
  // Extents that fit 63 bits but not the file: refused before anything is allocated.
  {
    std::string huge = patched(record + 12, std::int64_t{1} << 40);
    const std::int64_t second = std::int64_t{1} << 20;
    std::memcpy(huge.data() + record + 20, &second, 8);
    check("huge_extents", huge,
          {"truncated", "record 0 of 1 needs 4611686018427387904 bytes", "(1099511627776, 1048576) float32"});
  }
  check("device", patched(record + 28, std::int32_t{7}), {"record 0 of 1", "device (type 7, id 0)"});
  check("dtype_flag", patched(record + 36, std::int32_t{99}), {"record 0 of 1", "unknown dtype flag 99"});
  check("array_count", patched(16, std::uint64_t{1} << 60), {"truncated or corrupted", "1152921504606846976 arrays"});
  check("name_count", patched(good.size() - 17, std::uint64_t{2}), {"the names", "count 2 for 1 arrays"});
  check("name_length", patched(good.size() - 9, std::uint64_t{1} << 50), {"truncated", "name 0 of 1"});
  check("trailing", good + "xyz", {"3 unexpected bytes after its last name"});
  // Legacy ndim too large for the remaining bytes.
  FileBytes legacy = header(1);
  legacy.u32(20);
  check("legacy_truncated", legacy.str(), {"truncated", "record 0 of 1", "its extents"});
}

BOOST_AUTO_TEST_CASE(dtypes_ndgluon_lacks_are_dtype_errors_naming_file_record_and_dtype) {
  const TempDir dir;
  const std::string path = dir.file("half.nd");
  const struct {
    std::int32_t flag;
    const char* name;
    std::size_t size;
  } lacking[] = {{5, "int8", 1}, {7, "bool", 1}, {8, "int16", 2}, {9, "uint16", 2}, {10, "uint32", 4}, {11, "uint64", 8}};
  for (const auto& t : lacking) {
    BOOST_TEST_CONTEXT(t.name) {
      FileBytes b = header(2);
      v2_record(b, {3}, 0, bytes_of(std::vector<float>{1, 2, 3}));
      v2_record(b, {2, 2}, t.flag, std::string(4 * t.size, '\0'));
      write_bytes(path, b.u64(2).text("fine").text("half").str());
      BOOST_CHECK_EXCEPTION(nd::load(path), mx::DTypeError,
                            ndg_test::message_has({"'" + path + "'", "record 1 of 2", "'half'", "(2, 2)", t.name,
                                                   "float32, float64, float16, uint8, int32, int64, bfloat16"}));
    }
  }
}

BOOST_AUTO_TEST_CASE(missing_files_directories_and_contexts) {
  const TempDir dir;
  const std::string missing = dir.file("no_such.nd");
  NDG_CHECK_THROWS_WITH(nd::load(missing), mx::FileError, "load", "cannot open", missing);
  NDG_CHECK_THROWS_WITH(nd::load(dir.str()), mx::FileError, "load", "is a directory");
  const std::string nowhere = dir.file("no_dir/x.nd");
  NDG_CHECK_THROWS_WITH(nd::save(nowhere, {nd::zeros({2})}), mx::FileError, "save", nowhere);
  BOOST_TEST(!std::filesystem::exists(nowhere));
  const std::string path = dir.file("w.nd");
  write_bytes(path, one_named_array_file());
  NDG_CHECK_THROWS_WITH(nd::load(path, mx::gpu(mx::num_gpus())), mx::DeviceError,
                        "gpu(" + std::to_string(mx::num_gpus()) + ")");
}

BOOST_AUTO_TEST_SUITE_END()
