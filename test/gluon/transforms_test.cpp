// gluon::data::vision::transforms: each transform's geometry read back from images whose pixels
// encode their coordinates (crops, pads, flips, resized crops within their scale and ratio),
// the draws per sample (a batch equals its samples one at a time; the same seed gives the same
// epoch whatever the workers; on a GPU the same crops and flips as on cpu(0)), the colour
// transforms' identities, the DataLoader's transform_first, transform_on and prefetch, the
// loader's stages in the profiler, and the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gluon/data.hpp>

namespace nd = mx::nd;
namespace gdata = mx::gluon::data;
namespace T = mx::gluon::data::vision::transforms;
using mx::DType;
using ndg_test::Values;

namespace {

// n images (h, w, 1) float32 whose pixel (y, x) holds 1 + x + 1000 y + 100000 image: a value names
// its position, so an output shows where each pixel came from (0 is padding). Exact in float32 for
// fewer than 160 images.
nd::NDArray coordinate_images(std::int64_t n, std::int64_t h, std::int64_t w, mx::Context ctx = mx::cpu()) {
  std::vector<float> v;
  for (std::int64_t s = 0; s < n; ++s) {
    for (std::int64_t y = 0; y < h; ++y) {
      for (std::int64_t x = 0; x < w; ++x) v.push_back(float(1 + x + 1000 * y + 100000 * s));
    }
  }
  return nd::array(v, {n, h, w, 1}, ctx);
}

// uint8 RGB images with a fixed pattern.
nd::NDArray rgb_images(std::int64_t n, std::int64_t h, std::int64_t w, mx::Context ctx = mx::cpu()) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(n * h * w * 3));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>((i * 53 + i / 5 * 29) % 256);
  return nd::array(v, {n, h, w, 3}, ctx, DType::uint8);
}

// The box (x0, y0, width, height) an output of coordinate_images came from, read from its values
// (exact for crops at scale 1).
struct Window {
  std::int64_t x0, y0;
  bool mirrored_x, mirrored_y;
};
Window window_of(const Values& out, std::int64_t oh, std::int64_t ow, std::int64_t image) {
  // The first pixel that is not padding tells the offset; its neighbours tell the direction.
  for (std::int64_t y = 0; y < oh; ++y) {
    for (std::int64_t x = 0; x < ow; ++x) {
      const double v = out[static_cast<std::size_t>((image * oh + y) * ow + x)];
      if (v == 0) continue;
      const auto code = static_cast<std::int64_t>(v) - 1 - 100000 * image;
      const std::int64_t sx = code % 1000, sy = code / 1000;
      const double right = x + 1 < ow ? out[static_cast<std::size_t>((image * oh + y) * ow + x + 1)] : 0;
      const double down = y + 1 < oh ? out[static_cast<std::size_t>((image * oh + y + 1) * ow + x)] : 0;
      const bool mx = right != 0 && right < v, my = down != 0 && down < v;
      return {mx ? sx + x : sx - x, my ? sy + y : sy - y, mx, my};
    }
  }
  return {0, 0, false, false};
}

std::vector<gdata::SampleKey> keys_for(std::int64_t n, std::uint64_t epoch = 0) {
  std::vector<gdata::SampleKey> k;
  for (std::int64_t i = 0; i < n; ++i) k.push_back({7, epoch, i, 0});
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transforms)

BOOST_AUTO_TEST_CASE(random_crop_with_padding_is_a_window_of_the_padded_image) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t n = 64;
    const nd::NDArray images = coordinate_images(n, 32, 32, ctx);
    const nd::NDArray out = T::RandomCrop(32, 4).forward(images, keys_for(n));
    BOOST_TEST(out.shape() == (mx::Shape{n, 32, 32, 1}));
    const Values v = ndg_test::values(out);
    std::set<std::pair<std::int64_t, std::int64_t>> offsets;
    for (std::int64_t s = 0; s < n; ++s) {
      const Window win = window_of(v, 32, 32, s);
      BOOST_TEST(!win.mirrored_x);
      BOOST_TEST((win.x0 >= -4 && win.x0 <= 4 && win.y0 >= -4 && win.y0 <= 4), "offset " << win.x0 << ", " << win.y0);
      offsets.insert({win.x0, win.y0});
      for (std::int64_t y = 0; y < 32; ++y) {
        for (std::int64_t x = 0; x < 32; ++x) {
          const std::int64_t sx = win.x0 + x, sy = win.y0 + y;
          const double want = sx < 0 || sy < 0 || sx >= 32 || sy >= 32 ? 0.0 : double(1 + sx + 1000 * sy + 100000 * s);
          if (v[static_cast<std::size_t>((s * 32 + y) * 32 + x)] != want) {
            BOOST_FAIL("image " << s << " pixel (" << y << ", " << x << ") is not the window's");
          }
        }
      }
    }
    BOOST_TEST(offsets.size() > 20u, "only " << offsets.size() << " distinct offsets in " << n << " draws");
  });
}

