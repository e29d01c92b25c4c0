// nd::BatchNorm: hand-computed statistics, the running statistics after several steps, prediction
// with the running ones, gradients against finite differences (training and prediction, with and
// without fix_gamma), other axes, and the typed errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

// BatchNorm in double over (outer, channels, inner): the output, and the batch mean and biased
// variance per channel when `batch`, else normalised by the given statistics.
Values reference_bn(const Values& x, std::int64_t outer, std::int64_t channels, std::int64_t inner, const Values& gamma,
                    const Values& beta, double eps, bool batch, Values mean, Values var) {
  const auto at = [&](std::int64_t o, std::int64_t c, std::int64_t i) {
    return static_cast<std::size_t>((o * channels + c) * inner + i);
  };
  Values y(x.size());
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto ch = static_cast<std::size_t>(c);
    if (batch) {
      double sum = 0, sq = 0;
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) sum += x[at(o, c, i)];
      mean[ch] = sum / static_cast<double>(outer * inner);
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) sq += (x[at(o, c, i)] - mean[ch]) * (x[at(o, c, i)] - mean[ch]);
      var[ch] = sq / static_cast<double>(outer * inner);
    }
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i)
        y[at(o, c, i)] = gamma[ch] * (x[at(o, c, i)] - mean[ch]) / std::sqrt(var[ch] + eps) + beta[ch];
  }
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(batch_norm)

