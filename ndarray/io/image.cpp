// mx::image (image.hpp): JPEG through TurboJPEG, PNG through libpng, each with the conversions
// MXNet's OpenCV path makes, so that a decoded image has MXNet's values.
#include "ndarray/io/image.hpp"

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if NDG_HAVE_JPEG
#include <turbojpeg.h>
#endif
#if NDG_HAVE_PNG
#include <png.h>
#endif

#include "context/error.hpp"
#include "context/file.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::image {
namespace {

// Decoded pixels, rows of width x channels bytes.
struct Pixels {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> data;
};

// Images above this many pixels are refused rather than allocated (a corrupt header can claim
// 65535 x 65535): 2^27, 400 MB as RGB, beyond any photograph a data set holds.
constexpr std::int64_t kMaxPixels = std::int64_t{1} << 27;

[[maybe_unused]] void check_extent(std::int64_t width, std::int64_t height, const std::string& what, const char* format) {
  if (width < 1 || height < 1 || width * height > kMaxPixels) {
    throw FileError(what + ": a " + format + " image of " + std::to_string(width) + " x " + std::to_string(height) +
                    " pixels (ndgluon decodes up to 2^27 pixels)");
  }
}

// OpenCV's RGB -> gray (cvtColor, 14-bit fixed point): 0.299 R + 0.587 G + 0.114 B, rounded.
[[maybe_unused]] std::uint8_t gray_of(unsigned r, unsigned g, unsigned b) { return static_cast<std::uint8_t>((r * 4899 + g * 9617 + b * 1868 + 8192) >> 14); }

bool is_jpeg(std::string_view b) { return b.size() >= 3 && b[0] == '\xFF' && b[1] == '\xD8' && b[2] == '\xFF'; }
bool is_png(std::string_view b) { return b.size() >= 8 && b.substr(0, 8) == std::string_view("\x89PNG\r\n\x1A\n", 8); }

#if NDG_HAVE_JPEG
using TjHandle = std::unique_ptr<void, int (*)(tjhandle)>;

Pixels decode_jpeg(std::string_view bytes, int flag, const std::string& what) {
  const TjHandle tj(tjInitDecompress(), &tjDestroy);
  if (!tj) throw ValueError("imdecode: TurboJPEG could not start: " + std::string(tjGetErrorStr2(nullptr)));
  const auto* buf = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), buf, size, &width, &height, &subsampling, &colorspace) != 0) {
    throw FileError(what + ": a corrupt or truncated JPEG: " + tjGetErrorStr2(tj.get()));
  }
  check_extent(width, height, what, "JPEG");
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int format = cmyk ? TJPF_CMYK : flag == 0 ? TJPF_GRAY : TJPF_RGB;
  const int decoded_channels = tjPixelSize[format];
  std::vector<std::uint8_t> decoded(static_cast<std::size_t>(width) * height * decoded_channels);
  if (tjDecompress2(tj.get(), buf, size, decoded.data(), width, 0, height, format, 0) != 0) {
    // libjpeg's warnings (extraneous bytes before a marker, ...) leave a whole image, as OpenCV
    // accepts it; an image cut short does not.
    const std::string message = tjGetErrorStr2(tj.get());
    if (tjGetErrorCode(tj.get()) != TJERR_WARNING || message.find("Premature end") != std::string::npos) {
      throw FileError(what + ": a corrupt or truncated JPEG: " + message);
    }
  }
  Pixels p{height, width, flag == 0 ? 1 : 3, {}};
  if (!cmyk) {
    p.data = std::move(decoded);
    return p;
  }
  // Adobe's inverted CMYK to RGB as OpenCV converts it (icvCvt_CMYK2BGR_8u), then gray if asked.
  p.data.resize(static_cast<std::size_t>(width) * height * p.channels);
  for (std::size_t i = 0, n = static_cast<std::size_t>(width) * height; i < n; ++i) {
    const unsigned c = decoded[4 * i], m = decoded[4 * i + 1], y = decoded[4 * i + 2], k = decoded[4 * i + 3];
    const unsigned r = k - ((255 - c) * k >> 8), g = k - ((255 - m) * k >> 8), b = k - ((255 - y) * k >> 8);
    if (p.channels == 1) {
      p.data[i] = gray_of(r, g, b);
    } else {
      p.data[3 * i] = static_cast<std::uint8_t>(r);
      p.data[3 * i + 1] = static_cast<std::uint8_t>(g);
      p.data[3 * i + 2] = static_cast<std::uint8_t>(b);
    }
  }
  return p;
}

