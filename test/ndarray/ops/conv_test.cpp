// nd::Convolution and nd::Pooling: hand-computed small cases (padding, stride, dilation, groups,
// the valid and full conventions, count_include_pad), random 1-, 2- and 3-D cases against direct
// loops written here in double, gradients against finite differences, and the typed errors. Every
// numeric case runs on every context (on a GPU: cuDNN where the build has it).
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;
using ndg_test::values;

namespace {

using Dims = std::vector<std::int64_t>;

nd::NDArray from(const Values& v, const mx::Shape& shape, mx::Context ctx, DType dtype = DType::float32) {
  return nd::array(v.data(), DType::float64, shape, ctx, dtype);
}

// A convolution case, its spatial axes padded to 3 at the front (extent 1, stride 1, pad 0).
struct Case {
  std::int64_t batch, channels, filters, groups;
  Dims in, kernel, stride, dilate, pad;

  int spatial() const { return static_cast<int>(kernel.size()); }
  std::array<std::int64_t, 3> at3(const Dims& v, std::int64_t fill) const {
    std::array<std::int64_t, 3> a{fill, fill, fill};
    for (std::size_t i = 0; i < v.size(); ++i) a[3 - v.size() + i] = v[i];
    return a;
  }
  Dims out() const {
    Dims o;
    for (std::size_t d = 0; d < in.size(); ++d) {
      o.push_back((in[d] + 2 * pad[d] - dilate[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
    }
    return o;
  }
  mx::Shape shape(std::int64_t n, std::int64_t c, const Dims& s) const {
    Dims d{n, c};
    d.insert(d.end(), s.begin(), s.end());
    return mx::Shape(d);
  }
  nd::ConvolutionOptions options(bool no_bias = false) const {
    return {kernel, stride, dilate, pad, filters, groups, no_bias};
  }
};

std::int64_t product(const std::array<std::int64_t, 3>& a) { return a[0] * a[1] * a[2]; }

// Direct cross-correlation in double.
Values reference_conv(const Case& c, const Values& x, const Values& w, const Values& b) {
  const auto in = c.at3(c.in, 1), k = c.at3(c.kernel, 1), s = c.at3(c.stride, 1), dl = c.at3(c.dilate, 1),
             p = c.at3(c.pad, 0), out = c.at3(c.out(), 1);
  const std::int64_t cg = c.channels / c.groups, fg = c.filters / c.groups;
  Values y(static_cast<std::size_t>(c.batch * c.filters * product(out)));
  std::size_t at = 0;
  for (std::int64_t n = 0; n < c.batch; ++n)
    for (std::int64_t f = 0; f < c.filters; ++f)
      for (std::int64_t o0 = 0; o0 < out[0]; ++o0)
        for (std::int64_t o1 = 0; o1 < out[1]; ++o1)
          for (std::int64_t o2 = 0; o2 < out[2]; ++o2) {
            double sum = b.empty() ? 0.0 : b[static_cast<std::size_t>(f)];
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t k0 = 0; k0 < k[0]; ++k0)
                for (std::int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (std::int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const std::int64_t i0 = o0 * s[0] - p[0] + k0 * dl[0], i1 = o1 * s[1] - p[1] + k1 * dl[1],
                                       i2 = o2 * s[2] - p[2] + k2 * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const std::int64_t channel = f / fg * cg + ci;
                    const std::int64_t xi = (((n * c.channels + channel) * in[0] + i0) * in[1] + i1) * in[2] + i2;
                    const std::int64_t wi = (((f * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    sum += x[static_cast<std::size_t>(xi)] * w[static_cast<std::size_t>(wi)];
                  }
            y[at++] = sum;
          }
  return y;
}

// The adjoint of reference_conv (Deconvolution) in double: x (batch, filters, out...) spread back
// over y (batch, channels, in...) through the same taps, plus b (channels,).
Values reference_deconv(const Case& c, const Values& x, const Values& w, const Values& b) {
  const auto in = c.at3(c.in, 1), k = c.at3(c.kernel, 1), s = c.at3(c.stride, 1), dl = c.at3(c.dilate, 1),
             p = c.at3(c.pad, 0), out = c.at3(c.out(), 1);
  const std::int64_t cg = c.channels / c.groups, fg = c.filters / c.groups;
  Values y(static_cast<std::size_t>(c.batch * c.channels * product(in)));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = b[static_cast<std::size_t>(static_cast<std::int64_t>(i) / product(in) % c.channels)];
  std::size_t at = 0;
  for (std::int64_t n = 0; n < c.batch; ++n)
    for (std::int64_t f = 0; f < c.filters; ++f)
      for (std::int64_t o0 = 0; o0 < out[0]; ++o0)
        for (std::int64_t o1 = 0; o1 < out[1]; ++o1)
          for (std::int64_t o2 = 0; o2 < out[2]; ++o2, ++at)
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t k0 = 0; k0 < k[0]; ++k0)
                for (std::int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (std::int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const std::int64_t i0 = o0 * s[0] - p[0] + k0 * dl[0], i1 = o1 * s[1] - p[1] + k1 * dl[1],
                                       i2 = o2 * s[2] - p[2] + k2 * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const std::int64_t channel = f / fg * cg + ci;
                    const std::int64_t yi = (((n * c.channels + channel) * in[0] + i0) * in[1] + i1) * in[2] + i2;
                    const std::int64_t wi = (((f * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    y[static_cast<std::size_t>(yi)] += x[at] * w[static_cast<std::size_t>(wi)];
                  }
  return y;
}

// The convolution cases the random and gradient tests share: 1-, 2- and 3-D; stride, padding,
// dilation, groups and depthwise; a 1×1 kernel (no im2col).
std::vector<Case> cases() {
  return {
      {2, 3, 4, 1, {9}, {3}, {2}, {1}, {1}},                          // 1-D, stride and pad
      {2, 3, 4, 1, {6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},           // 2-D "same"
      {2, 3, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},           // rows of 16-byte packs (bias)
      {1, 4, 6, 2, {7, 6}, {3, 2}, {2, 1}, {2, 1}, {2, 0}},           // groups, dilation, uneven
      {2, 4, 4, 4, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},           // depthwise
      {2, 5, 3, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}},           // pointwise
      {1, 2, 3, 1, {4, 5, 4}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 1, 0}},  // 3-D
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(convolution)

BOOST_AUTO_TEST_CASE(hand_computed_2x2_kernel_with_bias) {
  // x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 0] [0 1]]: each output is x[i][j] + x[i+1][j+1], + 0.5.
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(1, 10, 1, ctx).reshape({1, 1, 3, 3});
    const nd::NDArray w = nd::array({1, 0, 0, 1}, ctx).reshape({1, 1, 2, 2});
    const nd::NDArray b = nd::array({0.5}, ctx);
    const nd::NDArray y = nd::Convolution(x, w, b, {.kernel = {2, 2}, .num_filter = 1});
    BOOST_TEST(y.shape() == (mx::Shape{1, 1, 2, 2}));
    check_close(y, {6.5, 8.5, 12.5, 14.5});
  });
}

BOOST_AUTO_TEST_CASE(padding_stride_and_dilation_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // Ones 3×3 with a 3×3 ones kernel, pad 1, stride 2: each corner window holds 4 of the inputs.
    const nd::NDArray ones = nd::ones({1, 1, 3, 3}, ctx);
    const nd::NDArray k3 = nd::ones({1, 1, 3, 3}, ctx);
    check_close(nd::Convolution(ones, k3, {}, {.kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}, .num_filter = 1,
                                               .no_bias = true}),
                {4, 4, 4, 4});
    // x[r][c] = 5r + c on 5×5; dilation 2 samples rows and columns 0, 2, 4: 3·(0+2+4) + 5·3·(0+2+4).
    const nd::NDArray x = nd::arange(0, 25, 1, ctx).reshape({1, 1, 5, 5});
    const nd::NDArray y = nd::Convolution(x, k3, {}, {.kernel = {3, 3}, .dilate = {2, 2}, .num_filter = 1, .no_bias = true});
    BOOST_TEST(y.shape() == (mx::Shape{1, 1, 1, 1}));
    check_close(y, {108});
  });
}

BOOST_AUTO_TEST_CASE(groups_and_depthwise_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // Four 1×1 channels [1, 2, 3, 4]; two groups of two: out0 = 1·1 + 2·10, out1 = 3·100 + 4·1000.
    const nd::NDArray x = nd::array({1, 2, 3, 4}, ctx).reshape({1, 4, 1, 1});
    const nd::NDArray w = nd::array({1, 10, 100, 1000}, ctx).reshape({2, 2, 1, 1});
    check_close(nd::Convolution(x, w, {}, {.kernel = {1, 1}, .num_filter = 2, .num_group = 2, .no_bias = true}),
                {21, 4300});
    // Depthwise: each channel times its own weight.
    const nd::NDArray dw = nd::array({2, 3, 4, 5}, ctx).reshape({4, 1, 1, 1});
    check_close(nd::Convolution(x, dw, {}, {.kernel = {1, 1}, .num_filter = 4, .num_group = 4, .no_bias = true}),
                {2, 6, 12, 20});
  });
}

BOOST_AUTO_TEST_CASE(random_cases_match_direct_loops) {
  unsigned seed = 1;
  for (const Case& c : cases()) {
    const mx::Shape xs = c.shape(c.batch, c.channels, c.in), ws = c.shape(c.filters, c.channels / c.groups, c.kernel);
    const Values x = ndg_test::uniform_values(static_cast<std::size_t>(xs.numel()), seed++);
    const Values w = ndg_test::uniform_values(static_cast<std::size_t>(ws.numel()), seed++);
    const Values b = ndg_test::uniform_values(static_cast<std::size_t>(c.filters), seed++);
    const Values want = reference_conv(c, x, w, b);
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (DType dt : ndg_test::kFloatDTypes) {
        BOOST_TEST_CONTEXT(c.spatial() << "-D case " << seed << ", " << dt) {
          const nd::NDArray y = nd::Convolution(from(x, xs, ctx, dt), from(w, ws, ctx, dt),
                                                from(b, {c.filters}, ctx, dt), c.options());
          BOOST_TEST(y.shape() == c.shape(c.batch, c.filters, c.out()));
          check_close(y, want, dt == DType::float32 ? 1e-4 : 1e-10, dt == DType::float32 ? 1e-5 : 1e-12);
        }
      }
    });
  }
}

// L = Σ conv(x, w, b) · r is linear in each operand, so central differences are exact up to
// rounding: the gradients of x, w and b against them, element by element, in float64.
BOOST_AUTO_TEST_CASE(gradients_match_finite_differences) {
  unsigned seed = 100;
  for (const Case& c : cases()) {
    const mx::Shape xs = c.shape(c.batch, c.channels, c.in), ws = c.shape(c.filters, c.channels / c.groups, c.kernel);
    const Values x0 = ndg_test::uniform_values(static_cast<std::size_t>(xs.numel()), seed++);
    const Values w0 = ndg_test::uniform_values(static_cast<std::size_t>(ws.numel()), seed++);
    const Values b0 = ndg_test::uniform_values(static_cast<std::size_t>(c.filters), seed++);
    const Values r = ndg_test::uniform_values(static_cast<std::size_t>(c.shape(c.batch, c.filters, c.out()).numel()), seed++);
    const auto loss = [&](const Values& x, const Values& w, const Values& b) {
      const Values y = reference_conv(c, x, w, b);
      double sum = 0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * r[i];
      return sum;
    };
    // d loss / d v[i] for each element of one operand.
    const auto numeric = [&](int which) {
      Values x = x0, w = w0, b = b0;
      Values& v = which == 0 ? x : which == 1 ? w : b;
      Values grad(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + 0.5;
        const double up = loss(x, w, b);
        v[i] = keep - 0.5;
        grad[i] = up - loss(x, w, b);
        v[i] = keep;
      }
      return grad;
    };
    const Values gx = numeric(0), gw = numeric(1), gb = numeric(2);
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(c.spatial() << "-D case " << seed) {
        nd::NDArray x = from(x0, xs, ctx, DType::float64), w = from(w0, ws, ctx, DType::float64),
                    b = from(b0, {c.filters}, ctx, DType::float64);
        x.attach_grad();
        w.attach_grad();
        b.attach_grad();
        {
          auto scope = ag::record();
          const nd::NDArray y = nd::Convolution(x, w, b, c.options());
          (y * from(r, y.shape(), ctx, DType::float64)).sum().backward();
        }
        check_close(x.grad(), gx, 1e-9, 1e-10);
        check_close(w.grad(), gw, 1e-9, 1e-10);
        check_close(b.grad(), gb, 1e-9, 1e-10);
      }
    });
  }
}

