#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gluon/nn.hpp>
#include <gluon/parameter_file.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
namespace fs = std::filesystem;
using ndg_test::bits_of;
using ndg_test::crc32;
using ndg_test::read_bytes;
using ndg_test::TempDir;
using ndg_test::write_bytes;

// save_parameters / load_parameters: bit-identical round trips between any contexts, structural
// names, and files that are missing, truncated, corrupted or of another net, each rejected with
// its reason and without touching the block. The files are MXNet's NDArray files (ndarray/io/ndarray_file.hpp);
// ndgluon's earlier format still loads, and its own corruptions are still caught.

namespace {

// body (everything but the old checksum) followed by its CRC-32.
std::string with_checksum(const std::string& body) {
  const std::uint32_t crc = crc32(body);
  std::string out = body;
  out.append(reinterpret_cast<const char*>(&crc), 4);
  return out;
}

// Every parameter of a block by structural name, as bits of its copy on each of its contexts.
using Snapshot = std::vector<std::pair<std::string, std::vector<std::vector<std::uint32_t>>>>;

Snapshot snapshot(const gluon::Block& block) {
  Snapshot out;
  for (const auto& [key, param] : block.structural_params()) {
    std::vector<std::vector<std::uint32_t>> copies;
    for (const nd::NDArray& d : param.list_data()) copies.push_back(bits_of(d));
    out.emplace_back(key, std::move(copies));
  }
  return out;
}

void check_same(const Snapshot& a, const Snapshot& b) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_CONTEXT(a[i].first) {
      BOOST_TEST(a[i].first == b[i].first);
      BOOST_TEST_REQUIRE(a[i].second.size() == b[i].second.size());
      for (std::size_t c = 0; c < a[i].second.size(); ++c) {
        BOOST_TEST(a[i].second[c] == b[i].second[c], tt::per_element());
      }
    }
  }
}

// Every parameter of a block by structural name, with its first copy (what save_parameters saves).
std::vector<std::pair<std::string, nd::NDArray>> entries_of(const gluon::Block& block) {
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  for (const auto& [key, param] : block.structural_params()) entries.emplace_back(key, param.list_data().front());
  return entries;
}

// A file of ndgluon's earlier format, as save_parameters wrote it before it wrote MXNet's.
void save_in_ndgluon_format(const gluon::Block& block, const std::string& path) {
  gluon::save_ndgluon_parameter_file(path, entries_of(block));
}

// The net of these tests: 6 -> 5 (relu) -> 3, all shapes known.
nn::Sequential make_net() {
  nn::Sequential net;
  net.add(nn::Dense(5, "relu", true, 6), nn::Dense(3, "", true, 5));
  return net;
}

