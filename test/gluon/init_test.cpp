#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
using ndg_test::bits_of;

// Initializers (mx.init): the distributions and scales they draw, the by-name default dispatch,
// and the promise that every copy of a parameter gets bit-identical values whatever contexts hold
// them and wherever their generators stood.

namespace {

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0, max_abs = 0;
};

Moments moments(const std::vector<float>& v) {
  Moments m;
  double sum = 0, sum_sq = 0;
  m.min = m.max = v.at(0);
  for (float x : v) {
    sum += x;
    m.min = std::min<double>(m.min, x);
    m.max = std::max<double>(m.max, x);
    m.max_abs = std::max<double>(m.max_abs, std::abs(x));
  }
  m.mean = sum / static_cast<double>(v.size());
  for (float x : v) sum_sq += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(sum_sq / static_cast<double>(v.size() - 1));
  return m;
}

// A parameter of `shape` initialised by `init` on ctx; its values.
std::vector<float> drawn(const mx::init::Initializer& init, const mx::Shape& shape, mx::Context ctx,
                         const std::string& name = "drawn_weight") {
  gluon::Parameter p(name, shape);
  p.initialize(init, {ctx});
  BOOST_TEST(p.data(ctx).context() == ctx);
  return p.data(ctx).asvector<float>();
}

// Every copy of p is bit-identical to its cpu(0) copy.
void check_identical_copies(const gluon::Parameter& p) {
  const auto reference = bits_of(p.data(mx::cpu()));
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.data(ctx).context() == ctx);
    BOOST_TEST(bits_of(p.data(ctx)) == reference, tt::per_element());
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(init)

BOOST_AUTO_TEST_CASE(uniform_values_lie_in_minus_scale_to_scale) {
  mx::random::seed(11);
  ndg_test::for_each_context([](mx::Context ctx) {
    for (double scale : {0.07, 2.5}) {
      BOOST_TEST_CONTEXT("scale " << scale) {
        const auto values = drawn(mx::init::Uniform(scale), {200, 250}, ctx);
        const Moments m = moments(values);
        const float s = static_cast<float>(scale);
        BOOST_TEST(m.min > -s);
        BOOST_TEST(m.max <= s);
        // 50k draws fill the interval: both ends are reached to 0.1 %, the mean is 0 and the
        // deviation is scale / sqrt(3).
        BOOST_TEST(m.min < -0.999 * scale);
        BOOST_TEST(m.max > 0.999 * scale);
        BOOST_TEST(std::abs(m.mean) < 0.02 * scale);
        BOOST_TEST(m.stddev == scale / std::sqrt(3.0), tt::tolerance(0.02));
      }
    }
    // The default initializer is MXNet's Uniform(0.07).
    const Moments m = moments(drawn(mx::init::Uniform(), {100, 100}, ctx));
    BOOST_TEST(m.max <= 0.07f);
    BOOST_TEST(m.min > -0.07f);
    BOOST_TEST(m.max_abs > 0.069);
  });
  BOOST_TEST(mx::init::Uniform().str() == "Uniform(0.07)");
}

BOOST_AUTO_TEST_CASE(normal_has_the_requested_deviation) {
  mx::random::seed(12);
  ndg_test::for_each_context([](mx::Context ctx) {
    for (double sigma : {0.01, 3.0}) {
      BOOST_TEST_CONTEXT("sigma " << sigma) {
        const Moments m = moments(drawn(mx::init::Normal(sigma), {400, 500}, ctx));
        // 200k draws: the deviation of the sample deviation is sigma / sqrt(2n) = 0.16 %.
        BOOST_TEST(m.stddev == sigma, tt::tolerance(0.01));
        BOOST_TEST(std::abs(m.mean) < 0.01 * sigma);
        // Tails: beyond 4 sigma there are a few (expected 13), beyond 6 sigma none.
        BOOST_TEST(m.max_abs > 3.5 * sigma);
        BOOST_TEST(m.max_abs < 6.5 * sigma);
      }
    }
    // An odd number of elements (cuRAND draws normals in pairs) still fills every element.
    const std::vector<float> odd = drawn(mx::init::Normal(1.0), {7, 3}, ctx);
    BOOST_TEST(std::count(odd.begin(), odd.end(), 0.0f) == 0);  // the 21st too: none left at 0
    BOOST_TEST(std::set<float>(odd.begin(), odd.end()).size() == odd.size());
    const Moments m = moments(odd);
    BOOST_TEST(m.stddev > 0.3);
    BOOST_TEST(m.stddev < 2.0);
  });
  BOOST_TEST(mx::init::Normal(0.5).str() == "Normal(0.5)");
}

