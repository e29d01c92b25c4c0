// The augmentation ops of the image family (_image_to_tensor, _image_normalize, _image_crop_resize,
// _image_adjust_colors) on every context: hand-computed values, crops and flips that must move
// pixels exactly, bilinear resizing against a float64 reference written here, the colour steps
// against float64 formulas (and hue's identity: a turn of 120 degrees permutes r, g, b), GPU
// results equal to cpu(0)'s, normalize's gradient, and the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

// A uint8 image batch (n, h, w, c) whose values are a fixed pseudo-random pattern.
nd::NDArray pattern_images(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, mx::Context ctx,
                           DType dtype = DType::uint8) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(n * h * w * c));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>((i * 37 + i / 7 * 11) % 256);
  return nd::array(v, {n, h, w, c}, ctx, dtype);
}

nd::NDArray int32s(const std::vector<std::int32_t>& v, const mx::Shape& shape, mx::Context ctx) {
  return nd::array(v, shape, ctx);
}

// Pixel (y, x, ch) of image n of values laid out (n, h, w, c).
double pixel(const Values& v, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t n, std::int64_t y,
             std::int64_t x, std::int64_t ch) {
  return v[static_cast<std::size_t>(((n * h + y) * w + x) * c + ch)];
}

}  // namespace

BOOST_AUTO_TEST_SUITE(image_augment_ops)

BOOST_AUTO_TEST_CASE(to_tensor_moves_channels_first_and_divides_by_255) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // One image (2, 2, 3): pixel (y, x) has channels (10y + x, 100, 255).
    const nd::NDArray image =
        nd::array({0, 100, 255, 1, 100, 255, 10, 100, 255, 11, 100, 255}, ctx, DType::uint8).reshape({2, 2, 3});
    const nd::NDArray t = nd::image::to_tensor(image);
    BOOST_TEST(t.shape() == (mx::Shape{3, 2, 2}));
    BOOST_TEST(t.dtype() == DType::float32);
    check_close(t, {0 / 255.0, 1 / 255.0, 10 / 255.0, 11 / 255.0, 100 / 255.0, 100 / 255.0, 100 / 255.0, 100 / 255.0,
                    1, 1, 1, 1}, 0, 1e-7);
    // A batch of two: the second image's values follow.
    const nd::NDArray batch = nd::concat({image.reshape({1, 2, 2, 3}), image.reshape({1, 2, 2, 3})}, 0);
    const nd::NDArray tb = nd::image::to_tensor(batch);
    BOOST_TEST(tb.shape() == (mx::Shape{2, 3, 2, 2}));
    check_close(tb[1], ndg_test::values(t), 0, 0);
    NDG_CHECK_THROWS_WITH(nd::image::to_tensor(nd::zeros({4, 4}, ctx)), mx::ShapeError, "_image_to_tensor", "(4, 4)");
  });
}

