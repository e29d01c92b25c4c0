// mx::image: PNGs written here byte by byte from the PNG specification (RGB, RGBA, 16-bit gray)
// decoded to their exact pixels, in color and gray; PNG round trips; JPEG
// within its loss, grayscale and CMYK JPEGs read in color (CMYK converted as OpenCV does); BGR;
// and the typed errors of truncated, corrupt and foreign bytes and of bad arguments. flag -1 (as
// stored). imresize against cv2.resize's own output and against BilinearResize2D on every context,
// resize_short's sizes, the crops, and their typed errors.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if NDG_TEST_HAVE_JPEG
#include <turbojpeg.h>
#endif

#include <ndarray/io/image.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
using Bytes = std::vector<std::uint8_t>;

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out += static_cast<char>((v >> shift) & 0xFF);
}

std::string chunk(const std::string& type, const std::string& data) {
  std::string out;
  put_be32(out, static_cast<std::uint32_t>(data.size()));
  out += type + data;
  put_be32(out, ndg_test::crc32(type + data));
  return out;
}

// zlib's stream of one stored (uncompressed) deflate block, with its Adler-32.
std::string zlib_stored(const std::string& raw) {
  std::string out = "\x78\x01";
  out += '\x01';  // BFINAL, BTYPE 00
  const auto n = static_cast<std::uint16_t>(raw.size());
  out += static_cast<char>(n & 0xFF);
  out += static_cast<char>(n >> 8);
  out += static_cast<char>(~n & 0xFF);
  out += static_cast<char>((~n >> 8) & 0xFF);
  out += raw;
  std::uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  put_be32(out, b << 16 | a);
  return out;
}

// A PNG of `rows` (each row's bytes, filter type 0 prepended here), per the specification.
std::string png_file(std::uint32_t width, std::uint32_t height, int bit_depth, int color_type,
                     const std::vector<std::string>& rows, int interlace = 0) {
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(color_type);
  ihdr += std::string("\0\0", 2);
  ihdr += static_cast<char>(interlace);
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;
  return std::string("\x89PNG\r\n\x1A\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", zlib_stored(raw)) + chunk("IEND", "");
}

std::string bytes_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

Bytes pixels(const nd::NDArray& image) { return image.asvector<std::uint8_t>(); }

// 0.299 R + 0.587 G + 0.114 B, rounded: within 1 of OpenCV's and libpng's fixed-point forms.
int gray(int r, int g, int b) { return static_cast<int>(std::lround(0.299 * r + 0.587 * g + 0.114 * b)); }

// The 2 x 3 RGB image the PNG cases use.
const Bytes kRGB{255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 200, 100, 50, 128, 128, 128};

}  // namespace

BOOST_AUTO_TEST_SUITE(image_codecs, *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                        boost::test_tools::assertion_result r(mx::image::has_png());
                        r.message() << "this build has no PNG codec";
                        return r;
                      }))