// act_type (an ndgluon extension) equals the activation applied afterwards, forward and backward.
BOOST_AUTO_TEST_CASE(fused_activation_matches_the_activation_afterwards) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const bool bias : {true, false}) {
      BOOST_TEST_CONTEXT((bias ? "with bias" : "no bias")) {
        nd::NDArray x = nd::random::uniform(-1, 1, {2, 3, 6, 5}, ctx), w = nd::random::uniform(-1, 1, {4, 3, 3, 3}, ctx);
        const nd::NDArray b = nd::random::uniform(-1, 1, {4}, ctx), r = nd::random::uniform(-1, 1, {2, 4, 4, 3}, ctx);
        x.attach_grad();
        nd::NDArray fused, plain;
        {
          auto scope = ag::record();
          fused = nd::Convolution(x, w, b, {.kernel = {3, 3}, .num_filter = 4, .no_bias = !bias, .act_type = "tanh"});
          (fused * r).sum().backward();
        }
        const std::vector<double> fused_grad = x.grad().asvector<double>();
        {
          auto scope = ag::record();
          plain = nd::tanh(nd::Convolution(x, w, b, {.kernel = {3, 3}, .num_filter = 4, .no_bias = !bias}));
          (plain * r).sum().backward();
        }
        check_close(fused, plain.asvector<double>(), 1e-5, 1e-6);
        check_close(x.grad(), fused_grad, 1e-5, 1e-6);
      }
    }
    NDG_CHECK_THROWS_WITH(nd::Convolution(nd::ones({1, 1, 3, 3}, ctx), nd::ones({1, 1, 1, 1}, ctx), {},
                                          {.kernel = {1, 1}, .num_filter = 1, .no_bias = true, .act_type = "gelu"}),
                          mx::ValueError, "Convolution", "gelu");
  });
}