BOOST_AUTO_TEST_CASE(normalize_per_channel_and_its_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = ndg_test::random_array({2, 3, 2, 2}, ctx, 5);
    const Values xv = ndg_test::values(x);
    const std::vector<float> mean{0.5f, -0.25f, 0.125f}, stdev{0.5f, 2.0f, 0.25f};
    Values want;
    for (std::size_t i = 0; i < xv.size(); ++i) {
      const std::size_t c = i / 4 % 3;
      want.push_back((xv[i] - mean[c]) / stdev[c]);
    }
    check_close(nd::image::normalize(x, mean, stdev), want, 1e-6, 1e-6);
    // One value for every channel; a single tensor (3-D).
    check_close(nd::image::normalize(x[0], {1.0f}, {4.0f}),
                [&] { Values w; for (std::size_t i = 0; i < 12; ++i) w.push_back((xv[i] - 1) / 4); return w; }(), 1e-6,
                1e-6);
    // d/dx sum(w * normalize(x)) = w / std.
    nd::NDArray xg = x.copy();
    xg.attach_grad();
    const nd::NDArray w = ndg_test::random_array({2, 3, 2, 2}, ctx, 6);
    {
      auto rec = mx::autograd::record();
      nd::NDArray loss = (nd::image::normalize(xg, mean, stdev) * w).sum();
      loss.backward();
    }
    const Values wv = ndg_test::values(w);
    Values grad;
    for (std::size_t i = 0; i < wv.size(); ++i) grad.push_back(wv[i] / stdev[i / 4 % 3]);
    check_close(xg.grad(), grad, 1e-6, 1e-7);
    NDG_CHECK_THROWS_WITH(nd::image::normalize(x, {0, 0}, {1, 1}), mx::ShapeError, "_image_normalize", "2 values",
                          "3 channels");
    NDG_CHECK_THROWS_WITH(nd::image::normalize(x, {0}, {0}), mx::ValueError, "_image_normalize", "positive");
    NDG_CHECK_THROWS_WITH(nd::image::normalize(pattern_images(1, 2, 2, 3, ctx).reshape({3, 2, 2}), {0}, {1}),
                          mx::DTypeError, "_image_normalize");
  });
}

BOOST_AUTO_TEST_CASE(crops_pads_and_flips_move_pixels_exactly) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t n = 3, h = 7, w = 9, c = 3;
    for (const DType dtype : {DType::uint8, DType::float32, DType::float16}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray images = pattern_images(n, h, w, c, ctx, dtype);
        const Values in = ndg_test::values(images);
        // Image 0: the box (2, 1) 4 x 5, unflipped; image 1: the box (-2, -1) 4 x 5 (reaching into
        // the padding, which reads 7), mirrored left-right; image 2: (6, 3) 4 x 5 (past the right and
        // bottom edges), mirrored both ways.
        const std::vector<std::int32_t> boxes{2, 1, 4, 5, -2, -1, 4, 5, 6, 3, 4, 5}, flips{0, 1, 3};
        const nd::NDArray out = nd::image::crop_resize(images, int32s(boxes, {n, 4}, ctx), int32s(flips, {n}, ctx), 5, 4,
                                                       1, 7.0);
        BOOST_TEST(out.shape() == (mx::Shape{n, 5, 4, c}));
        BOOST_TEST(out.dtype() == dtype);
        Values want;
        for (std::int64_t s = 0; s < n; ++s) {
          for (std::int64_t y = 0; y < 5; ++y) {
            for (std::int64_t x = 0; x < 4; ++x) {
              for (std::int64_t ch = 0; ch < c; ++ch) {
                const std::int64_t sx = boxes[4 * s] + ((flips[s] & 1) ? 3 - x : x);
                const std::int64_t sy = boxes[4 * s + 1] + ((flips[s] & 2) ? 4 - y : y);
                want.push_back(sx < 0 || sy < 0 || sx >= w || sy >= h ? 7.0 : pixel(in, h, w, c, s, sy, sx, ch));
              }
            }
          }
        }
        check_close(out, want, 0, 0);
        // Nearest interpolation at the same size is the same copy.
        check_close(nd::image::crop_resize(images, int32s(boxes, {n, 4}, ctx), int32s(flips, {n}, ctx), 5, 4, 0, 7.0),
                    want, 0, 0);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bilinear_and_nearest_resizes_match_a_float64_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t h = 6, w = 10, c = 2, oh = 4, ow = 7;
    const nd::NDArray images = (ndg_test::random_array({2, h, w, c}, ctx, 9) + 1.0) * 100.0;
    const Values in = ndg_test::values(images);
    // Image 0: the whole image; image 1: the box (3, 2) 5 x 3, enlarged along y and shrunk along x.
    const std::vector<std::int32_t> boxes{0, 0, w, h, 3, 2, 5, 3}, flips{0, 0};
    for (const int interp : {0, 1}) {
      BOOST_TEST_CONTEXT("interp " << interp) {
        Values want;
        for (std::int64_t s = 0; s < 2; ++s) {
          const std::int64_t x0 = boxes[4 * s], y0 = boxes[4 * s + 1], bw = boxes[4 * s + 2], bh = boxes[4 * s + 3];
          // Along one axis: (first, second, weight of second) in box coordinates.
          const auto taps = [&](std::int64_t extent, std::int64_t out, std::int64_t d) {
            const double scale = double(extent) / double(out);
            if (interp == 0) {
              const auto p = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(d * scale)), extent - 1);
              return std::tuple{p, p, 0.0};
            }
            const double src = std::clamp((d + 0.5) * scale - 0.5, 0.0, double(extent - 1));
            const auto f = static_cast<std::int64_t>(src);
            return std::tuple{f, std::min(f + 1, extent - 1), src - double(f)};
          };
          for (std::int64_t y = 0; y < oh; ++y) {
            for (std::int64_t x = 0; x < ow; ++x) {
              const auto [ya, yb, wy] = taps(bh, oh, y);
              const auto [xa, xb, wx] = taps(bw, ow, x);
              for (std::int64_t ch = 0; ch < c; ++ch) {
                const auto at = [&](std::int64_t yy, std::int64_t xx) { return pixel(in, h, w, c, s, y0 + yy, x0 + xx, ch); };
                want.push_back((1 - wy) * ((1 - wx) * at(ya, xa) + wx * at(ya, xb)) + wy * ((1 - wx) * at(yb, xa) + wx * at(yb, xb)));
              }
            }
          }
        }
        check_close(nd::image::crop_resize(images, int32s(boxes, {2, 4}, ctx), int32s(flips, {2}, ctx), oh, ow, interp),
                    want, 1e-5, 1e-4);
      }
    }
    // uint8 rounds to nearest: the midpoint of 10 and 21 (15.5) becomes 16.
    const nd::NDArray two = nd::array({10, 21}, ctx, DType::uint8).reshape({1, 1, 2, 1});
    const nd::NDArray mid = nd::image::crop_resize(two, int32s({0, 0, 2, 1}, {1, 4}, ctx), int32s({0}, {1}, ctx), 1, 1);
    check_close(mid, {16}, 0, 0);
  });
}

