#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gluon/data.hpp>

namespace nd = mx::nd;
namespace gdata = mx::gluon::data;
namespace tt = boost::test_tools;
namespace fs = std::filesystem;
using ndg_test::crc32;
using ndg_test::TempDir;
using ndg_test::write_bytes;

// The Gluon data pipeline: the Fashion-MNIST reader on the real files and on malformed ones written
// here, ArrayDataset, to_tensor, and DataLoader (batch counts for each last_batch policy, shuffling,
// reproducibility, leaving a loop early, errors from its thread).

namespace {

// Sets (or, with no value, unsets) an environment variable for the scope, then restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void put_le(std::string& out, std::uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void put_be32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xFF);
}

// A gzip file (RFC 1952) holding `raw` in stored (uncompressed) deflate blocks of at most 65535
// bytes (RFC 1951, BTYPE 00): valid input for zlib, written without it.
std::string gzip(const std::string& raw) {
  std::string out = {'\x1f', '\x8b', '\x08', '\0', '\0', '\0', '\0', '\0', '\0', '\xff'};
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - pos);
    out += static_cast<char>(pos + n == raw.size() ? 1 : 0);  // BFINAL on the last block, BTYPE 00
    put_le(out, static_cast<std::uint32_t>(n), 2);
    put_le(out, static_cast<std::uint32_t>(~n & 0xFFFF), 2);
    out.append(raw, pos, n);
    pos += n;
  } while (pos < raw.size());
  put_le(out, crc32(raw), 4);
  put_le(out, static_cast<std::uint32_t>(raw.size()), 4);
  return out;
}

// Pixel (r, c) of fake image i: a pattern that differs between images, rows and columns.
std::uint8_t fake_pixel(std::size_t i, std::size_t r, std::size_t c) {
  return static_cast<std::uint8_t>((i * 31 + r * 7 + c) % 256);
}

// An uncompressed IDX images file: header (magic, count, rows, cols), then `stored` images of
// fake_pixel (count unless given: a file shorter than its header says).
std::string idx_images(std::uint32_t count, std::uint32_t magic = 2051, std::uint32_t rows = 28,
                       std::uint32_t cols = 28, std::optional<std::uint32_t> stored = {}) {
  std::string out;
  for (std::uint32_t word : {magic, count, rows, cols}) put_be32(out, word);
  for (std::size_t i = 0; i < stored.value_or(count); ++i) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) out += static_cast<char>(fake_pixel(i, r, c));
    }
  }
  return out;
}

// An uncompressed IDX labels file: header (magic, count), then the labels.
std::string idx_labels(const std::vector<std::uint8_t>& labels, std::uint32_t magic = 2049) {
  std::string out;
  put_be32(out, magic);
  put_be32(out, static_cast<std::uint32_t>(labels.size()));
  for (std::uint8_t label : labels) out += static_cast<char>(label);
  return out;
}

const std::vector<std::uint8_t> kFakeLabels = {3, 1, 4, 1, 5};

// Writes a split ("train" or "t10k") of the given file contents into dir.
void write_split(const TempDir& dir, const std::string& split, const std::string& images, const std::string& labels) {
  write_bytes(dir.file(split + "-images-idx3-ubyte.gz"), images);
  write_bytes(dir.file(split + "-labels-idx1-ubyte.gz"), labels);
}

// A valid split of five fake images with kFakeLabels.
void write_fake_split(const TempDir& dir, const std::string& split = "train") {
  write_split(dir, split, gzip(idx_images(5)), gzip(idx_labels(kFakeLabels)));
}

// The real data set is present (at FashionMNIST::default_root()).
struct needs_fashion_mnist {
  tt::assertion_result operator()(boost::unit_test::test_unit_id) const {
    const std::string root = gdata::FashionMNIST::default_root();
    tt::assertion_result result(fs::exists(fs::path(root) / "train-images-idx3-ubyte.gz") &&
                                fs::exists(fs::path(root) / "t10k-labels-idx1-ubyte.gz"));
    result.message() << "needs Fashion-MNIST in " << root
                     << " (Debian package dataset-fashion-mnist, or set FASHION_MNIST_DIR)";
    return result;
  }
};

std::vector<std::int64_t> as_int64(const nd::NDArray& x) { return x.asvector<std::int64_t>(); }

// A dataset of n samples whose data row i is (i, i + 0.5) and whose label is i, to follow samples.
gdata::ArrayDataset numbered_dataset(std::int64_t n) {
  std::vector<float> data, label;
  for (std::int64_t i = 0; i < n; ++i) {
    data.push_back(static_cast<float>(i));
    data.push_back(static_cast<float>(i) + 0.5f);
    label.push_back(static_cast<float>(i));
  }
  return gdata::ArrayDataset(nd::array(data, {n, 2}, mx::cpu()), nd::array(label, {n}, mx::cpu()));
}

// The label of every sample of one epoch, in order, checking that each data row goes with its label.
std::vector<std::int64_t> run_epoch(gdata::DataLoader& loader, std::vector<std::int64_t>* batch_sizes = nullptr) {
  std::vector<std::int64_t> seen;
  for (auto& [X, y] : loader) {
    BOOST_TEST(X.context() == mx::cpu());
    BOOST_TEST(y.context() == mx::cpu());
    const auto labels = as_int64(y);
    const auto rows = X.asvector<float>();
    BOOST_TEST_REQUIRE(rows.size() == 2 * labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      BOOST_TEST(rows[2 * i] == static_cast<float>(labels[i]));
      BOOST_TEST(rows[2 * i + 1] == static_cast<float>(labels[i]) + 0.5f);
    }
    if (batch_sizes) batch_sizes->push_back(X.shape()[0]);
    seen.insert(seen.end(), labels.begin(), labels.end());
  }
  return seen;
}