BOOST_AUTO_TEST_CASE(flips_mirror_with_their_probability) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray images = coordinate_images(4, 3, 5, ctx);
    const Values in = ndg_test::values(images);
    // p = 1: every image mirrored exactly; p = 0: the batch itself.
    const Values lr = ndg_test::values(T::RandomFlipLeftRight(1.0).forward(images, keys_for(4)));
    const Values tb = ndg_test::values(T::RandomFlipTopBottom(1.0).forward(images, keys_for(4)));
    for (std::int64_t s = 0; s < 4; ++s) {
      for (std::int64_t y = 0; y < 3; ++y) {
        for (std::int64_t x = 0; x < 5; ++x) {
          const auto at = [&](const Values& v, std::int64_t yy, std::int64_t xx) { return v[static_cast<std::size_t>((s * 3 + yy) * 5 + xx)]; };
          BOOST_TEST(at(lr, y, x) == at(in, y, 4 - x));
          BOOST_TEST(at(tb, y, x) == at(in, 2 - y, x));
        }
      }
    }
    BOOST_TEST(T::RandomFlipLeftRight(0.0).forward(images, keys_for(4)).is(images));
    // p = 0.5 over 2,000 images: about half mirrored.
    const std::int64_t n = 2000;
    const nd::NDArray pairs = nd::broadcast_to(nd::array({1, 2}, ctx).reshape({1, 1, 2, 1}), {n, 1, 2, 1});
    const Values many = ndg_test::values(T::RandomFlipLeftRight().forward(pairs, keys_for(n)));
    std::int64_t mirrored = 0;
    for (std::int64_t s = 0; s < n; ++s) mirrored += many[static_cast<std::size_t>(2 * s)] > many[static_cast<std::size_t>(2 * s + 1)];
    BOOST_TEST((mirrored > 900 && mirrored < 1100), mirrored << " of " << n << " mirrored");
  });
}

BOOST_AUTO_TEST_CASE(random_resized_crops_keep_to_their_scale_and_ratio) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // 120 x 160 images, crops resized to 64 x 64 by nearest neighbour: along each axis the output
    // steps through the box at width / 64 source pixels per pixel, so the first and last outputs
    // give the box's extent to within one step.
    const std::int64_t n = 150, h = 120, w = 160, out = 64;
    const nd::NDArray images = coordinate_images(n, h, w, ctx);
    const Values v = ndg_test::values(T::RandomResizedCrop(out, {0.08, 1.0}, {0.75, 4.0 / 3.0}, 0).forward(images, keys_for(n)));
    double smallest = 1, largest = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const auto code = [&](std::int64_t y, std::int64_t x) {
        return static_cast<std::int64_t>(v[static_cast<std::size_t>((s * out + y) * out + x)]) - 1 - 100000 * s;
      };
      const std::int64_t x0 = code(0, 0) % 1000, y0 = code(0, 0) / 1000;
      const std::int64_t x1 = code(out - 1, out - 1) % 1000, y1 = code(out - 1, out - 1) / 1000;
      BOOST_TEST_CONTEXT("image " << s << ": box (" << x0 << ", " << y0 << ") to (" << x1 << ", " << y1 << ")") {
        BOOST_TEST((x0 >= 0 && y0 >= 0 && x1 < w && y1 < h && x1 >= x0 && y1 >= y0));
        // Nearest sampling reaches the last pixel of the box to within one step of width/out.
        const double bw = double(x1 - x0 + 1), bh = double(y1 - y0 + 1);
        const double step_w = std::max(1.0, bw / (out - 1)), step_h = std::max(1.0, bh / (out - 1));
        const double area = bw * bh / double(h * w);
        BOOST_TEST(area >= 0.08 * (1 - step_w / bw) * (1 - step_h / bh) * 0.99);
        BOOST_TEST(area <= 1.0);
        const double ratio = bw / bh;
        BOOST_TEST(ratio >= 0.75 * (1 - step_w / bw) - 0.02);
        BOOST_TEST(ratio <= 4.0 / 3.0 / (1 - step_h / bh) + 0.02);
        smallest = std::min(smallest, area);
        largest = std::max(largest, area);
      }
    }
    BOOST_TEST(smallest < 0.2);
    BOOST_TEST(largest > 0.6);
  });
}