// Channels last (NWC, NHWC, NDHWC): the same values and gradients as channels first on the
// permuted arrays, with groups, stride, padding, bias and a fused activation; on a GPU with cuDNN
// through its channels-last engines, in float32 and in bfloat16.
BOOST_AUTO_TEST_CASE(channels_last_layouts_match_channels_first) {
  struct LayoutCase {
    const char* layout;
    Dims x, w, kernel, stride, pad;
    std::int64_t filters, groups;
  };
  const LayoutCase cases[] = {{"NWC", {2, 4, 9}, {6, 2, 3}, {3}, {2}, {1}, 6, 2},
                              {"NHWC", {2, 4, 7, 6}, {6, 4, 3, 3}, {3, 3}, {1, 1}, {1, 1}, 6, 1},
                              {"NHWC", {1, 6, 5, 5}, {6, 1, 3, 3}, {3, 3}, {2, 2}, {0, 1}, 6, 6},
                              {"NDHWC", {1, 2, 4, 5, 4}, {3, 2, 2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 1, 0}, 3, 1}};
  // Channels first (N, C, s...) -> channels last (N, s..., C): the axes, and back.
  const auto last_axes = [](std::size_t ndim) {
    std::vector<int> a{0};
    for (int i = 2; i < static_cast<int>(ndim); ++i) a.push_back(i);
    a.push_back(1);
    return a;
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::bfloat16}) {
      for (const LayoutCase& c : cases) {
        BOOST_TEST_CONTEXT(c.layout << " x" << mx::Shape(c.x).tuple_str() << " in " << mx::dtype_name(dt)) {
          const auto last = last_axes(c.x.size());
          const auto to_last = [&](const nd::NDArray& a) { return a.transpose(last).copy(); };
          nd::NDArray x = nd::random::uniform(-1, 1, mx::Shape(c.x), ctx).astype(dt);
          nd::NDArray w = nd::random::uniform(-1, 1, mx::Shape(c.w), ctx).astype(dt);
          nd::NDArray b = nd::random::uniform(-1, 1, {c.filters}, ctx).astype(dt);
          nd::NDArray xl = to_last(x), wl = to_last(w), bl = b.copy();
          for (nd::NDArray* v : {&x, &w, &b, &xl, &wl, &bl}) v->attach_grad();
          nd::ConvolutionOptions o{.kernel = c.kernel, .stride = c.stride, .pad = c.pad, .num_filter = c.filters,
                                   .num_group = c.groups, .act_type = "tanh"};
          nd::NDArray first, channels_last;
          {
            auto scope = ag::record();
            first = nd::Convolution(x, w, b, o);
            nd::sum(first * first).backward();
          }
          o.layout = c.layout;
          {
            auto scope = ag::record();
            channels_last = nd::Convolution(xl, wl, bl, o);
            nd::sum(channels_last * channels_last).backward();
          }
          const double tol = dt == DType::float32 ? 1e-5 : 2e-2;
          BOOST_TEST(channels_last.shape() == to_last(first).shape());
          check_close(channels_last, values(to_last(first)), tol, tol);
          check_close(xl.grad(), values(to_last(x.grad())), tol, tol);
          check_close(wl.grad(), values(to_last(w.grad())), tol, tol);
          check_close(bl.grad(), values(b.grad()), tol, tol);
        }
      }
    }
    // The layout must fit the kernel's dimensions; channels-last shapes are checked as such.
    const nd::NDArray x = nd::ones({2, 5, 5, 4}, ctx), w = nd::ones({6, 3, 3, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, {}, {.kernel = {3, 3}, .num_filter = 6, .no_bias = true, .layout = "NWC"}),
                          mx::ValueError, "Convolution", "layout \"NWC\"", "\"NCHW\" or \"NHWC\"");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, nd::ones({6, 4, 3, 3}, ctx), {},
                                          {.kernel = {3, 3}, .num_filter = 6, .no_bias = true, .layout = "NHWC"}),
                          mx::ShapeError, "weight", "expected (6, 3, 3, 4)");
    NDG_CHECK_THROWS_WITH(nd::Convolution(nd::ones({5, 5, 4}, ctx), w, {},
                                          {.kernel = {3, 3}, .num_filter = 6, .no_bias = true, .layout = "NHWC"}),
                          mx::ShapeError, "(batch, 2 spatial axes, channels)");
  });
}