BOOST_AUTO_TEST_CASE(crop_resize_errors_name_the_op_and_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray images = pattern_images(2, 4, 4, 3, ctx);
    const nd::NDArray boxes = int32s({0, 0, 4, 4, 0, 0, 4, 4}, {2, 4}, ctx), flips = int32s({0, 0}, {2}, ctx);
    NDG_CHECK_THROWS_WITH(nd::image::crop_resize(images, boxes.slice(0, 1), flips, 2, 2), mx::ShapeError,
                          "_image_crop_resize", "(2, 4) int32", "(1, 4)");
    NDG_CHECK_THROWS_WITH(nd::image::crop_resize(images, boxes.astype(DType::float32), flips, 2, 2), mx::ShapeError,
                          "_image_crop_resize", "int32");
    NDG_CHECK_THROWS_WITH(nd::image::crop_resize(images[0], boxes, flips, 2, 2), mx::ShapeError, "_image_crop_resize",
                          "(4, 4, 3)");
    NDG_CHECK_THROWS_WITH(nd::image::crop_resize(images, boxes, flips, 0, 2), mx::ValueError, "at least 1 x 1");
    NDG_CHECK_THROWS_WITH(nd::image::crop_resize(images, boxes, flips, 2, 2, 2), mx::ValueError, "interpolation 2");
  });
}

