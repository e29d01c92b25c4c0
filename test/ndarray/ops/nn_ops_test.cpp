// nd::FullyConnected: forward against a naive CPU reference (with and without bias, each fused
// activation, a 3-D input flattened or applied over its last axis), gradients against the same
// computation composed of dot, add and the activation ops, and the argument errors.
// nd::LeakyReLU (each act_type) against hand-computed values, its gradient against central
// differences; nd::BlockGrad's values and zero gradient. Every numeric case runs on every context.
// Batches of up to 4 rows, which GPUs compute with a kernel of ndgluon's own, against the same
// reference.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::uniform_values;
using ndg_test::Values;
using ndg_test::values;

namespace {


double activate(const std::string& act, double v) {
  if (act == "relu") return v > 0 ? v : 0;
  if (act == "sigmoid") return 1 / (1 + std::exp(-v));
  if (act == "tanh") return std::tanh(v);
  if (act == "softrelu") return std::log1p(std::exp(v));
  return v;
}

// act(x (rows, in) · w (hidden, in)ᵀ + b (hidden,)), in double; b empty for no bias.
Values naive_fully_connected(const Values& x, const Values& w, const Values& b, std::int64_t rows, std::int64_t in,
                             std::int64_t hidden, const std::string& act = "") {
  Values out(static_cast<std::size_t>(rows * hidden));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < hidden; ++j) {
      double total = b.empty() ? 0.0 : b[static_cast<std::size_t>(j)];
      for (std::int64_t p = 0; p < in; ++p) {
        total += x[static_cast<std::size_t>(i * in + p)] * w[static_cast<std::size_t>(j * in + p)];
      }
      out[static_cast<std::size_t>(i * hidden + j)] = activate(act, total);
    }
  return out;
}

// MXNet's LeakyReLU of one value, in double.
double leaky_relu(const std::string& act, double slope, double x) {
  constexpr double alpha = 1.6732632423543772848170429916717, lambda = 1.0507009873554804934193349852946;
  if (act == "leaky") return x > 0 ? x : slope * x;
  if (act == "elu") return x > 0 ? x : slope * (std::exp(x) - 1);
  if (act == "selu") return lambda * (x > 0 ? x : alpha * (std::exp(x) - 1));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));  // gelu
}

nd::NDArray composed_activation(const std::string& act, const nd::NDArray& v) {
  if (act == "relu") return nd::relu(v);
  if (act == "sigmoid") return nd::sigmoid(v);
  if (act == "tanh") return nd::tanh(v);
  if (act == "softrelu") return nd::softrelu(v);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nn_ops)