BOOST_AUTO_TEST_CASE(bad_attributes_and_shapes_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 4, 5, 5}, ctx), w = nd::ones({6, 4, 3, 3}, ctx), b = nd::zeros({6}, ctx);
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {3, 3}, .stride = {0, 1}, .num_filter = 6}),
                          mx::ValueError, "Convolution", "stride (0, 1)", "positive");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {3, 3}, .pad = {-1, 0}, .num_filter = 6}),
                          mx::ValueError, "Convolution", "pad (-1, 0)", "non-negative");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {3, 3}, .stride = {1}, .num_filter = 6}),
                          mx::ValueError, "stride (1,)", "kernel (3, 3)");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {}, .num_filter = 6}), mx::ValueError, "1 to 3");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, nd::ones({6, 4, 7, 7}, ctx), b, {.kernel = {7, 7}, .num_filter = 6}),
                          mx::ShapeError, "Convolution", "(2, 4, 5, 5)", "larger than the padded input");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {3, 3}, .num_filter = 6, .num_group = 3}),
                          mx::ValueError, "num_group 3", "4 channels");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, nd::ones({6, 3, 3, 3}, ctx), b, {.kernel = {3, 3}, .num_filter = 6}),
                          mx::ShapeError, "weight", "(6, 3, 3, 3)", "expected (6, 4, 3, 3)");
    NDG_CHECK_THROWS_WITH(nd::Convolution(nd::ones({4, 5, 5}, ctx), w, b, {.kernel = {3, 3}, .num_filter = 6}),
                          mx::ShapeError, "(batch, channels, 2 spatial axes)", "(4, 5, 5)");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, nd::zeros({5}, ctx), {.kernel = {3, 3}, .num_filter = 6}),
                          mx::ShapeError, "bias", "expected (6,)");
    NDG_CHECK_THROWS_WITH(nd::Convolution(x, w, b, {.kernel = {3, 3}, .num_filter = 0}), mx::ValueError,
                          "num_filter must be positive");
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(deconvolution)

