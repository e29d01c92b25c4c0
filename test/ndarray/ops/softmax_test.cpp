// softmax, log_softmax and one_hot: values against hand-computed ones, and the gradients of
// softmax and log_softmax (the registered _backward_softmax / _backward_log_softmax) against
// hand-computed values and central differences of a double-precision reference; SoftmaxOutput's
// softmax and its cross-entropy gradient (_backward_SoftmaxOutput) by hand for each normalization,
// ignore_label and grad_scale; all on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::check_close;
using ndg_test::dtype_of;
using ndg_test::Values;
using ndg_test::values;
namespace ag = mx::autograd;

namespace {

// softmax (or log_softmax) of a row-major array of extents dims along axis, in double.
Values softmax_reference(const Values& x, const std::vector<std::int64_t>& dims, int axis, bool log) {
  std::int64_t outer = 1, length = dims[static_cast<std::size_t>(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  Values y(x.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t k) { return static_cast<std::size_t>((o * length + k) * inner + i); };
      double max = x[at(0)], sum = 0;
      for (std::int64_t k = 1; k < length; ++k) max = std::max(max, x[at(k)]);
      for (std::int64_t k = 0; k < length; ++k) sum += std::exp(x[at(k)] - max);
      for (std::int64_t k = 0; k < length; ++k) {
        y[at(k)] = log ? x[at(k)] - max - std::log(sum) : std::exp(x[at(k)] - max) / sum;
      }
    }
  }
  return y;
}

// d/dx of sum(f(x) * w), f the reference, by central differences (step 1e-6, in double).
Values finite_difference_gradient(Values x, const Values& w, const std::vector<std::int64_t>& dims, int axis,
                                  bool log) {
  const auto objective = [&] {
    const Values y = softmax_reference(x, dims, axis, log);
    double s = 0;
    for (std::size_t k = 0; k < y.size(); ++k) s += y[k] * w[k];
    return s;
  };
  constexpr double step = 1e-6;
  Values grad(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double x0 = x[j];
    x[j] = x0 + step;
    const double up = objective();
    x[j] = x0 - step;
    const double down = objective();
    x[j] = x0;
    grad[j] = (up - down) / (2 * step);
  }
  return grad;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(softmax)

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_of_a_row) {
  // softmax([0, ln 2, ln 5]) = [1, 2, 5] / 8.
  const double l2 = std::log(2.0), l5 = std::log(5.0);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array({{0.0, l2, l5}, {l5, l2, 0.0}}, ctx);
    check_close(nd::softmax(x), {0.125, 0.25, 0.625, 0.625, 0.25, 0.125});
    check_close(nd::log_softmax(x), {std::log(0.125), std::log(0.25), std::log(0.625), std::log(0.625),
                                     std::log(0.25), std::log(0.125)});
    // Along axis 0, each column of two values: [0, ln 5] -> [1/6, 5/6], [ln 2, ln 2] -> [1/2, 1/2].
    check_close(nd::softmax(x, 0), {1.0 / 6, 0.5, 5.0 / 6, 5.0 / 6, 0.5, 1.0 / 6});
  });
}