BOOST_AUTO_TEST_CASE(fully_connected_with_bias_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // x (2, 3), w (2, 3), b (2,): [[1 + 2 + 3 + 10, 1 - 3 + 20], [4 + 5 + 6 + 10, 4 - 6 + 20]].
    const nd::NDArray x = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    const nd::NDArray w = nd::array({{1, 1, 1}, {1, 0, -1}}, ctx);
    const nd::NDArray b = nd::array({10, 20}, ctx);
    const nd::NDArray out = nd::FullyConnected(x, w, b, 2);
    BOOST_TEST(out.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(values(out) == (Values{16, 18, 25, 18}), tt::per_element());
    const nd::NDArray no_bias = nd::FullyConnected(x, w, nd::NDArray(), 2, true);
    BOOST_TEST(values(no_bias) == (Values{6, -2, 15, -2}), tt::per_element());
    const nd::NDArray relu = nd::FullyConnected(x, w, nd::array({-10, -20}, ctx), 2, false, true, "relu");
    BOOST_TEST(values(relu) == (Values{0, 0, 5, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(fully_connected_against_naive_reference) {
  const std::int64_t rows = 5, in = 7, hidden = 4;
  const Values xv = uniform_values(rows * in, 1), wv = uniform_values(hidden * in, 2), bv = uniform_values(hidden, 3);
  for (const std::string act : {"", "relu", "sigmoid", "tanh", "softrelu"}) {
    BOOST_TEST_CONTEXT("act_type \"" << act << "\"") {
      ndg_test::for_each_context([&](mx::Context ctx) {
        for (const DType dt : ndg_test::kFloatDTypes) {
          const nd::NDArray x = nd::array(xv, {rows, in}, ctx, dt);
          const nd::NDArray w = nd::array(wv, {hidden, in}, ctx, dt);
          const nd::NDArray b = nd::array(bv, {hidden}, ctx, dt);
          const nd::NDArray out = nd::FullyConnected(x, w, b, hidden, false, true, act);
          BOOST_TEST(out.dtype() == dt);
          ndg_test::check_close(out, naive_fully_connected(xv, wv, bv, rows, in, hidden, act), 1e-5, 1e-6);
          ndg_test::check_close(nd::FullyConnected(x, w, nd::NDArray(), hidden, true, true, act),
                                naive_fully_connected(xv, wv, {}, rows, in, hidden, act), 1e-5, 1e-6);
        }
      });
    }
  }
}

// Batches of 1 to 4 float32 rows run one kernel of ndgluon's own on a GPU (cuda/ops/nn.cu,
// few_rows_dense), its k range split over up to 8 warps per output; 5 rows and more than 4096
// input features go to cuBLASLt. Every shape against the naive reference, and a second call gives
// the same bits.
BOOST_AUTO_TEST_CASE(fully_connected_of_a_few_rows_against_naive_reference) {
  struct Case {
    std::int64_t in, hidden;
  };
  // 300 x 1501: 4 warps per output, the last block half full; 1000 x 3001: 2 warps, a quarter full.
  for (const Case c : {Case{784, 256}, Case{256, 10}, Case{3, 7}, Case{1500, 33}, Case{300, 1501}, Case{1000, 3001},
                       Case{4096, 3}, Case{4097, 2}}) {
    const Values wv = uniform_values(c.hidden * c.in, 12), bv = uniform_values(c.hidden, 13);
    for (const std::int64_t rows : {1, 2, 4, 5}) {
      const Values xv = uniform_values(rows * c.in, 11);
      // The product once (the naive loop dominates the case's time under the sanitizers), then each
      // activation of it with and without the bias.
      const Values product = naive_fully_connected(xv, wv, {}, rows, c.in, c.hidden);
      for (const std::string act : {"", "relu", "tanh"}) {
        Values with_bias(product.size()), without_bias(product.size());
        for (std::size_t i = 0; i < product.size(); ++i) {
          with_bias[i] = activate(act, product[i] + bv[i % static_cast<std::size_t>(c.hidden)]);
          without_bias[i] = activate(act, product[i]);
        }
        BOOST_TEST_CONTEXT("rows " << rows << ", in " << c.in << ", hidden " << c.hidden << ", act \"" << act << "\"") {
          ndg_test::for_each_context([&](mx::Context ctx) {
            const nd::NDArray x = nd::array(xv, {rows, c.in}, ctx);
            const nd::NDArray w = nd::array(wv, {c.hidden, c.in}, ctx);
            const nd::NDArray b = nd::array(bv, {c.hidden}, ctx);
            const nd::NDArray out = nd::FullyConnected(x, w, b, c.hidden, false, true, act);
            ndg_test::check_close(out, with_bias, 1e-4, 1e-4);
            BOOST_TEST(values(nd::FullyConnected(x, w, b, c.hidden, false, true, act)) == values(out), tt::per_element());
            ndg_test::check_close(nd::FullyConnected(x, w, nd::NDArray(), c.hidden, true, true, act), without_bias, 1e-4,
                                  1e-4);
          });
        }
      }
    }
  }
}

// Each product reads its weight as the ops before it left it: both weights updated in place, then
// two chained products of one row, twenty times over. On a GPU a product may be launched before
// the kernel ahead of it ends, and must read nothing that kernel writes before it does. x is ones
// and every weight i + 1, so h = 784 (i + 1) and y = 256 · 784 (i + 1)^2, exact in float32.
BOOST_AUTO_TEST_CASE(fully_connected_of_one_row_reads_the_weights_just_updated) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({1, 784}, ctx);
    nd::NDArray w1 = nd::zeros({256, 784}, ctx), w2 = nd::zeros({1, 256}, ctx);
    std::vector<nd::NDArray> outs;
    for (int i = 0; i < 20; ++i) {
      w1 += 1.0;
      w2 += 1.0;
      outs.push_back(nd::FullyConnected(nd::FullyConnected(x, w1, nd::NDArray(), 256, true), w2, nd::NDArray(), 1, true));
    }
    for (int i = 0; i < 20; ++i) {
      BOOST_TEST_CONTEXT("update " << i) {
        BOOST_TEST(values(outs[static_cast<std::size_t>(i)]) == (Values{256.0 * 784.0 * (i + 1) * (i + 1)}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(fully_connected_flattens_or_maps_the_last_axis) {
  const Values xv = uniform_values(2 * 3 * 4, 4), bv = uniform_values(5, 6);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(xv, {2, 3, 4}, ctx);
    // flatten: x as (2, 12), weight (5, 12).
    const Values w12 = uniform_values(5 * 12, 5);
    const nd::NDArray flat = nd::FullyConnected(x, nd::array(w12, {5, 12}, ctx), nd::array(bv, {5}, ctx), 5);
    BOOST_TEST(flat.shape() == (mx::Shape{2, 5}));
    ndg_test::check_close(flat, naive_fully_connected(xv, w12, bv, 2, 12, 5));
    // flatten = false: x as (6, 4) rows, weight (5, 4), out (2, 3, 5).
    const Values w4 = uniform_values(5 * 4, 7);
    const nd::NDArray last =
        nd::FullyConnected(x, nd::array(w4, {5, 4}, ctx), nd::array(bv, {5}, ctx), 5, false, false);
    BOOST_TEST(last.shape() == (mx::Shape{2, 3, 5}));
    ndg_test::check_close(last, naive_fully_connected(xv, w4, bv, 6, 4, 5));
  });
}

BOOST_AUTO_TEST_CASE(fully_connected_gradients_match_composed_ops) {
  const std::int64_t rows = 3, in = 4, hidden = 5;
  const Values xv = uniform_values(rows * in, 8), wv = uniform_values(hidden * in, 9), bv = uniform_values(hidden, 10);
  const Values head = uniform_values(rows * hidden, 11);
  for (const std::string act : {"", "relu", "sigmoid", "tanh", "softrelu"}) {
    for (const bool no_bias : {false, true}) {
      BOOST_TEST_CONTEXT("act_type \"" << act << "\", no_bias " << no_bias) {
        ndg_test::for_each_context([&](mx::Context ctx) {
          // Returns x, w and b's gradients of sum(f(x, w, b) * head).
          auto gradients = [&](bool fused) {
            nd::NDArray x = nd::array(xv, {rows, in}, ctx, DType::float64);
            nd::NDArray w = nd::array(wv, {hidden, in}, ctx, DType::float64);
            nd::NDArray b = nd::array(bv, {hidden}, ctx, DType::float64);
            x.attach_grad();
            w.attach_grad();
            b.attach_grad();
            {
              auto scope = ag::record();
              nd::NDArray out;
              if (fused) {
                out = nd::FullyConnected(x, w, b, hidden, no_bias, true, act);
              } else {
                out = nd::dot(x, w, false, true);
                if (!no_bias) out = out + b.reshape({1, hidden});
                out = composed_activation(act, out);
              }
              (out * nd::array(head, {rows, hidden}, ctx, DType::float64)).sum().backward();
            }
            return std::vector<Values>{values(x.grad()), values(w.grad()), values(b.grad())};
          };
          const std::vector<Values> fused = gradients(true), composed = gradients(false);
          for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST_CONTEXT("input " << i) {
              BOOST_TEST(ndg_test::relative_error(fused[i], composed[i]) < 1e-12);
            }
          }
        });
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fully_connected_leaves_inputs_without_gradient_alone) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);  // no attach_grad: no gradient product for it
    nd::NDArray w = nd::ones({4, 3}, ctx);
    w.attach_grad();
    {
      auto scope = ag::record();
      nd::FullyConnected(x, w, nd::NDArray(), 4, true).sum().backward();
    }
    BOOST_TEST(values(w.grad()) == Values(12, 2.0), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(fully_connected_shape_errors) {
  const nd::NDArray x = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 5}), nd::ones({4}), 4), mx::ShapeError,
                        "FullyConnected", "weight (4, 5) float32 @cpu(0)", "data (2, 3) float32 @cpu(0)", "(4, 3)");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({5, 3}), nd::ones({5}), 4), mx::ShapeError,
                        "FullyConnected", "weight (5, 3)", "num_hidden 4");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}), nd::ones({3}), 4), mx::ShapeError,
                        "FullyConnected", "bias (3,) float32 @cpu(0)", "(4,)");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(nd::ones({3}), nd::ones({4, 3}), nd::ones({4}), 4), mx::ShapeError,
                        "FullyConnected", "(3,) float32 @cpu(0)");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}), nd::ones({4}), 0), mx::ValueError, "num_hidden");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}), nd::ones({4}), 4, false, true, "gelu"),
                        mx::ValueError, "FullyConnected", "gelu", "relu");
}

