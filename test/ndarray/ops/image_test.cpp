// _contrib_BilinearResize2D: hand-computed values with the corners aligned and with the pixel
// centres aligned (OpenCV's), the identity at the same size, random data against a float64
// reference written here on every context and floating dtype, the gradient (hand-computed, and
// the adjoint identity <R x, dy> = <x, R^T dy>), the attributes' errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/image.hpp>

namespace nd = mx::nd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;
using Options = nd::contrib::BilinearResizeOptions;

namespace {

// The reference: each axis's source position by the definition, in double.
double source(std::int64_t in, std::int64_t out, std::int64_t dst, bool align) {
  if (align) return out > 1 ? double(in - 1) / double(out - 1) * double(dst) : 0.0;
  return std::max(double(in) / double(out) * (double(dst) + 0.5) - 0.5, 0.0);
}

Values reference(const Values& x, std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t oh, std::int64_t ow,
                 bool align) {
  Values y;
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t i = 0; i < oh; ++i) {
      for (std::int64_t j = 0; j < ow; ++j) {
        const double sy = source(h, oh, i, align), sx = source(w, ow, j, align);
        const auto y0 = std::min<std::int64_t>(static_cast<std::int64_t>(sy), h - 1), x0 = std::min<std::int64_t>(static_cast<std::int64_t>(sx), w - 1);
        const std::int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
        const double fy = sy - double(y0), fx = sx - double(x0);
        const auto at = [&](std::int64_t r, std::int64_t c) { return x[static_cast<std::size_t>((p * h + r) * w + c)]; };
        y.push_back((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
      }
    }
  }
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bilinear_resize)

BOOST_AUTO_TEST_CASE(hand_computed_values) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({0, 1, 2, 3}, ctx).reshape({1, 1, 2, 2});
    // Corners aligned: 2 -> 3 puts the middle output halfway.
    check_close(nd::contrib::BilinearResize2D(x, {.height = 3, .width = 3}), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
    // Pixel centres aligned (2 -> 4): positions -0.25 (clamped to 0), 0.25, 0.75, 1.25 (the last
    // pixel), so each axis reads 0, 0.25, 0.75, 1 of the way: out[i][j] = c[j] + 2 c[i].
    const Values c{0, 0.25, 0.75, 1};
    Values want;
    for (double r : c) {
      for (double col : c) want.push_back(col + 2 * r);
    }
    check_close(nd::contrib::BilinearResize2D(x, {.height = 4, .width = 4, .align_corners = false}), want);
    // The same size is the identity, in both modes; scales give the extents.
    for (const bool align : {true, false}) {
      check_close(nd::contrib::BilinearResize2D(x, {.height = 2, .width = 2, .align_corners = align}), {0, 1, 2, 3});
    }
    BOOST_TEST(nd::contrib::BilinearResize2D(x, {.scale_height = 2, .scale_width = 1.5}).shape() ==
               mx::Shape({1, 1, 4, 3}));
  });
}

BOOST_AUTO_TEST_CASE(random_data_against_a_float64_reference) {
  const Values x = ndg_test::uniform_values(2 * 3 * 5 * 7, 61);
  for (const DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16}) {
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (const bool align : {true, false}) {
        for (const auto& [oh, ow] : std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 9}, {11, 3}, {1, 1}}) {
          BOOST_TEST_CONTEXT(mx::dtype_name(dtype) << ", " << oh << " x " << ow << (align ? ", corners" : ", centres")) {
            const nd::NDArray in = nd::array(x.data(), DType::float64, {2, 3, 5, 7}, ctx, dtype);
            const nd::NDArray y = nd::contrib::BilinearResize2D(in, {.height = oh, .width = ow, .align_corners = align});
            BOOST_TEST(y.dtype() == dtype);
            const double tol = dtype == DType::float64 ? 1e-12 : dtype == DType::float32 ? 1e-6 : 2e-2;
            check_close(y, reference(ndg_test::values(in), 6, 5, 7, oh, ow, align), tol, tol);
          }
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(the_gradient) {
  namespace ag = mx::autograd;
  ndg_test::for_each_context([](mx::Context ctx) {
    // dy = 1 on the 3 x 3 aligned resize of 2 x 2: each corner gets 1 + 0.5 + 0.5 + 0.25.
    nd::NDArray x = nd::array({0, 1, 2, 3}, ctx).reshape({1, 1, 2, 2});
    x.attach_grad();
    {
      auto scope = ag::record();
      nd::contrib::BilinearResize2D(x, {.height = 3, .width = 3}).sum().backward();
    }
    check_close(x.grad(), {2.25, 2.25, 2.25, 2.25});
    // <R x, dy> = <x, R^T dy> for random x and dy, both modes, up- and downsampling.
    for (const DType dtype : {DType::float32, DType::float64}) {
      for (const bool align : {true, false}) {
        for (const std::int64_t size : {3, 13}) {
          BOOST_TEST_CONTEXT(mx::dtype_name(dtype) << ", to " << size << (align ? ", corners" : ", centres")) {
            const Values xv = ndg_test::uniform_values(2 * 2 * 6 * 5, 62), dyv = ndg_test::uniform_values(2 * 2 * size * size, 63);
            nd::NDArray a = nd::array(xv.data(), DType::float64, {2, 2, 6, 5}, ctx, dtype);
            const nd::NDArray dy = nd::array(dyv.data(), DType::float64, {2, 2, size, size}, ctx, dtype);
            a.attach_grad();
            nd::NDArray y;
            {
              auto scope = ag::record();
              y = nd::contrib::BilinearResize2D(a, {.height = size, .width = size, .align_corners = align});
              (y * dy).sum().backward();
            }
            const double forward = (y * dy).sum().astype(DType::float64).asscalar<double>();
            const double adjoint = (a.grad() * a).sum().astype(DType::float64).asscalar<double>();
            BOOST_TEST(adjoint == forward, boost::test_tools::tolerance(dtype == DType::float64 ? 1e-12 : 1e-5));
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_typed_error) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({1, 1, 2, 2}, ctx);
    NDG_CHECK_THROWS_WITH(nd::contrib::BilinearResize2D(nd::ones({2, 2}, ctx), {.height = 3, .width = 3}), mx::ShapeError,
                          "_contrib_BilinearResize2D", "(batch, channels, height, width)", "(2, 2)");
    NDG_CHECK_THROWS_WITH(nd::contrib::BilinearResize2D(x.astype(DType::int32), {.height = 3, .width = 3}), mx::DTypeError,
                          "_contrib_BilinearResize2D", "int32");
    NDG_CHECK_THROWS_WITH(nd::contrib::BilinearResize2D(x, {.height = 0, .width = 3}), mx::ValueError,
                          "_contrib_BilinearResize2D", "height and width must be >= 1");
    NDG_CHECK_THROWS_WITH(nd::contrib::BilinearResize2D(x, {.scale_height = -1}), mx::ValueError,
                          "_contrib_BilinearResize2D", "scale_height");
    NDG_CHECK_THROWS_WITH(nd::contrib::BilinearResize2D(x, {.scale_height = 0.1}), mx::ShapeError,
                          "_contrib_BilinearResize2D", "would be 0 x 1");
  });
}

BOOST_AUTO_TEST_SUITE_END()