BOOST_AUTO_TEST_CASE(png_written_by_hand_decodes_to_its_pixels) {
  const std::string rgb = png_file(3, 2, 8, 2, {bytes_of(Bytes(kRGB.begin(), kRGB.begin() + 9)), bytes_of(Bytes(kRGB.begin() + 9, kRGB.end()))});
  const nd::NDArray image = mx::image::imdecode(rgb);
  BOOST_TEST(image.shape() == mx::Shape({2, 3, 3}));
  BOOST_TEST(image.dtype() == mx::DType::uint8);
  BOOST_TEST(pixels(image) == kRGB, boost::test_tools::per_element());
  // BGR, as OpenCV's own order.
  Bytes bgr = kRGB;
  for (std::size_t i = 0; i < bgr.size(); i += 3) std::swap(bgr[i], bgr[i + 2]);
  BOOST_TEST(pixels(mx::image::imdecode(rgb, 1, false)) == bgr, boost::test_tools::per_element());
  // Grayscale.
  const Bytes g = pixels(mx::image::imdecode(rgb, 0));
  BOOST_TEST(mx::image::imdecode(rgb, 0).shape() == mx::Shape({2, 3, 1}));
  for (std::size_t i = 0; i < 6; ++i) {
    BOOST_TEST(std::abs(int(g[i]) - gray(kRGB[3 * i], kRGB[3 * i + 1], kRGB[3 * i + 2])) <= 1, "pixel " << i);
  }
  // RGBA: the alpha channel is dropped, not blended.
  std::string rgba_rows[2];
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 3; ++k) rgba_rows[r] += static_cast<char>(kRGB[(r * 3 + c) * 3 + k]);
      rgba_rows[r] += static_cast<char>(c * 100);
    }
  }
  BOOST_TEST(pixels(mx::image::imdecode(png_file(3, 2, 8, 6, {rgba_rows[0], rgba_rows[1]}))) == kRGB,
             boost::test_tools::per_element());
  // 16-bit gray: the high byte of each sample, repeated into R, G, B in color.
  const std::string gray16 = png_file(2, 1, 16, 0, {std::string("\x12\x34\xAB\xCD", 4)});
  BOOST_TEST(pixels(mx::image::imdecode(gray16, 0)) == (Bytes{0x12, 0xAB}), boost::test_tools::per_element());
  BOOST_TEST(pixels(mx::image::imdecode(gray16)) == (Bytes{0x12, 0x12, 0x12, 0xAB, 0xAB, 0xAB}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(png_round_trips) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray image = nd::array(kRGB.data(), mx::DType::uint8, {2, 3, 3}, ctx, mx::DType::uint8);
    const nd::NDArray back = mx::image::imdecode(mx::image::imencode(image, ".png"));
    BOOST_TEST(pixels(back) == kRGB, boost::test_tools::per_element());
    const nd::NDArray flat = nd::array(kRGB.data(), mx::DType::uint8, {3, 6}, ctx, mx::DType::uint8);
    BOOST_TEST(pixels(mx::image::imdecode(mx::image::imencode(flat, ".png"), 0)) == kRGB, boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(jpeg_within_its_loss, *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result r(mx::image::has_jpeg());
                       r.message() << "this build has no JPEG codec";
                       return r;
                     })) {
  // A smooth 32 x 48 image: JPEG at quality 95 keeps it within a few levels.
  Bytes smooth;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 48; ++x) {
      for (int c : {0, 1, 2}) smooth.push_back(static_cast<std::uint8_t>(40 + 2 * x + 2 * y + 20 * c));
    }
  }
  const nd::NDArray image = nd::array(smooth.data(), mx::DType::uint8, {32, 48, 3}, mx::cpu(), mx::DType::uint8);
  const std::string jpeg = mx::image::imencode(image, ".jpg", 95);
  BOOST_TEST(jpeg.substr(0, 2) == "\xFF\xD8");
  const Bytes back = pixels(mx::image::imdecode(jpeg));
  int worst = 0;
  for (std::size_t i = 0; i < smooth.size(); ++i) worst = std::max(worst, std::abs(int(back[i]) - int(smooth[i])));
  BOOST_TEST(worst <= 6);
  // A grayscale JPEG read in color: three equal channels.
  Bytes g(32 * 48);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<std::uint8_t>(i % 200);
  const std::string gray_jpeg = mx::image::imencode(nd::array(g.data(), mx::DType::uint8, {32, 48, 1}, mx::cpu(), mx::DType::uint8));
  const Bytes color = pixels(mx::image::imdecode(gray_jpeg));
  BOOST_TEST(color.size() == 32u * 48u * 3u);
  bool equal = true;
  for (std::size_t i = 0; i < color.size(); i += 3) equal = equal && color[i] == color[i + 1] && color[i] == color[i + 2];
  BOOST_TEST(equal);
  BOOST_TEST(pixels(mx::image::imdecode(gray_jpeg, 0)).size() == 32u * 48u);