BOOST_AUTO_TEST_CASE(fully_connected_dtype_errors) {
  const nd::NDArray x = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}, mx::cpu(), DType::float64), nd::ones({4}), 4),
                        mx::DTypeError, "FullyConnected", "(2, 3) float32", "(4, 3) float64");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}), nd::ones({4}, mx::cpu(), DType::float64), 4),
                        mx::DTypeError, "FullyConnected", "(4,) float64");
  const nd::NDArray xi = nd::ones({2, 3}, mx::cpu(), DType::int32);
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(xi, nd::ones({4, 3}, mx::cpu(), DType::int32),
                                           nd::ones({4}, mx::cpu(), DType::int32), 4),
                        mx::DTypeError, "FullyConnected", "int32");
}

BOOST_AUTO_TEST_CASE(fully_connected_context_errors, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const nd::NDArray x = nd::ones({2, 3}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}), nd::ones({4}, mx::gpu(0)), 4), mx::ContextMismatch,
                        "FullyConnected", "(2, 3) float32 @gpu(0)", "(4, 3) float32 @cpu(0)", "as_in_context");
  NDG_CHECK_THROWS_WITH(nd::FullyConnected(x, nd::ones({4, 3}, mx::gpu(0)), nd::ones({4}), 4), mx::ContextMismatch,
                        "FullyConnected", "(4,) float32 @cpu(0)");
}

