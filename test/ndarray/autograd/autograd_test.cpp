// Autograd: every differentiable op's gradient against central finite differences (float64 on
// cpu(0)), the same gradients on each GPU against cpu(0) (float32), and the semantics of
// record()/pause(), grad_req, head gradients, detach() and the errors.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using mx::Shape;
using Values = std::vector<double>;

namespace {

// ---- the finite-difference checker --------------------------------------------------------------

constexpr double kStep = 1e-6;       // each element is moved by ±kStep
constexpr double kRelative = 1e-6;   // relative tolerance on each gradient element

// A seed that depends only on the text (std::hash may differ between standard libraries).
std::uint64_t seed_of(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// n values uniform in [low, high], each at least 0.1 away from 0 (where abs, relu and the like
// have a kink).
Values draw(std::mt19937_64& engine, std::int64_t n, double low, double high) {
  std::uniform_real_distribution<double> uniform(low, high);
  Values v(static_cast<std::size_t>(n));
  for (double& x : v) {
    x = uniform(engine);
    if (std::abs(x) < 0.1) x += x < 0 ? -0.1 : 0.1;
  }
  return v;
}

// Fixed weights w, |w| in [0.5, 1.5] with both signs: the checked objective is sum(f(...) * w), so
// that every output element matters, each with its own weight.
Values output_weights(std::int64_t n) {
  std::mt19937_64 engine(20240521);
  std::uniform_real_distribution<double> magnitude(0.5, 1.5);
  Values w(static_cast<std::size_t>(n));
  for (double& x : w) x = (engine() & 1 ? 1.0 : -1.0) * magnitude(engine);
  return w;
}

double dot_values(const Values& a, const Values& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// One element of backward's gradient against its finite difference.
bool gradient_matches(double analytic, double numeric, double absolute) {
  return std::abs(analytic - numeric) <= kRelative * std::abs(numeric) + absolute;
}

// Checks backward's gradient of sum(f() * w) with respect to every element of every variable in
// vars (float64 arrays on cpu(0) with attach_grad(), or parameter data) against central
// differences. f reads the variables; they are perturbed in place between calls.
void check_gradient(const std::string& what, std::vector<nd::NDArray> vars, const std::function<nd::NDArray()>& f) {
  BOOST_TEST_CONTEXT(what) {
    const nd::NDArray out0 = f();  // not recorded
    BOOST_TEST_REQUIRE(out0.context() == mx::cpu());
    BOOST_TEST_REQUIRE(out0.dtype() == DType::float64);
    const Values w = output_weights(out0.size());
    const auto objective = [&] { return dot_values(f().asvector<double>(), w); };
    {
      auto scope = ag::record();
      const nd::NDArray y = f();
      BOOST_TEST_REQUIRE(y.shape() == out0.shape());
      (y * nd::array(w, y.shape(), mx::cpu(), DType::float64)).sum().backward();
    }
    // Rounding in the objective, divided by the step, sets an absolute floor far below any error
    // a wrong gradient would make.
    double magnitude = 1;
    const Values out_values = out0.asvector<double>();
    for (std::size_t k = 0; k < w.size(); ++k) magnitude += std::abs(out_values[k] * w[k]);
    const double absolute = 1e-9 * magnitude;
    for (std::size_t i = 0; i < vars.size(); ++i) {
      nd::NDArray& var = vars[i];
      BOOST_TEST_CONTEXT("input " << i << " " << var.shape()) {
        const nd::NDArray grad = var.grad();
        BOOST_TEST_REQUIRE(grad.shape() == var.shape());
        BOOST_TEST_REQUIRE(grad.dtype() == DType::float64);
        const Values analytic = grad.asvector<double>();
        Values x = var.asvector<double>();
        const auto set = [&] { nd::array(x, var.shape(), mx::cpu(), DType::float64).copyto(var); };
        double largest = 0;
        for (std::size_t j = 0; j < x.size(); ++j) {
          const double x0 = x[j], up = x0 + kStep, down = x0 - kStep;
          x[j] = up;
          set();
          const double f_up = objective();
          x[j] = down;
          set();
          const double f_down = objective();
          x[j] = x0;
          set();
          const double numeric = (f_up - f_down) / (up - down);
          BOOST_TEST(gradient_matches(analytic[j], numeric, absolute),
                     "element " << j << ": backward " << analytic[j] << ", finite difference " << numeric);
          largest = std::max(largest, std::abs(numeric));
        }
        // Not trivially right: the objective depends on this input.
        BOOST_TEST(largest > 1e-3, "the output does not depend on input " << i);
      }
    }
  }
}

// An op under test: inputs drawn in [low, high] and a function of them.
struct Input {
  Shape shape;
  double low = -2, high = 2;
};
using Fn = std::function<nd::NDArray(const std::vector<nd::NDArray>&)>;
struct OpCase {
  std::string name;
  std::vector<Input> inputs;
  Fn f;
};

// The inputs of c with attach_grad(), as dtype on ctx (the same values for every dtype and context).
std::vector<nd::NDArray> make_inputs(const OpCase& c, DType dtype, mx::Context ctx) {
  std::mt19937_64 engine(seed_of(c.name));
  std::vector<nd::NDArray> vars;
  for (const Input& in : c.inputs) {
    nd::NDArray v = nd::array(draw(engine, in.shape.numel(), in.low, in.high), in.shape, ctx, dtype);
    v.attach_grad();
    vars.push_back(v);
  }
  return vars;
}

void check_cases(const std::vector<OpCase>& cases) {
  for (const OpCase& c : cases) {
    const std::vector<nd::NDArray> vars = make_inputs(c, DType::float64, mx::cpu());
    check_gradient(c.name, vars, [&] { return c.f(vars); });
  }
}

// ---- the ops, in families ------------------------------------------------------------------------

std::vector<OpCase> arithmetic_cases() {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 3}, {2, 1}},
      {{2, 1}, {2, 3}}, {{2, 1}, {1, 3}}, {{2, 3, 4}, {3, 1}}, {{1}, {2, 2}}};
  for (const auto& [a, b] : shapes) {
    const std::string pair = a.tuple_str() + " with " + b.tuple_str();
    cases.push_back({"add " + pair, {{a}, {b}}, [](const auto& v) { return v[0] + v[1]; }});
    cases.push_back({"subtract " + pair, {{a}, {b}}, [](const auto& v) { return v[0] - v[1]; }});
    cases.push_back({"multiply " + pair, {{a}, {b}}, [](const auto& v) { return v[0] * v[1]; }});
    cases.push_back({"divide " + pair, {{a}, {b, 0.5, 2.0}}, [](const auto& v) { return v[0] / v[1]; }});
    cases.push_back({"divide (negative denominators) " + pair, {{a}, {b, -2.0, -0.5}},
                     [](const auto& v) { return v[0] / v[1]; }});
  }
  const Shape s{2, 3};
  cases.push_back({"array + scalar", {{s}}, [](const auto& v) { return v[0] + 2.5; }});
  cases.push_back({"scalar + array", {{s}}, [](const auto& v) { return 2.5 + v[0]; }});
  cases.push_back({"array - scalar", {{s}}, [](const auto& v) { return v[0] - 2.5; }});
  cases.push_back({"scalar - array", {{s}}, [](const auto& v) { return 2.5 - v[0]; }});
  cases.push_back({"array * scalar", {{s}}, [](const auto& v) { return v[0] * -1.5; }});
  cases.push_back({"scalar * array", {{s}}, [](const auto& v) { return -1.5 * v[0]; }});
  cases.push_back({"array / scalar", {{s}}, [](const auto& v) { return v[0] / 0.75; }});
  cases.push_back({"scalar / array", {{s, 0.5, 2.0}}, [](const auto& v) { return 0.75 / v[0]; }});
  cases.push_back({"scalar / negative array", {{s, -2.0, -0.5}}, [](const auto& v) { return 0.75 / v[0]; }});
  // Named functions as well as operators.
  cases.push_back({"nd::add/subtract/multiply/divide", {{s}, {{3}, 0.5, 2.0}}, [](const auto& v) {
                     return nd::divide(nd::multiply(nd::add(v[0], v[1]), nd::subtract(v[1], v[0])), v[1]);
                   }});
  return cases;
}