// Deconvolution(x, w) is the adjoint of the Convolution case c read backwards: data (batch,
// filters, out...) to (batch, channels, in...), with adj making up what the floor of c's output
// extent dropped.
struct Adjoint {
  Case c;
  Dims adj() const {
    Dims a;
    const Dims o = c.out();
    for (std::size_t d = 0; d < c.in.size(); ++d) {
      a.push_back(c.in[d] - ((o[d] - 1) * c.stride[d] - 2 * c.pad[d] + c.dilate[d] * (c.kernel[d] - 1) + 1));
    }
    return a;
  }
  nd::DeconvolutionOptions options(bool no_bias) const {
    return {c.kernel, c.stride, c.dilate, c.pad, adj(), {}, c.channels, c.groups, no_bias};
  }
  // y = Deconvolution(x, w) + b in double, checked against the adjoint identity below.
  Values reference(const Values& x, const Values& w, const Values& b) const { return reference_deconv(c, x, w, b); }
};

BOOST_AUTO_TEST_CASE(hand_computed_1d) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = from({1, 2}, {1, 1, 2}, ctx), w = from({1, 1, 1}, {1, 1, 3}, ctx);
    const nd::NDArray b = from({0.5}, {1}, ctx);
    // Each input spreads over a kernel-wide window, windows stride apart.
    check_close(nd::Deconvolution(x, w, b, {.kernel = {3}, .stride = {2}, .num_filter = 1, .no_bias = false}),
                {1.5, 1.5, 3.5, 2.5, 2.5}, 1e-6, 1e-6);
    check_close(nd::Deconvolution(x, w, {}, {.kernel = {3}, .stride = {2}, .pad = {1}, .num_filter = 1}), {1, 3, 2},
                1e-6, 1e-6);
    check_close(nd::Deconvolution(x, w, {}, {.kernel = {3}, .stride = {2}, .adj = {1}, .num_filter = 1}),
                {1, 1, 3, 2, 2, 0}, 1e-6, 1e-6);
    check_close(nd::Deconvolution(x, w, {}, {.kernel = {3}, .stride = {2}, .dilate = {2}, .num_filter = 1}),
                {1, 0, 3, 0, 3, 0, 2}, 1e-6, 1e-6);
    // target_shape 4: MXNet's rule gives pad 1, adj 1 (total padding 1).
    const nd::NDArray t = nd::Deconvolution(x, w, {}, {.kernel = {3}, .stride = {2}, .target_shape = {4}, .num_filter = 1});
    BOOST_TEST(t.shape() == (mx::Shape{1, 1, 4}));
    check_close(t, {1, 3, 2, 2}, 1e-6, 1e-6);
  });
}