BOOST_AUTO_TEST_CASE(center_crop_and_resize_geometry) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // An image larger than the size is cropped at its centre, not resized.
    const nd::NDArray big = coordinate_images(1, 9, 12, ctx);
    const Values c = ndg_test::values(T::CenterCrop(4)(big[0]));
    const Window win = window_of(c, 4, 4, 0);
    BOOST_TEST(win.x0 == 4);  // (12 - 4) / 2
    BOOST_TEST(win.y0 == 2);  // (9 - 4) / 2, rounded down
    BOOST_TEST(c[5] == double(1 + 5 + 1000 * 3));  // pixel (1, 1) of the crop
    // A smaller image: its largest centred box of the size's aspect ratio, resized.
    const nd::NDArray small = nd::full({6, 4, 3}, 77, ctx, DType::uint8);
    const nd::NDArray up = T::CenterCrop(T::Size(8, 6))(small);
    BOOST_TEST(up.shape() == (mx::Shape{6, 8, 3}));
    ndg_test::check_close(up, Values(6 * 8 * 3, 77.0), 0, 0);
    // Resize: to (width, height); keep_ratio with one size: the shorter side becomes it.
    BOOST_TEST(T::Resize(T::Size(20, 10))(small).shape() == (mx::Shape{10, 20, 3}));
    BOOST_TEST(T::Resize(8, true)(nd::zeros({30, 40, 3}, ctx)).shape() == (mx::Shape{8, 10, 3}));
    BOOST_TEST(T::Resize(8, true)(nd::zeros({40, 30, 3}, ctx)).shape() == (mx::Shape{10, 8, 3}));
    BOOST_TEST(T::Resize(8)(nd::zeros({40, 30, 3}, ctx)).shape() == (mx::Shape{8, 8, 3}));
  });
}

BOOST_AUTO_TEST_CASE(a_batch_gives_what_its_samples_give_one_at_a_time) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const T::Compose augment(T::RandomResizedCrop(24), T::RandomFlipLeftRight(), T::RandomColorJitter(0.4, 0.4, 0.4, 0.1),
                             T::RandomLighting(0.1), T::ToTensor(), T::Normalize({0.4f, 0.5f, 0.6f}, {0.2f, 0.25f, 0.3f}));
    const std::int64_t n = 6;
    const nd::NDArray images = rgb_images(n, 40, 30, ctx);
    const std::vector<gdata::SampleKey> keys = keys_for(n, 3);
    const nd::NDArray batch = augment.forward(images, keys);
    BOOST_TEST(batch.shape() == (mx::Shape{n, 3, 24, 24}));
    BOOST_TEST(batch.dtype() == DType::float32);
    // Each sample alone, under its key (as the DataLoader's workers run it): the same values.
    for (std::int64_t s = 0; s < n; ++s) {
      const gdata::SampleKeyScope scope({&keys[static_cast<std::size_t>(s)], 1});
      const nd::NDArray one = augment(images[s]);
      BOOST_TEST(one.shape() == (mx::Shape{3, 24, 24}));
      BOOST_TEST(ndg_test::values(one) == ndg_test::values(batch[s]), boost::test_tools::per_element());
    }
    // Compose runs a crop and the flip after it as one op: the same values as one after the other.
    const T::RandomResizedCrop crop(24);
    const T::RandomFlipLeftRight flip;
    std::vector<gdata::SampleKey> k0, k1;
    for (const gdata::SampleKey& k : keys) {
      k0.push_back(gdata::sub_key(k, 0));
      k1.push_back(gdata::sub_key(k, 1));
    }
    BOOST_TEST(ndg_test::values(T::Compose(crop, flip).forward(images, keys)) ==
                   ndg_test::values(flip.forward(crop.forward(images, k0), k1)),
               boost::test_tools::per_element());
    // Another epoch draws otherwise.
    BOOST_TEST(ndg_test::values(augment.forward(images, keys_for(n, 4))) != ndg_test::values(batch));
  });
}

