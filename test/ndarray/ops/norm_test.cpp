// nd::LayerNorm, nd::GroupNorm and nd::InstanceNorm: values by hand, outputs and statistics against
// a float64 reference written from the definitions (each group's elements listed explicitly, not
// through the library's grouping), gradients of data, gamma and beta against finite differences,
// 16-bit data with float32 and 16-bit parameters, the identities between the three, and the typed
// errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

nd::NDArray from(const Values& v, const mx::Shape& shape, mx::Context ctx, DType dtype = DType::float64) {
  return ndg_test::array_of(v, shape, ctx, dtype);
}

// One configuration: the data's shape, its groups (each a list of flat indices sharing a mean and
// std) and each element's channel, and the op.
struct Case {
  std::string name;
  mx::Shape shape;
  std::int64_t channels;
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> channel;  // per element
  std::function<nd::NDArray(const nd::NDArray&, const nd::NDArray&, const nd::NDArray&)> op;
};

// LayerNorm of (outer, C, inner) over the middle axis (axis 1, or -1 when inner is 1).
Case layer_case(std::int64_t outer, std::int64_t C, std::int64_t inner, double eps) {
  Case c{"LayerNorm (" + std::to_string(outer) + ", " + std::to_string(C) + ", " + std::to_string(inner) + ")",
         inner == 1 ? mx::Shape{outer, C} : mx::Shape{outer, C, inner}, C, {}, {}, {}};
  c.channel.resize(static_cast<std::size_t>(outer * C * inner));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<std::size_t> group;
      for (std::int64_t k = 0; k < C; ++k) {
        const auto at = static_cast<std::size_t>((o * C + k) * inner + i);
        group.push_back(at);
        c.channel[at] = static_cast<std::size_t>(k);
      }
      c.groups.push_back(group);
    }
  }
  const int axis = inner == 1 ? -1 : 1;
  c.op = [axis, eps](const nd::NDArray& x, const nd::NDArray& g, const nd::NDArray& b) {
    return nd::LayerNorm(x, g, b, {.axis = axis, .eps = eps});
  };
  return c;
}

// GroupNorm of (N, C, S) with G groups, a gamma and beta per group as MXNet 1.x's (InstanceNorm
// when instance: G = C, a gamma and beta per channel).
Case group_case(std::int64_t N, std::int64_t C, std::int64_t S, std::int64_t G, double eps, bool instance = false) {
  Case c{std::string(instance ? "InstanceNorm" : "GroupNorm") + " (" + std::to_string(N) + ", " + std::to_string(C) +
             ", " + std::to_string(S) + "), " + std::to_string(G) + " groups",
         mx::Shape{N, C, S}, G, {}, {}, {}};
  c.channel.resize(static_cast<std::size_t>(N * C * S));
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t g = 0; g < G; ++g) {
      std::vector<std::size_t> group;
      for (std::int64_t ch = g * (C / G); ch < (g + 1) * (C / G); ++ch) {
        for (std::int64_t s = 0; s < S; ++s) {
          const auto at = static_cast<std::size_t>((n * C + ch) * S + s);
          group.push_back(at);
          c.channel[at] = static_cast<std::size_t>(g);
        }
      }
      c.groups.push_back(group);
    }
  }
  if (instance) {
    c.op = [eps](const nd::NDArray& x, const nd::NDArray& g, const nd::NDArray& b) {
      return nd::InstanceNorm(x, g, b, {.eps = eps});
    };
  } else {
    c.op = [G, eps](const nd::NDArray& x, const nd::NDArray& g, const nd::NDArray& b) {
      return nd::GroupNorm(x, g, b, {.num_groups = G, .eps = eps});
    };
  }
  return c;
}

