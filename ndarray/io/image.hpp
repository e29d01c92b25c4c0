#pragma once
// Encoded images, as mx.image: imdecode / imread give (height, width, 3) uint8 RGB (flag 1) or
// (height, width, 1) grayscale (flag 0) on cpu(0), the values MXNet's OpenCV path gives; imencode
// writes JPEG or PNG. JPEG goes through libjpeg-turbo's TurboJPEG API, PNG through libpng; a build
// without one of them (meson options jpeg and png, auto) says so in a typed error.
//
//   const nd::NDArray image = mx::image::imread("cat.jpg");        // (H, W, 3) uint8, RGB
//   const std::string png = mx::image::imencode(image, ".png");
//
// Where MXNet (OpenCV) does the same: a grayscale or CMYK JPEG read in color becomes RGB (CMYK as
// Adobe stores it, inverted); a color image read as grayscale is 0.299 R + 0.587 G + 0.114 B; PNG's
// 16-bit samples keep their high byte and its alpha channel is dropped; to_rgb = false gives BGR.
#include <string>
#include <string_view>

#include "ndarray/core/array.hpp"

namespace mx::image {

// Decodes JPEG or PNG bytes (told apart by their signature). `what` names them in errors (a file's
// path, a record). mx::FileError naming `what` for bytes of neither format or a corrupt or
// truncated image; mx::ValueError for a flag other than 0 or 1, and naming the missing library
// where the build has no decoder for the format.
nd::NDArray imdecode(std::string_view bytes, int flag = 1, bool to_rgb = true, const std::string& what = "image");
// imdecode of a file's bytes, naming the path in errors (mx::FileError for a missing file).
nd::NDArray imread(const std::string& path, int flag = 1, bool to_rgb = true);
// image (height, width, 3) RGB or (height, width, 1) / (height, width) gray, uint8, any context,
// encoded as ".jpg"/".jpeg" (quality 1-100, 4:2:0 chroma, as OpenCV's default) or ".png".
// mx::ValueError for another format or quality, mx::ShapeError / mx::DTypeError for another image.
std::string imencode(const nd::NDArray& image, const std::string& format = ".jpg", int quality = 95);

// Whether this build decodes and encodes the format.
bool has_jpeg();
bool has_png();

}  // namespace mx::image