std::string encode_jpeg(const std::uint8_t* pixels, int height, int width, int channels, int quality) {
  const TjHandle tj(tjInitCompress(), &tjDestroy);
  if (!tj) throw ValueError("imencode: TurboJPEG could not start: " + std::string(tjGetErrorStr2(nullptr)));
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  const int subsampling = channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
  if (tjCompress2(tj.get(), pixels, width, 0, height, format, &out, &size, subsampling, quality, 0) != 0) {
    tjFree(out);
    throw ValueError("imencode: JPEG encoding failed: " + std::string(tjGetErrorStr2(tj.get())));
  }
  std::string bytes(reinterpret_cast<const char*>(out), size);
  tjFree(out);
  return bytes;
}
#endif

#if NDG_HAVE_PNG
// libpng reports errors by longjmp: the reading itself is plain C below, its state in this
// struct, freed by the caller whatever happens.
struct PngRead {
  const unsigned char* bytes;
  std::size_t size, position;
  int flag;
  char message[256];
  png_structp png;
  png_infop info;
  unsigned char* pixels;  // malloc'd
  png_bytep* rows;        // malloc'd
  png_uint_32 width, height;
  int channels;
};

void png_fail(png_structp png, png_const_charp message) {
  auto* r = static_cast<PngRead*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", message);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}

void png_source(png_structp png, png_bytep out, png_size_t length) {
  auto* r = static_cast<PngRead*>(png_get_io_ptr(png));
  if (length > r->size - r->position) png_error(png, "the image is cut short");
  std::memcpy(out, r->bytes + r->position, length);
  r->position += length;
}

// Decodes into r->pixels with OpenCV's transforms (PngDecoder::readData): palette and low bit
// depths expanded, 16 bits stripped to their high byte, alpha dropped, gray <-> RGB as flag asks.
// False, with r->message set, on an error.
bool png_read_pixels(PngRead* r) {
  r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, &png_fail, &png_warn);
  if (!r->png) return false;
  r->info = png_create_info_struct(r->png);
  if (!r->info) return false;
  if (setjmp(png_jmpbuf(r->png))) return false;
  png_set_read_fn(r->png, r, &png_source);
  png_read_info(r->png, r->info);
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(r->png, r->info, &r->width, &r->height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  if (r->width < 1 || r->height < 1 || static_cast<std::int64_t>(r->width) * r->height > kMaxPixels) {
    std::snprintf(r->message, sizeof r->message, "a PNG image of %u x %u pixels (ndgluon decodes up to 2^27 pixels)",
                  static_cast<unsigned>(r->width), static_cast<unsigned>(r->height));
    return false;
  }
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r->png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(r->png);
  if (bit_depth == 16) png_set_strip_16(r->png);
  png_set_strip_alpha(r->png);
  const bool color = (color_type & PNG_COLOR_MASK_COLOR) != 0 || color_type == PNG_COLOR_TYPE_PALETTE;
  if (r->flag == 1 && !color) png_set_gray_to_rgb(r->png);
  if (r->flag == 0 && color) png_set_rgb_to_gray(r->png, 1, 0.299, 0.587);
  png_set_interlace_handling(r->png);
  png_read_update_info(r->png, r->info);
  r->channels = png_get_channels(r->png, r->info);
  const png_size_t row_bytes = png_get_rowbytes(r->png, r->info);
  if (row_bytes != static_cast<png_size_t>(r->width) * r->channels) png_error(r->png, "unexpected row size");
  r->pixels = static_cast<unsigned char*>(std::malloc(row_bytes * r->height));
  r->rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * r->height));
  if (!r->pixels || !r->rows) png_error(r->png, "out of memory");
  for (png_uint_32 y = 0; y < r->height; ++y) r->rows[y] = r->pixels + y * row_bytes;
  png_read_image(r->png, r->rows);
  png_read_end(r->png, nullptr);
  return true;
}