BOOST_AUTO_TEST_CASE(xavier_uniform_scale_formula) {
  mx::random::seed(13);
  ndg_test::for_each_context([](mx::Context ctx) {
    // (out, in) = (500, 200): fan_in 200, fan_out 500, "avg" factor 350, magnitude 3.
    const double bound = std::sqrt(3.0 / ((200.0 + 500.0) / 2.0));
    const Moments m = moments(drawn(mx::init::Xavier(), {500, 200}, ctx));
    BOOST_TEST(m.max_abs <= bound * (1 + 1e-6));
    // 100k values: the largest is within 0.1 % of the bound.
    BOOST_TEST(m.max_abs > bound * 0.999);
    BOOST_TEST(m.stddev == bound / std::sqrt(3.0), tt::tolerance(0.02));

    // factor_type "in" and "out", another magnitude.
    const double bound_in = std::sqrt(2.0 / 200.0);
    const Moments in = moments(drawn(mx::init::Xavier("uniform", "in", 2.0), {500, 200}, ctx));
    BOOST_TEST(in.max_abs <= bound_in * (1 + 1e-6));
    BOOST_TEST(in.max_abs > bound_in * 0.999);
    const double bound_out = std::sqrt(3.0 / 500.0);
    const Moments out = moments(drawn(mx::init::Xavier("uniform", "out"), {500, 200}, ctx));
    BOOST_TEST(out.max_abs <= bound_out * (1 + 1e-6));
    BOOST_TEST(out.max_abs > bound_out * 0.999);

    // A 4-D weight (out, in, kh, kw) counts the receptive field: fan_in 4*9, fan_out 8*9.
    const double bound_conv = std::sqrt(3.0 / ((36.0 + 72.0) / 2.0));
    const Moments conv = moments(drawn(mx::init::Xavier(), {8, 4, 3, 3}, ctx));
    BOOST_TEST(conv.max_abs <= bound_conv * (1 + 1e-6));
    BOOST_TEST(conv.max_abs > bound_conv * 0.8);  // 288 values only

    // "gaussian": deviation = the scale.
    const Moments gauss = moments(drawn(mx::init::Xavier("gaussian", "avg", 3.0), {500, 200}, ctx));
    BOOST_TEST(gauss.stddev == bound, tt::tolerance(0.02));
    BOOST_TEST(gauss.max_abs > 1.5 * bound);  // a normal, not a uniform on (-bound, bound]
  });
}

BOOST_AUTO_TEST_CASE(xavier_errors) {
  NDG_CHECK_THROWS_WITH(mx::init::Xavier("triangle"), mx::ValueError, "rnd_type", "triangle");
  NDG_CHECK_THROWS_WITH(mx::init::Xavier("uniform", "sum"), mx::ValueError, "factor_type", "sum");
  // A bias-like 1-D shape has no fan-in.
  gluon::Parameter p("flat_weight", {10});
  NDG_CHECK_THROWS_WITH(p.initialize(mx::init::Xavier(), {mx::cpu()}), mx::ShapeError, "Xavier", "(10,)");
  BOOST_TEST(mx::init::Xavier().str() == "Xavier(rnd_type=uniform, factor_type=avg, magnitude=3)");
}