#if NDG_TEST_HAVE_JPEG
  // A CMYK JPEG (Adobe's inverted CMYK, as Photoshop writes it) read in color: OpenCV's conversion
  // R = K - (255 - C) K / 256 of the decoded samples, here of a flat image.
  Bytes cmyk;
  for (int i = 0; i < 16 * 16; ++i) cmyk.insert(cmyk.end(), {200, 100, 50, 180});
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  BOOST_TEST_REQUIRE(tjCompress2(tj, cmyk.data(), 16, 0, 16, TJPF_CMYK, &out, &size, TJSAMP_444, 100, 0) == 0);
  const std::string cmyk_jpeg(reinterpret_cast<const char*>(out), size);
  tjFree(out);
  tjDestroy(tj);
  const Bytes rgb = pixels(mx::image::imdecode(cmyk_jpeg));
  const int k = 180;
  const int want[] = {k - ((255 - 200) * k >> 8), k - ((255 - 100) * k >> 8), k - ((255 - 50) * k >> 8)};
  for (int c = 0; c < 3; ++c) BOOST_TEST(std::abs(int(rgb[c]) - want[c]) <= 2, "channel " << c);
#endif
}

BOOST_AUTO_TEST_CASE(flag_minus_one_keeps_the_stored_channels) {
  // PNG: gray stays (H, W, 1), RGB (H, W, 3), RGBA loses its alpha, as with flag 1.
  const std::string rgb = png_file(3, 2, 8, 2, {bytes_of(Bytes(kRGB.begin(), kRGB.begin() + 9)), bytes_of(Bytes(kRGB.begin() + 9, kRGB.end()))});
  BOOST_TEST(mx::image::imdecode(rgb, -1).shape() == mx::Shape({2, 3, 3}));
  BOOST_TEST(pixels(mx::image::imdecode(rgb, -1)) == kRGB, boost::test_tools::per_element());
  const std::string gray8 = png_file(2, 1, 8, 0, {std::string("\x12\xAB", 2)});
  BOOST_TEST(mx::image::imdecode(gray8, -1).shape() == mx::Shape({1, 2, 1}));
  BOOST_TEST(pixels(mx::image::imdecode(gray8, -1)) == (Bytes{0x12, 0xAB}), boost::test_tools::per_element());
  if (mx::image::has_jpeg()) {
    Bytes g(16 * 8);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<std::uint8_t>(3 * i);
    const std::string gray_jpeg = mx::image::imencode(nd::array(g.data(), mx::DType::uint8, {8, 16, 1}, mx::cpu(), mx::DType::uint8));
    BOOST_TEST(mx::image::imdecode(gray_jpeg, -1).shape() == mx::Shape({8, 16, 1}));
    BOOST_TEST(pixels(mx::image::imdecode(gray_jpeg, -1)) == pixels(mx::image::imdecode(gray_jpeg, 0)), boost::test_tools::per_element());
    const std::string color_jpeg = mx::image::imencode(nd::zeros({8, 16, 3}, mx::cpu(), mx::DType::uint8));
    BOOST_TEST(mx::image::imdecode(color_jpeg, -1).shape() == mx::Shape({8, 16, 3}));
  }
}