// --- LeakyReLU and BlockGrad ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(leaky_relu_of_each_act_type_by_hand) {
  // x = [-2, -0.5, 0.5, 3]; alpha, lambda: SELU's constants.
  const double alpha = 1.6732632423543772848170429916717, lambda = 1.0507009873554804934193349852946;
  const double em2 = std::exp(-2.0) - 1, em05 = std::exp(-0.5) - 1;
  const auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  struct Case {
    std::string act;
    double slope;
    Values want;
  };
  const std::vector<Case> cases{
      {"leaky", 0.25, {-0.5, -0.125, 0.5, 3}},
      {"leaky", 0.1, {-0.2, -0.05, 0.5, 3}},
      {"elu", 1.0, {em2, em05, 0.5, 3}},
      {"elu", 0.5, {0.5 * em2, 0.5 * em05, 0.5, 3}},
      {"selu", 0.25, {lambda * alpha * em2, lambda * alpha * em05, lambda * 0.5, lambda * 3}},
      {"gelu", 0.25, {gelu(-2), gelu(-0.5), gelu(0.5), gelu(3)}}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : ndg_test::kFloatDTypes) {
      const nd::NDArray x = nd::array({-2, -0.5, 0.5, 3}, ctx, dt);
      for (const Case& c : cases) {
        BOOST_TEST_CONTEXT(c.act << " slope " << c.slope << " " << mx::dtype_name(dt)) {
          const nd::NDArray y = nd::LeakyReLU(x, c.act, c.slope);
          BOOST_TEST(y.dtype() == dt);
          BOOST_TEST(y.context() == ctx);
          ndg_test::check_close(y, c.want, dt == DType::float64 ? 1e-12 : 1e-6, 1e-7);
        }
      }
      ndg_test::check_close(nd::LeakyReLU(x), {-0.5, -0.125, 0.5, 3});  // MXNet's defaults: leaky, 0.25
    }
  });
}