std::vector<OpCase> power_cases() {
  return {
      {"power(array, array)", {{{2, 3}, 0.5, 2.0}, {{2, 3}, -2.0, 2.0}},
       [](const auto& v) { return nd::power(v[0], v[1]); }},
      {"power(array, broadcast array)", {{{2, 3}, 0.5, 2.0}, {{3}, -2.0, 2.0}},
       [](const auto& v) { return nd::power(v[0], v[1]); }},
      {"power(broadcast array, array)", {{{2, 1}, 0.5, 2.0}, {{2, 3}, -2.0, 2.0}},
       [](const auto& v) { return nd::power(v[0], v[1]); }},
      {"power(array, 2.5)", {{{2, 3}, 0.5, 2.0}}, [](const auto& v) { return nd::power(v[0], 2.5); }},
      {"pow(array, 3)", {{{2, 3}, -2.0, 2.0}}, [](const auto& v) { return nd::pow(v[0], 3.0); }},
      {"power(1.7, array)", {{{2, 3}}}, [](const auto& v) { return nd::power(1.7, v[0]); }},
      {"power(0.6, array)", {{{2, 3}}}, [](const auto& v) { return nd::power(0.6, v[0]); }},
  };
}

std::vector<OpCase> maximum_minimum_cases() {
  return {
      {"maximum(array, array)", {{{2, 3}}, {{2, 3}}}, [](const auto& v) { return nd::maximum(v[0], v[1]); }},
      {"maximum(array, broadcast array)", {{{2, 3}}, {{3}}}, [](const auto& v) { return nd::maximum(v[0], v[1]); }},
      {"maximum(broadcast array, array)", {{{2, 1}}, {{2, 3}}}, [](const auto& v) { return nd::maximum(v[0], v[1]); }},
      {"minimum(array, array)", {{{2, 3}}, {{2, 3}}}, [](const auto& v) { return nd::minimum(v[0], v[1]); }},
      {"minimum(array, broadcast array)", {{{2, 3}}, {{2, 1}}}, [](const auto& v) { return nd::minimum(v[0], v[1]); }},
      {"minimum(broadcast array, array)", {{{3}}, {{2, 3}}}, [](const auto& v) { return nd::minimum(v[0], v[1]); }},
      {"maximum(array, 0.3)", {{{3, 3}}}, [](const auto& v) { return nd::maximum(v[0], 0.3); }},
      {"maximum(0.3, array)", {{{3, 3}}}, [](const auto& v) { return nd::maximum(0.3, v[0]); }},
      {"minimum(array, 0.3)", {{{3, 3}}}, [](const auto& v) { return nd::minimum(v[0], 0.3); }},
      {"minimum(0.3, array)", {{{3, 3}}}, [](const auto& v) { return nd::minimum(0.3, v[0]); }},
  };
}

std::vector<OpCase> unary_cases() {
  const Shape s{3, 4};
  return {
      {"negative", {{s}}, [](const auto& v) { return -v[0]; }},
      {"nd::negative", {{s}}, [](const auto& v) { return nd::negative(v[0]); }},
      {"abs", {{s}}, [](const auto& v) { return nd::abs(v[0]); }},
      {"square", {{s}}, [](const auto& v) { return nd::square(v[0]); }},
      {"sqrt", {{s, 0.2, 3.0}}, [](const auto& v) { return nd::sqrt(v[0]); }},
      {"exp", {{s}}, [](const auto& v) { return nd::exp(v[0]); }},
      {"log", {{s, 0.2, 3.0}}, [](const auto& v) { return nd::log(v[0]); }},
      {"relu", {{s}}, [](const auto& v) { return nd::relu(v[0]); }},
      {"sigmoid", {{s, -4.0, 4.0}}, [](const auto& v) { return nd::sigmoid(v[0]); }},
      {"tanh", {{s}}, [](const auto& v) { return nd::tanh(v[0]); }},
      {"softrelu", {{s, -4.0, 4.0}}, [](const auto& v) { return nd::softrelu(v[0]); }},
      {"erf", {{s, -2.5, 2.5}}, [](const auto& v) { return nd::erf(v[0]); }},
      {"gelu", {{s, -4.0, 4.0}}, [](const auto& v) { return nd::gelu(v[0]); }},
      // The NDArray methods.
      {"methods", {{s, 0.2, 3.0}}, [](const auto& v) {
         const nd::NDArray& x = v[0];
         return x.exp() + x.log() + x.sqrt() + x.abs() + x.square() + x.relu() + x.sigmoid() + x.tanh();
       }},
  };
}

std::vector<OpCase> reduction_cases() {
  std::vector<OpCase> cases;
  struct Reduction {
    std::string name;
    std::function<nd::NDArray(const nd::NDArray&, std::optional<int>, bool)> op;
  };
  const std::vector<Reduction> reductions = {
      {"sum", [](const nd::NDArray& x, std::optional<int> a, bool k) { return nd::sum(x, a, k); }},
      {"mean", [](const nd::NDArray& x, std::optional<int> a, bool k) { return nd::mean(x, a, k); }},
      {"max", [](const nd::NDArray& x, std::optional<int> a, bool k) { return nd::max(x, a, k); }},
      {"min", [](const nd::NDArray& x, std::optional<int> a, bool k) { return nd::min(x, a, k); }},
  };
  const std::vector<std::pair<Shape, std::optional<int>>> layouts = {
      {{2, 3}, std::nullopt}, {{2, 3}, 0}, {{2, 3}, 1}, {{2, 3}, -1},
      {{2, 3, 4}, std::nullopt}, {{2, 3, 4}, 1}, {{2, 3, 4}, -3}, {{5}, 0}};
  for (const auto& r : reductions) {
    for (const auto& [shape, axis] : layouts) {
      for (const bool keepdims : {false, true}) {
        const std::string name = r.name + " of " + shape.tuple_str() + " axis " +
                                 (axis ? std::to_string(*axis) : std::string("all")) +
                                 (keepdims ? " keepdims" : "");
        cases.push_back({name, {{shape}}, [op = r.op, axis = axis, keepdims](const auto& v) {
                           return op(v[0], axis, keepdims);
                         }});
      }
    }
  }
  cases.push_back({"x.sum/mean/max/min methods", {{{3, 4}}}, [](const auto& v) {
                     const nd::NDArray& x = v[0];
                     return x.sum(0) + x.mean(0) + x.max(0) * 2.0 - x.min(0) + x.sum();
                   }});
  cases.push_back({"norm", {{{3, 4}}}, [](const auto& v) { return nd::norm(v[0]); }});
  cases.push_back({"x.norm() of a vector", {{{5}}}, [](const auto& v) { return v[0].norm(); }});
  return cases;
}

std::vector<OpCase> dot_cases() {
  const auto dot = [](bool ta, bool tb) {
    return [ta, tb](const std::vector<nd::NDArray>& v) { return nd::dot(v[0], v[1], ta, tb); };
  };
  return {
      {"dot (2, 3)·(3, 4)", {{{2, 3}}, {{3, 4}}}, dot(false, false)},
      {"dot (3, 2)ᵀ·(3, 4)", {{{3, 2}}, {{3, 4}}}, dot(true, false)},
      {"dot (2, 3)·(4, 3)ᵀ", {{{2, 3}}, {{4, 3}}}, dot(false, true)},
      {"dot (3, 2)ᵀ·(4, 3)ᵀ", {{{3, 2}}, {{4, 3}}}, dot(true, true)},
      {"dot matrix·vector (2, 3)·(3,)", {{{2, 3}}, {{3}}}, dot(false, false)},
      {"dot matrixᵀ·vector (3, 2)ᵀ·(3,)", {{{3, 2}}, {{3}}}, dot(true, false)},
      {"dot vector·matrix (3,)·(3, 4)", {{{3}}, {{3, 4}}}, dot(false, false)},
      {"dot vector·matrixᵀ (3,)·(4, 3)ᵀ", {{{3}}, {{4, 3}}}, dot(false, true)},
      {"dot vector·vector (4,)·(4,)", {{{4}}, {{4}}}, dot(false, false)},
      {"dot with itself x·xᵀ", {{{3, 2}}}, [](const auto& v) { return nd::dot(v[0], v[0], false, true); }},
  };
}