// The definition in double: per group, mean and biased variance, then x̂ · gamma + beta.
Values reference(const Case& c, const Values& x, const Values& gamma, const Values& beta, double eps,
                 Values* means = nullptr, Values* stds = nullptr) {
  Values y(x.size());
  for (const auto& group : c.groups) {
    double sum = 0, squares = 0;
    for (const std::size_t at : group) sum += x[at];
    const double mean = sum / static_cast<double>(group.size());
    for (const std::size_t at : group) squares += (x[at] - mean) * (x[at] - mean);
    const double sd = std::sqrt(squares / static_cast<double>(group.size()) + eps);
    for (const std::size_t at : group) y[at] = (x[at] - mean) / sd * gamma[c.channel[at]] + beta[c.channel[at]];
    if (means) means->push_back(mean);
    if (stds) stds->push_back(sd);
  }
  return y;
}

// The configurations, each op with the given eps: LayerNorm on the last axis and on a middle one
// (strided lines), GroupNorm with 3 groups and with 1, InstanceNorm.
std::vector<Case> make_cases(double eps) {
  return {layer_case(3, 8, 1, eps), layer_case(2, 5, 3, eps), group_case(2, 6, 4, 3, eps), group_case(2, 4, 3, 1, eps),
          group_case(2, 3, 5, 3, eps, /*instance=*/true)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_ops)

BOOST_AUTO_TEST_CASE(layer_norm_by_hand) {
  // Row 0: mean 2.5, variance 1.25. Row 1 is constant: x̂ = 0, the output is beta.
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 2, 3, 4}, {2, 2, 2, 2}}, ctx);
    const nd::NDArray gamma = nd::array({1, 2, 1, 0.5}, ctx), beta = nd::array({0.1, 0, -0.1, 0}, ctx);
    const auto out = nd::LayerNorm_mean_std(x, gamma, beta, {.eps = 1e-5});
    const double s = std::sqrt(1.25 + 1e-5);
    check_close(out[0], {-1.5 / s + 0.1, 2 * -0.5 / s, 0.5 / s - 0.1, 0.5 * 1.5 / s, 0.1, 0, -0.1, 0}, 1e-5);
    BOOST_TEST(out[1].shape() == (mx::Shape{2, 1}));
    check_close(out[1], {2.5, 2});
    check_close(out[2], {s, std::sqrt(1e-5)}, 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(outputs_and_statistics_match_a_float64_reference) {
  const double eps = 1e-5;
  for (const Case& c : make_cases(eps)) {
    const Values x = ndg_test::uniform_values(static_cast<std::size_t>(c.shape.numel()), 21);
    Values gamma = ndg_test::uniform_values(static_cast<std::size_t>(c.channels), 22), beta = gamma;
    for (double& v : gamma) v += 1.5;
    for (double& v : beta) v = -v;
    const Values want = reference(c, x, gamma, beta, eps);
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (DType dt : ndg_test::kFloatDTypes) {
        BOOST_TEST_CONTEXT(c.name << ", " << dt) {
          const nd::NDArray y = c.op(from(x, c.shape, ctx, dt), from(gamma, {c.channels}, ctx, dt),
                                     from(beta, {c.channels}, ctx, dt));
          BOOST_TEST(y.dtype() == dt);
          check_close(y, want, dt == DType::float64 ? 1e-12 : 1e-5, dt == DType::float64 ? 1e-12 : 1e-5);
        }
      }
    });
  }
  // LayerNorm's statistics: (outer, 1, inner) for axis 1.
  const Case strided = make_cases(eps)[1];
  const Values x = ndg_test::uniform_values(30, 23), gamma(5, 1.0), beta(5, 0.0);
  Values means, stds;
  reference(strided, x, gamma, beta, eps, &means, &stds);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const auto out = nd::LayerNorm_mean_std(from(x, strided.shape, ctx), from(gamma, {5}, ctx), from(beta, {5}, ctx),
                                            {.axis = 1});
    BOOST_TEST(out[1].shape() == (mx::Shape{2, 1, 3}));
    // The reference lists the groups line by line, (o, i): the statistics' own order.
    check_close(out[1], means, 1e-12, 1e-12);
    check_close(out[2], stds, 1e-12, 1e-12);
  });
}