BOOST_AUTO_TEST_CASE(constant_zero_and_one_are_exact) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(drawn(mx::init::Constant(-1.25), {3, 7}, ctx) == std::vector<float>(21, -1.25f), tt::per_element());
    BOOST_TEST(drawn(mx::init::Constant(0.1), {5}, ctx) == std::vector<float>(5, 0.1f), tt::per_element());
    BOOST_TEST(drawn(mx::init::Zero(), {4, 4}, ctx) == std::vector<float>(16, 0.0f), tt::per_element());
    BOOST_TEST(drawn(mx::init::One(), {2, 3, 2}, ctx) == std::vector<float>(12, 1.0f), tt::per_element());
    // float64 parameters too.
    gluon::Parameter p("double_weight", {3}, mx::DType::float64);
    p.initialize(mx::init::Constant(1.0 / 3.0), {ctx});
    BOOST_TEST((p.data(ctx).dtype() == mx::DType::float64));
    BOOST_TEST(p.data(ctx).asvector<double>() == std::vector<double>(3, 1.0 / 3.0), tt::per_element());
  });
  BOOST_TEST(mx::init::Zero().str() == "Zero()");
  BOOST_TEST(mx::init::One().str() == "One()");
  BOOST_TEST(mx::init::Constant(2.5).str() == "Constant(2.5)");
}

BOOST_AUTO_TEST_CASE(default_initializer_routes_by_name) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // A random initializer given to initialize(): "...bias" and "...beta" get zeros, "...gamma" ones,
    // anything else the initializer.
    const auto bias = drawn(mx::init::Uniform(1.0), {50}, ctx, "dense99_bias");
    BOOST_TEST(bias == std::vector<float>(50, 0.0f), tt::per_element());
    const auto beta = drawn(mx::init::Normal(1.0), {50}, ctx, "batchnorm0_beta");
    BOOST_TEST(beta == std::vector<float>(50, 0.0f), tt::per_element());
    const auto gamma = drawn(mx::init::Uniform(1.0), {50}, ctx, "batchnorm0_gamma");
    BOOST_TEST(gamma == std::vector<float>(50, 1.0f), tt::per_element());
    const auto weight = drawn(mx::init::Uniform(1.0), {50}, ctx, "dense99_weight");
    BOOST_TEST(std::count(weight.begin(), weight.end(), 0.0f) == 0);
    BOOST_TEST(moments(weight).max_abs > 0.5);
    // "bias" must be the end of the name.
    const auto biased = drawn(mx::init::Uniform(1.0), {50}, ctx, "bias_weight");
    BOOST_TEST(moments(biased).max_abs > 0.5);

    // A parameter's own initializer wins over the name: a Dense with an empty bias initializer
    // gets zeros by name; with One() it gets ones.
    nn::Dense by_name(4, "", true, 3, {}, nullptr);
    by_name.initialize(mx::init::Uniform(1.0), ctx);
    BOOST_TEST(by_name.bias().data(ctx).asvector<float>() == std::vector<float>(4, 0.0f), tt::per_element());
    BOOST_TEST(moments(by_name.weight().data(ctx).asvector<float>()).max_abs > 0.1);
    nn::Dense own(4, "", true, 3, mx::init::Constant(0.5), mx::init::One());
    own.initialize(mx::init::Uniform(1.0), ctx);
    BOOST_TEST(own.bias().data(ctx).asvector<float>() == std::vector<float>(4, 1.0f), tt::per_element());
    BOOST_TEST(own.weight().data(ctx).asvector<float>() == std::vector<float>(12, 0.5f), tt::per_element());
  });
}

// The copies are compared across cpu(0) and the GPUs: without a GPU there is nothing to compare.
BOOST_AUTO_TEST_CASE(copies_on_all_contexts_are_bit_identical, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const auto ctxs = ndg_test::all_contexts();
  mx::random::seed(7);
  // Several initializers and shapes, odd sizes included (normals are drawn in pairs).
  gluon::Parameter uniform("same_uniform_weight", {64, 33});
  uniform.initialize(mx::init::Uniform(), ctxs);
  check_identical_copies(uniform);
  gluon::Parameter odd("same_odd_weight", {7, 3});
  odd.initialize(mx::init::Uniform(0.5), ctxs);
  check_identical_copies(odd);
  gluon::Parameter xavier("same_xavier_weight", {40, 30});
  xavier.initialize(mx::init::Xavier(), ctxs);
  check_identical_copies(xavier);
  gluon::Parameter normal("same_normal_weight", {9, 5});
  normal.initialize(mx::init::Normal(0.1), ctxs);
  check_identical_copies(normal);
  // Successive parameters draw successive values, not the same ones again.
  BOOST_TEST((bits_of(uniform.data(mx::cpu()).reshape({-1}).slice(0, 21)) != bits_of(odd.data(mx::cpu()))));
  const Moments m = moments(uniform.data(mx::cpu()).asvector<float>());
  BOOST_TEST(m.max > m.min);
}