std::vector<OpCase> shape_cases() {
  return {
      {"reshape (2, 3) -> (6,)", {{{2, 3}}}, [](const auto& v) { return v[0].reshape({6}); }},
      {"reshape (2, 3) -> (3, -1)", {{{2, 3}}}, [](const auto& v) { return nd::reshape(v[0], {3, -1}); }},
      {"flatten (2, 3, 2)", {{{2, 3, 2}}}, [](const auto& v) { return v[0].flatten(); }},
      {"T of (2, 3)", {{{2, 3}}}, [](const auto& v) { return v[0].T(); }},
      {"T of (1, 3) (a view)", {{{1, 3}}}, [](const auto& v) { return v[0].T() * v[0].T(); }},
      {"transpose (2, 3, 4) default", {{{2, 3, 4}}}, [](const auto& v) { return nd::transpose(v[0]); }},
      {"transpose (2, 3, 4) axes (1, 0, 2)", {{{2, 3, 4}}},
       [](const auto& v) { return nd::transpose(v[0], {1, 0, 2}); }},
      {"transpose (2, 3, 4) axes (2, 0, 1)", {{{2, 3, 4}}}, [](const auto& v) { return v[0].transpose({2, 0, 1}); }},
      {"transpose (2, 3, 4) axes (0, -1, 1)", {{{2, 3, 4}}},
       [](const auto& v) { return nd::transpose(v[0], {0, -1, 1}); }},
      {"x[1] of (3, 4)", {{{3, 4}}}, [](const auto& v) { return v[0][1]; }},
      {"x[-1] of (3, 2, 2)", {{{3, 2, 2}}}, [](const auto& v) { return v[0][-1]; }},
      {"x[2] of (4,)", {{{4}}}, [](const auto& v) { return v[0][2]; }},
      {"x[0] * x[2]", {{{3, 4}}}, [](const auto& v) { return v[0][0] * v[0][2]; }},
      {"slice(1, 3) of (4, 3)", {{{4, 3}}}, [](const auto& v) { return v[0].slice(1, 3); }},
      {"slice(0, 2) of (4, 3)", {{{4, 3}}}, [](const auto& v) { return v[0].slice(0, 2); }},
      {"slice(-2, 4) of (4, 3)", {{{4, 3}}}, [](const auto& v) { return v[0].slice(-2, 4); }},
      {"slice_axis axis 0 [1, 3) of (4, 3)", {{{4, 3}}}, [](const auto& v) { return nd::slice_axis(v[0], 0, 1, 3); }},
      {"slice_axis axis 1 [0, 2) of (2, 4)", {{{2, 4}}}, [](const auto& v) { return nd::slice_axis(v[0], 1, 0, 2); }},
      {"slice_axis axis 1 [1, 3) of (2, 4)", {{{2, 4}}}, [](const auto& v) { return nd::slice_axis(v[0], 1, 1, 3); }},
      {"slice_axis axis -1 [2, 4) of (2, 3, 4)", {{{2, 3, 4}}},
       [](const auto& v) { return nd::slice_axis(v[0], -1, 2, 4); }},
      {"slice_axis axis 1 [1, -1) of (2, 3, 4)", {{{2, 3, 4}}},
       [](const auto& v) { return nd::slice_axis(v[0], 1, 1, -1); }},
      {"concat axis 0", {{{2, 3}}, {{1, 3}}}, [](const auto& v) { return nd::concat({v[0], v[1]}, 0); }},
      {"concat axis 1 of three", {{{2, 3}}, {{2, 2}}, {{2, 1}}},
       [](const auto& v) { return nd::concat({v[0], v[1], v[2]}, 1); }},
      {"concat axis -1 of 3-D", {{{2, 2, 3}}, {{2, 2, 1}}}, [](const auto& v) { return nd::concat({v[0], v[1]}, -1); }},
      {"concat of one array twice", {{{2, 3}}}, [](const auto& v) { return nd::concat({v[0], v[0] * 2.0}, 1); }},
      {"broadcast_to (3,) -> (2, 3)", {{{3}}}, [](const auto& v) { return nd::broadcast_to(v[0], {2, 3}); }},
      {"broadcast_to (2, 1) -> (2, 3)", {{{2, 1}}}, [](const auto& v) { return nd::broadcast_to(v[0], {2, 3}); }},
      {"broadcast_to (1, 3) -> (4, 2, 3)", {{{1, 3}}}, [](const auto& v) { return nd::broadcast_to(v[0], {4, 2, 3}); }},
      {"broadcast_to (2, 1, 3) -> (2, 4, 3)", {{{2, 1, 3}}},
       [](const auto& v) { return nd::broadcast_to(v[0], {2, 4, 3}); }},
      {"astype(float64) (identity)", {{{2, 3}}}, [](const auto& v) { return v[0].astype(v[0].dtype()) * v[0]; }},
      {"copy()", {{{2, 3}}}, [](const auto& v) { return v[0].copy() * v[0]; }},
      // Strided views, and ops on them.
      {"swapaxes(0, 2) of (2, 3, 4)", {{{2, 3, 4}}}, [](const auto& v) { return nd::swapaxes(v[0], 0, 2); }},
      {"x.swapaxes(-1, 0) * x.T()", {{{3, 2}}}, [](const auto& v) { return v[0].swapaxes(-1, 0) * v[0].T(); }},
      {"slice(0, 5, 2) of (5, 3)", {{{5, 3}}}, [](const auto& v) { return v[0].slice(0, 5, 2); }},
      {"slice(1, -1, 3) of (8, 2)", {{{8, 2}}}, [](const auto& v) { return v[0].slice(1, -1, 3); }},
      {"slice(0, 4, 2) of a T view of (3, 4)", {{{3, 4}}}, [](const auto& v) { return v[0].T().slice(0, 4, 2); }},
      {"T()[1] of (3, 4) (a strided row)", {{{3, 4}}}, [](const auto& v) { return v[0].T()[1]; }},
      {"broadcast_to of a T view (2, 3) -> (2, 3, 2)", {{{2, 3}}},
       [](const auto& v) { return nd::broadcast_to(v[0].T(), {2, 3, 2}); }},
      {"reshape of a T view (copies)", {{{2, 3}}}, [](const auto& v) { return v[0].T().reshape({6}) * 2.0; }},
      {"contiguous() of a T view", {{{2, 3}}}, [](const auto& v) { return v[0].T().contiguous() * v[0].T(); }},
      {"sum(0) of a T view", {{{2, 3}}}, [](const auto& v) { return v[0].T().sum(0); }},
      {"exp of a stepped slice", {{{4, 2}}}, [](const auto& v) { return nd::exp(v[0].slice(1, 4, 2)); }},
      {"dot of T views", {{{3, 2}}, {{4, 3}}}, [](const auto& v) { return nd::dot(v[0].T(), v[1].T()); }},
      {"T view + broadcast_to view", {{{3, 2}}, {{3}}},
       [](const auto& v) { return v[0].T() + nd::broadcast_to(v[1], {2, 3}); }},
      // pick: the index is a constant (it gets no gradient); clipped, wrapped and kept as extent 1.
      {"pick axis 1 of (3, 4)", {{{3, 4}}},
       [](const auto& v) { return nd::pick(v[0], nd::array({1, 3, -2}, v[0].context()), 1); }},
      {"pick axis 0 of (3, 4), keepdims, wrap", {{{3, 4}}},
       [](const auto& v) { return nd::pick(v[0], nd::array({{-1, 4, 2, 0}}, v[0].context()), 0, true, "wrap"); }},
      {"pick axis 1 of (2, 3, 2) * x", {{{2, 3, 2}}, {{2, 2}}}, [](const auto& v) {
         return nd::pick(v[0], nd::array({{2, 0}, {1, 1}}, v[0].context(), DType::int32), 1) * v[1];
       }},
  };
}