BOOST_AUTO_TEST_CASE(training_statistics_by_hand) {
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, variance 1.25, unbiased 5/3); channel 1 holds 2 four times.
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 2}, {2, 2}, {3, 2}, {4, 2}}, ctx);
    const nd::NDArray gamma = nd::array({2, 1}, ctx), beta = nd::array({0.5, -1}, ctx);
    nd::NDArray mean = nd::zeros({2}, ctx), var = nd::ones({2}, ctx);
    nd::NDArray y;
    {
      auto scope = ag::train_mode();
      y = nd::BatchNorm(x, gamma, beta, mean, var, {.eps = 1e-5, .fix_gamma = false});
    }
    const double s = 1 / std::sqrt(1.25 + 1e-5);
    check_close(y, {2 * -1.5 * s + 0.5, -1, 2 * -0.5 * s + 0.5, -1, 2 * 0.5 * s + 0.5, -1, 2 * 1.5 * s + 0.5, -1}, 1e-5);
    check_close(mean, {0.25, 0.2});
    check_close(var, {0.9 + 0.1 * 5.0 / 3.0, 0.9});
    // fix_gamma (the default) takes gamma as 1.
    nd::NDArray y1;
    {
      auto scope = ag::train_mode();
      y1 = nd::BatchNorm(x, gamma, beta, mean, var, {.eps = 1e-5});
    }
    check_close(y1, {-1.5 * s + 0.5, -1, -0.5 * s + 0.5, -1, 0.5 * s + 0.5, -1, 1.5 * s + 0.5, -1}, 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(running_statistics_after_several_steps_and_prediction) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dt : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(dt) {
        const nd::NDArray gamma = nd::ones({3}, ctx, dt), beta = nd::zeros({3}, ctx, dt);
        nd::NDArray mean = nd::zeros({3}, ctx, dt), var = nd::ones({3}, ctx, dt);
        Values want_mean(3, 0.0), want_var(3, 1.0);
        const double momentum = 0.8;
        for (unsigned step = 0; step < 4; ++step) {
          // (4, 3, 5) far from zero: channel c around 100 (c + 1).
          Values x = ndg_test::uniform_values(60, 40 + step);
          for (std::size_t i = 0; i < x.size(); ++i) x[i] = 100.0 * static_cast<double>((i / 5) % 3 + 1) + 3 * x[i];
          Values batch_mean(3, 0), batch_var(3, 0);
          for (std::size_t i = 0; i < x.size(); ++i) batch_mean[(i / 5) % 3] += x[i] / 20;
          for (std::size_t i = 0; i < x.size(); ++i) {
            const double d = x[i] - batch_mean[(i / 5) % 3];
            batch_var[(i / 5) % 3] += d * d / 19;  // unbiased
          }
          for (std::size_t c = 0; c < 3; ++c) {
            want_mean[c] = momentum * want_mean[c] + (1 - momentum) * batch_mean[c];
            want_var[c] = momentum * want_var[c] + (1 - momentum) * batch_var[c];
          }
          auto scope = ag::record();
          nd::BatchNorm(ndg_test::array_of(x, {4, 3, 5}, ctx, dt), gamma, beta, mean, var, {.momentum = momentum});
        }
        check_close(mean, want_mean, 1e-5);
        check_close(var, want_var, 1e-4);
        // Prediction normalises by the running statistics and leaves them alone.
        const Values x = ndg_test::uniform_values(30, 7);
        const nd::NDArray y = nd::BatchNorm(ndg_test::array_of(x, {2, 3, 5}, ctx, dt), gamma, beta, mean, var);
        check_close(y, reference_bn(x, 2, 3, 5, {1, 1, 1}, {0, 0, 0}, 1e-3, false, want_mean, want_var), 1e-4, 1e-5);
        check_close(mean, want_mean, 1e-5);
        // use_global_stats does the same in training.
        auto scope = ag::record();
        const nd::NDArray yg = nd::BatchNorm(ndg_test::array_of(x, {2, 3, 5}, ctx, dt), gamma, beta, mean, var,
                                             {.use_global_stats = true});
        check_close(yg, reference_bn(x, 2, 3, 5, {1, 1, 1}, {0, 0, 0}, 1e-3, false, want_mean, want_var), 1e-4, 1e-5);
        check_close(var, want_var, 1e-4);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(other_axes_match_the_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const Values x = ndg_test::uniform_values(2 * 3 * 4, 9), gamma{0.5, 2, -1, 3}, beta{1, 0, 2, -1};
    // axis -1 of (2, 3, 4): outer 6, channels 4, inner 1.
    const nd::NDArray y = nd::BatchNorm(ndg_test::array_of(x, {2, 3, 4}, ctx), ndg_test::array_of(gamma, {4}, ctx), ndg_test::array_of(beta, {4}, ctx),
                                        nd::zeros({4}, ctx), nd::ones({4}, ctx),
                                        {.eps = 1e-5, .fix_gamma = false, .use_global_stats = false, .axis = -1});
    // Outside training: the running statistics (0, 1).
    check_close(y, reference_bn(x, 6, 4, 1, gamma, beta, 1e-5, false, Values(4, 0.0), Values(4, 1.0)), 1e-5);
    nd::NDArray yt;
    {
      auto scope = ag::train_mode();
      yt = nd::BatchNorm(ndg_test::array_of(x, {2, 3, 4}, ctx), ndg_test::array_of(gamma, {4}, ctx), ndg_test::array_of(beta, {4}, ctx), nd::zeros({4}, ctx),
                         nd::ones({4}, ctx), {.eps = 1e-5, .fix_gamma = false, .axis = 2});
    }
    check_close(yt, reference_bn(x, 6, 4, 1, gamma, beta, 1e-5, true, Values(4), Values(4)), 1e-4, 1e-5);
  });
}