BOOST_AUTO_TEST_CASE(bad_bytes_and_arguments_are_typed_errors) {
  const std::string rgb = png_file(3, 2, 8, 2, {bytes_of(Bytes(kRGB.begin(), kRGB.begin() + 9)), bytes_of(Bytes(kRGB.begin() + 9, kRGB.end()))});
  NDG_CHECK_THROWS_WITH(mx::image::imdecode(rgb.substr(0, rgb.size() - 20), 1, true, "cut.png"), mx::FileError, "cut.png",
                        "corrupt or truncated PNG");
  std::string bad_crc = rgb;
  bad_crc[40] ^= 0x55;  // inside IDAT: its CRC no longer matches
  NDG_CHECK_THROWS_WITH(mx::image::imdecode(bad_crc, 1, true, "crc.png"), mx::FileError, "crc.png", "PNG");
  NDG_CHECK_THROWS_WITH(mx::image::imdecode("GIF89a....", 1, true, "x.gif"), mx::FileError, "x.gif", "neither a JPEG nor a PNG");
  NDG_CHECK_THROWS_WITH(mx::image::imdecode(rgb, 2), mx::ValueError, "flag must be 0", "got 2");
  NDG_CHECK_THROWS_WITH(mx::image::imdecode(rgb, -2), mx::ValueError, "-1 (as stored)", "got -2");
  const ndg_test::TempDir dir;
  NDG_CHECK_THROWS_WITH(mx::image::imread(dir.file("none.png")), mx::FileError, "none.png");
  // A header claiming 65535 x 65535 pixels is refused before anything is allocated.
  NDG_CHECK_THROWS_WITH(mx::image::imdecode(png_file(65535, 65535, 8, 2, {})), mx::FileError, "65535 x 65535");
  if (mx::image::has_jpeg()) {
    const nd::NDArray image = nd::zeros({16, 16, 3}, mx::cpu(), mx::DType::uint8);
    const std::string jpeg = mx::image::imencode(image);
    NDG_CHECK_THROWS_WITH(mx::image::imdecode(jpeg.substr(0, jpeg.size() / 2), 1, true, "half.jpg"), mx::FileError,
                          "half.jpg", "corrupt or truncated JPEG");
    NDG_CHECK_THROWS_WITH(mx::image::imencode(image, ".jpg", 0), mx::ValueError, "quality", "got 0");
  }
  NDG_CHECK_THROWS_WITH(mx::image::imencode(nd::zeros({4, 4, 3}), ".png"), mx::DTypeError, "uint8", "float32");
  NDG_CHECK_THROWS_WITH(mx::image::imencode(nd::zeros({4, 4, 2}, mx::cpu(), mx::DType::uint8), ".png"), mx::ShapeError,
                        "(4, 4, 2)");
  NDG_CHECK_THROWS_WITH(mx::image::imencode(nd::zeros({4, 4, 3}, mx::cpu(), mx::DType::uint8), ".bmp"), mx::ValueError,
                        "'.bmp'", ".jpg, .jpeg and .png");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// The image cv2 was given: pixel (y, x, c) = (37 y + 91 x + 53 c + 11 ((x y) mod 17)) mod 256.
nd::NDArray pattern(int h, int w, int c, mx::Context ctx = mx::cpu()) {
  Bytes p;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < c; ++k) p.push_back(static_cast<std::uint8_t>((y * 37 + x * 91 + k * 53 + (x * y) % 17 * 11) % 256));
    }
  }
  return nd::array(p.data(), mx::DType::uint8, {h, w, c}, ctx, mx::DType::uint8);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(image_resize)