// Every convolution case read backwards, against the adjoint computed here in double; the
// gradients of Σ y·r: x's is Convolution(r, w), w's and b's exact differences (y is linear in each).
BOOST_AUTO_TEST_CASE(adjoint_of_every_convolution_case_and_gradients) {
  unsigned seed = 700;
  for (const Case& c : cases()) {
    const Adjoint a{c};
    const mx::Shape xs = c.shape(c.batch, c.filters, c.out()), ws = c.shape(c.filters, c.channels / c.groups, c.kernel);
    const mx::Shape ys = c.shape(c.batch, c.channels, c.in);
    const Values x0 = ndg_test::uniform_values(static_cast<std::size_t>(xs.numel()), seed++);
    const Values w0 = ndg_test::uniform_values(static_cast<std::size_t>(ws.numel()), seed++);
    const Values b0 = ndg_test::uniform_values(static_cast<std::size_t>(c.channels), seed++);
    const Values r = ndg_test::uniform_values(static_cast<std::size_t>(ys.numel()), seed++);
    const Values want = a.reference(x0, w0, b0);
    {  // the reference is conv's adjoint: <Convolution(u, w), x> = <u, Deconvolution(x, w)> (no bias)
      const Values u = ndg_test::uniform_values(want.size(), seed + 1000);
      const Values cu = reference_conv(c, u, w0, Values(static_cast<std::size_t>(c.filters), 0.0));
      const Values dx = a.reference(x0, w0, Values(static_cast<std::size_t>(c.channels), 0.0));
      double lhs = 0, rhs = 0;
      for (std::size_t i = 0; i < cu.size(); ++i) lhs += cu[i] * x0[i];
      for (std::size_t i = 0; i < u.size(); ++i) rhs += u[i] * dx[i];
      BOOST_TEST(lhs == rhs, boost::test_tools::tolerance(1e-12));
    }
    const Values gx = reference_conv(c, r, w0, Values(static_cast<std::size_t>(c.filters), 0.0));
    const auto loss = [&](const Values& w, const Values& b) {
      const Values y = a.reference(x0, w, b);
      double sum = 0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * r[i];
      return sum;
    };
    const auto numeric = [&](bool of_w) {
      Values w = w0, b = b0;
      Values& v = of_w ? w : b;
      Values grad(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + 0.5;
        const double up = loss(w, b);
        v[i] = keep - 0.5;
        grad[i] = up - loss(w, b);
        v[i] = keep;
      }
      return grad;
    };
    const Values gw = numeric(true), gb = numeric(false);
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (const DType dt : ndg_test::kFloatDTypes) {
        BOOST_TEST_CONTEXT(c.spatial() << "-D case " << seed << ", " << dt) {
          nd::NDArray x = from(x0, xs, ctx, dt), w = from(w0, ws, ctx, dt), b = from(b0, {c.channels}, ctx, dt);
          x.attach_grad();
          w.attach_grad();
          b.attach_grad();
          nd::NDArray y;
          {
            auto scope = ag::record();
            y = nd::Deconvolution(x, w, b, a.options(false));
            (y * from(r, y.shape(), ctx, dt)).sum().backward();
          }
          BOOST_TEST(y.shape() == ys);
          const double tol = dt == DType::float32 ? 1e-5 : 1e-10;
          check_close(y, want, tol, tol);
          check_close(x.grad(), gx, tol, tol);
          check_close(w.grad(), gw, tol, tol);
          check_close(b.grad(), gb, tol, tol);
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(bad_attributes_and_shapes_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 4, 5, 5}, ctx), w = nd::ones({4, 3, 3, 3}, ctx), b = nd::zeros({3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, b, {.kernel = {3, 3}, .stride = {2, 2}, .adj = {2, 0}, .num_filter = 3}),
                          mx::ValueError, "Deconvolution", "adj (2, 0)", "smaller than stride (2, 2)");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, b, {.kernel = {3, 3}, .stride = {0, 1}, .num_filter = 3}),
                          mx::ValueError, "Deconvolution", "stride (0, 1)", "positive");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, nd::ones({4, 2, 3, 3}, ctx), b, {.kernel = {3, 3}, .num_filter = 3}),
                          mx::ShapeError, "Deconvolution", "weight", "(4, 2, 3, 3)", "expected (4, 3, 3, 3)");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, b, {.kernel = {3, 3}, .num_filter = 3, .num_group = 2}),
                          mx::ValueError, "Deconvolution", "num_group 2", "num_filter 3");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(nd::ones({4, 5, 5}, ctx), w, b, {.kernel = {3, 3}, .num_filter = 3}),
                          mx::ShapeError, "Deconvolution", "(batch, channels, 2 spatial axes)", "(4, 5, 5)");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, nd::zeros({4}, ctx), {.kernel = {3, 3}, .num_filter = 3, .no_bias = false}),
                          mx::ShapeError, "Deconvolution", "bias (4,)", "expected (3,)");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, b, {.kernel = {3, 3}, .pad = {4, 4}, .num_filter = 3}),
                          mx::ShapeError, "Deconvolution", "(2, 4, 5, 5)", "no output");
    NDG_CHECK_THROWS_WITH(nd::Deconvolution(x, w, b, {.kernel = {3, 3}, .target_shape = {20, 5}, .num_filter = 3}),
                          mx::ShapeError, "Deconvolution", "target_shape (20, 5)", "larger");
  });
}

BOOST_AUTO_TEST_SUITE_END()