std::vector<std::int64_t> iota_vector(std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

struct TransformFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(data)

// --- Fashion-MNIST, the real files ---------------------------------------------------------------

// The expected values below were computed once with Python's gzip module on the Debian package's
// files: labels = gzip.open(...).read()[8:], pixels = gzip.open(...).read()[16:], then
// sum(pixels[:784]) for the first image, sum(pixels) for all, and pixels[14 * 28 : 15 * 28] for
// row 14 of the first image.

BOOST_AUTO_TEST_CASE(reads_the_training_set, *boost::unit_test::precondition(needs_fashion_mnist{})) {
  const gdata::FashionMNIST train(true);
  BOOST_TEST(train.train());
  BOOST_TEST(train.root() == gdata::FashionMNIST::default_root());
  BOOST_TEST(train.size() == 60000);
  BOOST_TEST(train.data().shape() == (mx::Shape{60000, 28, 28}));
  BOOST_TEST(train.data().dtype() == mx::DType::uint8);
  BOOST_TEST(train.data().context() == mx::cpu());
  BOOST_TEST(train.label().shape() == (mx::Shape{60000}));
  BOOST_TEST(train.label().dtype() == mx::DType::int32);
  BOOST_TEST(train.label().context() == mx::cpu());

  BOOST_TEST(as_int64(train.label().slice(0, 10)) == (std::vector<std::int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}),
             tt::per_element());
  BOOST_TEST(train.label()[59999].asscalar<std::int32_t>() == 5);
  // 6000 samples of each class.
  std::vector<int> per_class(10, 0);
  for (std::int64_t label : as_int64(train.label())) ++per_class.at(static_cast<std::size_t>(label));
  BOOST_TEST(per_class == std::vector<int>(10, 6000), tt::per_element());

  BOOST_TEST(train.data()[0].astype(mx::DType::float64).sum().asscalar<double>() == 76247.0);
  BOOST_TEST(train.data()[1].astype(mx::DType::float64).sum().asscalar<double>() == 84598.0);
  BOOST_TEST(train.data().astype(mx::DType::float64).sum().asscalar<double>() == 3431114169.0);
  const std::vector<int> row14 = {0,   0,   1,   4,   6,   7,   2,   0,   0,   0,   0,   0,   237, 226,
                                  217, 223, 222, 219, 222, 221, 216, 223, 229, 215, 218, 255, 77,  0};
  const auto pixels = train.data()[0][14].asvector<std::uint8_t>();
  BOOST_TEST(std::vector<int>(pixels.begin(), pixels.end()) == row14, tt::per_element());
}

BOOST_AUTO_TEST_CASE(reads_the_test_set, *boost::unit_test::precondition(needs_fashion_mnist{})) {
  const gdata::FashionMNIST test(false);
  BOOST_TEST(!test.train());
  BOOST_TEST(test.size() == 10000);
  BOOST_TEST(test.data().shape() == (mx::Shape{10000, 28, 28}));
  BOOST_TEST(as_int64(test.label().slice(0, 10)) == (std::vector<std::int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}),
             tt::per_element());
  BOOST_TEST(test.data()[0].astype(mx::DType::float64).sum().asscalar<double>() == 33456.0);
  BOOST_TEST(test.data().astype(mx::DType::float64).sum().asscalar<double>() == 573469082.0);
  BOOST_TEST(gdata::FashionMNIST::text_labels(test.label().slice(0, 3)) ==
                 (std::vector<std::string>{"ankle boot", "pullover", "trouser"}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(num_samples_reads_the_first_samples, *boost::unit_test::precondition(needs_fashion_mnist{})) {
  const gdata::FashionMNIST first(true, "", 100);
  BOOST_TEST(first.size() == 100);
  BOOST_TEST(first.data().shape() == (mx::Shape{100, 28, 28}));
  BOOST_TEST(as_int64(first.label().slice(0, 10)) == (std::vector<std::int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}),
             tt::per_element());
  BOOST_TEST(first.data()[0].astype(mx::DType::float64).sum().asscalar<double>() == 76247.0);
  const gdata::FashionMNIST none(false, "", 0);
  BOOST_TEST(none.size() == 0);
  BOOST_TEST(none.data().shape() == (mx::Shape{0, 28, 28}));
}

BOOST_AUTO_TEST_CASE(text_labels_are_d2l_names) {
  BOOST_TEST(gdata::FashionMNIST::text_labels(std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) ==
                 (std::vector<std::string>{"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                                           "sneaker", "bag", "ankle boot"}),
             tt::per_element());
  // From an array of any dtype and context.
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(gdata::FashionMNIST::text_labels(nd::array({9, 0, 3}, ctx)) ==
                   (std::vector<std::string>{"ankle boot", "t-shirt", "dress"}),
               tt::per_element());
    BOOST_TEST(gdata::FashionMNIST::text_labels(nd::array({8}, ctx, mx::DType::int32)) ==
                   std::vector<std::string>{"bag"},
               tt::per_element());
  });
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST::text_labels(std::vector<std::int64_t>{2, 10}), mx::IndexError, "10",
                        "0 to 9");
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST::text_labels(nd::array({-1})), mx::IndexError, "-1");
}

// --- Fashion-MNIST, files written here ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(reads_files_written_here) {
  const TempDir dir;
  write_fake_split(dir, "train");
  write_split(dir, "t10k", gzip(idx_images(2)), gzip(idx_labels({9, 0})));
  const gdata::FashionMNIST train(true, dir.str());
  BOOST_TEST(train.size() == 5);
  BOOST_TEST(train.root() == dir.str());
  BOOST_TEST(as_int64(train.label()) == (std::vector<std::int64_t>{3, 1, 4, 1, 5}), tt::per_element());
  const auto pixels = train.data().asvector<std::uint8_t>();
  BOOST_TEST_REQUIRE(pixels.size() == 5u * 28 * 28);
  for (std::size_t i : {0, 2, 4}) {
    for (std::size_t r : {0, 13, 27}) {
      for (std::size_t c : {0, 5, 27}) BOOST_TEST(pixels[(i * 28 + r) * 28 + c] == fake_pixel(i, r, c));
    }
  }
  const gdata::FashionMNIST test(false, dir.str());
  BOOST_TEST(test.size() == 2);
  BOOST_TEST(as_int64(test.label()) == (std::vector<std::int64_t>{9, 0}), tt::per_element());
  // num_samples beyond the split's size gives all of it; subset() takes the first samples as views.
  BOOST_TEST(gdata::FashionMNIST(true, dir.str(), 1000).size() == 5);
  BOOST_TEST(gdata::FashionMNIST(true, dir.str(), 2).size() == 2);
  const gdata::ArrayDataset first3 = train.subset(3);
  BOOST_TEST(first3.size() == 3);
  BOOST_TEST(as_int64(first3.label()) == (std::vector<std::int64_t>{3, 1, 4}), tt::per_element());
  BOOST_TEST(first3.data().data() == train.data().data());  // a view of the same storage
}

