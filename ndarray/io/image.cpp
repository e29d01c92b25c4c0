// mx::image (image.hpp): JPEG through TurboJPEG, PNG through libpng, each with the conversions
// MXNet's OpenCV path makes, so that a decoded image has MXNet's values; OpenCV's bilinear resize
// of 8-bit images (Note [OpenCV's bilinear resize]) and crops.
//
// Note [OpenCV's bilinear resize]
// cv::resize with INTER_LINEAR on 8-bit images (resizeGeneric_ in OpenCV 4's
// modules/imgproc/src/resize.cpp): with scale = 1 / (out / in), output column dx reads
// fx = float((dx + 0.5) * scale - 0.5), sx = floor(fx), fx -= sx; a column left of the image
// (sx < 0) becomes sx = 0 and one at or past the last (sx >= in - 1) becomes sx = in - 1, both with
// fx = 0. The weights are 11-bit fixed point, round((1 - fx) * 2048) and round(fx * 2048) (round
// half to even). Rows get theirs the same way, but keep fy and have their two row indices clamped
// into the image instead. Each input row is mixed horizontally into ints (pixel x 2048), then two
// such rows r0, r1 vertically as OpenCV's 8-bit path does it, in its SIMD code and in the scalar
// code beside it alike (VResizeLinear<uchar, ...>): (((r0 >> 4) * b0 >> 16) + ((r1 >> 4) * b1 >> 16)
// + 2) >> 2. When both extents halve exactly, cv::resize takes INTER_AREA's fast path instead:
// (a + b + c + d + 2) >> 2 over each 2x2 block (rounded half to even instead for other than 1, 3 or
// 4 channels, which its generic area code handles). Checked against cv2.resize (OpenCV 4.6) on random
// images of 1 to 200 pixels a side, up- and downscaled, 1 to 5 channels: equal, pixel for pixel.
#include "ndarray/io/image.hpp"

#include <algorithm>
#include <cmath>
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
#include "ndarray/ops/manipulation.hpp"

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
  // flag -1 keeps a grayscale JPEG gray; every other one is read as RGB, as OpenCV does.
  const bool gray = flag == 0 || (flag == -1 && colorspace == TJCS_GRAY);
  const int format = cmyk ? TJPF_CMYK : gray ? TJPF_GRAY : TJPF_RGB;
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
  Pixels p{height, width, gray ? 1 : 3, {}};
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
// depths expanded, 16 bits stripped to their high byte, alpha dropped, gray <-> RGB as flag asks
// (flag -1: neither).
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
  if (flag < -1 || flag > 1) {
    throw ValueError("imdecode: flag must be 0 (grayscale), 1 (color) or -1 (as stored), got " + std::to_string(flag));
  }
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

