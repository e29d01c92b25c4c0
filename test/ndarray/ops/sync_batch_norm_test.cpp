// nd::contrib::SyncBatchNorm: with one device it is BatchNorm on axis 1 (every context); over the
// GPUs, slices of a batch normalised with the exchange give what BatchNorm gives on the whole
// batch on cpu(0), over several steps and uneven slices (outputs, data gradients, the sum of the
// GPUs' gamma and beta gradients, every GPU's running statistics); a GPU left alone times out with
// a typed error; bad options are typed errors that change nothing.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/nn.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

struct Step {
  nd::NDArray y, dx, dgamma, dbeta;
};

// One training step of `norm` on x (recorded), with loss Σ y · r.
template <class Norm>
Step train_step(Norm norm, const nd::NDArray& x0, const nd::NDArray& r, nd::NDArray gamma, nd::NDArray beta) {
  nd::NDArray x = x0.copy();
  x.attach_grad();
  gamma.attach_grad();
  beta.attach_grad();
  nd::NDArray y;
  {
    auto scope = ag::record();
    y = norm(x, gamma, beta);
    (y * r).sum().backward();
  }
  return {y, x.grad(), gamma.grad(), beta.grad()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sync_batch_norm)

BOOST_AUTO_TEST_CASE(one_device_is_batch_norm_on_axis_1) {
  const Values x = ndg_test::uniform_values(4 * 3 * 5, 31), r = ndg_test::uniform_values(4 * 3 * 5, 32);
  const Values gamma{1.5, -0.5, 2}, beta{0.1, 0.2, -0.3}, mean0{0.2, -0.1, 0}, var0{1.2, 0.7, 1};
  for (const DType dtype : {DType::float32, DType::float64}) {
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const auto param = [&](const Values& v) { return ndg_test::array_of(v, {3}, ctx, dtype); };
        nd::NDArray sync_mean = param(mean0), sync_var = param(var0), bn_mean = param(mean0), bn_var = param(var0);
        const nd::NDArray xs = ndg_test::array_of(x, {4, 3, 5}, ctx, dtype), rs = ndg_test::array_of(r, {4, 3, 5}, ctx, dtype);
        const Step sync = train_step(
            [&](const nd::NDArray& a, const nd::NDArray& g, const nd::NDArray& b) {
              return nd::contrib::SyncBatchNorm(a, g, b, sync_mean, sync_var,
                                                {.eps = 1e-4, .momentum = 0.8, .fix_gamma = false, .key = "one"});
            },
            xs, rs, param(gamma), param(beta));
        const Step bn = train_step(
            [&](const nd::NDArray& a, const nd::NDArray& g, const nd::NDArray& b) {
              return nd::BatchNorm(a, g, b, bn_mean, bn_var, {.eps = 1e-4, .momentum = 0.8, .fix_gamma = false});
            },
            xs, rs, param(gamma), param(beta));
        const double tol = dtype == DType::float64 ? 1e-10 : 1e-5;
        check_close(sync.y, ndg_test::values(bn.y), tol, tol);
        check_close(sync.dx, ndg_test::values(bn.dx), tol, tol);
        check_close(sync.dgamma, ndg_test::values(bn.dgamma), tol, tol);
        check_close(sync.dbeta, ndg_test::values(bn.dbeta), tol, tol);
        check_close(sync_mean, ndg_test::values(bn_mean), tol, tol);
        check_close(sync_var, ndg_test::values(bn_var), tol, tol);
        // Prediction: the running statistics.
        const nd::NDArray p = nd::contrib::SyncBatchNorm(xs, param(gamma), param(beta), sync_mean, sync_var,
                                                         {.eps = 1e-4, .fix_gamma = false, .ndev = 3, .key = "one"});
        const nd::NDArray q = nd::BatchNorm(xs, param(gamma), param(beta), bn_mean, bn_var, {.eps = 1e-4, .fix_gamma = false});
        check_close(p, ndg_test::values(q), tol, tol);
      }
    });
  }
}