// The indexing, shape and sort ops: indices, lengths and conditions are constants (they get no
// gradient); sorted inputs are continuous draws, so ties have probability 0.
std::vector<OpCase> indexing_shape_sort_cases() {
  const auto ints = [](const nd::NDArray& like, std::initializer_list<nd::Scalar> v) {
    return nd::array(v, like.context(), DType::int32);
  };
  return {
      {"take rows (4, 3) with repeats and a clipped index", {{{4, 3}}},
       [](const auto& v) { return nd::take(v[0], nd::array({3, 0, 3, 9}, v[0].context())); }},
      {"take axis 1 of (2, 3, 2), wrap", {{{2, 3, 2}}},
       [ints](const auto& v) { return nd::take(v[0], ints(v[0], {-1, 1, 2, 2}), 1, "wrap"); }},
      {"Embedding (5, 3) with repeated ids", {{{5, 3}}},
       [](const auto& v) { return nd::Embedding(nd::array({{1, 4}, {1, 0}}, v[0].context()), v[0], 5, 3); }},
      {"where (3, 2)", {{{3, 2}}, {{3, 2}}},
       [](const auto& v) { return nd::where(nd::array({{1, 0}, {0, 2}, {1, 1}}, v[0].context()), v[0], v[1]); }},
      {"where by rows", {{{3, 2}}, {{3, 2}}},
       [](const auto& v) { return nd::where(nd::array({0, 1, 0}, v[0].context()), v[0] * v[1], v[1]); }},
      {"clip (3, 4) to [-1, 0.5]", {{{3, 4}}}, [](const auto& v) { return nd::clip(v[0], -1, 0.5) * v[0]; }},
      {"SequenceMask (3, 2, 2) with lengths", {{{3, 2, 2}}},
       [](const auto& v) { return nd::SequenceMask(v[0], nd::array({2, 1}, v[0].context()), true, 5); }},
      {"SequenceMask (2, 3, 2) batch first", {{{2, 3, 2}}},
       [](const auto& v) { return nd::SequenceMask(v[0], nd::array({3, 1}, v[0].context()), true, 0, 1) * v[0]; }},
      {"SequenceLast (3, 2, 2) with lengths", {{{3, 2, 2}}},
       [ints](const auto& v) { return nd::SequenceLast(v[0], ints(v[0], {2, 3}), true); }},
      {"SequenceLast (2, 3) batch first", {{{2, 3}}}, [](const auto& v) { return nd::SequenceLast(v[0], {}, false, 1); }},
      {"SequenceReverse (3, 2, 2) with lengths", {{{3, 2, 2}}},
       [](const auto& v) { return nd::SequenceReverse(v[0], nd::array({2, 3}, v[0].context()), true) * v[0]; }},
      {"stack axis 1", {{{2, 3}}, {{2, 3}}}, [](const auto& v) { return nd::stack({v[0], v[1] * v[0]}, 1); }},
      {"split into 3, two parts used", {{{2, 6}}}, [](const auto& v) {
         const auto p = nd::split(v[0], 3);
         return p[0] * p[2] + p[2];
       }},
      {"split axis 0 squeezed", {{{2, 3}}}, [](const auto& v) { return nd::split(v[0], 2, 0, true)[1] * 3.0; }},
      {"squeeze and expand_dims", {{{1, 3, 1}}},
       [](const auto& v) { return nd::expand_dims(nd::squeeze(v[0]), 0) * nd::squeeze(v[0], {0}).reshape({1, 3}); }},
      {"tile (2, 3) by (2, 1, 2)", {{{2, 3}}}, [](const auto& v) { return nd::tile(v[0], {2, 1, 2}); }},
      {"repeat axis 1", {{{2, 3}}}, [](const auto& v) { return nd::repeat(v[0], 2, 1) * nd::repeat(v[0], 2, 1); }},
      {"repeat flattened", {{{2, 2}}}, [](const auto& v) { return nd::repeat(v[0], 3); }},
      {"reverse axes (0, 2)", {{{2, 3, 2}}}, [](const auto& v) { return nd::flip(v[0], {0, 2}) * v[0]; }},
      {"topk values k=2 along axis 0", {{{4, 3}}}, [](const auto& v) { return nd::topk(v[0], 0, 2, "value"); }},
      {"topk both, flattened, ascending", {{{2, 3}}},
       [](const auto& v) { return nd::topk_both(v[0], std::nullopt, 4, true)[0]; }},
      {"sort axis -1 descending", {{{3, 4}}}, [](const auto& v) { return nd::sort(v[0], -1, false) * v[0]; }},
  };
}

// x -> (on ctx: exp(x) * x) -> back to x's context; ctx = x's context makes plain copies.
std::vector<OpCase> copyto_cases(mx::Context ctx) {
  return {
      {"copyto " + ctx.str() + " and back", {{{2, 3}}, {{3}}}, [ctx](const auto& v) {
         const mx::Context home = v[0].context();
         const nd::NDArray x = v[0].copyto(ctx), y = v[1].as_in_context(ctx);
         return (nd::exp(x) * y).copyto(home) + v[0];
       }},
  };
}

std::vector<OpCase> softmax_cases() {
  return {
      {"softmax (3, 4)", {{{3, 4}, -3.0, 3.0}}, [](const auto& v) { return nd::softmax(v[0]); }},
      {"softmax (3, 4) axis 0", {{{3, 4}, -3.0, 3.0}}, [](const auto& v) { return nd::softmax(v[0], 0); }},
      {"softmax (2, 3, 4) axis 1", {{{2, 3, 4}, -3.0, 3.0}}, [](const auto& v) { return nd::softmax(v[0], 1); }},
      {"log_softmax (3, 4)", {{{3, 4}, -3.0, 3.0}}, [](const auto& v) { return nd::log_softmax(v[0]); }},
      {"log_softmax (3, 4) axis 0", {{{3, 4}, -3.0, 3.0}}, [](const auto& v) { return nd::log_softmax(v[0], 0); }},
      {"log_softmax (2, 3, 4) axis -2", {{{2, 3, 4}, -3.0, 3.0}},
       [](const auto& v) { return nd::log_softmax(v[0], -2); }},
      {"softmax of large logits", {{{2, 3}, 98.0, 101.0}}, [](const auto& v) { return nd::softmax(v[0]); }},
      {"softmax (2, 40) (rows longer than a warp)", {{{2, 40}, -3.0, 3.0}},
       [](const auto& v) { return nd::softmax(v[0]); }},
      {"log_softmax (2, 40) (rows longer than a warp)", {{{2, 40}, -3.0, 3.0}},
       [](const auto& v) { return nd::log_softmax(v[0]); }},
  };
}

// A composition of many ops, as a model would chain them.
std::vector<OpCase> composite_cases() {
  return {
      {"mlp by hand", {{{4, 3}}, {{5, 3}}, {{5}}, {{2, 5}}}, [](const auto& v) {
         const nd::NDArray hidden = nd::tanh(nd::dot(v[0], v[1], false, true) + v[2]);  // (4, 5)
         return nd::log_softmax(nd::dot(hidden, v[3], false, true));                    // (4, 2)
       }},
      {"normalise rows", {{{3, 4}, 0.5, 2.0}}, [](const auto& v) {
         const nd::NDArray centred = v[0] - v[0].mean(1, true);
         return centred / nd::sqrt(nd::square(centred).mean(1, true) + 0.1);
       }},
      {"variable used in many places", {{{2, 3}}, {{3}}}, [](const auto& v) {
         return nd::sigmoid(v[0] * v[1]) * v[0] + nd::concat({v[0], nd::broadcast_to(v[1], {1, 3})}, 0).sum(0) + v[1];
       }},
  };
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> all;
  for (auto family : {arithmetic_cases(), power_cases(), maximum_minimum_cases(), unary_cases(), reduction_cases(),
                      dot_cases(), shape_cases(), softmax_cases(), composite_cases(), indexing_shape_sort_cases()}) {
    all.insert(all.end(), family.begin(), family.end());
  }
  return all;
}

// ---- float32 on one context -----------------------------------------------------------------------