// What cv2.resize(image, (w, h)) (OpenCV 4.6, INTER_LINEAR) returned for pattern(), byte for byte:
// upscaled and downscaled in color, downscaled in gray, and halved (OpenCV's 2x2 average).
BOOST_AUTO_TEST_CASE(imresize_gives_the_pixels_of_cv2_resize) {
  const Bytes up{34, 87, 140, 161, 214, 43, 96, 149, 203, 96, 149, 106, 48, 101, 154, 181, 160, 63, 123, 176, 154, 97, 150,
                 139, 71, 123, 177, 215, 69, 97, 167, 220, 74, 98, 151, 194, 93, 147, 157, 149, 77, 116, 112, 165, 79, 143,
                 125, 178, 116, 169, 126, 58, 111, 132, 32, 85, 106, 198, 91, 144, 139, 139, 149, 92, 127, 165, 76, 111, 150,
                 188, 116, 80, 151, 119, 172, 122, 146, 174, 117, 141, 169, 165, 133, 43, 121, 142, 195, 137, 180, 83, 143,
                 185, 89, 92, 113, 113, 103, 156, 209, 147, 200, 29, 159, 212, 41, 48, 101, 154};
  const Bytes wide{12, 65, 118, 64, 117, 170, 131, 162, 173, 197, 169, 60, 97, 120, 113, 73, 126, 149, 135, 188, 152, 142, 195,
                   99, 110, 163, 122, 68, 121, 174, 74, 127, 180, 136, 189, 101, 151, 204, 65, 51, 104, 144, 117, 170, 57,
                   107, 160, 47, 20, 73, 126, 99, 152, 205, 178, 116, 169, 240, 37, 90, 136, 188, 242, 114, 120, 173, 108, 97,
                   107, 140, 189, 80, 117, 114, 107, 119, 116, 110, 149, 198, 89, 154, 143, 153, 110, 116, 130, 54, 107, 75};
  const Bytes half{67, 132, 152, 133, 109, 134}, gray{19, 142, 51, 66, 168, 120, 112, 142, 172, 129, 117, 105, 163, 142, 122};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray color = pattern(5, 7, 3, ctx);
    const nd::NDArray taller = mx::image::imresize(color, 4, 9);
    BOOST_TEST(taller.shape() == mx::Shape({9, 4, 3}));
    BOOST_TEST(taller.context() == ctx);
    BOOST_TEST(pixels(taller) == up, boost::test_tools::per_element());
    BOOST_TEST(pixels(mx::image::imresize(color, 10, 3)) == wide, boost::test_tools::per_element());
    const nd::NDArray g = pattern(6, 4, 1, ctx);
    BOOST_TEST(pixels(mx::image::imresize(g, 2, 3)) == half, boost::test_tools::per_element());
    BOOST_TEST(pixels(mx::image::imresize(g, 3, 5)) == gray, boost::test_tools::per_element());
    // A 2-d gray image stays 2-d; the same size is the same image.
    const nd::NDArray flat = mx::image::imresize(g.reshape({6, 4}), 3, 5);
    BOOST_TEST(flat.shape() == mx::Shape({5, 3}));
    BOOST_TEST(pixels(flat) == gray, boost::test_tools::per_element());
    BOOST_TEST(pixels(mx::image::imresize(color, 7, 5)) == pixels(color), boost::test_tools::per_element());
  });
}

// Hand-computed: upscaling [[a, b], [c, d]] to 4 x 4 mixes with weights 3/4 and 1/4 inside, and
// repeats the edge pixels outside the input's pixel centres.
BOOST_AUTO_TEST_CASE(imresize_upscales_by_hand) {
  const Bytes in{0, 100, 200, 255};
  const nd::NDArray image = nd::array(in.data(), mx::DType::uint8, {2, 2, 1}, mx::cpu(), mx::DType::uint8);
  const Bytes want{0, 25, 75, 100, 50, 72, 117, 139, 150, 167, 200, 216, 200, 214, 241, 255};
  BOOST_TEST(pixels(mx::image::imresize(image, 4, 4)) == want, boost::test_tools::per_element());
}