BOOST_AUTO_TEST_CASE(fashion_mnist_dir_overrides_the_default_root) {
  const TempDir dir, other;
  write_fake_split(dir, "train");
  write_split(other, "train", gzip(idx_images(2)), gzip(idx_labels({7, 7})));
  {
    const ScopedEnv env("FASHION_MNIST_DIR", dir.str());
    BOOST_TEST(gdata::FashionMNIST::default_root() == dir.str());
    const gdata::FashionMNIST train;  // root "": $FASHION_MNIST_DIR
    BOOST_TEST(train.root() == dir.str());
    BOOST_TEST(train.size() == 5);
    // An explicit root wins over the variable.
    BOOST_TEST(gdata::FashionMNIST(true, other.str()).size() == 2);
    // The variable's directory has no test split: the error names the file there.
    NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(false), mx::FileError, dir.file("t10k-images-idx3-ubyte.gz"),
                          "No such file", "FASHION_MNIST_DIR");
  }
  {
    const ScopedEnv empty("FASHION_MNIST_DIR", "");  // set but empty: the default
    BOOST_TEST(gdata::FashionMNIST::default_root() == "/usr/share/datasets/fashion-mnist");
  }
  {
    const ScopedEnv unset("FASHION_MNIST_DIR", std::nullopt);
    BOOST_TEST(gdata::FashionMNIST::default_root() == "/usr/share/datasets/fashion-mnist");
  }
}

// MNIST reads the same four files; its errors and its variable are its own.
BOOST_AUTO_TEST_CASE(mnist_reads_the_same_files) {
  const TempDir dir;
  write_fake_split(dir, "train");
  write_split(dir, "t10k", gzip(idx_images(2)), gzip(idx_labels({9, 0})));
  const gdata::vision::MNIST train(true, dir.str());
  BOOST_TEST(train.size() == 5);
  BOOST_TEST(as_int64(train.label()) == (std::vector<std::int64_t>{3, 1, 4, 1, 5}), tt::per_element());
  BOOST_TEST(train.data().asvector<std::uint8_t>()[(2 * 28 + 13) * 28 + 5] == fake_pixel(2, 13, 5));
  BOOST_TEST(gdata::MNIST(false, dir.str()).size() == 2);
  {
    const ScopedEnv env("MNIST_DIR", dir.str());
    BOOST_TEST(gdata::MNIST::default_root() == dir.str());
    BOOST_TEST(gdata::MNIST().size() == 5);
  }
  {
    const ScopedEnv unset("MNIST_DIR", std::nullopt);
    BOOST_TEST(gdata::MNIST::default_root().ends_with("/.mxnet/datasets/mnist"));
  }
  write_split(dir, "t10k", gzip(idx_images(2)), gzip(idx_labels({9, 10})));
  NDG_CHECK_THROWS_WITH(gdata::MNIST(false, dir.str()), mx::FileError, "MNIST: ", "label 10 of sample 1");
  NDG_CHECK_THROWS_WITH(gdata::MNIST(true, dir.file("nowhere")), mx::FileError, "MNIST: cannot open", "MNIST_DIR");
  // FashionMNIST is an MNIST, as in MXNet.
  const gdata::MNIST& fashion = gdata::FashionMNIST(true, dir.str());
  BOOST_TEST(fashion.size() == 5);
}

BOOST_AUTO_TEST_CASE(missing_file) {
  const TempDir dir;
  write_bytes(dir.file("train-images-idx3-ubyte.gz"), gzip(idx_images(5)));  // no labels file
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError,
                        "'" + dir.file("train-labels-idx1-ubyte.gz") + "'", "cannot open", "No such file");
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.file("nowhere")), mx::FileError,
                        dir.file("nowhere/train-images-idx3-ubyte.gz"), "No such file");
}

BOOST_AUTO_TEST_CASE(a_directory_in_place_of_a_file) {
  const TempDir dir;
  std::filesystem::create_directory(dir.file("train-images-idx3-ubyte.gz"));
  write_bytes(dir.file("train-labels-idx1-ubyte.gz"), gzip(idx_labels(kFakeLabels)));
  BOOST_CHECK_EXCEPTION(gdata::FashionMNIST(true, dir.str()), mx::FileError,
                        ndg_test::message_has({"'" + dir.file("train-images-idx3-ubyte.gz") + "'", std::strerror(EISDIR)}));
}

BOOST_AUTO_TEST_CASE(empty_file) {
  const TempDir dir;
  write_split(dir, "train", "", gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError,
                        "'" + dir.file("train-images-idx3-ubyte.gz") + "' is empty");
  // A gzip stream of nothing: the header is missing.
  write_split(dir, "train", gzip(""), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "is empty");
}

BOOST_AUTO_TEST_CASE(file_that_is_not_gzip) {
  const TempDir dir;
  // The right IDX contents, but not compressed.
  write_split(dir, "train", gzip(idx_images(5)), idx_labels(kFakeLabels));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError,
                        "'" + dir.file("train-labels-idx1-ubyte.gz") + "' is not a gzip file", "00 00 08 01",
                        "1f 8b");
  write_split(dir, "train", "hello, world\n", gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "not a gzip file", "68 65 6c 6c");
}