// A net with random weights and non-zero biases on ctxs.
nn::Sequential initialized_net(const std::vector<mx::Context>& ctxs) {
  nn::Sequential net = make_net();
  net.initialize(mx::init::Normal(1.0), ctxs);
  for (std::size_t i = 0; i < net.size(); ++i) {
    gluon::Parameter bias = net.at<nn::Dense>(i).bias();
    bias.set_data(nd::random::uniform(-1, 1, bias.shape(), mx::cpu()));
  }
  return net;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(parameter_file)

BOOST_AUTO_TEST_CASE(round_trip_is_bit_identical_between_every_pair_of_contexts) {
  const TempDir dir;
  mx::random::seed(21);
  ndg_test::for_each_context([&](mx::Context saved_on) {
    nn::Sequential source = initialized_net({saved_on});
    const std::string path = dir.file("net_" + std::to_string(static_cast<int>(saved_on.device_type())) + "_" +
                                      std::to_string(saved_on.device_id()) + ".params");
    source.save_parameters(path);
    BOOST_TEST(fs::exists(path));
    const Snapshot saved = snapshot(source);
    for (mx::Context load_on : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("loaded on " << load_on.str()) {
        nn::Sequential target = make_net();
        target.initialize(mx::init::Zero(), load_on);
        target.load_parameters(path, load_on);
        for (const auto& [key, param] : target.structural_params()) {
          BOOST_TEST(param.list_ctx() == std::vector<mx::Context>{load_on}, tt::per_element());
          BOOST_TEST(param.data(load_on).context() == load_on);
        }
        check_same(snapshot(target), saved);
        // And it computes what the source computes.
        const nd::NDArray x = nd::random::uniform(-1, 1, {4, 6}, mx::cpu());
        BOOST_TEST(ndg_test::relative_error(target(x.copyto(load_on)).asvector<double>(),
                                            source(x.copyto(saved_on)).asvector<double>()) < 1e-5);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(loads_into_a_fresh_net_by_structural_name) {
  const TempDir dir;
  const std::string path = dir.file("fresh.params");
  nn::Sequential source = initialized_net({mx::cpu()});
  source.save_parameters(path);
  ndg_test::for_each_context([&](mx::Context ctx) {
    // A new net has new global names (denseN_ with other N) but the same structure.
    nn::Sequential target = make_net();
    BOOST_TEST(target.at<nn::Dense>(0).weight().name() != source.at<nn::Dense>(0).weight().name());
    // Never initialised, and loaded straight away: load_parameters initialises it.
    BOOST_TEST(!target.at<nn::Dense>(0).weight().is_initialized());
    target.load_parameters(path, ctx);
    check_same(snapshot(target), snapshot(source));
    // A net whose first layer is deferred takes its shape from the file.
    nn::Sequential deferred;
    deferred.add(nn::Dense(5, "relu"), nn::Dense(3));
    deferred.initialize(mx::init::Uniform(), ctx);
    deferred.load_parameters(path, ctx);
    BOOST_TEST(deferred.at<nn::Dense>(0).weight().shape() == (mx::Shape{5, 6}));
    check_same(snapshot(deferred), snapshot(source));
  });
  // The names in the file are structural: "0.weight", not "dense7_weight".
  const std::string bytes = read_bytes(path);
  for (const char* key : {"0.weight", "0.bias", "1.weight", "1.bias"}) {
    BOOST_TEST(bytes.find(key) != std::string::npos, "file lacks " << key);
  }
  BOOST_TEST(bytes.find(source.at<nn::Dense>(0).prefix()) == std::string::npos);
  // MXNet's NDArray file: its list magic first.
  std::uint64_t magic = 0;
  std::memcpy(&magic, bytes.data(), 8);
  BOOST_TEST(magic == 0x112u);
}

BOOST_AUTO_TEST_CASE(loads_onto_several_contexts) {
  const TempDir dir;
  const std::string path = dir.file("several.params");
  const auto ctxs = ndg_test::all_contexts();
  nn::Sequential source = initialized_net({ctxs.back()});
  source.save_parameters(path);
  const Snapshot saved = snapshot(source);
  nn::Sequential target = make_net();
  target.initialize(mx::init::Zero(), mx::cpu());
  target.load_parameters(path, ctxs);
  std::size_t checked = 0;
  for (const auto& entry : target.structural_params()) {
    const auto& key = entry.first;  // not a structured binding: the lambdas below capture it
    const auto& param = entry.second;
    BOOST_TEST_CONTEXT(key) {
      BOOST_TEST(param.list_ctx() == ctxs, tt::per_element());
      const auto it = std::find_if(saved.begin(), saved.end(), [&](const auto& e) { return e.first == key; });
      BOOST_TEST_REQUIRE((it != saved.end()));
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST(param.data(ctx).context() == ctx);
        BOOST_TEST(bits_of(param.data(ctx)) == it->second.front(), tt::per_element());
        BOOST_TEST(param.grad(ctx).context() == ctx);
        ++checked;
      });
    }
  }
  BOOST_TEST(checked == 4 * ctxs.size());
  // The loaded net runs on every context with the same result.
  const nd::NDArray x = nd::random::uniform(-1, 1, {2, 6}, mx::cpu());
  const auto reference = target(x).asvector<double>();
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(ndg_test::relative_error(target(x.copyto(ctx)).asvector<double>(), reference) < 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(loading_onto_no_context_is_refused) {
  const TempDir dir;
  const std::string path = dir.file("none.params");
  nn::Sequential net = initialized_net({mx::cpu()});
  net.save_parameters(path);
  const Snapshot before = snapshot(net);
  NDG_CHECK_THROWS_WITH(net.load_parameters(path, std::vector<mx::Context>{}), mx::ValueError, "load_parameters",
                        "none.params", "at least one context");
  BOOST_TEST((snapshot(net) == before));
}

BOOST_AUTO_TEST_CASE(corrupted_ndgluon_format_files_are_rejected_and_change_nothing) {
  const TempDir dir;
  const std::string good = dir.file("good.params");
  nn::Sequential source = initialized_net({mx::cpu()});
  save_in_ndgluon_format(source, good);
  const std::string bytes = read_bytes(good);
  // 8 magic + 4 version + 4 count + 4 CRC, and the values of 5*6 + 5 + 3*5 + 3 floats.
  BOOST_TEST_REQUIRE(bytes.size() > 20 + 58 * 4);
  const std::size_t body = bytes.size() - 4;

  // What a failed load must leave alone: a net with its own values on every context.
  const auto ctxs = ndg_test::all_contexts();
  nn::Sequential target = initialized_net(ctxs);
  const Snapshot before = snapshot(target);

  const auto check_rejected = [&](const std::string& label, const std::string& content, auto error_tag,
                                  const std::vector<std::string>& parts) {
    using ErrorType = typename decltype(error_tag)::type;
    BOOST_TEST_CONTEXT(label) {
      const std::string path = dir.file(label + ".params");
      write_bytes(path, content);
      bool thrown = false;
      try {
        target.load_parameters(path, ctxs);
      } catch (const ErrorType& e) {
        thrown = true;
        const std::string message = e.what();
        for (const std::string& part : parts) {
          BOOST_TEST(message.find(part) != std::string::npos, "message \"" << message << "\" lacks \"" << part << "\"");
        }
      } catch (const std::exception& e) {
        BOOST_TEST(false, "wrong exception type: " << e.what());
      }
      BOOST_TEST(thrown);
      check_same(snapshot(target), before);
    }
  };
  struct FileErr { using type = mx::FileError; };
  struct ShapeErr { using type = mx::ShapeError; };

  // 1. Missing file.
  {
    const std::string missing = dir.file("no_such.params");
    NDG_CHECK_THROWS_WITH(target.load_parameters(missing, ctxs), mx::FileError, "cannot open", missing);
    check_same(snapshot(target), before);
  }
  // 2. Empty file.
  check_rejected("empty", "", FileErr{}, {"empty.params", "truncated", "0 bytes"});
  // 3. Bad magic.
  {
    std::string bad = bytes;
    bad[0] = 'X';
    check_rejected("bad_magic", bad, FileErr{},
                   {"bad_magic.params", "neither an MXNet NDArray file nor an ndgluon parameter file", "magic"});
  }
  // 4. Another format version (bytes 8..11), with the checksum fixed too.
  {
    std::string v2 = bytes.substr(0, body);
    const std::uint32_t version = 2;
    std::memcpy(v2.data() + 8, &version, 4);
    check_rejected("version", with_checksum(v2), FileErr{}, {"version.params", "format version 2", "version 1"});
    std::string v7 = bytes;
    const std::uint32_t seven = 7;
    std::memcpy(v7.data() + 8, &seven, 4);
    check_rejected("version_unchecked", v7, FileErr{}, {"format version 7"});
  }
  // 5. Truncated in the middle.
  check_rejected("truncated", bytes.substr(0, bytes.size() / 2), FileErr{}, {"truncated.params", "truncated"});
  check_rejected("truncated_header", bytes.substr(0, 15), FileErr{}, {"truncated", "15 bytes"});
  // 6. One flipped bit in the values: the checksum catches it.
  {
    std::string flipped = bytes;
    flipped[body - 6] = static_cast<char>(flipped[body - 6] ^ 0x10);
    check_rejected("flipped", flipped, FileErr{}, {"flipped.params", "checksum"});
    std::string flipped_crc = bytes;
    flipped_crc[body + 1] = static_cast<char>(flipped_crc[body + 1] ^ 0x01);
    check_rejected("flipped_checksum", flipped_crc, FileErr{}, {"checksum"});
  }
  // 7. Trailing garbage appended.
  check_rejected("trailing", bytes + "garbage!", FileErr{}, {"trailing.params", "checksum"});
  // ... and trailing bytes with a checksum that covers them.
  check_rejected("trailing_checked", with_checksum(bytes.substr(0, body) + "xyz"), FileErr{},
                 {"3 unexpected bytes after its last entry"});
  // 8. A file whose entry count claims more than there is (checksum right): truncated.
  {
    std::string more = bytes.substr(0, body);
    const std::uint32_t count = 5;
    std::memcpy(more.data() + 12, &count, 4);
    check_rejected("count", with_checksum(more), FileErr{}, {"count.params", "truncated", "needed"});
  }
  // 9. An unknown dtype code in the first entry (after "0.weight"): checksum right.
  {
    std::string dtype = bytes.substr(0, body);
    const std::size_t at = 16 + 4 + std::string("0.weight").size();
    BOOST_TEST_REQUIRE(dtype.substr(20, 8) == "0.weight");
    dtype[at] = static_cast<char>(200);
    check_rejected("dtype", with_checksum(dtype), FileErr{}, {"0.weight", "unknown dtype code 200"});
    // A byte count that does not fit the shape.
    std::string count = bytes.substr(0, body);
    const std::size_t bytes_at = at + 1 + 4 + 2 * 8;
    std::uint64_t claimed = 0;
    std::memcpy(&claimed, count.data() + bytes_at, 8);
    BOOST_TEST_REQUIRE(claimed == 5u * 6u * 4u);
    const std::uint64_t wrong = 999;
    std::memcpy(count.data() + bytes_at, &wrong, 8);
    check_rejected("byte_count", with_checksum(count), FileErr{}, {"0.weight", "(5, 6)", "999 bytes"});
  }
  // 10. A file of a net with another structure: a parameter the block needs is missing...
  {
    nn::Sequential smaller;
    smaller.add(nn::Dense(5, "relu", true, 6));
    smaller.initialize(mx::init::Uniform(), mx::cpu());
    const std::string path = dir.file("smaller.params");
    smaller.save_parameters(path);
    check_rejected("missing_parameter", read_bytes(path), FileErr{}, {"has no parameter '1.weight'", target.name()});
    // ... or the file has one the block does not have.
    nn::Sequential larger = make_net();
    larger.add(nn::Dense(2, "", true, 3));
    larger.initialize(mx::init::Uniform(), mx::cpu());
    larger.save_parameters(path);
    check_rejected("extra_parameter", read_bytes(path), FileErr{}, {"'2.weight'", "does not have"});
  }
  // 11. A mismatched shape: Dense(5, in_units=6) saved, the target has in_units = 6 but the file
  // comes from Dense(5, in_units=4).
  {
    nn::Sequential other;
    other.add(nn::Dense(5, "relu", true, 4), nn::Dense(3, "", true, 5));
    other.initialize(mx::init::Uniform(), mx::cpu());
    const std::string path = dir.file("other_shape.params");
    other.save_parameters(path);
    check_rejected("shape", read_bytes(path), ShapeErr{}, {"'0.weight'", "(5, 6)", "(5, 4)"});
  }

  // After all of that the good file, of the earlier format, still loads.
  target.load_parameters(good, ctxs);
  check_same(snapshot(target), [&] {
    Snapshot expected;
    for (const auto& [key, copies] : snapshot(source)) {
      expected.emplace_back(key, std::vector<std::vector<std::uint32_t>>(ctxs.size(), copies.front()));
    }
    return expected;
  }());
}

BOOST_AUTO_TEST_CASE(dense_shape_mismatch_names_both_shapes) {
  const TempDir dir;
  const std::string path = dir.file("dense3.params");
  nn::Dense three(4, "", true, 3);
  three.initialize(mx::init::Uniform(), mx::cpu());
  three.save_parameters(path);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense five(4, "", true, 5);
    five.initialize(mx::init::Constant(0.75), ctx);
    NDG_CHECK_THROWS_WITH(five.load_parameters(path, ctx), mx::ShapeError, "'weight'", five.weight().name(), "(4, 5)",
                          "(4, 3)", path);
    // Unchanged, on its context.
    BOOST_TEST(five.weight().shape() == (mx::Shape{4, 5}));
    BOOST_TEST(five.weight().data(ctx).asvector<float>() == std::vector<float>(20, 0.75f), tt::per_element());
    BOOST_TEST(five.bias().data(ctx).asvector<float>() == std::vector<float>(4, 0.0f), tt::per_element());
    // The one that fits loads.
    nn::Dense also_three(4, "", true, 3);
    also_three.load_parameters(path, ctx);
    BOOST_TEST(bits_of(also_three.weight().data(ctx)) == bits_of(three.weight().data(mx::cpu())), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(saving_needs_initialized_parameters) {
  const TempDir dir;
  nn::Dense deferred(3);
  deferred.initialize(mx::init::Uniform(), mx::cpu());
  NDG_CHECK_THROWS_WITH(deferred.save_parameters(dir.file("deferred.params")), mx::Error, deferred.weight().name(),
                        "deferred");
  nn::Dense fresh(3, "", true, 2);
  NDG_CHECK_THROWS_WITH(fresh.save_parameters(dir.file("fresh.params")), mx::Error, fresh.weight().name(),
                        "has not been initialized");
  // A directory that does not exist cannot be written.
  fresh.initialize(mx::init::Uniform(), mx::cpu());
  const std::string nowhere = dir.file("no_dir/x.params");
  NDG_CHECK_THROWS_WITH(fresh.save_parameters(nowhere), mx::FileError, nowhere);
}

BOOST_AUTO_TEST_CASE(loading_a_directory_is_a_file_error_naming_it) {
  const TempDir dir;
  nn::Sequential net = initialized_net({mx::cpu()});
  const Snapshot before = snapshot(net);
  // Only mx::FileError is caught: a std::ios_base::failure would fail the case.
  BOOST_CHECK_EXCEPTION(net.load_parameters(dir.str(), mx::cpu()), mx::FileError,
                        ndg_test::message_has({"load_parameters", "'" + dir.str() + "'", "is a directory"}));
  check_same(snapshot(net), before);
}

BOOST_AUTO_TEST_CASE(forged_extents_are_file_errors_naming_file_record_and_extents) {
  // ndgluon's earlier format: headers with a valid checksum whose extents no array can have: a FileError naming the file,
  // the record and the extents, not a ShapeError from making the array.
  const TempDir dir;
  nn::Sequential source = initialized_net({mx::cpu()});
  const std::string good = dir.file("good.params");
  save_in_ndgluon_format(source, good);
  const std::string bytes = read_bytes(good);
  const std::string body = bytes.substr(0, bytes.size() - 4);
  // Record 0: u32 name length, "0.weight", u8 dtype, u32 ndim = 2, i64 extents (5, 6), u64 bytes, values.
  const std::size_t extents0 = 16 + 4 + 8 + 1 + 4;
  BOOST_TEST_REQUIRE(body.substr(20, 8) == "0.weight");
  // Record 1: "0.bias", ndim 1, extent 5.
  const std::size_t record1 = extents0 + 2 * 8 + 8 + 5 * 6 * 4;
  BOOST_TEST_REQUIRE(body.substr(record1 + 4, 6) == "0.bias");
  const std::size_t extent1 = record1 + 4 + 6 + 1 + 4;
  const auto forge = [&](std::size_t at, const std::vector<std::int64_t>& extents) {
    std::string forged = body;
    std::memcpy(forged.data() + at, extents.data(), extents.size() * 8);
    return with_checksum(forged);
  };
  nn::Sequential target = initialized_net({mx::cpu()});
  const Snapshot before = snapshot(target);
  const auto check = [&](const std::string& label, const std::string& content, const std::vector<std::string>& parts) {
    BOOST_TEST_CONTEXT(label) {
      const std::string path = dir.file(label + ".params");
      write_bytes(path, content);
      std::vector<std::string> expected = parts;
      expected.push_back("'" + path + "'");
      BOOST_CHECK_EXCEPTION(target.load_parameters(path, mx::cpu()), mx::FileError, ndg_test::message_has{expected});
      check_same(snapshot(target), before);
    }
  };
  check("huge", forge(extents0, {std::int64_t{1} << 62, 4}),
        {"record 0 of 4", "'0.weight'", "(4611686018427387904, 4)", "float32", "63 bits"});
  check("negative", forge(extents0, {-1, -1}), {"record 0 of 4", "'0.weight'", "(-1, -1)", "negative"});
  check("negative_bias", forge(extent1, {-5}), {"record 1 of 4", "'0.bias'", "(-5,)", "negative"});
  // Extents that fit 63 bits but not the byte count the record gives.
  check("other_extents", forge(extents0, {6, 5 * 1024}), {"record 0 of 4", "(6, 5120)", "120 bytes"});
}

// Saves with a file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) below the file's size: write()
// fails with EFBIG part way through the file, as on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    BOOST_TEST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = old_;
    limited.rlim_cur = bytes;
    BOOST_TEST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
};

// The names in a directory.
std::vector<std::string> listing(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.str())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

BOOST_AUTO_TEST_CASE(a_failed_save_keeps_the_old_file_and_leaves_no_temporary_file) {
  const TempDir dir;
  const std::string path = dir.file("net.params");
  nn::Sequential old_net = initialized_net({mx::cpu()});
  old_net.save_parameters(path);
  const std::string old_bytes = read_bytes(path);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // A larger net, whose file cannot be written whole under the limit.
  nn::Sequential new_net = initialized_net({mx::cpu()});
  new_net.add(nn::Dense(64, "", true, 3));
  new_net.initialize(mx::init::Uniform(), mx::cpu());
  {
    const FileSizeLimit limit(old_bytes.size() + 100);
    BOOST_CHECK_EXCEPTION(new_net.save_parameters(path), mx::FileError,
                          ndg_test::message_has({"save_parameters", "'" + path + "'", std::strerror(EFBIG),
                                                 "after " + std::to_string(old_bytes.size() + 100) + " of",
                                                 "the existing file is unchanged"}));
    // A new file fails the same way and is not created.
    BOOST_CHECK_EXCEPTION(new_net.save_parameters(dir.file("new.params")), mx::FileError,
                          ndg_test::message_has({"new.params", std::strerror(EFBIG), "no file was created"}));
  }
  BOOST_TEST(read_bytes(path) == old_bytes);
  BOOST_TEST(listing(dir) == std::vector<std::string>{"net.params"}, tt::per_element());
  // The old file still loads.
  nn::Sequential reloaded = make_net();
  reloaded.load_parameters(path, mx::cpu());
  check_same(snapshot(reloaded), snapshot(old_net));
  // Without the limit the save replaces it, keeping its permissions, and leaves nothing beside it.
  new_net.save_parameters(path);
  BOOST_TEST(read_bytes(path).size() > old_bytes.size());
  BOOST_TEST(listing(dir) == std::vector<std::string>{"net.params"}, tt::per_element());
  BOOST_TEST(static_cast<unsigned>(fs::status(path).permissions() & fs::perms::all) == 0640u);
  nn::Sequential larger = make_net();
  larger.add(nn::Dense(64, "", true, 3));
  larger.load_parameters(path, mx::cpu());
  check_same(snapshot(larger), snapshot(new_net));
}

BOOST_AUTO_TEST_CASE(saving_onto_a_directory_or_through_a_link) {
  const TempDir dir;
  nn::Sequential net = initialized_net({mx::cpu()});
  // A directory in the way: refused, and left as it was.
  const std::string folder = dir.file("folder.params");
  fs::create_directory(folder);
  BOOST_CHECK_EXCEPTION(net.save_parameters(folder), mx::FileError,
                        ndg_test::message_has({"save_parameters", "'" + folder + "'", "is a directory"}));
  BOOST_TEST(fs::is_directory(folder));
  BOOST_TEST(listing(dir) == std::vector<std::string>{"folder.params"}, tt::per_element());
  // A symbolic link: the file it points to is replaced, and the link stays a link.
  const std::string real = dir.file("real.params"), link = dir.file("latest.params");
  write_bytes(real, "old contents");
  fs::create_symlink("real.params", link);
  net.save_parameters(link);
  BOOST_TEST(fs::is_symlink(link));
  BOOST_TEST(read_bytes(real) == read_bytes(link));
  nn::Sequential loaded = make_net();
  loaded.load_parameters(real, mx::cpu());
  check_same(snapshot(loaded), snapshot(net));
  BOOST_TEST(listing(dir) == (std::vector<std::string>{"folder.params", "latest.params", "real.params"}),
             tt::per_element());
}

// The file MXNet's save_parameters writes for nn.Sequential() holding nn.Dense(2, in_units=3) on
// cpu(0), built field by field (Note [MXNet's NDArray file] in ndarray/io/ndarray_file.cpp): a dict of
// '0.weight' (2, 3) and '0.bias' (2,), float32.
std::string mxnet_dense_file(const std::vector<float>& weight, const std::vector<float>& bias) {
  return ndg_test::mxnet_ndarray_file({{"0.weight", {2, 3}, weight}, {"0.bias", {2}, bias}});
}

BOOST_AUTO_TEST_CASE(save_parameters_writes_what_mxnet_writes_and_loads_mxnets_file) {
  const TempDir dir;
  const std::vector<float> weight{0.5f, -1.25f, 2, 3.75f, -4, 0.125f}, bias{7, -8};
  const std::string mxnet_bytes = mxnet_dense_file(weight, bias);
  const std::string mxnet_path = dir.file("mxnet.params");
  write_bytes(mxnet_path, mxnet_bytes);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(2, "", true, 3));
    net.initialize(mx::init::Zero(), ctx);
    net.load_parameters(mxnet_path, ctx);
    BOOST_TEST(net.at<nn::Dense>(0).weight().data(ctx).asvector<float>() == weight, tt::per_element());
    BOOST_TEST(net.at<nn::Dense>(0).bias().data(ctx).asvector<float>() == bias, tt::per_element());
    // Saved again, from any context: the same bytes but for the context each record names.
    const std::string path = dir.file("ndgluon.params");
    net.save_parameters(path);
    std::string expected = mxnet_bytes;
    if (ctx.is_gpu()) {
      for (std::size_t record : {24u, 24u + 64u}) {
        const std::int32_t device[2] = {2, ctx.device_id()};
        std::memcpy(expected.data() + record + 12 + 8 * (record == 24u ? 2 : 1), device, 8);
      }
    }
    BOOST_TEST(read_bytes(path) == expected);
  });
}

BOOST_AUTO_TEST_CASE(the_saved_file_is_nd_load_s_dict_of_structural_names) {
  const TempDir dir;
  const std::string path = dir.file("net.params");
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Sequential net = initialized_net({ctx});
    net.save_parameters(path);
    const nd::LoadedArrays loaded = nd::load(path);
    BOOST_TEST(loaded.names == (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}),
               tt::per_element());
    const auto params = net.structural_params();
    BOOST_TEST_REQUIRE(loaded.arrays.size() == params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      BOOST_TEST(loaded.arrays[i].shape() == params[i].second.shape());
      BOOST_TEST(bits_of(loaded.arrays[i]) == bits_of(params[i].second.data(ctx)), tt::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE(loads_ndgluon_format_files_onto_every_context) {
  const TempDir dir;
  const std::string path = dir.file("old.params");
  nn::Sequential source = initialized_net({mx::cpu()});
  save_in_ndgluon_format(source, path);
  BOOST_TEST(read_bytes(path).substr(0, 8) == "NDGLUONP");
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Sequential target = make_net();
    target.load_parameters(path, ctx);
    check_same(snapshot(target), snapshot(source));
    BOOST_TEST(target.at<nn::Dense>(1).weight().data(ctx).context() == ctx);
  });
}

BOOST_AUTO_TEST_CASE(loads_files_of_full_names_and_of_export) {
  const TempDir dir;
  nn::Sequential source = initialized_net({mx::cpu()});
  const Snapshot saved = snapshot(source);
  // MXNet's export: "arg:" + full name for each parameter ("aux:" for running statistics).
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  for (const auto& [key, param] : source.structural_params()) {
    names.push_back((key == "1.bias" ? "aux:" : "arg:") + param.name());
    arrays.push_back(param.data());
  }
  const std::string exported = dir.file("model-0000.params");
  nd::save(exported, names, arrays);
  // collect_params().save: full names, here in reverse order.
  std::reverse(names.begin(), names.end());
  std::reverse(arrays.begin(), arrays.end());
  for (std::string& name : names) name.erase(0, 4);
  const std::string full = dir.file("full.params");
  nd::save(full, names, arrays);
  BOOST_TEST(names.front() == source.at<nn::Dense>(1).bias().name());
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const std::string& path : {exported, full}) {
      BOOST_TEST_CONTEXT(path) {
        nn::Sequential same = source;  // the same block: the same names
        same.initialize(mx::init::Zero(), ctx, true);
        same.load_parameters(path, ctx);
        check_same(snapshot(same), saved);
        // Names of another net do not fit.
        nn::Sequential other = make_net();
        NDG_CHECK_THROWS_WITH(other.load_parameters(path, ctx), mx::FileError, "has no parameter '0.weight'",
                              other.at<nn::Dense>(0).weight().name());
      }
    }
  });
  // A lone block's file of full names (collect_params().save) or of short ones (MXNet's
  // save_parameters of a Dense, or collect_params().save with strip_prefix).
  nn::Dense dense(4, "", true, 2);
  dense.initialize(mx::init::Normal(1.0), mx::cpu());
  const std::vector<float> want = dense.weight().data().asvector<float>();
  const std::string full_names = dir.file("dense_full.params"), short_names = dir.file("dense_short.params");
  dense.collect_params().save(full_names);
  dense.collect_params().save(short_names, dense.prefix());
  BOOST_TEST(nd::load(full_names).names == (std::vector<std::string>{dense.weight().name(), dense.bias().name()}),
             tt::per_element());
  BOOST_TEST(nd::load(short_names).names == (std::vector<std::string>{"weight", "bias"}), tt::per_element());
  for (const std::string& path : {full_names, short_names}) {
    dense.weight().set_data(nd::zeros({4, 2}));
    dense.load_parameters(path, mx::cpu());
    BOOST_TEST(dense.weight().data().asvector<float>() == want, tt::per_element());
  }
}

BOOST_AUTO_TEST_CASE(allow_missing_and_ignore_extra) {
  const TempDir dir;
  nn::Sequential source = initialized_net({mx::cpu()});
  const std::string path = dir.file("part.params");
  // Only the first layer, and an entry no block has.
  nd::save(path, {"0.weight", "0.bias", "2.weight"},
           {source.at<nn::Dense>(0).weight().data(), source.at<nn::Dense>(0).bias().data(), nd::zeros({1})});
  nn::Sequential target = initialized_net({mx::cpu()});
  const Snapshot before = snapshot(target);
  NDG_CHECK_THROWS_WITH(target.load_parameters(path, mx::cpu()), mx::FileError, "has no parameter '1.weight'",
                        "allow_missing");
  NDG_CHECK_THROWS_WITH(target.load_parameters(path, mx::cpu(), true), mx::FileError,
                        "has parameter '2.weight' which block", "ignore_extra");
  check_same(snapshot(target), before);
  target.load_parameters(path, mx::cpu(), true, true);
  const Snapshot after = snapshot(target);
  const Snapshot saved = snapshot(source);
  BOOST_TEST((after[0].second == saved[0].second));  // loaded
  BOOST_TEST((after[1].second == saved[1].second));
  BOOST_TEST((after[2].second == before[2].second));  // left as they were
  BOOST_TEST((after[3].second == before[3].second));
  BOOST_TEST((after[0].second != before[0].second));
  // Two entries for one parameter ("0.weight" and "arg:0.weight" strip to the same key).
  nd::save(path, {"0.weight", "arg:0.weight"}, {nd::zeros({5, 6}), nd::zeros({5, 6})});
  NDG_CHECK_THROWS_WITH(target.load_parameters(path, mx::cpu(), true, true), mx::FileError,
                        "two entries for parameter '0.weight'");
  check_same(snapshot(target), after);
}

BOOST_AUTO_TEST_CASE(parameter_dict_saves_and_loads_full_names) {
  const TempDir dir;
  const std::string path = dir.file("dict.params");
  nn::Sequential source = initialized_net({mx::cpu()});
  gluon::ParameterDict params = source.collect_params();
  params.save(path);
  const nd::LoadedArrays loaded = nd::load(path);
  BOOST_TEST(loaded.names == params.keys(), tt::per_element());
  const Snapshot saved = snapshot(source);
  ndg_test::for_each_context([&](mx::Context ctx) {
    source.initialize(mx::init::Zero(), ctx, true);
    params.load(path, ctx);
    check_same(snapshot(source), saved);
    BOOST_TEST(params[source.at<nn::Dense>(0).weight().name()].list_ctx() == std::vector<mx::Context>{ctx},
               tt::per_element());
  });
  // strip_prefix and restore_prefix, as MXNet's: every name must start with the prefix.
  nn::Dense a(3, "", true, 2), b(3, "", true, 2);
  a.initialize(mx::init::Normal(1.0), mx::cpu());
  b.initialize(mx::init::Zero(), mx::cpu());
  a.collect_params().save(path, a.prefix());
  BOOST_TEST(nd::load(path).names == (std::vector<std::string>{"weight", "bias"}), tt::per_element());
  b.collect_params().load(path, mx::cpu(), false, false, b.prefix());
  BOOST_TEST(bits_of(b.weight().data()) == bits_of(a.weight().data()), tt::per_element());
  NDG_CHECK_THROWS_WITH(params.save(path, a.prefix()), mx::ValueError, "'" + a.prefix() + "'",
                        source.at<nn::Dense>(0).weight().name(), "does not start with it");
  NDG_CHECK_THROWS_WITH(params.load(path, mx::cpu(), false, false, "nope_"), mx::ValueError, "restore_prefix",
                        "'nope_'");
  // Without the prefix the short names are not the parameters' names.
  NDG_CHECK_THROWS_WITH(b.collect_params().load(path), mx::FileError, "ParameterDict::load", "'" + path + "'",
                        "has no parameter '" + b.weight().name() + "' that the ParameterDict needs");
  NDG_CHECK_THROWS_WITH(b.collect_params().load(path, mx::cpu(), true), mx::FileError,
                        "has parameter 'weight' which the ParameterDict does not have");
  // A shape that does not fit.
  nn::Dense c(3, "", true, 5);
  c.initialize(mx::init::Zero(), mx::cpu());
  NDG_CHECK_THROWS_WITH(c.collect_params().load(path, mx::cpu(), false, false, c.prefix()), mx::ShapeError,
                        "'" + c.weight().name() + "'", "(3, 5)", "(3, 2)", path);
}

BOOST_AUTO_TEST_CASE(corrupt_mxnet_files_are_rejected_and_change_nothing) {
  const TempDir dir;
  const std::string good = dir.file("good.params");
  nn::Sequential source = initialized_net({mx::cpu()});
  source.save_parameters(good);
  const std::string bytes = read_bytes(good);
  nn::Sequential target = initialized_net({mx::cpu()});
  const Snapshot before = snapshot(target);
  const auto check = [&](const std::string& label, const std::string& content, auto error_tag,
                         std::vector<std::string> parts) {
    using ErrorType = typename decltype(error_tag)::type;
    BOOST_TEST_CONTEXT(label) {
      const std::string path = dir.file(label + ".params");
      write_bytes(path, content);
      parts.push_back("'" + path + "'");
      BOOST_CHECK_EXCEPTION(target.load_parameters(path, mx::cpu()), ErrorType, ndg_test::message_has{parts});
      check_same(snapshot(target), before);
    }
  };
  struct FileErr { using type = mx::FileError; };
  struct DTypeErr { using type = mx::DTypeError; };
  // Cut in the header, in a record's extents, in its data, in the last record, in the names.
  for (std::size_t n : {0u, 5u, 20u, 40u, 100u, 200u, 420u}) {
    BOOST_TEST_REQUIRE(n < bytes.size());
    check("cut_" + std::to_string(n), bytes.substr(0, n), FileErr{}, {"truncated"});
  }
  check("cut_last", bytes.substr(0, bytes.size() - 1), FileErr{}, {"truncated", "name 3 of 4"});
  // Record 0 ("0.weight", (5, 6)) claims extents no file holds.
  std::string huge = bytes;
  const std::int64_t extents[2] = {std::int64_t{1} << 40, std::int64_t{1} << 20};
  std::memcpy(huge.data() + 24 + 12, extents, 16);
  check("huge", huge, FileErr{}, {"truncated", "record 0 of 4", "(1099511627776, 1048576) float32"});
  // Record 0 as int8: a dtype ndgluon lacks (same element count in a quarter of the bytes; the
  // names then sit 90 bytes early, so the record is rebuilt whole).
  {
    nd::LoadedArrays parts = nd::load(good);
    std::string narrow = nd::save_tobuffer(parts.names, parts.arrays);
    const std::int32_t int8 = 5;
    std::memcpy(narrow.data() + 24 + 12 + 16 + 8, &int8, 4);
    narrow.erase(24 + 12 + 16 + 12 + 30, 90);
    check("int8", narrow, DTypeErr{}, {"record 0 of 4", "'0.weight'", "(5, 6) int8"});
  }
  // A list without names.
  nd::save(dir.file("list.nd"), {nd::zeros({5, 6})});
  check("list", read_bytes(dir.file("list.nd")), FileErr{}, {"list of 1 arrays without names"});
  // An entry whose record has no shape (MXNet's NDArray()), for a parameter.
  {
    std::string none = "";
    const auto put = [&](auto value) { none.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
    put(std::uint64_t{0x112});
    put(std::uint64_t{0});
    put(std::uint64_t{1});
    put(std::uint32_t{0xF993FAC9});
    put(std::int32_t{0});
    put(std::int32_t{0});
    put(std::uint64_t{1});
    put(std::uint64_t{8});
    none += "0.weight";
    check("none", none, FileErr{}, {"no data for parameter '0.weight'"});
  }
}

BOOST_AUTO_TEST_SUITE_END()