namespace {

// The colour steps in float64, from their definitions (MXNet's image_random-inl.h, with the whole
// gray sum in saturation), each result rounded into [0, 255] as uint8 stores it.
struct ColorReference {
  static double gray(const double* v) { return 0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2]; }
  static void store(double* v) {
    for (int j = 0; j < 3; ++j) v[j] = std::floor(std::clamp(v[j], 0.0, 255.0) + 0.5);
  }
  // HLS hue rotation by degrees: RGB -> HLS -> RGB with the textbook formulas.
  static void hue(double* v, double degrees) {
    const double r = v[0] / 255, g = v[1] / 255, b = v[2] / 255;
    const double mx = std::max({r, g, b}), mn = std::min({r, g, b}), l = (mx + mn) / 2, d = mx - mn;
    if (d < 1e-7) return;
    const double s = l < 0.5 ? d / (mx + mn) : d / (2 - mx - mn);
    double hh = mx == r ? 60 * (g - b) / d : (mx == g ? 60 * (b - r) / d + 120 : 60 * (r - g) / d + 240);
    hh = std::fmod(hh + degrees + 720.0, 360.0);
    const double q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;
    const auto channel = [&](double t) {
      t = std::fmod(t + 360.0, 360.0);
      if (t < 60) return p + (q - p) * t / 60;
      if (t < 180) return q;
      if (t < 240) return p + (q - p) * (240 - t) / 60;
      return p;
    };
    v[0] = channel(hh + 120) * 255;
    v[1] = channel(hh) * 255;
    v[2] = channel(hh - 120) * 255;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(colour_steps_match_their_formulas) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t h = 5, w = 4;
    const nd::NDArray images = pattern_images(3, h, w, 3, ctx);
    const Values in = ndg_test::values(images);
    // Image 0: brightness 1.3 then contrast 0.6 (its mean taken after the brightness); image 1:
    // saturation 0.4 then lighting (+12, -7.5, 3); image 2: hue 0.1 (36 degrees), then brightness 0.8.
    std::vector<float> f{1.3f, 0.6f, 1, 0, 0, 0, 0, 0, 1, -1, -1, -1,
                         1, 1, 0.4f, 0, 12, -7.5f, 3, 2, 4, -1, -1, -1,
                         0.8f, 1, 1, 0.1f, 0, 0, 0, 3, 0, -1, -1, -1};
    const nd::NDArray out = nd::image::adjust_colors(images, nd::array(f, {3, 12}, ctx));
    BOOST_TEST(out.dtype() == DType::uint8);
    Values want;
    for (std::int64_t s = 0; s < 3; ++s) {
      std::vector<std::array<double, 3>> px(static_cast<std::size_t>(h * w));
      for (std::int64_t p = 0; p < h * w; ++p) {
        for (int j = 0; j < 3; ++j) px[static_cast<std::size_t>(p)][static_cast<std::size_t>(j)] = in[static_cast<std::size_t>((s * h * w + p) * 3 + j)];
      }
      const auto each = [&](auto step) {
        for (auto& v : px) {
          step(v.data());
          ColorReference::store(v.data());
        }
      };
      if (s == 0) {
        each([](double* v) { for (int j = 0; j < 3; ++j) v[j] *= 1.3; });
        double mean = 0;
        for (auto& v : px) mean += ColorReference::gray(v.data());
        mean /= double(h * w);
        each([&](double* v) { for (int j = 0; j < 3; ++j) v[j] = v[j] * 0.6 + 0.4 * mean; });
      } else if (s == 1) {
        each([](double* v) {
          const double g = ColorReference::gray(v);
          for (int j = 0; j < 3; ++j) v[j] = g * 0.6 + v[j] * 0.4;
        });
        each([](double* v) { v[0] += 12; v[1] -= 7.5; v[2] += 3; });
      } else {
        each([](double* v) { ColorReference::hue(v, 36); });
        each([](double* v) { for (int j = 0; j < 3; ++j) v[j] *= 0.8; });
      }
      for (auto& v : px) want.insert(want.end(), v.begin(), v.end());
    }
    // Rounding can land one level apart where float32 and float64 straddle a half.
    check_close(out, want, 0, 1.0);
    const Values got = ndg_test::values(out);
    std::size_t exact = 0;
    for (std::size_t i = 0; i < got.size(); ++i) exact += got[i] == want[i];
    BOOST_TEST(exact >= got.size() * 95 / 100, exact << " of " << got.size() << " values exact");
  });
}