// Three steps of a batch of 7 (slices of 4 and 3 on two GPUs; 3, 2, 2 on three ...), float64,
// against BatchNorm on the whole batch on cpu(0). In a fresh process, the host's first launches of
// kernels on a GPU whose exchange is waiting must not stall it (Note [lazy loading and the
// exchange], cuda/module_preload.hpp).
BOOST_AUTO_TEST_CASE(slices_over_the_gpus_give_the_whole_batch, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  const int n = mx::num_gpus();
  const std::int64_t batch = 7, channels = 3;
  const mx::Shape shape{batch, channels, 2, 2};
  const Values gamma{1.5, -0.5, 2}, beta{0.1, 0.2, -0.3}, mean0{0.2, -0.1, 0}, var0{1.2, 0.7, 1};
  const mx::Context cpu = mx::cpu();
  nd::NDArray ref_mean = ndg_test::array_of(mean0, {3}, cpu, DType::float64), ref_var = ndg_test::array_of(var0, {3}, cpu, DType::float64);
  std::vector<nd::NDArray> means, vars;
  for (int k = 0; k < n; ++k) {
    means.push_back(ndg_test::array_of(mean0, {3}, mx::gpu(k), DType::float64));
    vars.push_back(ndg_test::array_of(var0, {3}, mx::gpu(k), DType::float64));
  }
  const nd::BatchNormOptions bn_options{.eps = 1e-5, .momentum = 0.9, .fix_gamma = false};
  const nd::contrib::SyncBatchNormOptions sync_options{.eps = 1e-5, .momentum = 0.9, .fix_gamma = false, .ndev = n,
                                                       .key = "slices"};
  for (unsigned step = 0; step < 3; ++step) {
    BOOST_TEST_CONTEXT("step " << step << " on " << n << " GPUs") {
      Values x = ndg_test::uniform_values(static_cast<std::size_t>(shape.numel()), 40 + step);
      for (double& v : x) v = 3 * v + step;  // away from zero, as activations are
      const Values r = ndg_test::uniform_values(static_cast<std::size_t>(shape.numel()), 50 + step);
      const Step ref = train_step(
          [&](const nd::NDArray& a, const nd::NDArray& g, const nd::NDArray& b) {
            return nd::BatchNorm(a, g, b, ref_mean, ref_var, bn_options);
          },
          ndg_test::array_of(x, shape, cpu, DType::float64), ndg_test::array_of(r, shape, cpu, DType::float64), ndg_test::array_of(gamma, {3}, cpu, DType::float64),
          ndg_test::array_of(beta, {3}, cpu, DType::float64));
      // Slice k of the batch on gpu(k): forward on each GPU in turn, then backward on each.
      const nd::NDArray xa = ndg_test::array_of(x, shape, cpu, DType::float64), ra = ndg_test::array_of(r, shape, cpu, DType::float64);
      std::vector<nd::NDArray> xs, ys, heads, gammas, betas;
      std::int64_t begin = 0;
      {
        auto scope = ag::record();
        for (int k = 0; k < n; ++k) {
          const std::int64_t end = begin + (batch - begin + (n - k) - 1) / (n - k);
          const mx::Context ctx = mx::gpu(k);
          xs.push_back(nd::slice_axis(xa, 0, begin, end).copyto(ctx));
          gammas.push_back(ndg_test::array_of(gamma, {3}, ctx, DType::float64));
          betas.push_back(ndg_test::array_of(beta, {3}, ctx, DType::float64));
          for (nd::NDArray* a : {&xs.back(), &gammas.back(), &betas.back()}) a->attach_grad();
          ys.push_back(nd::contrib::SyncBatchNorm(xs.back(), gammas.back(), betas.back(), means[k], vars[k], sync_options) *
                       nd::slice_axis(ra, 0, begin, end).copyto(ctx));
          heads.push_back(ys.back().sum());
          begin = end;
        }
      }
      for (const nd::NDArray& h : heads) h.backward();
      std::vector<nd::NDArray> outs, dxs;
      nd::NDArray dgamma = nd::zeros({3}, cpu, DType::float64), dbeta = nd::zeros({3}, cpu, DType::float64);
      for (int k = 0; k < n; ++k) {
        outs.push_back(ys[k].copyto(cpu));
        dxs.push_back(xs[k].grad().copyto(cpu));
        dgamma += gammas[k].grad().copyto(cpu);
        dbeta += betas[k].grad().copyto(cpu);
      }
      check_close(nd::concat(outs, 0), ndg_test::values(ref.y * ra), 1e-10, 1e-12);
      check_close(nd::concat(dxs, 0), ndg_test::values(ref.dx), 1e-9, 1e-12);
      check_close(dgamma, ndg_test::values(ref.dgamma), 1e-9, 1e-12);
      check_close(dbeta, ndg_test::values(ref.dbeta), 1e-9, 1e-12);
      for (int k = 0; k < n; ++k) {
        BOOST_TEST_CONTEXT("running statistics of gpu(" << k << ")") {
          check_close(means[k], ndg_test::values(ref_mean), 1e-10, 1e-12);
          check_close(vars[k], ndg_test::values(ref_var), 1e-10, 1e-12);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_gpu_left_alone_times_out_with_a_typed_error, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const mx::Context ctx = mx::gpu(0);
  ::setenv("NDG_EXCHANGE_TIMEOUT", "0.2", 1);
  const nd::contrib::SyncBatchNormOptions lonely{.ndev = 2, .key = "lonely"};
  nd::NDArray mean = nd::zeros({2}, ctx), var = nd::ones({2}, ctx);
  const nd::NDArray x = nd::ones({4, 2}, ctx), gamma = nd::ones({2}, ctx), beta = nd::zeros({2}, ctx);
  {
    auto scope = ag::train_mode();
    nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, lonely);  // waits 0.2 s for a gpu that never comes
    nd::waitall();
    NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, lonely), mx::DeviceError,
                          "SyncBatchNorm 'lonely'", "NDG_EXCHANGE_TIMEOUT", "2 GPUs");
  }
  ::unsetenv("NDG_EXCHANGE_TIMEOUT");
  // The GPU goes on working.
  check_close(nd::ones({3}, ctx) * 2, {2, 2, 2});
}

BOOST_AUTO_TEST_CASE(bad_options_are_typed_errors_that_change_nothing) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray mean = nd::array({0.5, -0.5}, ctx), var = nd::array({2, 3}, ctx);
    const nd::NDArray x = nd::array({{1, 2}, {3, 5}}, ctx), gamma = nd::ones({2}, ctx), beta = nd::zeros({2}, ctx);
    auto scope = ag::train_mode();
    NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, {.ndev = 0}), mx::ValueError,
                          "_contrib_SyncBatchNorm", "ndev must be >= 1");
    NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, {.key = std::string(80, 'k')}),
                          mx::ValueError, "_contrib_SyncBatchNorm", "longer than 79");
    NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, {.momentum = 2}), mx::ValueError,
                          "_contrib_SyncBatchNorm", "momentum");
    NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, nd::ones({3}, ctx), beta, mean, var), mx::ShapeError,
                          "_contrib_SyncBatchNorm", "gamma");
    if (ctx.is_cpu()) {
      NDG_CHECK_THROWS_WITH(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, {.ndev = 2, .key = "cpu"}),
                            mx::ValueError, "_contrib_SyncBatchNorm 'cpu'", "ndev=2 on cpu(0)", "GPUs only");
    }
    check_close(mean, {0.5, -0.5});
    check_close(var, {2, 3});
    // With the running statistics (prediction) no device waits: any context, any ndev.
    auto predict = ag::predict_mode();
    check_close(nd::contrib::SyncBatchNorm(x, gamma, beta, mean, var, {.eps = 1e-3, .ndev = 4, .key = "cpu"}),
                {(1 - 0.5) / std::sqrt(2.001), (2 + 0.5) / std::sqrt(3.001), (3 - 0.5) / std::sqrt(2.001),
                 (5 + 0.5) / std::sqrt(3.001)},
                1e-5);
  });
}

BOOST_AUTO_TEST_SUITE_END()
