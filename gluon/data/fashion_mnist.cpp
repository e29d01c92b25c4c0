#include "gluon/data/fashion_mnist.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ndarray/ops/creation.hpp"

namespace mx::gluon::data {
namespace {

// IDX magic numbers: 0x0000 (zero), 0x08 (unsigned bytes), then the number of dimensions.
constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: (count, rows, cols) bytes
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: (count,) bytes
constexpr std::size_t kImageBytes = MNIST::kImageSize * MNIST::kImageSize;
constexpr char kFashionRoot[] = "/usr/share/datasets/fashion-mnist";

const std::array<std::string, FashionMNIST::kNumClasses> kTextLabels = {
    "t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"};

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

std::string hex_bytes(const std::uint8_t* bytes, std::size_t n) {
  std::string out;
  char piece[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(piece, sizeof(piece), i ? " %02x" : "%02x", bytes[i]);
    out += piece;
  }
  return out;
}

std::uint32_t big_endian_u32(const std::uint8_t* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) | (std::uint32_t{bytes[2]} << 8) |
         std::uint32_t{bytes[3]};
}

// Which data set's files are read: its name in errors, and where a missing file's message points.
struct Source {
  std::string name;          // "MNIST", "FashionMNIST"
  std::string missing_hint;  // "(set MNIST_DIR ...)"
};

// A gzip-compressed file open for reading through zlib. Every failure is an mx::FileError that names
// the data set and the file: missing, unreadable, empty, not gzip, corrupt, or shorter than what is
// asked for.
class GzipFile {
 public:
  GzipFile(std::string path, const Source& source) : path_(std::move(path)), name_(source.name) {
    errno = 0;  // gzopen leaves errno set when the file cannot be opened, and 0 when out of memory
    file_ = gzopen(path_.c_str(), "rb");
    if (!file_) {
      const std::string reason = errno ? std::strerror(errno) : "out of memory";
      std::string message = name_ + ": cannot open " + in_quotes(path_) + ": " + reason;
      std::error_code ignored;
      if (!std::filesystem::exists(path_, ignored)) message += " " + source.missing_hint;
      throw FileError(message);
    }
  }
  ~GzipFile() { gzclose(file_); }
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }  // the data set's

  // Reads exactly `bytes` uncompressed bytes; `what` names them in the error ("the header"). The
  // buffer grows as data arrives, so a header that announces more data than the file holds fails as
  // truncated rather than as a huge allocation.
  std::vector<std::uint8_t> read_exactly(std::size_t bytes, const std::string& what) {
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    std::vector<std::uint8_t> out;
    while (out.size() < bytes) {
      const std::size_t at = out.size();
      const std::size_t want = std::min(kChunk, bytes - at);
      out.resize(at + want);
      const std::size_t got = read_some(out.data() + at, want);
      out.resize(at + got);
      if (got < want) throw truncated(what, bytes, out.size());
    }
    return out;
  }

 private:
  // Up to `bytes` bytes, fewer only at the end of the data.
  std::size_t read_some(std::uint8_t* dst, std::size_t bytes) {
    const int n = gzread(file_, dst, static_cast<unsigned>(bytes));  // bytes <= kChunk
    if (n < 0) throw read_error();
    if (offset_ == 0) check_format(dst, static_cast<std::size_t>(n));
    offset_ += static_cast<std::size_t>(n);
    return static_cast<std::size_t>(n);
  }

  // Checks the first read: an empty file, and a file that is not gzip (zlib reads those
  // "transparently", as they are; these files must be compressed). A gzip stream cut off before its
  // first byte of data reads 0 bytes with Z_BUF_ERROR: truncated() reports it.
  void check_format(const std::uint8_t* first, std::size_t n) const {
    int code = Z_OK;
    zlib_message(&code);
    if (n == 0 && code == Z_OK) throw FileError(name_ + ": " + in_quotes(path_) + " is empty");
    if (n > 0 && gzdirect(file_)) {
      throw FileError(name_ + ": " + in_quotes(path_) + " is not a gzip file: it starts with bytes " +
                      hex_bytes(first, std::min<std::size_t>(n, 4)) + ", a gzip file with 1f 8b");
    }
  }

  // zlib's message, without the path it puts in front.
  std::string zlib_message(int* code) const {
    std::string message = gzerror(file_, code);
    const std::string prefix = path_ + ": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    return message;
  }

  FileError read_error() const {
    int code = Z_OK;
    const std::string message = zlib_message(&code);
    if (code == Z_ERRNO) return FileError(name_ + ": cannot read " + in_quotes(path_) + ": " + message);
    return FileError(name_ + ": " + in_quotes(path_) + " is not a valid gzip stream (zlib: " + message + ")");
  }

  FileError truncated(const std::string& what, std::size_t wanted, std::size_t got) const {
    int code = Z_OK;
    zlib_message(&code);
    // Z_BUF_ERROR: the compressed stream itself stops in the middle; else the stream is complete but
    // holds less data than the header announced.
    const std::string how = code == Z_BUF_ERROR ? "the gzip stream is cut off" : "the data ends early";
    return FileError(name_ + ": " + in_quotes(path_) + " is truncated: " + what + " needs " +
                     std::to_string(wanted) + " bytes but only " + std::to_string(got) + " follow (" + how +
                     " after " + std::to_string(offset_) + " uncompressed bytes)");
  }

  std::string path_, name_;
  gzFile file_ = nullptr;
  std::size_t offset_ = 0;  // uncompressed bytes read so far
};