BOOST_AUTO_TEST_CASE(gradients_match_finite_differences) {
  const double eps = 1e-3;
  for (const Case& c : make_cases(eps)) {
    const std::size_t n = static_cast<std::size_t>(c.shape.numel()), channels = static_cast<std::size_t>(c.channels);
    const Values x0 = ndg_test::uniform_values(n, 31), r = ndg_test::uniform_values(n, 32);
    Values g0 = ndg_test::uniform_values(channels, 33), b0 = ndg_test::uniform_values(channels, 34);
    for (double& v : g0) v += 1.2;
    const auto loss = [&](const Values& x, const Values& g, const Values& b) {
      const Values y = reference(c, x, g, b, eps);
      double sum = 0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * r[i];
      return sum;
    };
    const Values gx = ndg_test::numeric_gradient([&](const Values& x) { return loss(x, g0, b0); }, x0);
    const Values gg = ndg_test::numeric_gradient([&](const Values& g) { return loss(x0, g, b0); }, g0);
    const Values gb = ndg_test::numeric_gradient([&](const Values& b) { return loss(x0, g0, b); }, b0);
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(c.name) {
        nd::NDArray x = from(x0, c.shape, ctx), g = from(g0, {c.channels}, ctx), b = from(b0, {c.channels}, ctx);
        x.attach_grad();
        g.attach_grad();
        b.attach_grad();
        {
          auto recording = ag::record();
          (c.op(x, g, b) * from(r, c.shape, ctx)).sum().backward();
        }
        check_close(x.grad(), gx, 1e-6, 1e-7);
        check_close(g.grad(), gg, 1e-6, 1e-7);
        check_close(b.grad(), gb, 1e-6, 1e-7);
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(half_precision_data_keeps_float32_statistics) {
  // Data of mean 100 and spread 1: float16 statistics would lose the spread (an ulp of 100 is
  // 0.06), float32 ones keep it.
  const Case c = make_cases(1e-5)[0];
  Values x = ndg_test::uniform_values(24, 41);
  for (double& v : x) v = 100 + v;
  const Values gamma{1, 2, 0.5, 1, 1, -1, 1, 0.25}, beta(8, 0.5);
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (DType dt : {DType::float16, DType::bfloat16}) {
      // What the op sees: the data rounded to dt.
      const Values rounded = ndg_test::values(from(x, c.shape, ctx, dt));
      const Values want = reference(c, rounded, gamma, beta, 1e-5);
      for (DType param_dt : {DType::float32, dt}) {
        BOOST_TEST_CONTEXT(dt << " data, " << param_dt << " parameters") {
          nd::NDArray xd = from(x, c.shape, ctx, dt), g = from(gamma, {8}, ctx, param_dt),
                      b = from(beta, {8}, ctx, param_dt);
          xd.attach_grad();
          g.attach_grad();
          nd::NDArray y;
          {
            auto recording = ag::record();
            const auto out = nd::LayerNorm_mean_std(xd, g, b);
            y = out[0];
            BOOST_TEST(out[1].dtype() == DType::float32);
            y.sum().backward();
          }
          BOOST_TEST(y.dtype() == dt);
          check_close(y, want, dt == DType::float16 ? 4e-3 : 2e-2, 2e-2);
          BOOST_TEST(g.grad().dtype() == param_dt);
          // Σ_rows x̂ = 0 per column only in expectation; Σ_k dx = 0 per row exactly: the
          // gradient of a sum of a normalised row, gamma aside, is orthogonal to its ones.
          const Values dx = ndg_test::values(xd.grad());
          for (int row = 0; row < 3; ++row) {
            double sum = 0, scale = 0;
            for (int k = 0; k < 8; ++k) {
              sum += dx[static_cast<std::size_t>(row * 8 + k)];
              scale += std::abs(dx[static_cast<std::size_t>(row * 8 + k)]);
            }
            BOOST_TEST(std::abs(sum) <= 0.05 * scale + 1e-2);
          }
        }
      }
    }
  });
}

// LayerNorm on the last axis at the widths and row counts a Transformer has (the GPUs' row
// kernels hold a row in registers, over 32 to 256 threads, and sum the parameter gradients in two
// stages over blocks of rows): y, dx, dgamma and dbeta against the float64 definition of the data
// as the op sees it (rounded to its dtype). Widths that are no whole 16-byte packs (13, 1001) and
// one too wide for the registers (20,000 float32) take the general kernels.
BOOST_AUTO_TEST_CASE(last_axis_rows_of_many_widths_match_a_float64_reference) {
  const double eps = 1e-5;
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{{37, 768}, {3, 8192}, {300, 96},  {5, 1000},
                                                                   {4, 13},   {1200, 64}, {2, 1001}, {1, 20000}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const auto& [rows, M] : shapes) {
      for (DType dt : {DType::float32, DType::bfloat16, DType::float16}) {
        if (M == 20000 && dt != DType::float32) continue;
        const DType param_dt = dt == DType::float32 ? dt : DType::float32;
        const auto n = static_cast<std::size_t>(rows * M);
        const unsigned seed = static_cast<unsigned>(rows + M);
        nd::NDArray x = from(ndg_test::uniform_values(n, seed), {rows, M}, ctx, dt);
        nd::NDArray dy = from(ndg_test::uniform_values(n, seed + 1), {rows, M}, ctx, dt);
        Values g0 = ndg_test::uniform_values(static_cast<std::size_t>(M), seed + 2);
        for (double& v : g0) v += 1.5;
        nd::NDArray g = from(g0, {M}, ctx, param_dt);
        nd::NDArray b = from(ndg_test::uniform_values(static_cast<std::size_t>(M), seed + 3), {M}, ctx, param_dt);
        const Values xs = ndg_test::values(x), dys = ndg_test::values(dy), gs = ndg_test::values(g),
                     bs = ndg_test::values(b);
        Values y_want(n), dx_want(n), dg_want(static_cast<std::size_t>(M)), db_want(static_cast<std::size_t>(M));
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::size_t at = static_cast<std::size_t>(r * M);
          double sum = 0, squares = 0;
          for (std::int64_t k = 0; k < M; ++k) sum += xs[at + k];
          const double mean = sum / static_cast<double>(M);
          for (std::int64_t k = 0; k < M; ++k) squares += (xs[at + k] - mean) * (xs[at + k] - mean);
          const double rstd = 1 / std::sqrt(squares / static_cast<double>(M) + eps);
          double sum_a = 0, sum_a_xhat = 0;
          for (std::int64_t k = 0; k < M; ++k) {
            const double xhat = (xs[at + k] - mean) * rstd, a = dys[at + k] * gs[k];
            y_want[at + k] = xhat * gs[k] + bs[k];
            sum_a += a;
            sum_a_xhat += a * xhat;
            dg_want[k] += dys[at + k] * xhat;
            db_want[k] += dys[at + k];
          }
          for (std::int64_t k = 0; k < M; ++k) {
            const double xhat = (xs[at + k] - mean) * rstd, a = dys[at + k] * gs[k];
            dx_want[at + k] = (a - sum_a / M - xhat * sum_a_xhat / M) * rstd;
          }
        }
        BOOST_TEST_CONTEXT("(" << rows << ", " << M << ") " << dt) {
          x.attach_grad();
          g.attach_grad();
          b.attach_grad();
          nd::NDArray y;
          {
            auto recording = ag::record();
            y = nd::LayerNorm(x, g, b, {.eps = eps});
          }
          y.backward(dy);
          const double tol = dt == DType::float32 ? 2e-5 : dt == DType::float16 ? 2e-3 : 1.6e-2;
          check_close(y, y_want, tol, tol);
          check_close(x.grad(), dx_want, tol, 4 * tol);
          // The parameter sums run over `rows` terms, in float32.
          const double sum_tol = (dt == DType::float32 ? 2e-5 : 1e-4) * std::sqrt(static_cast<double>(rows));
          check_close(g.grad(), dg_want, sum_tol, sum_tol);
          check_close(b.grad(), db_want, sum_tol, sum_tol);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(instance_norm_is_group_norm_with_a_group_per_channel) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = ndg_test::random_array({2, 4, 3, 5}, ctx, 51);
    const nd::NDArray gamma = ndg_test::random_array({4}, ctx, 52), beta = ndg_test::random_array({4}, ctx, 53);
    check_close(nd::InstanceNorm(x, gamma, beta, {.eps = 1e-5}),
                ndg_test::values(nd::GroupNorm(x, gamma, beta, {.num_groups = 4, .eps = 1e-5})), 1e-6, 1e-6);
    // GroupNorm with one group normalises each sample over everything: LayerNorm of the sample
    // flattened, with gamma and beta repeated over the spatial positions.
    const nd::NDArray one = nd::GroupNorm(x, nd::ones({1}, ctx), nd::zeros({1}, ctx), {.num_groups = 1});
    const nd::NDArray flat = nd::LayerNorm(x.reshape({2, 60}), nd::ones({60}, ctx), nd::zeros({60}, ctx));
    check_close(one.reshape({2, 60}), ndg_test::values(flat), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(bad_operands_and_options_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 6, 3}, ctx), g6 = nd::ones({6}, ctx), b6 = nd::zeros({6}, ctx);
    NDG_CHECK_THROWS_WITH(nd::LayerNorm(x, g6, b6), mx::ShapeError, "LayerNorm", "gamma", "(2, 6, 3)", "expected (3,)");
    NDG_CHECK_THROWS_WITH(nd::LayerNorm(x, g6, b6, {.axis = 3}), mx::Error, "LayerNorm", "axis");
    NDG_CHECK_THROWS_WITH(nd::LayerNorm(x, nd::ones({3}, ctx), nd::zeros({3}, ctx, DType::float64)), mx::DTypeError,
                          "LayerNorm", "beta", "float64");
    NDG_CHECK_THROWS_WITH(nd::LayerNorm(nd::ones({2, 3}, ctx, DType::int32), nd::ones({3}, ctx), nd::zeros({3}, ctx)),
                          mx::DTypeError, "LayerNorm");
    NDG_CHECK_THROWS_WITH(nd::LayerNorm(x, nd::ones({3}, ctx), nd::zeros({3}, ctx), {.eps = 0}), mx::ValueError,
                          "LayerNorm", "eps must be positive");
    NDG_CHECK_THROWS_WITH(nd::GroupNorm(x, g6, b6, {.num_groups = 4}), mx::ShapeError, "GroupNorm", "6 channels",
                          "num_groups=4");
    NDG_CHECK_THROWS_WITH(nd::GroupNorm(x, g6, b6, {.num_groups = 3}), mx::ShapeError, "GroupNorm", "gamma",
                          "expected (3,)");
    NDG_CHECK_THROWS_WITH(nd::GroupNorm(x, g6, b6, {.num_groups = 0}), mx::ValueError, "GroupNorm", "num_groups");
    NDG_CHECK_THROWS_WITH(nd::GroupNorm(nd::ones({6}, ctx), g6, b6), mx::ShapeError, "GroupNorm", "(N, C");
    NDG_CHECK_THROWS_WITH(nd::InstanceNorm(nd::ones({2, 6}, ctx), g6, b6), mx::ShapeError, "InstanceNorm",
                          "(N, C, spatial");
    NDG_CHECK_THROWS_WITH(nd::InstanceNorm(x, nd::ones({2}, ctx), b6), mx::ShapeError, "InstanceNorm", "gamma",
                          "expected (6,)");
    NDG_CHECK_THROWS_WITH(nd::InstanceNorm(x, g6, nd::NDArray()), mx::Error, "InstanceNorm");
  });
}

BOOST_AUTO_TEST_SUITE_END()