BOOST_AUTO_TEST_CASE(colour_transforms_keep_their_identities) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // Gray pixels have no saturation or hue to change.
    const nd::NDArray gray = nd::array({10, 10, 10, 200, 200, 200, 90, 90, 90, 0, 0, 0}, ctx, DType::uint8).reshape({2, 2, 3});
    ndg_test::check_close(T::RandomSaturation(0.9)(gray), ndg_test::values(gray), 0, 0);
    ndg_test::check_close(T::RandomHue(0.4)(gray), ndg_test::values(gray), 0, 0);
    // float32 images (no rounding): brightness scales every value of an image by one factor in
    // [0.5, 1.5]; contrast keeps the image's mean gray; lighting adds one offset per channel.
    const std::int64_t n = 8;
    const nd::NDArray images = rgb_images(n, 5, 4, ctx).astype(DType::float32);
    const Values in = ndg_test::values(images);
    const Values bright = ndg_test::values(T::RandomBrightness(0.5).forward(images, keys_for(n)));
    const Values contrast = ndg_test::values(T::RandomContrast(0.5).forward(images, keys_for(n)));
    const Values light = ndg_test::values(T::RandomLighting(0.5).forward(images, keys_for(n)));
    const std::size_t per = 5 * 4 * 3;
    for (std::size_t s = 0; s < std::size_t(n); ++s) {
      BOOST_TEST_CONTEXT("image " << s) {
        const double factor = bright[s * per + 1] / in[s * per + 1];
        BOOST_TEST((factor >= 0.5 && factor <= 1.5));
        double mean_in = 0, mean_out = 0;
        for (std::size_t i = s * per; i < (s + 1) * per; ++i) {
          if (in[i] != 0) BOOST_TEST(std::abs(bright[i] / in[i] - factor) < 1e-5);
          const double weight = std::vector<double>{0.299, 0.587, 0.114}[i % 3];
          mean_in += weight * in[i];
          mean_out += weight * contrast[i];
          BOOST_TEST(std::abs((light[i] - in[i]) - (light[s * per + i % 3] - in[s * per + i % 3])) < 1e-3);
        }
        BOOST_TEST(std::abs(mean_out - mean_in) < 1e-3 * std::abs(mean_in));
      }
    }
    // RandomColorJitter with nothing to jitter is the identity; uint8 stays uint8.
    BOOST_TEST(T::RandomColorJitter()(gray).is(gray));
    BOOST_TEST(T::RandomColorJitter(0.3, 0.3, 0.3, 0.1)(rgb_images(2, 4, 4, ctx)).dtype() == DType::uint8);
  });
}

namespace {

// The batches of one epoch's data, read back.
std::vector<Values> epoch_values(gdata::DataLoader& loader) {
  std::vector<Values> out;
  for (auto& batch : loader) out.push_back(ndg_test::values(batch.data));
  return out;
}

T::Compose cifar_augment() {
  return T::Compose(T::RandomCrop(32, 4), T::RandomFlipLeftRight(), T::ToTensor(),
                    T::Normalize({0.4914f, 0.4822f, 0.4465f}, {0.2023f, 0.1994f, 0.2010f}));
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_seed_gives_one_epoch_whatever_the_workers_and_the_context) {
  const gdata::ArrayDataset set(rgb_images(40, 32, 32), nd::arange(40, mx::cpu(), DType::int32));
  const T::Compose augment = cifar_augment();
  // Per sample on the workers (transform_first): 0 and 3 workers, shuffled.
  mx::random::seed(21);
  gdata::DataLoader serial(gdata::transform_first(set, augment), 16, true, "keep", {}, 0);
  const std::vector<Values> a0 = epoch_values(serial), a1 = epoch_values(serial);
  mx::random::seed(21);
  gdata::DataLoader threaded(gdata::transform_first(set, augment), 16, true, "keep", {}, 3);
  BOOST_TEST((epoch_values(threaded) == a0));
  BOOST_TEST((epoch_values(threaded) == a1));
  BOOST_TEST((a0 != a1));
  // Per batch on each context (transform_on): the same images, for crops and flips exactly.
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(21);
    gdata::DataLoader batched(set, 16, true);
    batched.transform_on(ctx, augment).prefetch(1);
    for (const std::vector<Values>* want : {&a0, &a1}) {
      std::size_t b = 0;
      for (auto& batch : batched) {
        BOOST_TEST(batch.data.context() == ctx);
        BOOST_TEST(batch.label.context() == ctx);
        ndg_test::check_close(batch.data, (*want)[b++], 0, 1e-6);
      }
      BOOST_TEST(b == want->size());
    }
  });
}