// Against BilinearResize2D with the pixel centres aligned (OpenCV's geometry) in float32: within
// one level (OpenCV's 11-bit weights and its rounding), at sizes up and down, on every context.
BOOST_AUTO_TEST_CASE(imresize_agrees_with_bilinear_resize_2d) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray image = pattern(13, 9, 3, ctx);
    for (const auto& [w, h] : std::vector<std::pair<int, int>>{{4, 6}, {17, 31}, {9, 5}, {1, 1}, {20, 13}}) {
      BOOST_TEST_CONTEXT(w << " x " << h) {
        const Bytes got = pixels(mx::image::imresize(image, w, h));
        const nd::NDArray nchw = nd::transpose(image.astype(mx::DType::float32), {2, 0, 1}).reshape({1, 3, 13, 9});
        const nd::NDArray ref = nd::transpose(nd::contrib::BilinearResize2D(nchw, {.height = h, .width = w, .align_corners = false})
                                                  .reshape({3, h, w}), {1, 2, 0});
        const std::vector<float> want = ref.contiguous().asvector<float>();
        BOOST_TEST_REQUIRE(got.size() == want.size());
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - std::round(double(want[i]))));
        BOOST_TEST(worst <= 1.0);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(resize_short_and_crops) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // The shorter edge to the size, the other in proportion, rounded down (im2rec's --resize).
    BOOST_TEST(mx::image::resize_short(pattern(6, 10, 3, ctx), 3).shape() == mx::Shape({3, 5, 3}));
    BOOST_TEST(mx::image::resize_short(pattern(10, 6, 3, ctx), 4).shape() == mx::Shape({6, 4, 3}));
    BOOST_TEST(mx::image::resize_short(pattern(7, 7, 1, ctx), 20).shape() == mx::Shape({20, 20, 1}));
    BOOST_TEST(pixels(mx::image::resize_short(pattern(5, 7, 3, ctx), 9)) == pixels(mx::image::imresize(pattern(5, 7, 3), 12, 9)),
               boost::test_tools::per_element());
    // Crops: the region's pixels, a new array on the image's context.
    const nd::NDArray image = pattern(5, 8, 3, ctx);
    const Bytes all = pixels(image);
    const nd::NDArray crop = mx::image::fixed_crop(image, 2, 1, 3, 2);
    BOOST_TEST(crop.shape() == mx::Shape({2, 3, 3}));
    BOOST_TEST(crop.context() == ctx);
    Bytes want;
    for (int y = 1; y < 3; ++y) want.insert(want.end(), all.begin() + (y * 8 + 2) * 3, all.begin() + (y * 8 + 5) * 3);
    BOOST_TEST(pixels(crop) == want, boost::test_tools::per_element());
    // The centred square of a 5 x 8 image starts at x = 1 (im2rec's --center-crop); of 8 x 5 at y = 1.
    BOOST_TEST(pixels(mx::image::center_crop(image, 5, 5)) == pixels(mx::image::fixed_crop(image, 1, 0, 5, 5)),
               boost::test_tools::per_element());
    const nd::NDArray tall = pattern(8, 5, 1, ctx);
    BOOST_TEST(pixels(mx::image::center_crop(tall, 5, 5)) == pixels(mx::image::fixed_crop(tall, 0, 1, 5, 5)),
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(resize_and_crop_errors_are_typed) {
  const nd::NDArray image = pattern(5, 8, 3);
  NDG_CHECK_THROWS_WITH(mx::image::imresize(image, 0, 4), mx::ShapeError, "(5, 8, 3)", "0 x 4");
  NDG_CHECK_THROWS_WITH(mx::image::imresize(nd::zeros({4, 4, 3}), 2, 2), mx::DTypeError, "uint8", "float32");
  NDG_CHECK_THROWS_WITH(mx::image::imresize(nd::zeros({4}, mx::cpu(), mx::DType::uint8), 2, 2), mx::ShapeError, "(4,)");
  NDG_CHECK_THROWS_WITH(mx::image::resize_short(image, 0), mx::ShapeError, "size must be >= 1");
  NDG_CHECK_THROWS_WITH(mx::image::fixed_crop(image, 6, 0, 3, 2), mx::ShapeError, "3 x 2 at (6, 0)", "(5, 8, 3)");
  NDG_CHECK_THROWS_WITH(mx::image::center_crop(image, 6, 6), mx::ShapeError, "6 x 6", "(5, 8, 3)");
}

BOOST_AUTO_TEST_SUITE_END()
