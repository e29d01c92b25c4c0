#pragma once
// mx::test_utils: Boost.Test helpers for suites over ndgluon, ndgluon's own and its users' (as
// MXNet's mxnet.test_utils): run a case on cpu(0) and on every visible GPU, skip a case that needs
// more GPUs than the machine has (with the reason), compare arrays naming the worst element, and
// check that a function gives the same values and gradients on every context. Header-only; it
// needs Boost.Test, which the program links (Meson: dependency('ndgluon-testing'); pkg-config:
// `pkg-config --cflags --libs ndgluon-testing`).
//
//   #define BOOST_TEST_MODULE my_suite
//   #include <boost/test/unit_test.hpp>
//   #include <ndarray/testing/testing.hpp>
//
//   BOOST_AUTO_TEST_CASE(relu_keeps_the_positive_part) {
//     mx::test_utils::for_each_context([](mx::Context ctx) {
//       BOOST_TEST(mx::test_utils::almost_equal(mx::nd::relu(mx::nd::array({-1, 2}, ctx)),
//                                               mx::nd::array({0, 2}, ctx)));
//     });
//   }
//   BOOST_AUTO_TEST_CASE(on_two_gpus, *boost::unit_test::precondition(mx::test_utils::needs_gpus{2})) { ... }
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "context/context.hpp"
#include "context/device.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/array.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::test_utils {

// cpu(0), then every visible GPU.
inline std::vector<Context> contexts() {
  std::vector<Context> all{cpu()};
  for (int i = 0; i < num_gpus(); ++i) all.push_back(gpu(i));
  return all;
}

// A Boost.Test precondition: the case runs only with at least `count` GPUs, and is reported as
// skipped ("needs 2 GPUs, found 1") otherwise.
//   BOOST_AUTO_TEST_CASE(name, *boost::unit_test::precondition(mx::test_utils::needs_gpus{2}))
struct needs_gpus {
  int count;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    const int found = num_gpus();
    boost::test_tools::assertion_result result(found >= count);
    result.message() << "needs " << count << " GPU" << (count == 1 ? "" : "s") << ", found " << found;
    return result;
  }
};

// body(ctx) for each of contexts(), each failure naming the context ("on gpu(1)").
template <class Body>
void for_each_context(Body&& body) {
  for (const Context ctx : contexts()) {
    BOOST_TEST_CONTEXT("on " << ctx.str()) { body(ctx); }
  }
}

// Whether a and b have one shape and every element satisfies |a - b| <= atol + rtol * |b| (NaN
// only against NaN), as MXNet's assert_almost_equal. The failure message names how many elements
// are off and the worst: its index, both values, and how many times the tolerance it is off by.
//   BOOST_TEST(mx::test_utils::almost_equal(got, want, 1e-5, 1e-6));
inline boost::test_tools::assertion_result almost_equal(const nd::NDArray& a, const nd::NDArray& b,
                                                        double rtol = 1e-5, double atol = 1e-20) {
  boost::test_tools::assertion_result result(true);
  if (a.shape() != b.shape()) {
    result = false;
    result.message() << "shapes differ: " << a.shape().tuple_str() << " vs " << b.shape().tuple_str();
    return result;
  }
  const std::vector<double> x = a.astype(DType::float64).asvector<double>();
  const std::vector<double> y = b.astype(DType::float64).asvector<double>();
  std::size_t bad = 0, worst = 0;
  double worst_ratio = -1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    const double tolerance = atol + rtol * std::abs(y[i]);
    const double error = std::abs(x[i] - y[i]);
    const double ratio = std::isnan(error) ? INFINITY : error / std::max(tolerance, 1e-300);
    if (!(error <= tolerance)) ++bad;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
  }
  if (bad == 0) return result;
  // The worst element's index, one coordinate per axis.
  std::vector<std::int64_t> index(static_cast<std::size_t>(a.ndim()));
  for (std::size_t r = index.size(), rest = worst; r-- > 0;) {
    const auto extent = static_cast<std::size_t>(a.shape()[static_cast<int>(r)]);
    index[r] = static_cast<std::int64_t>(rest % extent);
    rest /= extent;
  }
  result = false;
  result.message() << bad << " of " << x.size() << " elements differ by more than atol " << atol << " + rtol "
                   << rtol << " * |b|; the worst, at " << Shape(index).tuple_str() << ": " << x[worst] << " vs "
                   << y[worst] << " (" << worst_ratio << " times the tolerance)";
  return result;
}

// BOOST_TEST(almost_equal(a, b, rtol, atol)).
inline void assert_almost_equal(const nd::NDArray& a, const nd::NDArray& b, double rtol = 1e-5, double atol = 1e-20) {
  BOOST_TEST(almost_equal(a, b, rtol, atol));
}

// MXNet's check_consistency: fn on copies of `inputs` on each of `ctxs` (default: contexts()),
// every input a variable, under autograd::record(), then backward with one head gradient (fixed
// pseudo-random values in [-1, 1)); the output and the inputs' gradients of each context against
// the first's, within rtol/atol. The message names the context and what differs.
//   BOOST_TEST(mx::test_utils::check_consistency([](auto& in) { return mx::nd::tanh(in[0]); }, {x}));
inline boost::test_tools::assertion_result check_consistency(
    const std::function<nd::NDArray(const std::vector<nd::NDArray>&)>& fn, const std::vector<nd::NDArray>& inputs,
    std::vector<Context> ctxs = contexts(), double rtol = 1e-4, double atol = 1e-6) {
  struct Run {
    nd::NDArray output;
    std::vector<nd::NDArray> grads;
  };
  std::vector<Run> runs;
  std::vector<double> head_values;
  for (const Context ctx : ctxs) {
    std::vector<nd::NDArray> vars;
    for (const nd::NDArray& x : inputs) {
      vars.push_back(x.copyto(ctx));
      vars.back().attach_grad();
    }
    Run run;
    {
      auto recording = autograd::record();
      run.output = fn(vars);
    }
    if (head_values.empty()) {
      std::mt19937 generator(20260101);
      std::uniform_real_distribution<double> uniform(-1, 1);
      head_values.resize(static_cast<std::size_t>(run.output.size()));
      for (double& v : head_values) v = uniform(generator);
    }
    run.output.backward(nd::array(head_values.data(), DType::float64, run.output.shape(), ctx, run.output.dtype()));
    for (const nd::NDArray& v : vars) run.grads.push_back(v.grad());
    runs.push_back(std::move(run));
  }
  boost::test_tools::assertion_result result(true);
  for (std::size_t c = 1; c < runs.size(); ++c) {
    const auto compare = [&](const nd::NDArray& got, const nd::NDArray& want, const std::string& what) {
      const boost::test_tools::assertion_result same = almost_equal(got, want, rtol, atol);
      if (same) return;
      result = false;
      result.message() << ctxs[c].str() << " against " << ctxs[0].str() << ", " << what << ": " << same.message()
                       << "; ";
    };
    compare(runs[c].output, runs[0].output, "the output");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      compare(runs[c].grads[i], runs[0].grads[i], "the gradient of input " + std::to_string(i));
    }
  }
  return result;
}

}  // namespace mx::test_utils