BOOST_AUTO_TEST_CASE(hue_turned_by_120_degrees_permutes_the_channels) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // float32 images: no rounding between steps. (r, g, b) turned by 120 degrees is (b, r, g).
    const nd::NDArray images = (ndg_test::random_array({2, 3, 5, 3}, ctx, 4) + 1.0) * 120.0;
    std::vector<float> f(24, 0.0f);
    for (int s = 0; s < 2; ++s) {
      f[static_cast<std::size_t>(12 * s + 3)] = 1.0f / 3.0f;
      f[static_cast<std::size_t>(12 * s + 7)] = 3;
      for (int k = 8; k < 12; ++k) f[static_cast<std::size_t>(12 * s + k)] = -1;
    }
    const nd::NDArray out = nd::image::adjust_colors(images, nd::array(f, {2, 12}, ctx));
    const Values in = ndg_test::values(images);
    Values want(in.size());
    for (std::size_t p = 0; p < in.size(); p += 3) {
      want[p] = in[p + 2];
      want[p + 1] = in[p];
      want[p + 2] = in[p + 1];
    }
    check_close(out, want, 1e-4, 1e-3);
  });
}

BOOST_AUTO_TEST_CASE(gpu_results_equal_cpu_results) {
  if (mx::num_gpus() == 0) return;  // the other cases run every context; this one compares them
  const nd::NDArray images = pattern_images(4, 13, 11, 3, mx::cpu());
  const nd::NDArray boxes = int32s({0, 0, 11, 13, 2, 3, 6, 5, -3, -2, 15, 16, 1, 1, 3, 9}, {4, 4}, mx::cpu());
  const nd::NDArray flips = int32s({0, 1, 2, 3}, {4}, mx::cpu());
  std::vector<float> f;
  for (int s = 0; s < 4; ++s) {
    const std::vector<float> row{1.1f + 0.1f * float(s), 0.7f, 1.4f, 0.05f * float(s), 5, -3, 2, float(s % 4), 1, 2, 3, 4};
    f.insert(f.end(), row.begin(), row.end());
  }
  const nd::NDArray factors = nd::array(f, {4, 12}, mx::cpu());
  const Values cpu_crop = ndg_test::values(nd::image::crop_resize(images, boxes, flips, 9, 8));
  const Values cpu_color = ndg_test::values(nd::image::adjust_colors(images, factors));
  const Values cpu_tensor = ndg_test::values(nd::image::normalize(nd::image::to_tensor(images), {0.5f}, {0.25f}));
  for (int g = 0; g < mx::num_gpus(); ++g) {
    const mx::Context ctx = mx::gpu(g);
    BOOST_TEST_CONTEXT(ctx) {
      const nd::NDArray gi = images.copyto(ctx);
      BOOST_TEST(ndg_test::values(nd::image::crop_resize(gi, boxes.copyto(ctx), flips.copyto(ctx), 9, 8)) == cpu_crop,
                 boost::test_tools::per_element());
      check_close(nd::image::adjust_colors(gi, factors.copyto(ctx)), cpu_color, 0, 1.0);
      check_close(nd::image::normalize(nd::image::to_tensor(gi), {0.5f}, {0.25f}), cpu_tensor, 0, 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(adjust_colors_errors_name_the_op_and_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray images = pattern_images(2, 4, 4, 3, ctx);
    NDG_CHECK_THROWS_WITH(nd::image::adjust_colors(images, nd::zeros({2, 11}, ctx)), mx::ShapeError,
                          "_image_adjust_colors", "(2, 12) float32", "(2, 11)");
    NDG_CHECK_THROWS_WITH(nd::image::adjust_colors(pattern_images(2, 4, 4, 2, ctx), nd::zeros({2, 12}, ctx)),
                          mx::ShapeError, "_image_adjust_colors", "1 or 3 channels");
  });
}

BOOST_AUTO_TEST_SUITE_END()