namespace {

// (height, width, channels) of a uint8 image of rank 3, or rank 2 (one channel); `op` names errors.
struct ImageExtent {
  std::int64_t height, width, channels;
};

ImageExtent image_extent(const nd::NDArray& src, const char* op) {
  if (src.dtype() != DType::uint8) {
    throw DTypeError(std::string(op) + ": the image must be uint8, got " + std::string(dtype_name(src.dtype())));
  }
  const Shape& s = src.shape();
  if ((s.ndim() != 2 && s.ndim() != 3) || s[0] < 1 || s[1] < 1 || (s.ndim() == 3 && s[2] < 1)) {
    throw ShapeError(std::string(op) + ": the image must be (height, width, channels) or (height, width), got " +
                     s.tuple_str());
  }
  return {s[0], s[1], s.ndim() == 3 ? s[2] : 1};
}

// One output position's two taps along an axis: indices into the input and their 11-bit weights.
struct LinearTap {
  std::int64_t first, second;
  int w0, w1;
};

// The taps of `out` positions over `in`, as OpenCV computes them (Note [OpenCV's bilinear resize]):
// columns are clamped with their weight reset, rows keep their weights and clamp their indices.
std::vector<LinearTap> linear_taps(std::int64_t in, std::int64_t out, bool columns) {
  const double scale = 1.0 / (static_cast<double>(out) / static_cast<double>(in));
  std::vector<LinearTap> taps(static_cast<std::size_t>(out));
  for (std::int64_t d = 0; d < out; ++d) {
    float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
    std::int64_t s = static_cast<std::int64_t>(std::floor(f));
    f -= static_cast<float>(s);
    if (columns && s < 0) f = 0, s = 0;
    if (columns && s >= in - 1) f = 0, s = in - 1;
    const auto clamp = [in](std::int64_t i) { return std::clamp<std::int64_t>(i, 0, in - 1); };
    taps[static_cast<std::size_t>(d)] = {clamp(s), clamp(s + 1), static_cast<int>(std::lrint((1.0f - f) * 2048.0f)),
                                         static_cast<int>(std::lrint(f * 2048.0f))};
  }
  return taps;
}

std::vector<std::uint8_t> resize_linear(const std::vector<std::uint8_t>& src, const ImageExtent& in, std::int64_t out_h,
                                        std::int64_t out_w) {
  const std::int64_t cn = in.channels;
  std::vector<std::uint8_t> dst(static_cast<std::size_t>(out_h * out_w * cn));
  if (in.height == 2 * out_h && in.width == 2 * out_w) {  // INTER_AREA's fast path
    const bool fast_channels = cn == 1 || cn == 3 || cn == 4;
    for (std::int64_t y = 0; y < out_h; ++y) {
      const std::uint8_t* r0 = src.data() + 2 * y * in.width * cn;
      const std::uint8_t* r1 = r0 + in.width * cn;
      for (std::int64_t x = 0; x < out_w; ++x) {
        for (std::int64_t c = 0; c < cn; ++c) {
          const std::int64_t i = 2 * x * cn + c;
          const int sum = r0[i] + r0[i + cn] + r1[i] + r1[i + cn];
          // Rounded half up for 1, 3 and 4 channels (OpenCV's fast path), else half to even.
          const int mean = fast_channels ? (sum + 2) >> 2 : (sum >> 2) + ((sum & 3) > 2 || ((sum & 3) == 2 && (sum >> 2) & 1));
          dst[static_cast<std::size_t>((y * out_w + x) * cn + c)] = static_cast<std::uint8_t>(mean);
        }
      }
    }
    return dst;
  }
  const std::vector<LinearTap> columns = linear_taps(in.width, out_w, true), rows = linear_taps(in.height, out_h, false);
  // A source row mixed horizontally: out_w x cn ints, pixel x 2048.
  const auto horizontal = [&](std::int64_t y, std::vector<std::int32_t>& row) {
    const std::uint8_t* s = src.data() + y * in.width * cn;
    for (std::int64_t x = 0; x < out_w; ++x) {
      const LinearTap& t = columns[static_cast<std::size_t>(x)];
      for (std::int64_t c = 0; c < cn; ++c) {
        row[static_cast<std::size_t>(x * cn + c)] = s[t.first * cn + c] * t.w0 + s[t.second * cn + c] * t.w1;
      }
    }
  };
  std::vector<std::int32_t> top(static_cast<std::size_t>(out_w * cn)), bottom(top.size());
  std::int64_t top_y = -1, bottom_y = -1;
  for (std::int64_t y = 0; y < out_h; ++y) {
    const LinearTap& t = rows[static_cast<std::size_t>(y)];
    if (t.first != top_y) {
      if (t.first == bottom_y) {
        std::swap(top, bottom);
        std::swap(top_y, bottom_y);
      } else {
        horizontal(t.first, top);
        top_y = t.first;
      }
    }
    if (t.second != bottom_y) {
      horizontal(t.second, bottom);
      bottom_y = t.second;
    }
    std::uint8_t* d = dst.data() + y * out_w * cn;
    for (std::size_t i = 0; i < top.size(); ++i) {
      const std::int32_t v = (((top[i] >> 4) * t.w0 >> 16) + ((bottom[i] >> 4) * t.w1 >> 16) + 2) >> 2;
      d[i] = static_cast<std::uint8_t>(std::min(v, 255));
    }
  }
  return dst;
}

}  // namespace

nd::NDArray imresize(const nd::NDArray& src, std::int64_t w, std::int64_t h) {
  const ImageExtent in = image_extent(src, "imresize");
  if (w < 1 || h < 1) {
    throw ShapeError("imresize: cannot resize the image " + src.shape().tuple_str() + " to " + std::to_string(w) + " x " +
                     std::to_string(h) + " (width x height): each must be >= 1");
  }
  if (w * h * in.channels > (std::int64_t{1} << 31)) {
    throw ShapeError("imresize: " + std::to_string(w) + " x " + std::to_string(h) + " x " + std::to_string(in.channels) +
                     " bytes is beyond what ndgluon resizes to (2^31)");
  }
  const std::vector<std::uint8_t> out = resize_linear(src.asvector<std::uint8_t>(), in, h, w);
  const Shape shape = src.shape().ndim() == 2 ? Shape{h, w} : Shape{h, w, in.channels};
  return nd::array(out.data(), DType::uint8, shape, src.context(), DType::uint8);
}

nd::NDArray resize_short(const nd::NDArray& src, std::int64_t size) {
  const ImageExtent in = image_extent(src, "resize_short");
  if (size < 1) throw ShapeError("resize_short: size must be >= 1, got " + std::to_string(size));
  if (in.height > in.width) return imresize(src, size, size * in.height / in.width);
  return imresize(src, size * in.width / in.height, size);
}

nd::NDArray fixed_crop(const nd::NDArray& src, std::int64_t x0, std::int64_t y0, std::int64_t w, std::int64_t h) {
  const ImageExtent in = image_extent(src, "fixed_crop");
  if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0 + w > in.width || y0 + h > in.height) {
    throw ShapeError("fixed_crop: the region " + std::to_string(w) + " x " + std::to_string(h) + " at (" +
                     std::to_string(x0) + ", " + std::to_string(y0) + ") (width x height at (x, y)) is not inside the image " +
                     src.shape().tuple_str());
  }
  return nd::slice_axis(nd::slice_axis(src, 0, y0, y0 + h), 1, x0, x0 + w);
}

nd::NDArray center_crop(const nd::NDArray& src, std::int64_t w, std::int64_t h) {
  const ImageExtent in = image_extent(src, "center_crop");
  if (w < 1 || h < 1 || w > in.width || h > in.height) {
    throw ShapeError("center_crop: a " + std::to_string(w) + " x " + std::to_string(h) +
                     " region (width x height) does not fit in the image " + src.shape().tuple_str());
  }
  return fixed_crop(src, (in.width - w) / 2, (in.height - h) / 2, w, h);
}

}  // namespace mx::image