BOOST_AUTO_TEST_CASE(corrupt_gzip_stream) {
  const TempDir dir;
  // A gzip header, then a deflate block of the reserved type 11.
  std::string corrupt = gzip(idx_images(5)).substr(0, 10);
  corrupt += std::string("\x07\x01\x02\x03\x04\x05\x06\x07", 8);
  write_split(dir, "train", corrupt, gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "not a valid gzip stream", "invalid block type");
}

BOOST_AUTO_TEST_CASE(wrong_magic_number) {
  const TempDir dir;
  // The files swapped: each is a valid IDX file of the other kind.
  write_split(dir, "train", gzip(idx_labels(kFakeLabels)), gzip(idx_images(5)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "magic number 2049", "expected 2051", "labels file");
  write_split(dir, "train", gzip(idx_images(5)), gzip(idx_images(5)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-labels-idx1-ubyte.gz"),
                        "magic number 2051", "expected 2049", "images file");
  write_split(dir, "train", gzip(idx_images(5, 0x12345678)), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, "magic number 305419896",
                        "expected 2051");
}

BOOST_AUTO_TEST_CASE(image_and_label_counts_differ) {
  const TempDir dir;
  write_split(dir, "train", gzip(idx_images(5)), gzip(idx_labels({1, 2, 3, 4})));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "5 images", dir.file("train-labels-idx1-ubyte.gz"), "4 labels");
  // Also when only the first samples are asked for: the headers disagree.
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str(), 2), mx::FileError, "5 images", "4 labels");
}

BOOST_AUTO_TEST_CASE(truncated_images) {
  const TempDir dir;
  // The header announces 5 images, the complete gzip stream holds 3.
  write_split(dir, "train", gzip(idx_images(5, 2051, 28, 28, 3)), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "truncated", "5 images", std::to_string(5 * 784), std::to_string(3 * 784), "data ends early");
  // The first 3 samples are all there.
  BOOST_TEST(gdata::FashionMNIST(true, dir.str(), 3).size() == 3);
  // The gzip stream itself cut in the middle.
  const std::string whole = gzip(idx_images(5));
  write_split(dir, "train", whole.substr(0, whole.size() / 2), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "truncated", "gzip stream is cut off");
  // A gzip stream cut off inside its own header, before any data.
  write_split(dir, "train", whole.substr(0, 5), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "truncated", "gzip stream is cut off");
  // A header cut short.
  write_split(dir, "train", gzip(idx_images(5).substr(0, 10)), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, "truncated",
                        "the rest of the header needs 12 bytes", "only 6");
  write_split(dir, "train", gzip(idx_images(5).substr(0, 3)), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, "truncated",
                        "the magic number needs 4 bytes", "only 3");
}

BOOST_AUTO_TEST_CASE(truncated_labels) {
  const TempDir dir;
  std::string labels = idx_labels(kFakeLabels);
  labels.resize(labels.size() - 2);
  write_split(dir, "train", gzip(idx_images(5)), gzip(labels));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-labels-idx1-ubyte.gz"),
                        "truncated", "5 labels", "only 3");
}

BOOST_AUTO_TEST_CASE(images_of_another_size) {
  const TempDir dir;
  write_split(dir, "train", gzip(idx_images(5, 2051, 32, 28)), gzip(idx_labels(kFakeLabels)));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-images-idx3-ubyte.gz"),
                        "32x28", "28x28");
}

BOOST_AUTO_TEST_CASE(label_that_is_not_a_class) {
  const TempDir dir;
  write_split(dir, "train", gzip(idx_images(5)), gzip(idx_labels({3, 1, 4, 12, 5})));
  NDG_CHECK_THROWS_WITH(gdata::FashionMNIST(true, dir.str()), mx::FileError, dir.file("train-labels-idx1-ubyte.gz"),
                        "label 12", "sample 3", "0 to 9");
}

// --- ArrayDataset ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(array_dataset) {
  const nd::NDArray data = nd::arange(24).reshape({6, 2, 2});
  const nd::NDArray label = nd::arange(6, mx::cpu(), mx::DType::int32);
  const gdata::ArrayDataset dataset(data, label);
  BOOST_TEST(dataset.size() == 6);
  BOOST_TEST(dataset.data().is(data));  // shared, not copied
  BOOST_TEST(dataset.label().is(label));
  const auto [x, y] = dataset[4];
  BOOST_TEST(x.shape() == (mx::Shape{2, 2}));
  BOOST_TEST(x.asvector<float>() == (std::vector<float>{16, 17, 18, 19}), tt::per_element());
  BOOST_TEST(y.asscalar<std::int32_t>() == 4);
  BOOST_TEST(dataset.subset(2).size() == 2);
  BOOST_TEST(dataset.subset(0).size() == 0);
  NDG_CHECK_THROWS_WITH(dataset[6], mx::IndexError, "6", "6 samples");
  NDG_CHECK_THROWS_WITH(dataset[-1], mx::IndexError, "-1");
  NDG_CHECK_THROWS_WITH(dataset.subset(7), mx::IndexError, "7", "6 samples");
}

BOOST_AUTO_TEST_CASE(array_dataset_sizes_must_match) {
  NDG_CHECK_THROWS_WITH(gdata::ArrayDataset(nd::zeros({5, 3}), nd::zeros({4})), mx::ShapeError, "5 samples",
                        "(5, 3)", "4", "(4,)");
  NDG_CHECK_THROWS_WITH(gdata::ArrayDataset(nd::zeros({5}), nd::zeros({5, 2}).T()), mx::ShapeError, "(2, 5)");
  NDG_CHECK_THROWS_WITH(gdata::ArrayDataset(nd::zeros({3}), nd::NDArray()), mx::Error, "ArrayDataset");
}