BOOST_AUTO_TEST_CASE(gradients_of_a_sum_by_hand) {
  // x = [0, ln 2, ln 5] per row: softmax [1, 2, 5] / 8. d/dx sum(log_softmax(x)) = 1 - 3 softmax(x);
  // sum(softmax(x)) is 1 whatever x, so its gradient is 0.
  const double l2 = std::log(2.0), l5 = std::log(5.0);
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dtype)) {
        nd::NDArray x = nd::array({{0.0, l2, l5}, {l5, l2, 0.0}}, ctx, dtype);
        x.attach_grad();
        {
          auto scope = ag::record();
          nd::log_softmax(x).sum().backward();
        }
        BOOST_TEST(dtype_of(x.grad()) == mx::dtype_name(dtype));
        check_close(x.grad(), {0.625, 0.25, -0.875, -0.875, 0.25, 0.625});
        {
          auto scope = ag::record();
          nd::softmax(x).sum().backward();
        }
        check_close(x.grad(), {0, 0, 0, 0, 0, 0}, 0, 1e-6);
        // With a head gradient g on softmax: y * (g - sum(g * y)). g = [1, 0, 0]: y0 (1 - y0), -y0 y_k.
        {
          auto scope = ag::record();
          nd::softmax(x).backward(nd::array({{1, 0, 0}, {1, 0, 0}}, ctx, dtype));
        }
        check_close(x.grad(), {0.125 * 0.875, -0.125 * 0.25, -0.125 * 0.625, 0.625 * 0.375, -0.625 * 0.25,
                               -0.625 * 0.125});
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(gradients_against_finite_differences) {
  // Rows along the last axis (one warp per row on a GPU, rows longer than a warp too), and other
  // axes (one thread per line).
  struct Case {
    std::vector<std::int64_t> dims;
    int axis;
  };
  const std::vector<Case> cases{{{3, 5}, -1}, {{2, 70}, 1}, {{4, 3}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{1, 1}, 0}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const Case& c : cases) {
      for (DType dtype : ndg_test::kFloatDTypes) {
        for (bool log : {false, true}) {
          BOOST_TEST_CONTEXT((log ? "log_softmax " : "softmax ") << mx::Shape(c.dims) << " axis " << c.axis << " "
                                                                  << mx::dtype_name(dtype)) {
            const mx::Shape shape(c.dims);
            const auto n = static_cast<std::size_t>(shape.numel());
            Values start = ndg_test::uniform_values(n, 7);
            for (double& v : start) v *= 3;
            const Values w = ndg_test::uniform_values(n, 8);
            nd::NDArray x = nd::array(start, shape, ctx, dtype);
            x.attach_grad();
            {
              auto scope = ag::record();
              const nd::NDArray y = log ? nd::log_softmax(x, c.axis) : nd::softmax(x, c.axis);
              (y * nd::array(w, shape, ctx, dtype)).sum().backward();
            }
            // The reference starts from x as stored (float32 rounds it).
            const int axis = c.axis < 0 ? c.axis + shape.ndim() : c.axis;
            const Values want = finite_difference_gradient(values(x), w, c.dims, axis, log);
            if (dtype == DType::float64) check_close(x.grad(), want, 1e-6, 1e-8);
            else check_close(x.grad(), want, 1e-4, 1e-5);
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(one_hot_in_every_index_and_output_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType index_dtype : ndg_test::kAllDTypes) {
      for (DType out : ndg_test::kAllDTypes) {
        BOOST_TEST_CONTEXT("indices " << mx::dtype_name(index_dtype) << ", output " << mx::dtype_name(out)) {
          const nd::NDArray y = nd::one_hot(nd::array({2, 0, 1}, ctx, index_dtype), 3, out);
          BOOST_TEST(y.shape() == (mx::Shape{3, 3}));
          BOOST_TEST(dtype_of(y) == mx::dtype_name(out));
          BOOST_TEST(values(y) == (Values{0, 0, 1, 1, 0, 0, 0, 1, 0}), tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(one_hot_of_an_index_out_of_range_is_a_zero_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // As MXNet: indices outside [0, depth) select nothing. 256 must not wrap to 0 in a uint8 output.
    const nd::NDArray y = nd::one_hot(nd::array({256, -1, 3, 1}, ctx), 4, DType::uint8);
    BOOST_TEST(values(y) == (Values{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}), tt::per_element());
    // uint8 indices with more classes than uint8 counts: class 256 + k is not class k.
    const nd::NDArray wide = nd::one_hot(nd::array({0, 255}, ctx, DType::uint8), 300, DType::uint8);
    const Values got = values(wide);
    BOOST_TEST(got.size() == 600u);
    Values want(600, 0.0);
    want[0] = 1;
    want[300 + 255] = 1;
    BOOST_TEST(got == want, tt::per_element());
  });
}

// --- SoftmaxOutput ---------------------------------------------------------------------------------

namespace {

// Rows [0, ln 2, ln 5], [ln 5, ln 2, 0], [0, 0, 0]: softmax [1, 2, 5] / 8, [5, 2, 1] / 8, [1, 1, 1] / 3.
const Values kProbabilities{0.125, 0.25, 0.625, 0.625, 0.25, 0.125, 1.0 / 3, 1.0 / 3, 1.0 / 3};

nd::NDArray three_rows(mx::Context ctx, DType dtype) {
  const double l2 = std::log(2.0), l5 = std::log(5.0);
  return nd::array({{0.0, l2, l5}, {l5, l2, 0.0}, {0.0, 0.0, 0.0}}, ctx, dtype);
}

// (softmax - one_hot(label)) * scale per row; a row in `zero` gets 0.
Values cross_entropy_gradient(const std::vector<int>& labels, const std::vector<double>& scale) {
  Values g(kProbabilities);
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t k = 0; k < 3; ++k) {
      if (labels[r] == static_cast<int>(k)) g[r * 3 + k] -= 1;
      g[r * 3 + k] *= scale[r];
    }
  }
  return g;
}

}  // namespace

BOOST_AUTO_TEST_CASE(softmax_output_is_the_softmax_of_each_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray x = three_rows(ctx, dtype);
        const nd::NDArray y = nd::SoftmaxOutput(x);  // no label: the forward needs none
        BOOST_TEST(y.shape() == (mx::Shape{3, 3}));
        BOOST_TEST(dtype_of(y) == mx::dtype_name(dtype));
        check_close(y, kProbabilities);
        check_close(nd::SoftmaxOutput(x, nd::array({2, 0, 1}, ctx, dtype), {.normalization = "valid"}), kProbabilities);
        // preserve_shape: (..., classes) of any rank, label (...).
        const nd::NDArray x3 = x.reshape({1, 3, 3});
        const nd::NDArray y3 = nd::SoftmaxOutput(x3, nd::array({{2, 0, 1}}, ctx, dtype), {.preserve_shape = true});
        BOOST_TEST(y3.shape() == (mx::Shape{1, 3, 3}));
        check_close(y3, kProbabilities);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_output_gradient_by_hand_for_each_normalization) {
  // Labels [2, 0, 1]; ignore_label 0 names row 1's label.
  struct Case {
    const char* what;
    nd::SoftmaxOutputOptions options;
    std::vector<int> labels;  // -1: no class subtracted
    std::vector<double> scale;
  };
  const double third = 1.0 / 3;
  const std::vector<Case> cases{
      {"null", {}, {2, 0, 1}, {1, 1, 1}},
      {"null, grad_scale 2", {.grad_scale = 2}, {2, 0, 1}, {2, 2, 2}},
      {"batch", {.normalization = "batch"}, {2, 0, 1}, {third, third, third}},
      {"valid, no label ignored", {.normalization = "valid"}, {2, 0, 1}, {third, third, third}},
      // MXNet's "valid" counts the labels other than ignore_label, whatever use_ignore says.
      {"valid, ignore_label 0 without use_ignore", {.ignore_label = 0, .normalization = "valid"}, {2, 0, 1}, {0.5, 0.5, 0.5}},
      {"valid, ignore_label 0, use_ignore, grad_scale 3",
       {.grad_scale = 3, .ignore_label = 0, .use_ignore = true, .normalization = "valid"}, {2, 0, 1}, {1.5, 0, 1.5}},
      {"null, use_ignore", {.ignore_label = 1, .use_ignore = true}, {2, 0, 1}, {1, 1, 0}},
      {"batch, use_ignore", {.ignore_label = 2, .use_ignore = true, .normalization = "batch"}, {2, 0, 1},
       {0, third, third}}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      for (const Case& c : cases) {
        BOOST_TEST_CONTEXT(c.what << ", " << mx::dtype_name(dtype)) {
          nd::NDArray x = three_rows(ctx, dtype);
          x.attach_grad();
          const nd::NDArray label = nd::array({2, 0, 1}, ctx, dtype);
          {
            auto scope = ag::record();
            nd::SoftmaxOutput(x, label, c.options).backward();
          }
          const Values want = cross_entropy_gradient(c.labels, c.scale);
          check_close(x.grad(), want);
          // The head gradient is not read, as in MXNet.
          {
            auto scope = ag::record();
            nd::SoftmaxOutput(x, label, c.options).backward(nd::array(ndg_test::uniform_values(9, 3), {3, 3}, ctx, dtype));
          }
          check_close(x.grad(), want);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_output_labels_outside_the_classes_and_without_a_label) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = three_rows(ctx, DType::float32);
    x.attach_grad();
    // A label outside [0, classes) subtracts nothing (MXNet's SoftmaxGrad); 2.7 is class 2.
    {
      auto scope = ag::record();
      nd::SoftmaxOutput(x, nd::array({2.7, 7, -3}, ctx)).backward();
    }
    check_close(x.grad(), cross_entropy_gradient({2, -1, -1}, {1, 1, 1}));
    // Without a label (as graph::drop_labels leaves it) the gradient is softmax's: y (g - sum(g y)).
    {
      auto scope = ag::record();
      nd::SoftmaxOutput(x).backward(nd::array({{1, 0, 0}, {1, 0, 0}, {1, 0, 0}}, ctx));
    }
    check_close(x.grad(), {0.125 * 0.875, -0.125 * 0.25, -0.125 * 0.625, 0.625 * 0.375, -0.625 * 0.25, -0.625 * 0.125,
                           2.0 / 9, -1.0 / 9, -1.0 / 9});
    // preserve_shape: the same rows as (1, 3, 3) with label (1, 3).
    nd::NDArray x3 = three_rows(ctx, DType::float32).reshape({1, 3, 3});
    x3.attach_grad();
    {
      auto scope = ag::record();
      nd::SoftmaxOutput(x3, nd::array({{2, 0, 1}}, ctx), {.preserve_shape = true, .normalization = "batch"}).backward();
    }
    BOOST_TEST(x3.grad().shape() == (mx::Shape{1, 3, 3}));
    const double third = 1.0 / 3;
    check_close(x3.grad(), cross_entropy_gradient({2, 0, 1}, {third, third, third}));
  });
}

BOOST_AUTO_TEST_CASE(softmax_output_errors_name_the_op) {
  const nd::NDArray x = nd::ones({3, 4}), label = nd::array({0, 1, 2});
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(x, label, {.multi_output = true}), mx::ValueError, "SoftmaxOutput",
                        "multi_output", "not supported");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(x, label, {.normalization = "all"}), mx::ValueError, "SoftmaxOutput",
                        "normalization", "all", "valid");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(x, nd::ones({3, 1})), mx::ShapeError, "SoftmaxOutput", "label (3, 1)",
                        "data (3, 4)", "(3,)");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(x, nd::ones({3}, mx::cpu(), DType::float64)), mx::DTypeError,
                        "SoftmaxOutput", "float64");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(nd::ones({2, 3, 4}), nd::ones({2, 3})), mx::ShapeError, "SoftmaxOutput",
                        "(2, 3, 4)", "preserve_shape");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(nd::ones({4})), mx::ShapeError, "SoftmaxOutput", "(4,)");
  NDG_CHECK_THROWS_WITH(nd::SoftmaxOutput(nd::ones({2, 3}, mx::cpu(), DType::int32)), mx::DTypeError,
                        "SoftmaxOutput", "int32");
}