BOOST_AUTO_TEST_CASE(the_loader_stages_show_in_the_profiler) {
  const gdata::ArrayDataset set(rgb_images(12, 8, 8), nd::arange(12, mx::cpu(), DType::int32));
  gdata::DataLoader loader(gdata::transform_first(set, T::ToTensor()), 4, false, "keep", {}, 2);
  mx::profiler::reset();
  mx::profiler::set_state("run");
  for (auto& batch : loader) BOOST_TEST(batch.data.shape() == (mx::Shape{4, 3, 8, 8}));
  mx::profiler::set_state("stop");
  const std::string table = mx::profiler::dumps(true);
  for (const char* stage : {"DataLoader::sample", "DataLoader::stack", "DataLoader::wait"}) {
    BOOST_TEST(table.find(stage) != std::string::npos, stage << " missing from\n" << table);
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments_get_typed_errors) {
  const nd::NDArray images = rgb_images(2, 8, 8);
  NDG_CHECK_THROWS_WITH(T::ToTensor()(nd::zeros({8, 8})), mx::ShapeError, "ToTensor", "(8, 8)");
  NDG_CHECK_THROWS_WITH(T::RandomCrop(4).forward(images, keys_for(3)), mx::ValueError, "RandomCrop", "3 sample keys",
                        "batch of 2");
  NDG_CHECK_THROWS_WITH(T::Normalize({0, 0}, {1, 1})(T::ToTensor()(images)), mx::ShapeError, "2 values", "3 channels");
  NDG_CHECK_THROWS_WITH(T::Normalize({0}, {-1}), mx::ValueError, "positive");
  NDG_CHECK_THROWS_WITH(T::Resize(0), mx::ValueError, "Resize", "at least 1 x 1");
  NDG_CHECK_THROWS_WITH(T::Resize(8, false, 3), mx::ValueError, "Resize", "interpolation 3");
  NDG_CHECK_THROWS_WITH(T::RandomResizedCrop(8, {0.5, 0.2}), mx::ValueError, "RandomResizedCrop", "scale");
  NDG_CHECK_THROWS_WITH(T::RandomResizedCrop(8, {0.1, 1.0}, {2.0, 1.0}), mx::ValueError, "ratio");
  NDG_CHECK_THROWS_WITH(T::RandomCrop(8, -1), mx::ValueError, "pad");
  NDG_CHECK_THROWS_WITH(T::RandomFlipLeftRight(1.5), mx::ValueError, "RandomFlipLeftRight", "[0, 1]");
  NDG_CHECK_THROWS_WITH(T::RandomBrightness(-0.1), mx::ValueError, "RandomBrightness", "brightness", ">= 0");
  NDG_CHECK_THROWS_WITH(T::RandomColorJitter(0, 0, 0, std::nan("")), mx::ValueError, "hue");
  NDG_CHECK_THROWS_WITH(T::RandomLighting(-1), mx::ValueError, "alpha");
  NDG_CHECK_THROWS_WITH(T::Compose(std::vector<T::TransformPtr>{nullptr}), mx::ValueError, "Compose", "null");
  NDG_CHECK_THROWS_WITH(T::RandomSaturation(0.5)(nd::zeros({4, 4, 2}, mx::cpu(), DType::uint8)), mx::ShapeError,
                        "_image_adjust_colors", "1 or 3 channels");
  const gdata::ArrayDataset set(images, nd::arange(2, mx::cpu(), DType::int32));
  NDG_CHECK_THROWS_WITH(gdata::transform_first(set, {}), mx::ValueError, "transform_first", "empty");
  NDG_CHECK_THROWS_WITH(gdata::transform_first(std::shared_ptr<const gdata::Dataset>(), T::ToTensor()), mx::ValueError,
                        "transform_first", "null");
  gdata::DataLoader loader(set, 2);
  NDG_CHECK_THROWS_WITH(loader.prefetch(0), mx::ValueError, "prefetch", ">= 1");
  // A transform that fails on the loop's thread is thrown there, with its type.
  loader.transform_on(mx::cpu(), T::Normalize({0}, {1}));
  NDG_CHECK_THROWS_WITH(loader.begin(), mx::DTypeError, "_image_normalize");
}

BOOST_AUTO_TEST_SUITE_END()