BOOST_AUTO_TEST_CASE(copies_are_identical_when_generators_stand_at_different_positions,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const auto ctxs = ndg_test::all_contexts();
  mx::random::seed(7);
  // Move one generator only: the last context's (a GPU when there is one), then cpu(0) further.
  nd::random::uniform(0, 1, {1001}, ctxs.back()).wait_to_read();
  nd::random::normal(0, 1, {37}, ctxs.front()).wait_to_read();
  nd::random::uniform(0, 1, {5000}, ctxs.front()).wait_to_read();
  gluon::Parameter p("offset_weight", {31, 17});
  p.initialize(mx::init::Uniform(), ctxs);
  check_identical_copies(p);
  // And again after drawing on a middle context only.
  nd::random::uniform(0, 1, {333}, ctxs[ctxs.size() / 2]).wait_to_read();
  gluon::Parameter q("offset_normal_weight", {12, 11});
  q.initialize(mx::init::Normal(1.0), ctxs);
  check_identical_copies(q);
  // A whole net: every parameter of every layer.
  nd::random::uniform(0, 1, {77}, ctxs.back()).wait_to_read();
  nn::Sequential net;
  net.add(nn::Dense(16, "relu", true, 9), nn::Dense(3, "", true, 16, {}, mx::init::Uniform()));
  net.initialize(mx::init::Xavier(), ctxs);
  for (const auto& [name, param] : net.collect_params()) {
    BOOST_TEST_CONTEXT(name) { check_identical_copies(param); }
  }
}

BOOST_AUTO_TEST_CASE(same_seed_gives_same_values_on_a_second_net) {
  const auto ctxs = ndg_test::all_contexts();
  const auto build = [] {
    nn::Sequential net;
    net.add(nn::Dense(10, "relu", true, 6), nn::Dense(4, "", true, 0, {}, mx::init::Normal(0.5)));
    return net;
  };
  mx::random::seed(7);
  nn::Sequential first = build();
  first.initialize(mx::init::Uniform(), ctxs);
  first(nd::ones({2, 6})).wait_to_read();  // completes the deferred second layer (10 inputs)
  mx::random::seed(7);
  nn::Sequential second = build();
  second.initialize(mx::init::Uniform(), ctxs);
  second(nd::ones({2, 6})).wait_to_read();
  const auto a = first.structural_params(), b = second.structural_params();
  BOOST_TEST_REQUIRE(a.size() == 4u);
  BOOST_TEST_REQUIRE(b.size() == 4u);
  BOOST_TEST(a[0].second.name() != b[0].second.name());  // two nets, two sets of names
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_CONTEXT(a[i].first) {
      BOOST_TEST(a[i].first == b[i].first);
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST(bits_of(a[i].second.data(ctx)) == bits_of(b[i].second.data(ctx)), tt::per_element());
      });
    }
  }
  // The weights are random (not zeros) and a third net with another seed differs.
  BOOST_TEST(moments(a[0].second.data(mx::cpu()).asvector<float>()).max_abs > 0.01);
  BOOST_TEST(moments(a[3].second.data(mx::cpu()).asvector<float>()).max_abs > 0.1);  // Normal(0.5) bias
  mx::random::seed(8);
  nn::Sequential third = build();
  third.initialize(mx::init::Uniform(), ctxs);
  BOOST_TEST((bits_of(third.at<nn::Dense>(0).weight().data(mx::cpu())) != bits_of(a[0].second.data(mx::cpu()))));
}

BOOST_AUTO_TEST_SUITE_END()