// --- to_tensor ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(to_tensor_values_and_layout) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // (B, H, W) = (2, 2, 3) uint8 -> (2, 1, 2, 3) float32 / 255.
    std::vector<std::uint8_t> pixels(12);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 23);
    const nd::NDArray gray = gdata::to_tensor(nd::array(pixels, {2, 2, 3}, ctx));
    BOOST_TEST(gray.context() == ctx);
    BOOST_TEST(gray.dtype() == mx::DType::float32);
    BOOST_TEST(gray.shape() == (mx::Shape{2, 1, 2, 3}));
    std::vector<float> want;
    for (std::uint8_t p : pixels) want.push_back(static_cast<float>(p) / 255.0f);
    BOOST_TEST(gray.asvector<float>() == want, tt::per_element());
    BOOST_TEST(gray.max().asscalar<float>() <= 1.0f);

    // (B, H, W, C) = (1, 2, 2, 3) -> (1, 3, 2, 2): element (b, c, h, w) is input (b, h, w, c) / 255.
    const nd::NDArray color = gdata::to_tensor(nd::array(pixels, {1, 2, 2, 3}, ctx));
    BOOST_TEST(color.shape() == (mx::Shape{1, 3, 2, 2}));
    const auto got = color.asvector<float>();
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t hw = 0; hw < 4; ++hw) {
        BOOST_TEST(got[c * 4 + hw] == static_cast<float>(pixels[hw * 3 + c]) / 255.0f, "c " << c << " hw " << hw);
      }
    }
    // float32 input is scaled the same way; (B, H, W, 1) is (B, 1, H, W).
    const nd::NDArray from_float = gdata::to_tensor(nd::array(pixels, {2, 2, 3, 1}, ctx, mx::DType::float32));
    BOOST_TEST(from_float.shape() == (mx::Shape{2, 1, 2, 3}));
    BOOST_TEST(from_float.asvector<float>() == want, tt::per_element());
    NDG_CHECK_THROWS_WITH(gdata::to_tensor(nd::zeros({4, 784}, ctx)), mx::ShapeError, "(B, H, W)", "(4, 784)");
  });
}

// --- DataLoader -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(batch_counts_and_last_batch_keep_and_discard) {
  const gdata::ArrayDataset dataset = numbered_dataset(10);
  gdata::DataLoader keep(dataset, 3);
  BOOST_TEST(keep.size() == 4);
  BOOST_TEST(keep.batch_size() == 3);
  std::vector<std::int64_t> sizes;
  BOOST_TEST(run_epoch(keep, &sizes) == iota_vector(0, 10), tt::per_element());
  BOOST_TEST(sizes == (std::vector<std::int64_t>{3, 3, 3, 1}), tt::per_element());

  gdata::DataLoader discard(dataset, 3, false, "discard");
  BOOST_TEST(discard.size() == 3);
  sizes.clear();
  BOOST_TEST(run_epoch(discard, &sizes) == iota_vector(0, 9), tt::per_element());
  BOOST_TEST(sizes == (std::vector<std::int64_t>{3, 3, 3}), tt::per_element());
  // The same again in the next epoch.
  BOOST_TEST(run_epoch(discard) == iota_vector(0, 9), tt::per_element());

  // Batch size dividing the dataset, larger than it, and an empty dataset.
  for (const std::string policy : {"keep", "discard", "rollover"}) {
    BOOST_TEST_CONTEXT("last_batch " << policy) {
      BOOST_TEST(gdata::DataLoader(dataset, 5, false, policy).size() == 2);
      BOOST_TEST(gdata::DataLoader(dataset, 10, false, policy).size() == 1);
      gdata::DataLoader empty(numbered_dataset(0), 4, false, policy);
      BOOST_TEST(empty.size() == 0);
      BOOST_TEST(run_epoch(empty).empty());
    }
  }
  gdata::DataLoader big_keep(dataset, 16);
  BOOST_TEST(big_keep.size() == 1);
  BOOST_TEST(run_epoch(big_keep) == iota_vector(0, 10), tt::per_element());
  gdata::DataLoader big_discard(dataset, 16, false, "discard");
  BOOST_TEST(big_discard.size() == 0);
  BOOST_TEST(run_epoch(big_discard).empty());
}