std::vector<double> concat_values(const std::vector<std::vector<double>>& parts) {
  std::vector<double> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// The output of c and the gradients of sum(out * w) with respect to each input, float32 on ctx.
std::vector<std::vector<double>> run_float32(const OpCase& c, mx::Context ctx) {
  const std::vector<nd::NDArray> vars = make_inputs(c, DType::float32, ctx);
  nd::NDArray out;
  {
    auto scope = ag::record();
    out = c.f(vars);
    const Values w = output_weights(out.size());
    (out * nd::array(w, out.shape(), out.context(), DType::float32)).sum().backward();
  }
  std::vector<std::vector<double>> results{out.asvector<double>()};
  for (const nd::NDArray& v : vars) results.push_back(v.grad().asvector<double>());
  return results;
}

// Dense layers with float64 parameters set to deterministic values (load_init takes the dtype of
// the value), on cpu(0).
void set_float64_parameters(nn::Dense& layer, std::int64_t in_units, std::mt19937_64& engine) {
  layer.initialize(mx::init::Zero(), mx::cpu());
  const std::int64_t units = layer.units();
  const Values weight = draw(engine, units * in_units, -1, 1);
  layer.weight().load_init(nd::array(weight, {units, in_units}, mx::cpu(), DType::float64), {mx::cpu()});
  if (layer.collect_params().size() > 1) {  // use_bias
    layer.bias().load_init(nd::array(draw(engine, units, -1, 1), {units}, mx::cpu(), DType::float64), {mx::cpu()});
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(autograd)

// ---- gradients against finite differences (float64, cpu(0)) ----------------------------------------

BOOST_AUTO_TEST_CASE(checker_tolerance_rejects_a_gradient_off_by_a_thousandth) {
  // The comparison the checker makes: backward's gradient of sum(x² * w) passes, the same gradient
  // off by 0.1% does not.
  nd::NDArray x = nd::array({0.5, -1.2, 2.0}, mx::cpu(), DType::float64);
  x.attach_grad();
  const Values w = output_weights(3);
  {
    auto scope = ag::record();
    (nd::square(x) * nd::array(w, {3}, mx::cpu(), DType::float64)).sum().backward();
  }
  const Values g = x.grad().asvector<double>(), xv = x.asvector<double>();
  for (std::size_t j = 0; j < 3; ++j) {
    const double up = xv[j] + kStep, down = xv[j] - kStep;
    const double numeric = (up * up - down * down) * w[j] / (up - down);
    BOOST_TEST(gradient_matches(g[j], numeric, 1e-8));
    BOOST_TEST(!gradient_matches(g[j] * 1.001, numeric, 1e-8));
    BOOST_TEST(!gradient_matches(g[j] + 1e-5, numeric, 1e-8));
  }
}

BOOST_AUTO_TEST_CASE(arithmetic_with_broadcasting_and_scalars) { check_cases(arithmetic_cases()); }
BOOST_AUTO_TEST_CASE(power_of_both_operands) { check_cases(power_cases()); }
BOOST_AUTO_TEST_CASE(maximum_and_minimum) { check_cases(maximum_minimum_cases()); }
BOOST_AUTO_TEST_CASE(unary_functions) { check_cases(unary_cases()); }
BOOST_AUTO_TEST_CASE(reductions_and_norm) { check_cases(reduction_cases()); }
BOOST_AUTO_TEST_CASE(dot_in_every_transpose_combination) { check_cases(dot_cases()); }
BOOST_AUTO_TEST_CASE(reshape_transpose_index_slice_concat_broadcast_astype) { check_cases(shape_cases()); }
BOOST_AUTO_TEST_CASE(softmax_and_log_softmax) { check_cases(softmax_cases()); }
BOOST_AUTO_TEST_CASE(compositions) { check_cases(composite_cases()); }
BOOST_AUTO_TEST_CASE(indexing_shape_and_sort_ops) { check_cases(indexing_shape_sort_cases()); }

BOOST_AUTO_TEST_CASE(copyto_across_contexts) {
  // cpu(0) -> ctx -> cpu(0) for every context (on cpu(0) itself: plain copies).
  for (const mx::Context ctx : ndg_test::all_contexts()) check_cases(copyto_cases(ctx));
}

BOOST_AUTO_TEST_CASE(dense_forward_with_and_without_activation) {
  std::mt19937_64 engine(7);
  for (const std::string activation : {"", "relu", "sigmoid", "tanh", "softrelu"}) {
    for (const bool use_bias : {true, false}) {
      nn::Dense layer(4, activation, use_bias, 3);
      set_float64_parameters(layer, 3, engine);
      nd::NDArray x = nd::array(draw(engine, 5 * 3, -2, 2), {5, 3}, mx::cpu(), DType::float64);
      x.attach_grad();
      std::vector<nd::NDArray> vars{x, layer.weight().data(mx::cpu())};
      if (use_bias) vars.push_back(layer.bias().data(mx::cpu()));
      check_gradient("Dense(4, \"" + activation + "\", use_bias=" + (use_bias ? "true" : "false") + ")", vars,
                     [&] { return layer(x); });
    }
  }
  // A (batch, 2, 3) input is flattened to (batch, 6).
  nn::Dense layer(2, "tanh", true, 6);
  set_float64_parameters(layer, 6, engine);
  nd::NDArray x = nd::array(draw(engine, 4 * 6, -1, 1), {4, 2, 3}, mx::cpu(), DType::float64);
  x.attach_grad();
  check_gradient("Dense on a 3-D input", {x, layer.weight().data(mx::cpu()), layer.bias().data(mx::cpu())},
                 [&] { return layer(x); });
}

BOOST_AUTO_TEST_CASE(sequential_with_softmax_cross_entropy) {
  std::mt19937_64 engine(11);
  nn::Sequential net;
  nn::Dense hidden(5, "relu", true, 3), out(3, "", true, 5);
  net.add(hidden, out);
  set_float64_parameters(hidden, 3, engine);
  set_float64_parameters(out, 5, engine);
  nd::NDArray x = nd::array(draw(engine, 4 * 3, -2, 2), {4, 3}, mx::cpu(), DType::float64);
  x.attach_grad();
  const nd::NDArray label = nd::array({0, 2, 1, 2}, mx::cpu(), DType::float64);
  const mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  check_gradient("Sequential + SoftmaxCrossEntropyLoss",
                 {x, hidden.weight().data(mx::cpu()), hidden.bias().data(mx::cpu()), out.weight().data(mx::cpu()),
                  out.bias().data(mx::cpu())},
                 [&] { return loss(net(x), label); });
}

// ---- GPU gradients against cpu(0) (float32) --------------------------------------------------------

BOOST_AUTO_TEST_CASE(gpu_gradients_of_every_op_match_cpu, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (int i = 0; i < mx::num_gpus(); ++i) {
    const mx::Context gpu = mx::gpu(i);
    BOOST_TEST_CONTEXT("on " << gpu.str()) {
      std::vector<OpCase> cases = all_cases();
      const auto across = copyto_cases(gpu == mx::gpu(0) && mx::num_gpus() > 1 ? mx::gpu(1) : mx::cpu());
      cases.insert(cases.end(), across.begin(), across.end());
      for (const OpCase& c : cases) {
        BOOST_TEST_CONTEXT(c.name) {
          const auto on_cpu = run_float32(c, mx::cpu());
          const auto on_gpu = run_float32(c, gpu);
          BOOST_TEST_REQUIRE(on_gpu.size() == on_cpu.size());
          BOOST_TEST(ndg_test::relative_error(on_gpu[0], on_cpu[0]) < 1e-5, "output");
          for (std::size_t k = 1; k < on_cpu.size(); ++k) {
            BOOST_TEST(ndg_test::relative_error(on_gpu[k], on_cpu[k]) < 1e-5, "gradient of input " << k - 1);
          }
          BOOST_TEST(std::sqrt(dot_values(concat_values(on_cpu), concat_values(on_cpu))) > 1e-3);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gpu_gradients_of_an_mlp_match_cpu, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const std::int64_t batch = 8, in = 6;
  std::mt19937_64 engine(3);
  const Values x_values = draw(engine, batch * in, -2, 2);
  const nd::NDArray labels_host = nd::array({0, 3, 1, 2, 3, 0, 1, 2}, mx::cpu());
  for (int i = 0; i < mx::num_gpus(); ++i) {
    const mx::Context gpu = mx::gpu(i);
    BOOST_TEST_CONTEXT("on " << gpu.str()) {
      nn::Sequential net;
      net.add(nn::Dense(16, "relu", true, in), nn::Dense(8, "tanh", true, 16), nn::Dense(4, "", true, 8));
      // One set of values on both contexts.
      net.initialize(mx::init::Zero(), std::vector<mx::Context>{mx::cpu(), gpu});
      for (auto& [name, param] : net.collect_params()) {
        const Values values = draw(engine, param.shape().numel(), -0.8, 0.8);
        param.set_data(nd::array(values, param.shape(), mx::cpu(), DType::float32));
      }
      const mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
      const auto gradients_on = [&](mx::Context ctx) {
        nd::NDArray x = nd::array(x_values, {batch, in}, ctx, DType::float32);
        x.attach_grad();
        {
          auto scope = ag::record();
          loss(net(x), labels_host.copyto(ctx)).backward();
        }
        std::vector<Values> grads{x.grad().asvector<double>()};
        for (auto& [name, param] : net.collect_params()) grads.push_back(param.grad(ctx).asvector<double>());
        return grads;
      };
      const auto on_cpu = gradients_on(mx::cpu());
      const auto on_gpu = gradients_on(gpu);
      BOOST_TEST_REQUIRE(on_gpu.size() == on_cpu.size());
      for (std::size_t k = 0; k < on_cpu.size(); ++k) {
        BOOST_TEST(ndg_test::relative_error(on_gpu[k], on_cpu[k]) < 1e-5, "gradient " << k);
        BOOST_TEST(std::sqrt(dot_values(on_cpu[k], on_cpu[k])) > 1e-4, "gradient " << k << " is zero");
      }
    }
  }
}

// ---- semantics ---------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(record_and_pause_nest) {
  BOOST_TEST(!ag::is_recording());
  BOOST_TEST(!ag::is_training());
  {
    auto recording = ag::record();
    BOOST_TEST(ag::is_recording());
    BOOST_TEST(ag::is_training());
    {
      auto paused = ag::pause();
      BOOST_TEST(!ag::is_recording());
      BOOST_TEST(!ag::is_training());
      {
        auto inner = ag::record(false);
        BOOST_TEST(ag::is_recording());
        BOOST_TEST(!ag::is_training());
      }
      BOOST_TEST(!ag::is_recording());
      BOOST_TEST(!ag::is_training());
    }
    BOOST_TEST(ag::is_recording());
    BOOST_TEST(ag::is_training());
    {
      auto paused = ag::pause(true);
      BOOST_TEST(!ag::is_recording());
      BOOST_TEST(ag::is_training());
    }
    {
      auto predicting = ag::predict_mode();
      BOOST_TEST(ag::is_recording());
      BOOST_TEST(!ag::is_training());
      auto training = ag::train_mode();
      BOOST_TEST(ag::is_recording());
      BOOST_TEST(ag::is_training());
    }
    BOOST_TEST(ag::is_recording());
    BOOST_TEST(ag::is_training());
  }
  BOOST_TEST(!ag::is_recording());
  BOOST_TEST(!ag::is_training());
  {
    auto training = ag::train_mode();
    BOOST_TEST(!ag::is_recording());
    BOOST_TEST(ag::is_training());
  }
  BOOST_TEST(!ag::is_training());
}

BOOST_AUTO_TEST_CASE(ops_under_pause_or_outside_record_are_constants) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    x.attach_grad();
    const nd::NDArray outside = x * 2.0;  // not recorded: a constant [2, 4, 6]
    BOOST_TEST(!outside.autograd_node());
    {
      auto scope = ag::record();
      nd::NDArray paused;
      {
        auto p = ag::pause();
        paused = x * x;  // not recorded: a constant [1, 4, 9]
      }
      BOOST_TEST(!paused.autograd_node());
      const nd::NDArray y = outside * x + paused * x;  // d/dx = outside + paused
      BOOST_TEST(static_cast<bool>(y.autograd_node()));
      y.backward();
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{3, 8, 15}), tt::per_element());
    // A backward of the unrecorded result is an error that says what to do.
    NDG_CHECK_THROWS_WITH(outside.backward(), mx::Error, "backward", "record");
    // Arrays without attach_grad are never recorded.
    const nd::NDArray plain = nd::array({1, 2}, ctx);
    auto scope = ag::record();
    BOOST_TEST(!(plain * plain).autograd_node());
  });
}

// Note [zero gradients]: ops without a gradient (MXNet registers them with MakeZeroGradNodes) are
// recorded all the same, and their inputs get zero: a "write" gradient is overwritten with 0, an
// "add" one keeps its value, and a head with a differentiable branch gets that branch's gradient.
BOOST_AUTO_TEST_CASE(ops_without_a_gradient_are_recorded_with_zero) {
  ndg_test::for_each_context([](mx::Context ctx) {
    using Fn = std::function<nd::NDArray(const nd::NDArray&)>;
    const std::vector<std::pair<std::string, Fn>> zero_grad_ops{
        {"sign", [](const nd::NDArray& v) { return nd::sign(v); }},
        {"equal", [](const nd::NDArray& v) { return nd::equal(v, v * 2.0); }},
        {"not_equal", [](const nd::NDArray& v) { return nd::not_equal(v, v * 2.0); }},
        {"greater", [](const nd::NDArray& v) { return nd::greater(v, v * 0.5); }},
        {"greater_equal", [](const nd::NDArray& v) { return nd::greater_equal(v, v * 0.5); }},
        {"less", [](const nd::NDArray& v) { return nd::lesser(v, v * 0.5); }},
        {"less_equal", [](const nd::NDArray& v) { return nd::lesser_equal(v, v * 0.5); }},
        {"_greater_scalar", [](const nd::NDArray& v) { return v > 0.5; }},
        {"_equal_scalar", [](const nd::NDArray& v) { return v == 2.0; }},
        {"argmax", [](const nd::NDArray& v) { return nd::argmax(v); }},
        {"argmin along an axis", [](const nd::NDArray& v) { return nd::argmin(v.reshape({2, 2}), 1); }},
        {"one_hot", [](const nd::NDArray& v) { return nd::one_hot(nd::abs(v), 4); }},
    };
    for (const auto& [name, f] : zero_grad_ops) {
      BOOST_TEST_CONTEXT(name << " on " << ctx) {
        nd::NDArray x = nd::array({-1.5, 0.5, 2, 3}, ctx);
        x.attach_grad();
        x.grad().fill(7);
        nd::NDArray y;
        {
          auto scope = ag::record();
          y = f(x).sum();
        }
        BOOST_TEST(static_cast<bool>(y.autograd_node()));
        y.backward();  // threw "was not computed inside autograd::record()" before
        BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{0, 0, 0, 0}), tt::per_element());
        // autograd::grad gives zeros too.
        const std::vector<nd::NDArray> g = ag::grad(y, {x});
        BOOST_TEST(g.at(0).asvector<float>() == (std::vector<float>{0, 0, 0, 0}), tt::per_element());
      }
    }
    // Mixed heads: d/dx (sign(x) * x + x * x + (x > 0)) = sign(x) + 2x.
    nd::NDArray x = nd::array({-1.5, 0.5, 2, 3}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray s = nd::sign(x);
      (s * x + x * x + (x > 0.0)).sum().backward();
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{-4, 2, 5, 7}), tt::per_element());
    // grad_req "add": a zero gradient leaves the buffer as it was.
    nd::NDArray a = nd::array({1, 2}, ctx);
    a.attach_grad("add");
    a.grad().fill(3);
    {
      auto scope = ag::record();
      nd::equal(a, a).sum().backward();
    }
    BOOST_TEST(a.grad().asvector<float>() == (std::vector<float>{3, 3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(grad_req_write_overwrites_and_add_accumulates) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray w = nd::array({1, -2, 3}, ctx), a = nd::array({1, -2, 3}, ctx);
    w.attach_grad();         // "write"
    a.attach_grad("add");
    BOOST_TEST(w.grad().asvector<float>() == (std::vector<float>{0, 0, 0}), tt::per_element());
    for (int pass = 0; pass < 2; ++pass) {
      auto scope = ag::record();
      (w * w).sum().backward();  // 2w
      (a * a).sum().backward();  // 2a, added
    }
    BOOST_TEST(w.grad().asvector<float>() == (std::vector<float>{2, -4, 6}), tt::per_element());
    BOOST_TEST(a.grad().asvector<float>() == (std::vector<float>{4, -8, 12}), tt::per_element());
    // A third pass with another function: write shows only it, add keeps adding.
    {
      auto scope = ag::record();
      (w * 5.0).sum().backward();
      (a * 5.0).sum().backward();
    }
    BOOST_TEST(w.grad().asvector<float>() == (std::vector<float>{5, 5, 5}), tt::per_element());
    BOOST_TEST(a.grad().asvector<float>() == (std::vector<float>{9, -3, 17}), tt::per_element());
    NDG_CHECK_THROWS_WITH(a.attach_grad("sum"), mx::ValueError, "grad_req", "sum");
  });
}

// 60 leaves (more than one batch of leaf writes holds on a GPU) of odd sizes, in float32 and
// float64, one of them a strided view's buffer: each gets its own gradient, k * x_k.
BOOST_AUTO_TEST_CASE(many_leaves_each_get_their_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        std::vector<nd::NDArray> xs;
        for (int k = 0; k < 60; ++k) {
          xs.push_back(nd::arange(0, 1 + (k * 7) % 23, 1, ctx, dt));
          xs.back().attach_grad();
        }
        const nd::NDArray base = nd::zeros({2, 3}, ctx, dt);
        nd::NDArray y = nd::arange(1, 7, 1, ctx, dt).reshape({3, 2});
        ag::mark_variable(y, base.T());  // a strided gradient buffer: written through the view
        {
          auto scope = ag::record();
          nd::NDArray total = (y * y).sum();
          for (int k = 0; k < 60; ++k) total = total + (xs[static_cast<std::size_t>(k)] * xs[static_cast<std::size_t>(k)]).sum() * (k / 2.0);
          total.backward();
        }
        for (int k = 0; k < 60; ++k) {
          const Values x = xs[static_cast<std::size_t>(k)].asvector<double>();
          const Values g = xs[static_cast<std::size_t>(k)].grad().asvector<double>();
          Values want(x.size());
          for (std::size_t i = 0; i < x.size(); ++i) want[i] = k * x[i];
          BOOST_TEST_CONTEXT("leaf " << k) { BOOST_TEST(g == want, tt::per_element()); }
        }
        BOOST_TEST(y.grad().asvector<double>() == (Values{2, 4, 6, 8, 10, 12}), tt::per_element());
        BOOST_TEST(base.asvector<double>() == (Values{2, 6, 10, 4, 8, 12}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(backward_with_a_head_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray y = x * x * 3.0;  // dy/dx = 6x
      y.backward(nd::array({{1, 0.5}, {-1, 2}}, ctx));
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{6, 6, -18, 48}), tt::per_element());
    // The default head gradient is ones.
    {
      auto scope = ag::record();
      (x * x * 3.0).backward();
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{6, 12, 18, 24}), tt::per_element());
    // A head gradient of another shape is an error.
    auto scope = ag::record();
    const nd::NDArray y = x * 2.0;
    NDG_CHECK_THROWS_WITH(y.backward(nd::ones({4}, ctx)), mx::ShapeError, "(4,)", "(2, 2)");
    // So is one of another dtype, named before any gradient is written.
    NDG_CHECK_THROWS_WITH(y.backward(nd::ones({2, 2}, ctx, DType::float64)), mx::DTypeError, "backward", "float64",
                          "float32");
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{6, 12, 18, 24}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(zero_dim_operands_get_their_summed_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // s is 0-d: it broadcasts against x, and its gradient is summed over every element.
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    nd::NDArray s = nd::full(Shape{}, 2.0, ctx);
    x.attach_grad();
    s.attach_grad();
    {
      auto scope = ag::record();
      (x * s).sum().backward();
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{2, 2, 2}), tt::per_element());
    BOOST_TEST(s.grad().shape() == Shape{});
    BOOST_TEST(s.grad().asvector<float>() == (std::vector<float>{6}), tt::per_element());  // 1 + 2 + 3
    {
      auto scope = ag::record();
      (nd::broadcast_to(s, {2, 2}) * 3.0).sum().backward();
    }
    BOOST_TEST(s.grad().asvector<float>() == (std::vector<float>{12}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(dot_with_an_empty_inner_dimension_is_recorded) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::zeros({2, 0}, ctx), b = nd::zeros({0, 3}, ctx);
    a.attach_grad();
    b.attach_grad();
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = nd::dot(a, b);
      y.sum().backward();
    }
    BOOST_TEST(y.asvector<float>() == std::vector<float>(6, 0.0f), tt::per_element());
    BOOST_TEST(a.grad().shape() == (Shape{2, 0}));
    BOOST_TEST(b.grad().shape() == (Shape{0, 3}));
  });
}

BOOST_AUTO_TEST_CASE(grad_without_attach_grad_throws) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.grad(), mx::Error, "attach_grad", "(3,)");
    // A computed (non-leaf) array has no gradient either.
    nd::NDArray v = nd::array({1, 2, 3}, ctx);
    v.attach_grad();
    auto scope = ag::record();
    NDG_CHECK_THROWS_WITH((v * 2.0).grad(), mx::Error, "attach_grad");
  });
}