namespace {

// Direct pooling in double over (planes, in...) with the window along the padded axes.
struct PoolCase {
  std::int64_t planes;
  Dims in, kernel, stride, pad;
  bool max, full, include_pad;

  Dims out() const {
    Dims o;
    for (std::size_t d = 0; d < in.size(); ++d) {
      const std::int64_t span = in[d] + 2 * pad[d] - kernel[d];
      std::int64_t steps = full ? (span + stride[d] - 1) / stride[d] : span / stride[d];
      if (full && steps * stride[d] >= in[d] + pad[d]) --steps;  // no window starts in the right padding
      o.push_back(steps + 1);
    }
    return o;
  }
  nd::PoolingOptions options() const {
    return {kernel, max ? "max" : "avg", false, full ? "full" : "valid", stride, pad, include_pad};
  }
};

Values reference_pool(const PoolCase& c, const Values& x) {
  const std::size_t n = c.in.size();
  const Dims out = c.out();
  std::int64_t in_size = 1, out_size = 1;
  for (std::size_t d = 0; d < n; ++d) {
    in_size *= c.in[d];
    out_size *= out[d];
  }
  Values y;
  for (std::int64_t plane = 0; plane < c.planes; ++plane) {
    for (std::int64_t o = 0; o < out_size; ++o) {
      std::vector<std::int64_t> lo(n), hi(n), padded(n);
      std::int64_t rest = o;
      for (std::size_t d = n; d-- > 0;) {
        const std::int64_t od = rest % out[d];
        rest /= out[d];
        const std::int64_t start = od * c.stride[d] - c.pad[d];
        const std::int64_t stop = std::min(start + c.kernel[d], c.in[d] + c.pad[d]);
        padded[d] = stop - start;
        lo[d] = std::max<std::int64_t>(start, 0);
        hi[d] = std::min(stop, c.in[d]);
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      std::int64_t count = 0, divisor = 1;
      for (std::size_t d = 0; d < n; ++d) divisor *= c.include_pad ? padded[d] : std::max<std::int64_t>(hi[d] - lo[d], 0);
      for (std::int64_t i = 0; i < in_size; ++i) {
        std::int64_t r = i;
        bool inside = true;
        for (std::size_t d = n; d-- > 0;) {
          const std::int64_t id = r % c.in[d];
          r /= c.in[d];
          inside = inside && id >= lo[d] && id < hi[d];
        }
        if (!inside) continue;
        const double v = x[static_cast<std::size_t>(plane * in_size + i)];
        best = std::max(best, v);
        sum += v;
        ++count;
      }
      y.push_back(c.max ? best : divisor > 0 ? sum / static_cast<double>(divisor) : 0.0);
    }
  }
  return y;
}

std::vector<PoolCase> pool_cases() {
  return {
      {6, {9}, {3}, {2}, {1}, true, false, true},              // 1-D max
      {6, {9}, {2}, {2}, {0}, false, true, true},              // 1-D avg, full
      {4, {7, 6}, {3, 3}, {2, 2}, {1, 1}, false, false, false},  // avg without the padding
      {4, {7, 6}, {3, 3}, {2, 2}, {1, 1}, false, true, true},    // avg with it, full
      {4, {7, 6}, {2, 3}, {2, 1}, {1, 1}, true, true, true},     // max, full, uneven
      {2, {4, 5, 4}, {2, 2, 3}, {2, 2, 1}, {0, 1, 1}, true, false, true},   // 3-D max
      {2, {4, 5, 4}, {2, 3, 2}, {1, 2, 2}, {1, 0, 1}, false, false, false},  // 3-D avg
      // Disjoint windows (backward a thread per window): tiling, leaving a row out, with padding.
      {4, {6, 8}, {2, 2}, {2, 2}, {0, 0}, true, false, false},   // max, the windows tile the input
      {4, {7, 6}, {2, 2}, {2, 2}, {0, 0}, true, false, true},    // max, the last row in no window
      {4, {7, 6}, {2, 2}, {3, 2}, {1, 0}, false, false, true},   // avg, gaps and padding
      {4, {7, 6}, {2, 2}, {2, 2}, {1, 1}, false, true, false},   // avg, full, padding
  };
}

mx::Shape pool_shape(const PoolCase& c, const Dims& spatial) {
  Dims d{2, c.planes / 2};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return mx::Shape(d);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pooling)

BOOST_AUTO_TEST_CASE(max_2x2_and_its_gradient_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::arange(0, 16, 1, ctx).reshape({1, 1, 4, 4});
    x.attach_grad();
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = nd::Pooling(x, {.kernel = {2, 2}, .stride = {2, 2}});
      (y * nd::array({1, 2, 3, 4}, ctx).reshape({1, 1, 2, 2})).sum().backward();
    }
    check_close(y, {5, 7, 13, 15});
    check_close(x.grad(), {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
  });
}

BOOST_AUTO_TEST_CASE(conventions_and_count_include_pad_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 3, 4, 5}, ctx).reshape({1, 1, 5});
    // Kernel 2, stride 2 over 5: "valid" drops the last element, "full" gives it a window of its own.
    check_close(nd::Pooling(x, {.kernel = {2}, .stride = {2}}), {2, 4});
    check_close(nd::Pooling(x, {.kernel = {2}, .pooling_convention = "full", .stride = {2}}), {2, 4, 5});
    check_close(nd::Pooling(x, {.kernel = {2}, .pool_type = "avg", .pooling_convention = "full", .stride = {2}}),
                {1.5, 3.5, 5});
    // Ones 2×2, 3×3 windows with pad 1: 4 inputs in 9 padded positions, or 4 of 4.
    const nd::NDArray ones = nd::ones({1, 1, 2, 2}, ctx);
    check_close(nd::Pooling(ones, {.kernel = {3, 3}, .pool_type = "avg", .pad = {1, 1}}), Values(4, 4.0 / 9));
    check_close(nd::Pooling(ones, {.kernel = {3, 3}, .pool_type = "avg", .pad = {1, 1}, .count_include_pad = false}),
                Values(4, 1.0));
  });
}