BOOST_AUTO_TEST_CASE(last_batch_rollover_carries_samples_to_the_next_epoch) {
  gdata::DataLoader loader(numbered_dataset(10), 3, false, "rollover");
  // Epoch 1: 0..8 in three batches; 9 is carried over.
  BOOST_TEST(loader.size() == 3);
  std::vector<std::int64_t> sizes;
  BOOST_TEST(run_epoch(loader, &sizes) == iota_vector(0, 9), tt::per_element());
  BOOST_TEST(sizes == (std::vector<std::int64_t>{3, 3, 3}), tt::per_element());
  // Epoch 2: 9 then 0..9 = 11 samples, three batches; 8 and 9 are carried over.
  BOOST_TEST(loader.size() == 3);
  BOOST_TEST(run_epoch(loader) == (std::vector<std::int64_t>{9, 0, 1, 2, 3, 4, 5, 6, 7}), tt::per_element());
  // Epoch 3: 8, 9 then 0..9 = 12 samples, four full batches, nothing left.
  BOOST_TEST(loader.size() == 4);
  sizes.clear();
  BOOST_TEST(run_epoch(loader, &sizes) == (std::vector<std::int64_t>{8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),
             tt::per_element());
  BOOST_TEST(sizes == (std::vector<std::int64_t>{3, 3, 3, 3}), tt::per_element());
  BOOST_TEST(loader.size() == 3);
}

BOOST_AUTO_TEST_CASE(samplers_give_mxnets_orders) {
  BOOST_TEST(gdata::SequentialSampler(5, 2).next_epoch() == (std::vector<std::int64_t>{2, 3, 4, 5, 6}), tt::per_element());
  BOOST_TEST(gdata::SequentialSampler(5).size() == 5);
  BOOST_TEST(gdata::SequentialSampler(0).next_epoch().empty());
  gdata::IntervalSampler interval(10, 3);
  BOOST_TEST(interval.next_epoch() == (std::vector<std::int64_t>{0, 3, 6, 9, 1, 4, 7, 2, 5, 8}), tt::per_element());
  BOOST_TEST(interval.size() == 10);
  gdata::IntervalSampler no_rollover(10, 3, false);
  BOOST_TEST(no_rollover.next_epoch() == (std::vector<std::int64_t>{0, 3, 6, 9}), tt::per_element());
  BOOST_TEST(no_rollover.size() == 4);
  BOOST_TEST(gdata::IntervalSampler(2, 5).next_epoch() == (std::vector<std::int64_t>{0, 1}), tt::per_element());
  // RandomSampler: a permutation, a new one each epoch, the epochs of one seed again after
  // mx::random::seed, and the DataLoader's shuffled order for the same seed.
  mx::random::seed(5);
  gdata::RandomSampler random(50);
  const std::vector<std::int64_t> first = random.next_epoch(), second = random.next_epoch();
  BOOST_TEST(first != second);
  std::vector<std::int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  BOOST_TEST(sorted == iota_vector(0, 50), tt::per_element());
  mx::random::seed(5);
  BOOST_TEST(random.next_epoch() == first, tt::per_element());
  mx::random::seed(5);
  gdata::DataLoader shuffled(numbered_dataset(50), 50, true);
  BOOST_TEST(run_epoch(shuffled) == first, tt::per_element());
  NDG_CHECK_THROWS_WITH(gdata::SequentialSampler(-1), mx::ValueError, "SequentialSampler", "-1");
  NDG_CHECK_THROWS_WITH(gdata::RandomSampler(-2), mx::ValueError, "RandomSampler", "-2");
  NDG_CHECK_THROWS_WITH(gdata::IntervalSampler(4, 0), mx::ValueError, "IntervalSampler", "interval", "0");
}

BOOST_AUTO_TEST_CASE(batch_sampler_keeps_discards_and_rolls_over) {
  using Batches = std::vector<std::vector<std::int64_t>>;
  const auto sequential = std::make_shared<gdata::SequentialSampler>(10);
  gdata::BatchSampler keep(sequential, 3);
  BOOST_TEST(keep.size() == 4);
  BOOST_TEST((keep.next_epoch() == Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
  gdata::BatchSampler discard(sequential, 3, "discard");
  BOOST_TEST(discard.size() == 3);
  BOOST_TEST((discard.next_epoch() == Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
  gdata::BatchSampler rollover(sequential, 3, "rollover");
  BOOST_TEST((rollover.next_epoch() == Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
  BOOST_TEST(rollover.size() == 3);  // 9 carried, then 10 more: 11 samples
  BOOST_TEST((rollover.next_epoch() == Batches{{9, 0, 1}, {2, 3, 4}, {5, 6, 7}}));
  BOOST_TEST(rollover.size() == 4);  // 8 and 9 carried: 12 samples
  NDG_CHECK_THROWS_WITH(gdata::BatchSampler(sequential, 0), mx::ValueError, "BatchSampler", "batch_size", "0");
  NDG_CHECK_THROWS_WITH(gdata::BatchSampler(sequential, 2, "drop"), mx::ValueError, "BatchSampler", "\"drop\"");
  NDG_CHECK_THROWS_WITH(gdata::BatchSampler(nullptr, 2), mx::ValueError, "BatchSampler", "null");
}

// A batch sampler of one's own: the batches it gives, whatever their sizes.
class GivenBatches final : public gdata::BatchSamplerBase {
 public:
  explicit GivenBatches(std::vector<std::vector<std::int64_t>> batches) : batches_(std::move(batches)) {}
  std::vector<std::vector<std::int64_t>> next_epoch() override { return batches_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(batches_.size()); }

 private:
  std::vector<std::vector<std::int64_t>> batches_;
};

// An ArrayDataset's rows as a Dataset of samples, for the loader's worker path.
class RowsDataset final : public gdata::Dataset {
 public:
  explicit RowsDataset(gdata::ArrayDataset rows) : rows_(std::move(rows)) {}
  std::int64_t size() const override { return rows_.size(); }
  gdata::Sample get(std::int64_t i) const override {
    auto [data, label] = rows_[i];
    return {data.copy(), label.copy()};
  }

 private:
  gdata::ArrayDataset rows_;
};

BOOST_AUTO_TEST_CASE(loaders_take_batches_from_a_batch_sampler) {
  const gdata::ArrayDataset dataset = numbered_dataset(10);
  const auto given = std::make_shared<GivenBatches>(std::vector<std::vector<std::int64_t>>{{4, 2}, {9}, {0, 1, 2, 3}});
  gdata::DataLoader loader(dataset, given);
  BOOST_TEST(loader.size() == 3);
  std::vector<std::int64_t> sizes;
  BOOST_TEST(run_epoch(loader, &sizes) == (std::vector<std::int64_t>{4, 2, 9, 0, 1, 2, 3}), tt::per_element());
  BOOST_TEST(sizes == (std::vector<std::int64_t>{2, 1, 4}), tt::per_element());
  // The same through a Dataset and two workers.
  gdata::DataLoader workers(std::make_shared<RowsDataset>(dataset), given, {}, 2);
  sizes.clear();
  BOOST_TEST(run_epoch(workers, &sizes) == (std::vector<std::int64_t>{4, 2, 9, 0, 1, 2, 3}), tt::per_element());
  // A BatchSampler of a RandomSampler, rolling over: every sample once per two epochs' worth.
  mx::random::seed(3);
  gdata::DataLoader random(dataset, std::make_shared<gdata::BatchSampler>(std::make_shared<gdata::RandomSampler>(10), 4,
                                                                           "rollover"));
  std::vector<std::int64_t> seen = run_epoch(random), next = run_epoch(random);
  BOOST_TEST(seen.size() == 8u);
  BOOST_TEST(next.size() == 12u);  // 2 carried + 10
  // Bad batches: an index outside the dataset, an empty batch; no sharding of a sampler's batches.
  gdata::DataLoader outside(dataset, std::make_shared<GivenBatches>(std::vector<std::vector<std::int64_t>>{{1, 10}}));
  NDG_CHECK_THROWS_WITH(outside.begin(), mx::IndexError, "index 10", "10 samples");
  gdata::DataLoader empty(dataset, std::make_shared<GivenBatches>(std::vector<std::vector<std::int64_t>>{{}}));
  NDG_CHECK_THROWS_WITH(empty.begin(), mx::ValueError, "empty batch");
  NDG_CHECK_THROWS_WITH(loader.shard(2, 0), mx::ValueError, "shard", "batch sampler");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(dataset, std::shared_ptr<gdata::BatchSamplerBase>()), mx::ValueError, "null");
}

BOOST_AUTO_TEST_CASE(shuffle_sees_every_sample_once_per_epoch) {
  mx::random::seed(11);
  gdata::DataLoader loader(numbered_dataset(103), 10, true);
  BOOST_TEST(loader.size() == 11);
  std::set<std::vector<std::int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    BOOST_TEST_CONTEXT("epoch " << epoch) {
      std::vector<std::int64_t> sizes;
      std::vector<std::int64_t> order = run_epoch(loader, &sizes);  // also checks rows against labels
      BOOST_TEST(sizes.size() == 11u);
      BOOST_TEST(sizes.back() == 3);
      BOOST_TEST(order != iota_vector(0, 103));  // shuffled (a 1 in 103! chance of a false failure)
      orders.insert(order);
      std::sort(order.begin(), order.end());
      BOOST_TEST(order == iota_vector(0, 103), tt::per_element());
    }
  }
  BOOST_TEST(orders.size() == 3u);  // a new order every epoch
}

// Three ranks of a job, each with the same seed: their parts of an epoch are disjoint, cover the
// data set (103 samples padded to 105 with the epoch's first two), are reshuffled every epoch, and
// part i is every third sample of the whole epoch's order from i on.
BOOST_AUTO_TEST_CASE(shards_split_each_shuffled_epoch_between_the_ranks) {
  const gdata::ArrayDataset dataset = numbered_dataset(103);
  std::vector<std::vector<std::int64_t>> first_epochs;
  for (int epoch = 0; epoch < 2; ++epoch) {
    BOOST_TEST_CONTEXT("epoch " << epoch) {
      mx::random::seed(21);
      gdata::DataLoader whole(dataset, 200, true);
      std::vector<std::int64_t> full = run_epoch(whole);
      if (epoch == 1) full = run_epoch(whole);
      std::vector<std::int64_t> all;
      for (std::int64_t part = 0; part < 3; ++part) {
        mx::random::seed(21);
        gdata::DataLoader loader(dataset, 10, true);
        loader.shard(3, part);
        BOOST_TEST(loader.size() == 4);  // 35 samples
        std::vector<std::int64_t> order = run_epoch(loader);
        if (epoch == 1) order = run_epoch(loader);
        BOOST_TEST(order.size() == 35u);
        for (std::size_t i = 0; i < order.size(); ++i) {
          const std::size_t at = static_cast<std::size_t>(part) + 3 * i;
          BOOST_TEST(order[i] == full[at % full.size()]);
        }
        all.insert(all.end(), order.begin(), order.end());
        if (part == 0) first_epochs.push_back(order);
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      BOOST_TEST(all == iota_vector(0, 103), tt::per_element());
    }
  }
  BOOST_TEST(first_epochs[0] != first_epochs[1]);  // reshuffled
  gdata::DataLoader loader(dataset, 10);
  NDG_CHECK_THROWS_WITH(loader.shard(3, 3), mx::ValueError, "part 3 of 3");
  NDG_CHECK_THROWS_WITH(loader.shard(0, 0), mx::ValueError, "part 0 of 0");
  BOOST_TEST(loader.size() == 11);  // unchanged
}

BOOST_AUTO_TEST_CASE(shuffle_is_reproducible_with_the_same_seed) {
  const gdata::ArrayDataset dataset = numbered_dataset(50);
  mx::random::seed(5);
  gdata::DataLoader first(dataset, 7, true);
  const auto epoch0 = run_epoch(first);
  const auto epoch1 = run_epoch(first);
  BOOST_TEST(epoch0 != epoch1);
  // Another loader after the same seed gives the same epochs.
  mx::random::seed(5);
  gdata::DataLoader second(dataset, 7, true);
  BOOST_TEST(run_epoch(second) == epoch0, tt::per_element());
  BOOST_TEST(run_epoch(second) == epoch1, tt::per_element());
  // Seeding again restarts the epochs of an existing loader too; the batch size does not matter.
  mx::random::seed(5);
  BOOST_TEST(run_epoch(first) == epoch0, tt::per_element());
  gdata::DataLoader third(dataset, 50, true);
  BOOST_TEST(run_epoch(third) == epoch0, tt::per_element());
  BOOST_TEST(run_epoch(third) == epoch1, tt::per_element());
  // Another seed, another order.
  mx::random::seed(6);
  gdata::DataLoader fourth(dataset, 7, true);
  BOOST_TEST(run_epoch(fourth) != epoch0);
}

BOOST_AUTO_TEST_CASE(breaking_out_early_stops_the_thread) {
  std::atomic<int> built{0};
  const auto counting = [&built](const nd::NDArray& x) {
    ++built;
    return x;
  };
  gdata::DataLoader loader(numbered_dataset(1000), 10, false, "keep", counting);
  int seen = 0;
  for (auto& [X, y] : loader) {
    ++seen;
    BOOST_TEST(y[0].asscalar<float>() == 0.0f);
    // Time for the thread to run ahead as far as it may: the batch held here and 2 more.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    BOOST_TEST(built.load() >= 1);
    BOOST_TEST(built.load() <= 3, built.load() << " batches built while the loop held the first");
    break;
  }
  BOOST_TEST(seen == 1);
  // The thread was joined when the loop ended: nothing more is built.
  const int after = built.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(built.load() == after);
  // A new epoch runs in full; so does one whose iterator is dropped after a few steps.
  BOOST_TEST(run_epoch(loader).size() == 1000u);
  {
    auto it = loader.begin();
    ++it;
    ++it;
    BOOST_TEST(it->label[0].asscalar<float>() == 20.0f);
  }
  BOOST_TEST(run_epoch(loader).size() == 1000u);
}

BOOST_AUTO_TEST_CASE(worker_exception_is_rethrown_in_the_loop) {
  std::atomic<int> calls{0};
  const auto failing = [&calls](const nd::NDArray& x) {
    if (calls++ == 2) throw TransformFailure("transform failed on purpose");
    return x;
  };
  gdata::DataLoader loader(numbered_dataset(50), 5, false, "keep", failing);
  int batches = 0;
  bool thrown = false;
  try {
    for (auto& [X, y] : loader) {
      BOOST_TEST(y[0].asscalar<float>() == static_cast<float>(5 * batches));
      ++batches;
    }
  } catch (const TransformFailure& error) {  // its own type, not a wrapper
    thrown = true;
    BOOST_TEST(std::string(error.what()) == "transform failed on purpose");
  }
  BOOST_TEST(thrown);
  BOOST_TEST(batches == 2);  // the two batches built before the failure came first
  // A failure in the first batch is thrown by begin(); afterwards the loader still works.
  calls = 2;
  NDG_CHECK_THROWS_WITH(loader.begin(), TransformFailure, "on purpose");
  BOOST_TEST(run_epoch(loader).size() == 50u);
  // A transform that drops the batch axis is caught.
  gdata::DataLoader flattening(numbered_dataset(8), 4, false, "keep",
                               [](const nd::NDArray& x) { return x.reshape({-1}).slice(0, 3); });
  NDG_CHECK_THROWS_WITH(flattening.begin(), mx::ShapeError, "transform", "batch 0", "(4, 2)", "(3,)");
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_value_errors) {
  const gdata::ArrayDataset dataset = numbered_dataset(4);
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(dataset, 0), mx::ValueError, "batch_size", "0");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(dataset, -3), mx::ValueError, "batch_size", "-3");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(dataset, 2, true, "drop"), mx::ValueError, "\"drop\"", "\"keep\"",
                        "\"discard\"", "\"rollover\"");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(dataset, 2, false, "Keep"), mx::ValueError, "\"Keep\"");
}

BOOST_AUTO_TEST_CASE(batches_keep_dtypes_and_come_on_cpu) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // A dataset on any context gives cpu(0) batches of its dtypes.
    std::vector<std::uint8_t> pixels(4 * 3);
    std::iota(pixels.begin(), pixels.end(), std::uint8_t{0});
    const gdata::ArrayDataset dataset(nd::array(pixels, {4, 3}, ctx), nd::array({0, 1, 2, 3}, ctx, mx::DType::int32));
    gdata::DataLoader loader(dataset, 3);
    std::vector<std::int64_t> labels;
    for (auto& [X, y] : loader) {
      BOOST_TEST(X.context() == mx::cpu());
      BOOST_TEST(X.dtype() == mx::DType::uint8);
      BOOST_TEST(y.dtype() == mx::DType::int32);
      const auto got = as_int64(y);
      labels.insert(labels.end(), got.begin(), got.end());
    }
    BOOST_TEST(labels == iota_vector(0, 4), tt::per_element());
    // The range-for's pieces, by hand.
    auto it = loader.begin();
    BOOST_TEST(!(it == loader.end()), "the epoch has batches");
    BOOST_TEST((*it).data.asvector<int>() == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}), tt::per_element());
    ++it;
    BOOST_TEST(it->data.asvector<int>() == (std::vector<int>{9, 10, 11}), tt::per_element());
    ++it;
    BOOST_TEST((it == loader.end()));
  });
}