BOOST_AUTO_TEST_CASE(backward_of_an_unrecorded_array_throws) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    x.attach_grad();
    const nd::NDArray y = (x * x).sum();  // outside record()
    NDG_CHECK_THROWS_WITH(y.backward(), mx::Error, "record");
    const nd::NDArray plain = nd::array({1, 2}, ctx);
    NDG_CHECK_THROWS_WITH(plain.backward(), mx::Error, "record");
    NDG_CHECK_THROWS_WITH(mx::autograd::backward(nd::NDArray()), mx::Error, "backward");
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{0, 0, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_update_of_a_recorded_array_throws_while_recording) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      nd::NDArray y = x * 2.0;
      NDG_CHECK_THROWS_WITH(y += 1.0, mx::Error, "in place", "recording");
      NDG_CHECK_THROWS_WITH(y += nd::ones({3}, ctx), mx::Error, "in place", "recording");
      NDG_CHECK_THROWS_WITH(y *= 2.0, mx::Error, "in place", "recording");
      NDG_CHECK_THROWS_WITH(x -= nd::ones({3}, ctx), mx::Error, "in place", "recording");
      // Nothing was changed, and the gradient is still right.
      BOOST_TEST(y.asvector<float>() == (std::vector<float>{2, 4, 6}), tt::per_element());
      (y * x).sum().backward();  // d/dx 2x² = 4x
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{4, 8, 12}), tt::per_element());
    // Outside record() (an optimizer's update), and on unrecorded arrays, in place is fine.
    x += 1.0;
    BOOST_TEST(x.asvector<float>() == (std::vector<float>{2, 3, 4}), tt::per_element());
    auto scope = ag::record();
    nd::NDArray plain = nd::array({1, 1}, ctx);
    plain += 1.0;
    BOOST_TEST(plain.asvector<float>() == (std::vector<float>{2, 2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(detach_stops_gradients) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, -2, 0.5}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray y = x * x;
      const nd::NDArray d = y.detach();
      BOOST_TEST(!d.autograd_node());
      BOOST_TEST(d.asvector<float>() == y.asvector<float>(), tt::per_element());
      (d * x + y).backward();  // x²(const)·x + x²: d/dx = x² + 2x
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{3, 0, 1.25}), tt::per_element());
    {
      auto scope = ag::record();
      (x.detach() * x.detach() + x).backward();  // only the last term
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{1, 1, 1}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(a_variable_used_twice_accumulates_both_paths) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, -2, 3}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      (x * x + x).backward();  // 2x + 1
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{3, -3, 7}), tt::per_element());
    {
      auto scope = ag::record();
      const nd::NDArray y = x * x;  // one node used by two consumers
      (y * x + y).sum().backward();  // x³ + x²: 3x² + 2x
    }
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{5, 8, 33}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(astype_passes_the_gradient_back_in_the_source_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({0.5, -1.25, 3}, ctx, DType::float64);
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray y = x.astype(DType::float32);
      BOOST_TEST(y.dtype() == DType::float32);
      (y * y * 2.0).sum().backward();  // 4x
    }
    BOOST_TEST(x.grad().dtype() == DType::float64);
    BOOST_TEST(x.grad().asvector<double>() == (Values{2, -5, 12}), tt::per_element());
  });
}