BOOST_AUTO_TEST_CASE(leaky_relu_gradients_against_finite_differences) {
  const std::int64_t n = 24;
  Values start = uniform_values(n, 21);
  for (double& v : start) v = 3 * v + (v < 0 ? -0.1 : 0.1);  // away from the kink at 0
  const Values w = uniform_values(n, 22);
  for (const std::string act : {"leaky", "elu", "selu", "gelu"}) {
    const double slope = 0.3;
    // d/dx of sum(LeakyReLU(x) * w), central differences of the double reference.
    Values want(start.size());
    for (std::size_t i = 0; i < start.size(); ++i) {
      const double step = 1e-6;
      want[i] = w[i] * (leaky_relu(act, slope, start[i] + step) - leaky_relu(act, slope, start[i] - step)) / (2 * step);
    }
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (const DType dt : ndg_test::kFloatDTypes) {
        BOOST_TEST_CONTEXT(act << " " << mx::dtype_name(dt)) {
          nd::NDArray x = nd::array(start, {4, 6}, ctx, dt);
          x.attach_grad();
          {
            auto scope = ag::record();
            (nd::LeakyReLU(x, act, slope) * nd::array(w, {4, 6}, ctx, dt)).sum().backward();
          }
          BOOST_TEST(x.grad().dtype() == dt);
          if (dt == DType::float64) ndg_test::check_close(x.grad(), want, 1e-7, 1e-8);
          else ndg_test::check_close(x.grad(), want, 1e-4, 1e-5);
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(leaky_relu_errors_name_the_op) {
  const nd::NDArray x = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(nd::LeakyReLU(x, "prelu"), mx::ValueError, "LeakyReLU", "prelu", "not supported", "leaky");
  NDG_CHECK_THROWS_WITH(nd::LeakyReLU(x, "rrelu"), mx::ValueError, "LeakyReLU", "rrelu", "not supported");
  NDG_CHECK_THROWS_WITH(nd::LeakyReLU(x, "softsign"), mx::ValueError, "LeakyReLU", "softsign", "gelu");
  NDG_CHECK_THROWS_WITH(nd::LeakyReLU(nd::ones({2}, mx::cpu(), DType::int32)), mx::DTypeError, "LeakyReLU", "int32");
  NDG_CHECK_THROWS_WITH(nd::LeakyReLU(nd::NDArray()), mx::Error, "LeakyReLU");
}

BOOST_AUTO_TEST_CASE(block_grad_passes_values_and_no_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({{1, -2}, {3, 4}}, ctx);
    const nd::NDArray y = nd::BlockGrad(x);
    BOOST_TEST(!y.is(x));
    BOOST_TEST(y.context() == ctx);
    BOOST_TEST(values(y) == values(x), tt::per_element());
    BOOST_TEST(values(nd::stop_gradient(x.T())) == (Values{1, 3, -2, 4}), tt::per_element());  // a strided view
    x.attach_grad();
    {
      auto scope = ag::record();
      (nd::BlockGrad(x) * 3.0 + x * 2.0).sum().backward();  // only the second term reaches x
    }
    BOOST_TEST(values(x.grad()) == Values(4, 2.0), tt::per_element());
    {
      auto scope = ag::record();
      (nd::stop_gradient(x * x) * x).sum().backward();  // d/dx of c * x with c = x * x held constant
    }
    BOOST_TEST(values(x.grad()) == (Values{1, 4, 9, 16}), tt::per_element());
    {
      auto scope = ag::record();
      nd::BlockGrad(x).sum().backward();  // nothing but BlockGrad: a zero gradient
    }
    BOOST_TEST(values(x.grad()) == Values(4, 0.0), tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