Pixels decode_png(std::string_view bytes, int flag, const std::string& what) {
  PngRead r{};
  r.bytes = reinterpret_cast<const unsigned char*>(bytes.data());
  r.size = bytes.size();
  r.flag = flag;
  const bool ok = png_read_pixels(&r);
  Pixels p;
  if (ok) {
    p = {static_cast<int>(r.height), static_cast<int>(r.width), r.channels,
         std::vector<std::uint8_t>(r.pixels, r.pixels + static_cast<std::size_t>(r.width) * r.height * r.channels)};
  }
  std::free(r.pixels);
  std::free(r.rows);
  png_destroy_read_struct(r.png ? &r.png : nullptr, r.info ? &r.info : nullptr, nullptr);
  if (!ok) throw FileError(what + ": a corrupt or truncated PNG: " + (r.message[0] ? r.message : "libpng failed"));
  return p;
}

std::string encode_png(const std::uint8_t* pixels, int height, int width, int channels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, nullptr)) {
    throw ValueError(std::string("imencode: PNG encoding failed: ") + image.message);
  }
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels, 0, nullptr)) {
    throw ValueError(std::string("imencode: PNG encoding failed: ") + image.message);
  }
  bytes.resize(size);
  return bytes;
}
#endif

[[noreturn, maybe_unused]] void missing(const char* format, const char* package, const char* option) {
  throw ValueError(std::string("mx::image: this build has no ") + format + " codec (install " + package +
                   " and configure again; meson option " + option + ")");
}

}  // namespace

bool has_jpeg() { return NDG_HAVE_JPEG != 0; }
bool has_png() { return NDG_HAVE_PNG != 0; }

nd::NDArray imdecode(std::string_view bytes, int flag, bool to_rgb, const std::string& what) {
  if (flag != 0 && flag != 1) throw ValueError("imdecode: flag must be 0 (grayscale) or 1 (color), got " + std::to_string(flag));
  Pixels p;
  if (is_jpeg(bytes)) {
#if NDG_HAVE_JPEG
    p = decode_jpeg(bytes, flag, what);
#else
    missing("JPEG", "libturbojpeg0-dev", "jpeg");
#endif
  } else if (is_png(bytes)) {
#if NDG_HAVE_PNG
    p = decode_png(bytes, flag, what);
#else
    missing("PNG", "libpng-dev", "png");
#endif
  } else {
    throw FileError(what + ": neither a JPEG nor a PNG image (" + std::to_string(bytes.size()) + " bytes)");
  }
  if (!to_rgb && p.channels == 3) {
    for (std::size_t i = 0; i < p.data.size(); i += 3) std::swap(p.data[i], p.data[i + 2]);
  }
  return nd::array(p.data.data(), DType::uint8, {p.height, p.width, p.channels}, cpu(), DType::uint8);
}

nd::NDArray imread(const std::string& path, int flag, bool to_rgb) {
  return imdecode(read_file(path, "imread"), flag, to_rgb, path);
}

std::string imencode(const nd::NDArray& image, const std::string& format, int quality) {
  if (image.dtype() != DType::uint8) {
    throw DTypeError("imencode: the image must be uint8, got " + std::string(dtype_name(image.dtype())));
  }
  const Shape& s = image.shape();
  const bool gray2d = s.ndim() == 2;
  if (!gray2d && (s.ndim() != 3 || (s[2] != 1 && s[2] != 3))) {
    throw ShapeError("imencode: the image must be (height, width, 3), (height, width, 1) or (height, width), got " +
                     s.tuple_str());
  }
  if (s[0] < 1 || s[1] < 1 || s[0] > 65535 || s[1] > 65535) {
    throw ShapeError("imencode: an image of " + s.tuple_str() + " cannot be encoded (1 to 65535 pixels a side)");
  }
  [[maybe_unused]] const int height = static_cast<int>(s[0]), width = static_cast<int>(s[1]),
                             channels = gray2d ? 1 : static_cast<int>(s[2]);
  const std::vector<std::uint8_t> pixels = image.asvector<std::uint8_t>();
  if (format == ".jpg" || format == ".jpeg") {
    if (quality < 1 || quality > 100) throw ValueError("imencode: JPEG quality must be 1 to 100, got " + std::to_string(quality));
#if NDG_HAVE_JPEG
    return encode_jpeg(pixels.data(), height, width, channels, quality);
#else
    missing("JPEG", "libturbojpeg0-dev", "jpeg");
#endif
  }
  if (format == ".png") {
#if NDG_HAVE_PNG
    return encode_png(pixels.data(), height, width, channels);
#else
    missing("PNG", "libpng-dev", "png");
#endif
  }
  throw ValueError("imencode: format '" + format + "'; the formats are .jpg, .jpeg and .png");
}

}  // namespace mx::image