// FullyConnected and Convolution compute a "write" variable's gradient straight into its buffer
// (op::gradient_into): the values are autograd::grad's (fresh arrays, no buffer written), the
// buffers stay the same, and a head gradient that is itself one of those buffers is read before
// that buffer is overwritten.
BOOST_AUTO_TEST_CASE(gradients_written_into_the_variables_buffers_match_fresh_ones) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const auto run = [&](const std::function<nd::NDArray(const std::vector<nd::NDArray>&)>& f,
                         std::vector<nd::NDArray> vars, const nd::NDArray& head) {
      for (nd::NDArray& v : vars) v.attach_grad();
      std::vector<nd::NDArray> fresh;
      {
        auto scope = ag::record();
        fresh = ag::grad(f(vars), vars, head);
      }
      for (const nd::NDArray& v : vars) BOOST_TEST(nd::abs(v.grad()).sum().asscalar<double>() == 0.0);
      std::vector<const void*> buffers;
      for (const nd::NDArray& v : vars) buffers.push_back(v.grad().data());
      // Twice: the second head gradient is the weight's own gradient buffer, holding head.
      for (int pass = 0; pass < 2; ++pass) {
        nd::NDArray h = head;
        if (pass == 1) {
          nd::NDArray w_grad = vars[1].grad();
          h = head.copyto(w_grad);
        }
        {
          auto scope = ag::record();
          const nd::NDArray y = f(vars);
          y.backward(h);
        }
        for (std::size_t i = 0; i < vars.size(); ++i) {
          BOOST_TEST_CONTEXT("pass " << pass << ", variable " << i) {
            BOOST_TEST(vars[i].grad().data() == buffers[i]);
            BOOST_TEST(vars[i].grad().asvector<float>() == fresh[i].asvector<float>(), tt::per_element());
          }
        }
      }
    };
    // (3, 3) data, weight and output, so that the head gradient fits the weight's buffer.
    const Values nine = {0.5, -1, 2, 1.5, 0.25, -0.75, 3, -2, 1};
    run([](const std::vector<nd::NDArray>& v) { return nd::FullyConnected(v[0], v[1], v[2], 3); },
        {nd::array(nine, {3, 3}, ctx), nd::array(Values{1, 0.5, -1, 2, -0.5, 0.25, -1.5, 1, 0.75}, {3, 3}, ctx),
         nd::array(Values{0.1, -0.2, 0.3}, {3}, ctx)},
        nd::array(Values{1, -1, 0.5, 2, 0.25, -0.5, 1.5, -2, 3}, {3, 3}, ctx));
    // A 3x3 convolution of (1, 1, 5, 5) into (1, 1, 3, 3): its head gradient fits the (1, 1, 3, 3) weight.
    Values x25(25);
    for (std::size_t i = 0; i < x25.size(); ++i) x25[i] = std::sin(0.7 * static_cast<double>(i));
    run([](const std::vector<nd::NDArray>& v) {
          return nd::Convolution(v[0], v[1], v[2], {.kernel = {3, 3}, .num_filter = 1});
        },
        {nd::array(x25, {1, 1, 5, 5}, ctx), nd::array(nine, {1, 1, 3, 3}, ctx), nd::array(Values{0.5}, {1}, ctx)},
        nd::array(Values{1, -1, 0.5, 2, 0.25, -0.5, 1.5, -2, 3}, {1, 1, 3, 3}, ctx));
  });
}

