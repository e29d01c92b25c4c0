#pragma once
// Encoded images, as mx.image: imdecode / imread give (height, width, 3) uint8 RGB (flag 1),
// (height, width, 1) grayscale (flag 0) or the image's own channels (flag -1) on cpu(0), the values
// MXNet's OpenCV path gives; imencode writes JPEG or PNG. imresize, resize_short, fixed_crop and
// center_crop resize and crop such images (im2rec's --resize and --center-crop). JPEG goes through libjpeg-turbo's TurboJPEG API, PNG through libpng; a build
// without one of them (meson options jpeg and png, auto) says so in a typed error.
//
//   const nd::NDArray image = mx::image::imread("cat.jpg");        // (H, W, 3) uint8, RGB
//   const std::string png = mx::image::imencode(image, ".png");
//   const nd::NDArray small = mx::image::resize_short(image, 256);  // shorter edge 256, bilinear
//
// Where MXNet (OpenCV) does the same: a grayscale or CMYK JPEG read in color becomes RGB (CMYK as
// Adobe stores it, inverted); a color image read as grayscale is 0.299 R + 0.587 G + 0.114 B; PNG's
// 16-bit samples keep their high byte and its alpha channel is dropped; to_rgb = false gives BGR.
#include <cstdint>
#include <string>
#include <string_view>

#include "ndarray/core/array.hpp"

namespace mx::image {

// Decodes JPEG or PNG bytes (told apart by their signature). `what` names them in errors (a file's
// path, a record). flag 1: color, 0: grayscale, -1: as stored (OpenCV's IMREAD_UNCHANGED), gray
// images (H, W, 1) and color ones (H, W, 3); unlike OpenCV, PNG's alpha channel and 16-bit depth
// are not kept there either. mx::FileError naming `what` for bytes of neither format or a corrupt
// or truncated image; mx::ValueError for another flag, and naming the missing library where the
// build has no decoder for the format.
nd::NDArray imdecode(std::string_view bytes, int flag = 1, bool to_rgb = true, const std::string& what = "image");
// imdecode of a file's bytes, naming the path in errors (mx::FileError for a missing file).
nd::NDArray imread(const std::string& path, int flag = 1, bool to_rgb = true);
// image (height, width, 3) RGB or (height, width, 1) / (height, width) gray, uint8, any context,
// encoded as ".jpg"/".jpeg" (quality 1-100, 4:2:0 chroma, as OpenCV's default) or ".png".
// mx::ValueError for another format or quality, mx::ShapeError / mx::DTypeError for another image.
std::string imencode(const nd::NDArray& image, const std::string& format = ".jpg", int quality = 95);

// Bilinear resizing of a uint8 image (height, width, channels) or (height, width), on any context,
// to (h, w, channels) on the same context: mx.image.imresize(src, w, h, interp=1), OpenCV's
// INTER_LINEAR (cv2.resize's default, which im2rec uses) with OpenCV's fixed-point arithmetic, so
// that the pixels are cv2.resize's (Note [OpenCV's bilinear resize] in image.cpp). mx::ShapeError
// for w or h < 1 or another shape, mx::DTypeError for a dtype other than uint8.
nd::NDArray imresize(const nd::NDArray& src, std::int64_t w, std::int64_t h);
// The image with its shorter edge resized to `size`, the other in proportion (rounded down), as
// mx.image.resize_short and im2rec's --resize compute them, but bilinear (imresize) where
// mx.image.resize_short defaults to area interpolation.
nd::NDArray resize_short(const nd::NDArray& src, std::int64_t size);
// The w x h region at (x0, y0) of an image (height, width[, channels]), as a new array on its
// context: mx.image.fixed_crop without its resize. mx::ShapeError for a region outside the image.
nd::NDArray fixed_crop(const nd::NDArray& src, std::int64_t x0, std::int64_t y0, std::int64_t w, std::int64_t h);
// The centred w x h region, at ((width - w) / 2, (height - h) / 2) rounded down, as
// mx.image.center_crop computes it, without its resize: mx::ShapeError when the image is smaller.
// center_crop(src, s, s) with s the shorter edge is im2rec's --center-crop.
nd::NDArray center_crop(const nd::NDArray& src, std::int64_t w, std::int64_t h);

// Whether this build decodes and encodes the format.
bool has_jpeg();
bool has_png();

}  // namespace mx::image