// use_length and temperature: each line's first n elements in a softmax of x / t, the rest 0,
// against a float64 loop, on the last axis (a warp per row on a GPU) and on axis 1 (a thread per
// line), lengths in several dtypes; gradients against finite differences.
namespace {

// softmax(x / t) (or its log) of (outer, L, inner) along the middle axis over lengths n per line.
Values reference_softmax(const Values& x, std::int64_t outer, std::int64_t L, std::int64_t inner, const Values& n,
                         double t, bool log) {
  Values y(x.size(), 0.0);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto len = static_cast<std::int64_t>(std::clamp(n[static_cast<std::size_t>(o * inner + i)], 0.0,
                                                            static_cast<double>(L)));
      const auto at = [&](std::int64_t k) { return static_cast<std::size_t>((o * L + k) * inner + i); };
      double max = -1e300, sum = 0;
      for (std::int64_t k = 0; k < len; ++k) max = std::max(max, x[at(k)]);
      for (std::int64_t k = 0; k < len; ++k) sum += std::exp((x[at(k)] - max) / t);
      for (std::int64_t k = 0; k < len; ++k) {
        y[at(k)] = log ? (x[at(k)] - max) / t - std::log(sum) : std::exp((x[at(k)] - max) / t) / sum;
      }
    }
  }
  return y;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lengths_and_temperature_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 2, 3, 4}, {0, 0, 5, 5}, {7, 8, 9, 1}}, ctx);
    // Row 0 over 2 elements, row 1 over 4, row 2 over none (all 0).
    const double e = std::exp(0.5);
    check_close(nd::softmax(x, nd::array({2, 4, 0}, ctx, DType::int32), -1, 2.0),
                {1 / (1 + e), e / (1 + e), 0, 0, 1 / (2 + 2 * std::exp(2.5)), 1 / (2 + 2 * std::exp(2.5)),
                 std::exp(2.5) / (2 + 2 * std::exp(2.5)), std::exp(2.5) / (2 + 2 * std::exp(2.5)), 0, 0, 0, 0});
    check_close(nd::softmax(x, -1, 0.5).sum(1), {1, 1, 1});
    NDG_CHECK_THROWS_WITH(nd::softmax(x, nd::array({2, 4}, ctx)), mx::ShapeError, "softmax", "length", "(2,)",
                          "expected (3,)");
    NDG_CHECK_THROWS_WITH(nd::softmax(x, -1, 0.0), mx::ValueError, "softmax", "temperature");
  });
}