// The first header word; anything but `expected` is an error that says which kind the file is.
void read_magic(GzipFile& file, std::uint32_t expected, const char* kind) {
  const std::uint32_t magic = big_endian_u32(file.read_exactly(4, "the magic number").data());
  if (magic == expected) return;
  std::string message = file.name() + ": " + in_quotes(file.path()) + " has IDX magic number " + std::to_string(magic) +
                        ", expected " + std::to_string(expected) + " (" + kind + ")";
  if (magic == kImagesMagic) message += "; it is an images file";
  if (magic == kLabelsMagic) message += "; it is a labels file";
  throw FileError(message);
}

// The images file's header, (magic, count, rows, cols) in big-endian 32-bit words; returns count.
std::uint32_t read_images_header(GzipFile& file) {
  read_magic(file, kImagesMagic, "uint8 images");
  const auto header = file.read_exactly(12, "the rest of the header");
  const std::uint32_t rows = big_endian_u32(&header[4]), cols = big_endian_u32(&header[8]);
  if (rows != MNIST::kImageSize || cols != MNIST::kImageSize) {
    throw FileError(file.name() + ": " + in_quotes(file.path()) + " holds images of " + std::to_string(rows) + "x" +
                    std::to_string(cols) + " pixels; " + file.name() + "'s are 28x28");
  }
  return big_endian_u32(&header[0]);
}

// The labels file's header, (magic, count); returns count.
std::uint32_t read_labels_header(GzipFile& file) {
  read_magic(file, kLabelsMagic, "uint8 labels");
  return big_endian_u32(file.read_exactly(4, "the label count").data());
}

// (count, 28, 28) uint8 on cpu(0).
nd::NDArray read_images(GzipFile& file, std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * kImageBytes;
  const auto pixels = file.read_exactly(bytes, "the pixels of " + std::to_string(count) + " images");
  return nd::array(pixels, {count, MNIST::kImageSize, MNIST::kImageSize}, cpu(), DType::uint8);
}

// (count,) int32 on cpu(0), each checked to be a class.
nd::NDArray read_labels(GzipFile& file, std::int64_t count) {
  const auto bytes = file.read_exactly(static_cast<std::size_t>(count), std::to_string(count) + " labels");
  std::vector<std::int32_t> labels(bytes.begin(), bytes.end());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= MNIST::kNumClasses) {
      throw FileError(file.name() + ": " + in_quotes(file.path()) + ": label " + std::to_string(labels[i]) +
                      " of sample " + std::to_string(i) + " is not a class; classes are 0 to 9");
    }
  }
  return nd::array(labels, {count}, cpu(), DType::int32);
}

// Both files of one split, the first num_samples samples (all when negative).
ArrayDataset read_split(const std::string& root, bool train, std::int64_t num_samples, const Source& source) {
  const std::string prefix = train ? "train" : "t10k";
  GzipFile images((std::filesystem::path(root) / (prefix + "-images-idx3-ubyte.gz")).string(), source);
  GzipFile labels((std::filesystem::path(root) / (prefix + "-labels-idx1-ubyte.gz")).string(), source);
  const std::uint32_t image_count = read_images_header(images);
  const std::uint32_t label_count = read_labels_header(labels);
  if (image_count != label_count) {
    throw FileError(source.name + ": " + in_quotes(images.path()) + " holds " + std::to_string(image_count) +
                    " images but " + in_quotes(labels.path()) + " holds " + std::to_string(label_count) +
                    " labels; the counts must agree");
  }
  const std::int64_t count = num_samples < 0 ? std::int64_t{image_count} : std::min<std::int64_t>(image_count, num_samples);
  return ArrayDataset(read_images(images, count), read_labels(labels, count));
}

Source mnist_source() {
  return {"MNIST", "(set MNIST_DIR or pass the directory as root; MXNet downloads the four files into "
                   "~/.mxnet/datasets/mnist)"};
}

Source fashion_source() {
  return {"FashionMNIST", "(set FASHION_MNIST_DIR or pass the directory as root; the Debian package "
                          "dataset-fashion-mnist installs the files in " + std::string(kFashionRoot) + ")"};
}

std::string root_or(const char* variable, const std::string& fallback) {
  const char* dir = std::getenv(variable);
  return dir && *dir ? dir : fallback;
}

}  // namespace

MNIST::MNIST(bool train, const std::string& root, std::int64_t num_samples)
    : MNIST(Resolved{}, train, root.empty() ? default_root() : root, num_samples, false) {}

MNIST::MNIST(Resolved, bool train, std::string root, std::int64_t num_samples, bool fashion)
    : ArrayDataset(read_split(root, train, num_samples, fashion ? fashion_source() : mnist_source())), train_(train),
      root_(std::move(root)) {}

std::string MNIST::default_root() {
  const char* home = std::getenv("HOME");
  return root_or("MNIST_DIR", std::string(home && *home ? home : "") + "/.mxnet/datasets/mnist");
}

FashionMNIST::FashionMNIST(bool train, const std::string& root, std::int64_t num_samples)
    : MNIST(Resolved{}, train, root.empty() ? default_root() : root, num_samples, true) {}

std::string FashionMNIST::default_root() { return root_or("FASHION_MNIST_DIR", kFashionRoot); }

std::vector<std::string> FashionMNIST::text_labels(const std::vector<std::int64_t>& labels) {
  std::vector<std::string> names;
  names.reserve(labels.size());
  for (std::int64_t label : labels) {
    if (label < 0 || label >= kNumClasses) {
      throw IndexError("FashionMNIST::text_labels: label " + std::to_string(label) +
                       " is not a class; classes are 0 to 9");
    }
    names.push_back(kTextLabels[static_cast<std::size_t>(label)]);
  }
  return names;
}

std::vector<std::string> FashionMNIST::text_labels(const nd::NDArray& labels) {
  return text_labels(labels.asvector<std::int64_t>());
}

}  // namespace mx::gluon::data