BOOST_AUTO_TEST_CASE(head_gradient_checks_come_in_the_order_of_the_ops) {
  // As the binary ops: the context first, then the dtype, then the shape; each error names both
  // arrays, and no gradient is written.
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2}, ctx);
    x.attach_grad();
    auto scope = ag::record();
    const nd::NDArray y = x * 2.0;
    BOOST_CHECK_EXCEPTION(y.backward(nd::ones({3}, ctx, DType::float64)), mx::DTypeError,
                          ndg_test::message_has({"backward", "(3,) float64 @" + ctx.str(), "(2,) float32 @" + ctx.str(),
                                                 "astype(mx::DType::float32)"}));
    BOOST_CHECK_EXCEPTION(y.backward(nd::ones({3}, ctx)), mx::ShapeError,
                          ndg_test::message_has({"backward", "(3,) float32 @" + ctx.str(), "(2,) float32 @" + ctx.str()}));
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{0, 0}), tt::per_element());
    y.backward(nd::array({1, -1}, ctx));
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{2, -2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(head_gradient_on_another_context_is_a_context_mismatch,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nd::NDArray x = nd::array({1, 2}, mx::gpu(0));
  x.attach_grad();
  auto scope = ag::record();
  const nd::NDArray y = x * 2.0;
  const auto mismatch = [](const std::string& head_grad) {
    return ndg_test::message_has({"backward", head_grad, "(2,) float32 @gpu(0)", "copyto(gpu(0))",
                                  "as_in_context(gpu(0))"});
  };
  // The shapes agree: the context is what is wrong.
  BOOST_CHECK_EXCEPTION(y.backward(nd::ones({2}, mx::cpu())), mx::ContextMismatch, mismatch("(2,) float32 @cpu(0)"));
  // Checked before the dtype and the shape, as the ops check their operands.
  BOOST_CHECK_EXCEPTION(y.backward(nd::ones({3}, mx::cpu(), DType::float64)), mx::ContextMismatch,
                        mismatch("(3,) float64 @cpu(0)"));
  BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{0, 0}), tt::per_element());
  // The fix the message gives works.
  y.backward(nd::array({1, -1}, mx::cpu()).as_in_context(mx::gpu(0)));
  BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{2, -2}), tt::per_element());
  // A gradient buffer on another context than its variable is refused the same way.
  nd::NDArray z = nd::ones({2}, mx::gpu(0));
  BOOST_CHECK_EXCEPTION(ag::mark_variable(z, nd::zeros({2}, mx::cpu())), mx::ContextMismatch,
                        ndg_test::message_has({"attach_grad", "@cpu(0)", "@gpu(0)"}));
}

BOOST_AUTO_TEST_CASE(gradients_stay_on_the_variable_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      (nd::exp(x) * 0.0 + x * 3.0).sum().backward();
    }
    BOOST_TEST(x.grad().context() == ctx);
    BOOST_TEST(x.grad().asvector<float>() == (std::vector<float>{3, 3}), tt::per_element());
  });
}

// ---- gradient listeners (what a Trainer's gradient buckets hear) ---------------------------------

namespace {

// Records each tell: the tag and the gradient buffer's values at that moment (and those of
// `watched`, when set); asks for its gradients early when `early`.
struct Recorder final : ag::GradientListener {
  std::vector<nd::NDArray> grads;  // by tag
  std::vector<std::int64_t> tags;
  std::vector<std::vector<float>> seen, seen_watched;
  nd::NDArray watched;
  bool early = false;
  int ends = 0;
  void gradient_ready(std::int64_t tag) override {
    tags.push_back(tag);
    seen.push_back(grads[static_cast<std::size_t>(tag)].asvector<float>());
    if (!watched.is_none()) seen_watched.push_back(watched.asvector<float>());
  }
  void backward_end() override { ++ends; }
  bool wants_gradient_early() const override { return early; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(gradient_listeners_hear_each_final_gradient_once_weights_before_data) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(4, "tanh", true, 3), nn::Dense(2, "", true, 4));
    net.initialize(mx::init::Uniform(0.5), {ctx});
    std::vector<nd::NDArray> vars;
    auto recorder = std::make_shared<Recorder>();
    for (const auto& [name, param] : net.collect_params()) {  // w0 b0 w1 b1: tags 0..3
      vars.push_back(param.data(ctx));
      recorder->grads.push_back(param.grad(ctx));
    }
    nd::NDArray v = nd::array(std::vector<float>{1.5f, -2.0f}, {2}, ctx);  // a variable reached by two edges
    v.attach_grad();
    recorder->grads.push_back(v.grad());
    for (std::size_t t = 0; t < vars.size(); ++t) ag::add_gradient_listener(vars[t], recorder, static_cast<std::int64_t>(t));
    ag::add_gradient_listener(v, recorder, 99);  // replaced by the next: one listener, tag 4
    ag::add_gradient_listener(v, recorder, 4);
    const nd::NDArray x = nd::array(std::vector<float>{0.5f, -1.0f, 2.0f, 1.0f, 0.25f, -0.5f}, {2, 3}, ctx);
    {
      auto scope = ag::record();
      nd::NDArray l = (net(x) * v).sum() + (v * v).sum();
      l.backward();
    }
    // The last layer's first; in each Dense the weight and bias are told before its data gradient
    // is computed, and v (two edges) once its two contributions are added.
    BOOST_TEST(recorder->ends == 1);
    std::vector<std::int64_t> want_order = {2, 3, 0, 1};
    std::vector<std::int64_t> params_told;
    for (std::int64_t t : recorder->tags) {
      if (t < 4) params_told.push_back(t);
    }
    BOOST_TEST(params_told == want_order, tt::per_element());
    BOOST_TEST(std::count(recorder->tags.begin(), recorder->tags.end(), 4) == 1);
    for (std::size_t i = 0; i < recorder->tags.size(); ++i) {
      const auto t = static_cast<std::size_t>(recorder->tags[i]);
      BOOST_TEST(recorder->seen[i] == recorder->grads[t].asvector<float>(), tt::per_element());
    }
    // d/dv of sum(out * v) + sum(v * v) = column sums of out + 2v: v's buffer holds it.
    const std::vector<float> out = [&] { auto s = ag::pause(); return net(x).sum(0).asvector<float>(); }();
    BOOST_TEST(std::abs(v.grad().asvector<float>()[0] - (out[0] + 3.0f)) < 1e-5);
    BOOST_TEST(std::abs(v.grad().asvector<float>()[1] - (out[1] - 4.0f)) < 1e-5);
    // autograd::grad writes no buffer and tells nobody.
    {
      auto scope = ag::record();
      nd::NDArray l = (net(x) * v).sum();
      ag::grad(l, {v});
    }
    BOOST_TEST(recorder->ends == 1);
    BOOST_TEST(recorder->tags.size() == 5u);
    // A listener destroyed is forgotten.
    std::weak_ptr<Recorder> gone = recorder;
    recorder.reset();
    BOOST_TEST(gone.expired());
    {
      auto scope = ag::record();
      nd::NDArray l = (net(x) * v).sum();
      BOOST_CHECK_NO_THROW(l.backward());
    }
  });
}

// Dense computes its data's gradient first (an NCCL sum started by the weight's then shares the GPU
// with the layer below's products only), unless the weight's listener wants its gradient early (a
// sum on the copy engines, which takes no SMs): then the weight's is told before the data's
// gradient is computed. The data's gradient buffer, read when the weight's is told, says which.
BOOST_AUTO_TEST_CASE(a_listener_that_wants_gradients_early_hears_of_dense_weights_before_the_data_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const bool early : {false, true}) {
      BOOST_TEST_CONTEXT((early ? "early" : "not early") << " on " << ctx.str()) {
        nn::Dense layer(2, "", true, 3);
        layer.initialize(mx::init::Uniform(0.5), {ctx});
        nd::NDArray x = nd::array(std::vector<float>{0.5f, -1.0f, 2.0f, 1.0f, 0.25f, -0.5f}, {2, 3}, ctx);
        x.attach_grad();
        auto recorder = std::make_shared<Recorder>();
        recorder->early = early;
        recorder->grads = {layer.weight().grad(ctx)};
        recorder->watched = x.grad();
        ag::add_gradient_listener(layer.weight().data(ctx), recorder, 0);
        {
          auto scope = ag::record();
          nd::NDArray l = layer(x).sum();
          l.backward();
        }
        BOOST_REQUIRE_EQUAL(recorder->tags.size(), 1u);
        // d sum(x W^T + b) / dx: every row the column sums of W, none of them 0 here.
        const std::vector<float> dx = x.grad().asvector<float>();
        const std::vector<float> w = layer.weight().data(ctx).asvector<float>();
        for (std::size_t i = 0; i < dx.size(); ++i) BOOST_TEST(dx[i] == w[i % 3] + w[3 + i % 3], tt::tolerance(1e-6f));
        if (early) BOOST_TEST(recorder->seen_watched[0] == std::vector<float>(6, 0.0f), tt::per_element());
        else BOOST_TEST(recorder->seen_watched[0] == dx, tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(gradient_listener_on_a_plain_array_is_a_value_error) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({2}, ctx);
    NDG_CHECK_THROWS_WITH(ag::add_gradient_listener(x, std::make_shared<Recorder>(), 0), mx::ValueError,
                          "add_gradient_listener", "not a variable");
  });
}

BOOST_AUTO_TEST_SUITE_END()