BOOST_AUTO_TEST_CASE(lengths_along_any_axis_match_a_float64_loop_with_gradients) {
  const std::int64_t outer = 3, L = 5, inner = 2;
  const Values x0 = ndg_test::uniform_values(30, 61), r = ndg_test::uniform_values(30, 62);
  const Values n{5, 3, 0, 1, 2.7, 9};  // one per (outer, inner) line; 2.7 counts as 2, 9 as 5
  for (const bool log : {false, true}) {
    for (const double t : {1.0, 0.7}) {
      const Values want = reference_softmax(x0, outer, L, inner, n, t, log);
      const Values numeric = ndg_test::numeric_gradient([&](const Values& x) {
        const Values y = reference_softmax(x, outer, L, inner, n, t, log);
        double sum = 0;
        for (std::size_t k = 0; k < y.size(); ++k) sum += y[k] * r[k];
        return sum;
      }, x0);
      ndg_test::for_each_context([&](mx::Context ctx) {
        for (const DType length_dtype : {DType::float32, DType::int64}) {
          BOOST_TEST_CONTEXT((log ? "log_softmax" : "softmax") << ", t " << t << ", lengths " << length_dtype) {
            nd::NDArray x = nd::array(x0.data(), DType::float64, {outer, L, inner}, ctx, DType::float64);
            const nd::NDArray length = nd::array(n.data(), DType::float64, {outer, inner}, ctx, length_dtype);
            x.attach_grad();
            nd::NDArray y;
            {
              auto recording = ag::record();
              y = log ? nd::log_softmax(x, length, 1, t) : nd::softmax(x, length, 1, t);
              (y * nd::array(r.data(), DType::float64, {outer, L, inner}, ctx, DType::float64)).sum().backward();
            }
            check_close(y, want, 1e-12, 1e-12);
            check_close(x.grad(), numeric, 1e-6, 1e-8);
            // The last axis: the same lines transposed (a warp per row on a GPU).
            const nd::NDArray last = log ? nd::log_softmax(x.transpose({0, 2, 1}), length, -1, t)
                                         : nd::softmax(x.transpose({0, 2, 1}), length, -1, t);
            check_close(last.transpose({0, 2, 1}), want, 1e-12, 1e-12);
          }
        }
      });
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