// Σ BatchNorm(x) · r by central differences (step 1e-5 in float64) for x, gamma and beta, in
// training (batch statistics) and with the running ones.
BOOST_AUTO_TEST_CASE(gradients_match_finite_differences) {
  const std::int64_t outer = 3, channels = 2, inner = 4;
  const Values x0 = ndg_test::uniform_values(24, 11), g0{1.5, -0.7}, b0{0.2, 0.4}, r = ndg_test::uniform_values(24, 12);
  const Values run_mean{0.1, -0.2}, run_var{0.8, 1.3};
  for (const bool training : {true, false}) {
    for (const bool fix_gamma : {false, true}) {
      const double eps = 1e-3;
      const auto loss = [&](const Values& x, const Values& g, const Values& b) {
        const Values y = reference_bn(x, outer, channels, inner, fix_gamma ? Values{1, 1} : g, b, eps, training,
                                      run_mean, run_var);
        double sum = 0;
        for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * r[i];
        return sum;
      };
      const auto numeric = [&](int which) {
        Values x = x0, g = g0, b = b0;
        Values& v = which == 0 ? x : which == 1 ? g : b;
        Values grad(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
          const double keep = v[i];
          v[i] = keep + 1e-5;
          const double up = loss(x, g, b);
          v[i] = keep - 1e-5;
          grad[i] = (up - loss(x, g, b)) / 2e-5;
          v[i] = keep;
        }
        return grad;
      };
      const Values gx = numeric(0), gg = fix_gamma ? Values{0, 0} : numeric(1), gb = numeric(2);
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST_CONTEXT((training ? "training" : "prediction") << (fix_gamma ? ", fix_gamma" : "")) {
          nd::NDArray x = ndg_test::array_of(x0, {outer, channels, inner}, ctx, DType::float64);
          nd::NDArray g = ndg_test::array_of(g0, {2}, ctx, DType::float64), b = ndg_test::array_of(b0, {2}, ctx, DType::float64);
          x.attach_grad();
          g.attach_grad();
          b.attach_grad();
          {
            auto scope = ag::record(training);
            const nd::NDArray y = nd::BatchNorm(x, g, b, ndg_test::array_of(run_mean, {2}, ctx, DType::float64),
                                                ndg_test::array_of(run_var, {2}, ctx, DType::float64),
                                                {.eps = eps, .fix_gamma = fix_gamma});
            (y * ndg_test::array_of(r, y.shape(), ctx, DType::float64)).sum().backward();
          }
          check_close(x.grad(), gx, 1e-6, 1e-8);
          check_close(g.grad(), gg, 1e-6, 1e-8);
          check_close(b.grad(), gb, 1e-6, 1e-8);
        }
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(large_channels_match_the_cpu) {
  // (16, 8, 1000) fills many blocks per channel on a GPU; the CPU sums in double.
  const Values x = ndg_test::uniform_values(16 * 8 * 1000, 21);
  nd::NDArray cpu_y;
  for (mx::Context ctx : ndg_test::all_contexts()) {
    BOOST_TEST_CONTEXT(ctx.str()) {
      nd::NDArray mean = nd::zeros({8}, ctx), var = nd::ones({8}, ctx);
      nd::NDArray xa = ndg_test::array_of(x, {16, 8, 1000}, ctx);
      xa.attach_grad();
      nd::NDArray y;
      {
        auto scope = ag::record();
        y = nd::BatchNorm(xa, nd::ones({8}, ctx), nd::zeros({8}, ctx), mean, var, {.eps = 1e-10});
        (y * y).sum().backward();
      }
      if (ctx.is_cpu()) {
        cpu_y = y;
        // Σ y² = M · var / (var + eps) is constant in x for eps → 0: its gradient is ~0.
        for (double g : xa.grad().asvector<double>()) BOOST_TEST(std::abs(g) < 1e-4);
      } else {
        check_close(y, cpu_y.asvector<double>(), 1e-4, 1e-5);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_shapes_and_attributes_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3, 4}, ctx), p3 = nd::ones({3}, ctx), p4 = nd::ones({4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::BatchNorm(x, p4, p3, p3, p3), mx::ShapeError, "BatchNorm", "gamma", "(4,)", "(2, 3, 4)",
                          "expected (3,)");
    NDG_CHECK_THROWS_WITH(nd::BatchNorm(x, p3, p3, p3, p4), mx::ShapeError, "moving_var");
    NDG_CHECK_THROWS_WITH(nd::BatchNorm(x, p3, p3, p3, p3, {.axis = 3}), mx::ShapeError, "axis 3");
    NDG_CHECK_THROWS_WITH(nd::BatchNorm(x, p3, p3, p3, p3, {.eps = 0}), mx::ValueError, "eps");
    NDG_CHECK_THROWS_WITH(nd::BatchNorm(x, p3, p3, p3, p3, {.momentum = 1.5}), mx::ValueError, "momentum");
  });
}

BOOST_AUTO_TEST_SUITE_END()
