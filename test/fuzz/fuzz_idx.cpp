// libFuzzer target: the IDX/gzip reader of gluon::data::FashionMNIST, through the files it reads.
//
// An input is a header and two files:
//   byte 0        bit 0: the training split (else the test split's file names);
//                 bit 1: gzip the images part here; bit 2: gzip the labels part here (a part not
//                 gzipped here is written as it is: the raw bytes of a gzip file, or not gzip at all)
//   byte 1        num_samples: 255 means all (-1), else the value
//   bytes 2-3     the images part's length, little-endian (clamped to what follows)
//   then          the images part, then the labels part
// Compressing here lets mutations reach the IDX headers and the pixel and label checks behind
// zlib; the raw form fuzzes zlib's own input (corrupt, cut-off, not gzip).
//
// An accepted data set must be consistent: (N, 28, 28) uint8 images, (N,) int32 labels in [0, 10),
// N no more than num_samples. Anything else than acceptance must be an mx::Error.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "context/error.hpp"
#include "gluon/data/fashion_mnist.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

std::string gzipped(const std::string& raw) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip header and trailer, as gzip(1) writes.
  ndg_fuzz::expect(deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  ndg_fuzz::expect(deflate(&stream, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A folder of this process's own (several fuzzing jobs may run at once), removed at exit.
struct Folder {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ndg-fuzz-idx-" + std::to_string(getpid()));
  Folder() { std::filesystem::create_directories(path); }
  ~Folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::filesystem::path& folder() {
  static const Folder dir;
  return dir.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const bool train = data[0] & 1, gzip_images = data[0] & 2, gzip_labels = data[0] & 4;
  const std::int64_t num_samples = data[1] == 255 ? -1 : data[1];
  const std::string rest(reinterpret_cast<const char*>(data) + 4, size - 4);
  const std::size_t split = std::min<std::size_t>(data[2] | (std::size_t{data[3]} << 8), rest.size());
  const std::string images = rest.substr(0, split), labels = rest.substr(split);
  const std::string prefix = train ? "train" : "t10k";
  write(folder() / (prefix + "-images-idx3-ubyte.gz"), gzip_images ? gzipped(images) : images);
  write(folder() / (prefix + "-labels-idx1-ubyte.gz"), gzip_labels ? gzipped(labels) : labels);
  try {
    const mx::gluon::data::FashionMNIST set(train, folder().string(), num_samples);
    const std::int64_t n = set.label().size();
    ndg_fuzz::expect(num_samples < 0 || n <= num_samples, "no more samples than asked for");
    ndg_fuzz::expect(set.data().shape() == mx::Shape({n, 28, 28}) && set.data().dtype() == mx::DType::uint8,
                     "images are (N, 28, 28) uint8");
    ndg_fuzz::expect(set.label().shape() == mx::Shape({n}) && set.label().dtype() == mx::DType::int32,
                     "labels are (N,) int32");
    for (std::int32_t label : set.label().asvector<std::int32_t>()) {
      ndg_fuzz::expect(label >= 0 && label < 10, "labels are classes");
    }
  } catch (const mx::Error&) {
  }
  return 0;
}