BOOST_AUTO_TEST_CASE(fashion_mnist_batches_for_a_network) {
  const TempDir dir;
  write_fake_split(dir);
  const gdata::FashionMNIST train(true, dir.str());
  gdata::DataLoader loader(train, 2, false, "keep", gdata::to_tensor);  // a FashionMNIST is an ArrayDataset
  BOOST_TEST(loader.size() == 3);
  std::int64_t first = 0;
  for (auto& [X, y] : loader) {
    BOOST_TEST(X.dtype() == mx::DType::float32);
    BOOST_TEST(X.shape() == (mx::Shape{y.shape()[0], 1, 28, 28}));
    BOOST_TEST(y.dtype() == mx::DType::int32);
    const auto values = X.asvector<float>();
    for (std::int64_t i = 0; i < y.shape()[0]; ++i) {
      for (std::size_t r : {0, 27}) {
        for (std::size_t c : {1, 26}) {
          const auto sample = static_cast<std::size_t>(first + i);
          BOOST_TEST(values[(static_cast<std::size_t>(i) * 28 + r) * 28 + c] ==
                     static_cast<float>(fake_pixel(sample, r, c)) / 255.0f);
        }
      }
    }
    first += y.shape()[0];
  }
  BOOST_TEST(first == 5);
}

BOOST_AUTO_TEST_CASE(real_fashion_mnist_in_batches, *boost::unit_test::precondition(needs_fashion_mnist{})) {
  const gdata::FashionMNIST test(false);
  mx::random::seed(1);
  gdata::DataLoader loader(test, 256, true, "keep", gdata::to_tensor);
  BOOST_TEST(loader.size() == 40);  // ceil(10000 / 256)
  std::vector<int> per_class(10, 0);
  double pixel_sum = 0;
  for (auto& [X, y] : loader) {
    BOOST_TEST(X.shape()[1] == 1);
    pixel_sum += X.astype(mx::DType::float64).sum().asscalar<double>();
    for (std::int64_t label : as_int64(y)) ++per_class.at(static_cast<std::size_t>(label));
  }
  BOOST_TEST(per_class == std::vector<int>(10, 1000), tt::per_element());
  // Every image once: the pixel sum is the test set's, / 255 (float32 rounding aside).
  BOOST_TEST(pixel_sum == 573469082.0 / 255.0, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()