BOOST_AUTO_TEST_CASE(global_pooling) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(0, 24, 1, ctx).reshape({1, 2, 3, 4});
    const nd::NDArray mx_ = nd::Pooling(x, {.global_pool = true});
    BOOST_TEST(mx_.shape() == (mx::Shape{1, 2, 1, 1}));
    check_close(mx_, {11, 23});
    check_close(nd::Pooling(x, {.pool_type = "avg", .global_pool = true}), {5.5, 17.5});
    check_close(nd::Pooling(x.reshape({1, 2, 12}), {.pool_type = "avg", .global_pool = true}), {5.5, 17.5});
  });
}

BOOST_AUTO_TEST_CASE(random_cases_and_gradients_match_direct_loops) {
  unsigned seed = 300;
  for (const PoolCase& c : pool_cases()) {
    const mx::Shape xs = pool_shape(c, c.in);
    const Values x = ndg_test::uniform_values(static_cast<std::size_t>(xs.numel()), seed++);
    const Values want = reference_pool(c, x);
    const Values r = ndg_test::uniform_values(want.size(), seed++);
    // The gradient of Σ pool(x) · r: exact central differences for avg (linear); for max, a step
    // of 1e-6 keeps every window's maximum where it is (the draws are far further apart).
    const double h = c.max ? 1e-6 : 0.5;
    Values grad(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      Values up = x, down = x;
      up[i] += h;
      down[i] -= h;
      const Values yu = reference_pool(c, up), yd = reference_pool(c, down);
      double diff = 0;
      for (std::size_t j = 0; j < yu.size(); ++j) diff += (yu[j] - yd[j]) * r[j];
      grad[i] = diff / (2 * h);
    }
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (DType dt : ndg_test::kFloatDTypes) {
        BOOST_TEST_CONTEXT(c.in.size() << "-D " << (c.max ? "max" : "avg") << " case " << seed << ", " << dt) {
          nd::NDArray xa = from(x, xs, ctx, dt);
          xa.attach_grad();
          nd::NDArray y;
          {
            auto scope = ag::record();
            y = nd::Pooling(xa, c.options());
            (y * from(r, y.shape(), ctx, dt)).sum().backward();
          }
          BOOST_TEST(y.shape() == pool_shape(c, c.out()));
          check_close(y, want, 1e-6, 1e-6);
          check_close(xa.grad(), grad, dt == DType::float32 ? 1e-5 : 1e-8, 1e-6);
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(bad_attributes_and_shapes_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3, 4, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {2, 2}, .stride = {0, 2}}), mx::ValueError, "Pooling",
                          "stride (0, 2)");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {2, 2}, .pad = {-1, 0}}), mx::ValueError, "pad (-1, 0)");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {3, 3}, .pad = {3, 3}}), mx::ValueError, "smaller than the kernel");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {5, 5}}), mx::ShapeError, "Pooling", "kernel (5, 5)",
                          "(2, 3, 4, 4)");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {2, 2, 2}}), mx::ShapeError, "3 spatial axes", "(2, 3, 4, 4)");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {2, 2}, .pool_type = "sum"}), mx::ValueError, "pool_type \"sum\"");
    NDG_CHECK_THROWS_WITH(nd::Pooling(x, {.kernel = {2, 2}, .pooling_convention = "same"}), mx::ValueError,
                          "pooling_convention \"same\"");
    NDG_CHECK_THROWS_WITH(nd::Pooling(nd::ones({3, 4}, ctx), {.global_pool = true}), mx::ShapeError,
                          "1 to 3 spatial axes");
  });
}

BOOST_AUTO_TEST_SUITE_END()
