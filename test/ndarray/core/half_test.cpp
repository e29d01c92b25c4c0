// float16 and bfloat16: the conversions at their edges (on the host and through each context's Cast),
// and every op family in each 16-bit dtype against float64 on the host, with forward values and
// gradients within what the dtype's precision justifies; mixed dtypes, printing and files.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ndarray/core/half.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::bfloat16;
using mx::DType;
using mx::float16;
using ndg_test::Values;

namespace {

float float_of_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The unit roundoff of a 16-bit dtype: half the distance from 1 to the next value.
double unit_roundoff(DType dt) { return dt == DType::float16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

// Float32 values at the edges of both 16-bit types, for the device conversions.
const std::vector<float> kEdgeValues = {
    0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 1.0f / 3, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f,
    std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), 3 * std::ldexp(1.0f, -25),
    1 + std::ldexp(1.0f, -11), 1 + 3 * std::ldexp(1.0f, -11), 1 + std::ldexp(1.0f, -8), 1 + 3 * std::ldexp(1.0f, -8),
    std::numeric_limits<float>::max(), float_of_bits(0x7f7f7fffu), std::ldexp(1.0f, -133), std::ldexp(1.0f, -134),
    std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 1e-30f, -3.14159f};

// An array of dtype dt on ctx holding `v` rounded to dt.
nd::NDArray typed(const Values& v, const mx::Shape& shape, mx::Context ctx, DType dt) {
  return nd::array(v.data(), DType::float64, shape, ctx, dt);
}

// |got - want| <= k u (|want| + scale) for each element, scale the largest |want|: k roundings of
// the result and of the inputs it sums, relative to the output's magnitude.
void check_within(const nd::NDArray& got, const Values& want, DType dt, double k) {
  const Values have = ndg_test::values(got);
  BOOST_TEST_REQUIRE(have.size() == want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  const double u = unit_roundoff(dt);
  std::size_t bad = 0, worst = 0;
  double worst_error = 0;
  for (std::size_t i = 0; i < have.size(); ++i) {
    const double error = std::abs(have[i] - want[i]) / (u * (std::abs(want[i]) + scale));
    if (!(error <= k)) ++bad;
    if (!(error <= worst_error)) {
      worst_error = error;
      worst = i;
    }
  }
  BOOST_TEST(bad == 0u, bad << " of " << have.size() << " elements off by more than " << k
                            << " u; the worst, element " << worst << ": " << have[worst] << " vs " << want[worst]
                            << " (" << worst_error << " u)");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(half)

BOOST_AUTO_TEST_CASE(every_16_bit_pattern_survives_a_round_trip_through_float) {
  std::size_t float16_bad = 0, bfloat16_bad = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float h = float16::from_bits(bits), bf = bfloat16::from_bits(bits);
    const bool h_nan = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu), bf_nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
    if (h_nan ? !std::isnan(h) || !std::isnan(float(float16(h))) : float16(h).bits != bits) ++float16_bad;
    if (bf_nan ? !std::isnan(bf) || !std::isnan(float(bfloat16(bf))) : bfloat16(bf).bits != bits) ++bfloat16_bad;
  }
  BOOST_TEST(float16_bad == 0u);
  BOOST_TEST(bfloat16_bad == 0u);
}

BOOST_AUTO_TEST_CASE(float16_rounds_to_nearest_even_and_overflows_to_inf) {
  const auto bits = [](float f) { return float16(f).bits; };
  BOOST_TEST(bits(1.0f) == 0x3c00);
  BOOST_TEST(bits(-0.0f) == 0x8000);
  BOOST_TEST(bits(65504.0f) == 0x7bff);                   // the largest finite value
  BOOST_TEST(bits(65519.99f) == 0x7bff);                  // below the midpoint to 65536
  BOOST_TEST(bits(65520.0f) == 0x7c00);                   // the midpoint: to even, past the range: inf
  BOOST_TEST(bits(-1e9f) == 0xfc00);
  BOOST_TEST(bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  BOOST_TEST(std::isnan(float(float16(std::numeric_limits<float>::quiet_NaN()))));
  BOOST_TEST(bits(1 + std::ldexp(1.0f, -11)) == 0x3c00);  // a tie: to the even 1.0
  BOOST_TEST(bits(1 + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // a tie: to the even 1 + 2^-9
  BOOST_TEST(bits(1 + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
  BOOST_TEST(bits(std::ldexp(1.0f, -14)) == 0x0400);      // the smallest normal
  BOOST_TEST(bits(std::ldexp(1.0f, -24)) == 0x0001);      // the smallest subnormal
  BOOST_TEST(bits(std::ldexp(1.0f, -25)) == 0x0000);      // a tie between 0 and 2^-24: to 0
  BOOST_TEST(bits(3 * std::ldexp(1.0f, -25)) == 0x0002);  // a tie between 1 and 2 units: to 2
  BOOST_TEST(bits(std::ldexp(1.0f, -25) * 1.0001f) == 0x0001);
  BOOST_TEST(float(float16::from_bits(0x03ff)) == 1023 * std::ldexp(1.0f, -24));  // the largest subnormal
  BOOST_TEST(float(float16::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  BOOST_TEST(float(float16::from_bits(0xfc00)) == -std::numeric_limits<float>::infinity());
  BOOST_TEST(float(float16(1.0 / 3)) == 0.333251953125f);  // from double, through float
}

BOOST_AUTO_TEST_CASE(bfloat16_rounds_to_nearest_even_and_overflows_to_inf) {
  const auto bits = [](float f) { return bfloat16(f).bits; };
  BOOST_TEST(bits(1.0f) == 0x3f80);
  BOOST_TEST(bits(1 + std::ldexp(1.0f, -8)) == 0x3f80);      // a tie: to the even 1.0
  BOOST_TEST(bits(1 + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // a tie: to the even 1 + 2^-6
  BOOST_TEST(bits(1 + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
  BOOST_TEST(bits(float_of_bits(0x7f7f7fffu)) == 0x7f7f);  // just below the midpoint: the largest finite
  BOOST_TEST(float(bfloat16::from_bits(0x7f7f)) == float_of_bits(0x7f7f0000u));
  BOOST_TEST(bits(std::numeric_limits<float>::max()) == 0x7f80);  // past the midpoint: inf
  BOOST_TEST(bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  BOOST_TEST(bits(std::ldexp(1.0f, -133)) == 0x0001);  // the smallest subnormal
  BOOST_TEST(bits(std::ldexp(1.0f, -134)) == 0x0000);  // a tie between 0 and it: to 0
  const float nan = bfloat16(std::numeric_limits<float>::quiet_NaN());
  BOOST_TEST(std::isnan(nan));
  BOOST_TEST(std::isnan(float(bfloat16(float_of_bits(0x7f800001u)))));  // a payload in the low bits stays nan
}

BOOST_AUTO_TEST_CASE(every_context_converts_as_the_host_does) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const auto n = static_cast<std::int64_t>(kEdgeValues.size());
    const nd::NDArray x = nd::array(kEdgeValues, {n}, ctx);
    const std::vector<float16> h = x.astype(DType::float16).asvector<float16>();
    const std::vector<bfloat16> b = x.astype(DType::bfloat16).asvector<bfloat16>();
    for (std::size_t i = 0; i < kEdgeValues.size(); ++i) {
      BOOST_TEST_CONTEXT("value " << kEdgeValues[i]) {
        BOOST_TEST(h[i].bits == float16(kEdgeValues[i]).bits);
        BOOST_TEST(b[i].bits == bfloat16(kEdgeValues[i]).bits);
      }
    }
    // And back, exactly; through each other (float16 -> bfloat16 rounds once, from the exact value).
    const Values back = ndg_test::values(x.astype(DType::float16).astype(DType::float32));
    for (std::size_t i = 0; i < kEdgeValues.size(); ++i) {
      const float want = float16(kEdgeValues[i]);
      BOOST_TEST((back[i] == want || (std::isnan(back[i]) && std::isnan(want))));
    }
    const std::vector<bfloat16> across = x.astype(DType::float16).astype(DType::bfloat16).asvector<bfloat16>();
    for (std::size_t i = 0; i < kEdgeValues.size(); ++i) {
      BOOST_TEST(across[i].bits == bfloat16(float(float16(kEdgeValues[i]))).bits);
    }
    // Integers: exact where the type holds them, rounded to even beyond (float16 2049 -> 2048).
    const nd::NDArray ints = nd::array(std::vector<std::int32_t>{-7, 0, 2048, 2049, 2051, 70000}, {6}, ctx);
    BOOST_TEST(ndg_test::values(ints.astype(DType::float16)) == (Values{-7, 0, 2048, 2048, 2052, INFINITY}),
               boost::test_tools::per_element());
    BOOST_TEST(ndg_test::values(ints.astype(DType::bfloat16)) == (Values{-7, 0, 2048, 2048, 2048, 70144}),
               boost::test_tools::per_element());
  });
}

// Each op in each 16-bit dtype, on every context, against the same op in float64 on cpu(0) over the
// same (rounded) inputs. The bound is k unit roundoffs of the output's scale: the 16-bit paths
// compute in float32 and round their result once (a few times through a composite).
struct OpCase {
  const char* name;
  std::vector<mx::Shape> shapes;                                              // of the inputs
  std::function<nd::NDArray(const std::vector<nd::NDArray>&)> run;
  double k = 2;              // the bound, in unit roundoffs
  bool positive = false;     // inputs in [0.5, 2) instead of [-1, 1)
};

std::vector<OpCase> op_cases() {
  using V = std::vector<nd::NDArray>;
  nd::ConvolutionOptions conv;
  conv.kernel = {3, 3};
  conv.pad = {1, 1};
  conv.stride = {2, 1};
  conv.num_filter = 4;
  nd::PoolingOptions max_pool, avg_pool;
  max_pool.kernel = avg_pool.kernel = {2, 2};
  max_pool.stride = avg_pool.stride = {2, 2};
  avg_pool.pool_type = "avg";
  avg_pool.pad = {1, 1};
  return {
      {"negative", {{5, 7}}, [](const V& x) { return -x[0]; }, 0},
      {"abs", {{5, 7}}, [](const V& x) { return nd::abs(x[0]); }, 0},
      {"relu", {{5, 7}}, [](const V& x) { return nd::relu(x[0]); }, 0},
      {"square", {{5, 7}}, [](const V& x) { return nd::square(x[0]); }},
      {"sqrt", {{5, 7}}, [](const V& x) { return nd::sqrt(x[0]); }, 2, true},
      {"exp", {{5, 7}}, [](const V& x) { return nd::exp(x[0]); }},
      {"log", {{5, 7}}, [](const V& x) { return nd::log(x[0]); }, 2, true},
      {"sigmoid", {{5, 7}}, [](const V& x) { return nd::sigmoid(x[0]); }},
      {"tanh", {{5, 7}}, [](const V& x) { return nd::tanh(x[0]); }},
      {"erf", {{5, 7}}, [](const V& x) { return nd::erf(x[0]); }},
      {"gelu", {{5, 7}}, [](const V& x) { return nd::LeakyReLU(x[0], "gelu"); }},
      {"elu", {{5, 7}}, [](const V& x) { return nd::LeakyReLU(x[0], "elu", 0.5); }},
      {"add", {{5, 7}, {5, 7}}, [](const V& x) { return x[0] + x[1]; }},
      {"broadcast_multiply", {{5, 7}, {7}}, [](const V& x) { return x[0] * x[1]; }},
      {"divide", {{5, 7}, {5, 7}}, [](const V& x) { return x[0] / x[1]; }, 2, true},
      {"power", {{5, 7}, {5, 7}}, [](const V& x) { return nd::power(x[0], x[1]); }, 2, true},
      {"maximum", {{5, 7}, {5, 7}}, [](const V& x) { return nd::maximum(x[0], x[1]); }, 0},
      {"scalar_affine", {{5, 7}}, [](const V& x) { return x[0] * 0.5 + 2.0; }, 4},
      {"sum", {{64, 33}}, [](const V& x) { return nd::sum(x[0]); }},
      {"sum_axis", {{64, 33}}, [](const V& x) { return nd::sum(x[0], 0); }},
      {"mean_axis", {{64, 33}}, [](const V& x) { return nd::mean(x[0], 1); }},
      {"max_axis", {{64, 33}}, [](const V& x) { return nd::max(x[0], 1); }, 0},
      {"norm", {{64, 33}}, [](const V& x) { return nd::norm(x[0]); }},
      {"softmax", {{6, 50}}, [](const V& x) { return nd::softmax(x[0]); }},
      {"log_softmax", {{6, 50}}, [](const V& x) { return nd::log_softmax(x[0]); }},
      {"softmax_axis0", {{50, 6}}, [](const V& x) { return nd::softmax(x[0], 0); }},
      {"dot", {{16, 48}, {48, 8}}, [](const V& x) { return nd::dot(x[0], x[1]); }},
      {"dot_transposed", {{48, 16}, {8, 48}}, [](const V& x) { return nd::dot(x[0], x[1], true, true); }},
      {"batch_dot", {{3, 16, 24}, {3, 8, 24}}, [](const V& x) { return nd::batch_dot(x[0], x[1], false, true); }},
      {"fully_connected_relu", {{9, 40}, {12, 40}, {12}},
       [](const V& x) { return nd::FullyConnected(x[0], x[1], x[2], 12, false, true, "relu"); }, 4},
      {"convolution", {{2, 3, 9, 8}, {4, 3, 3, 3}, {4}},
       [conv](const V& x) { return nd::Convolution(x[0], x[1], x[2], conv); }, 4},
      {"max_pooling", {{2, 3, 8, 6}}, [max_pool](const V& x) { return nd::Pooling(x[0], max_pool); }, 0},
      {"avg_pooling", {{2, 3, 8, 6}}, [avg_pool](const V& x) { return nd::Pooling(x[0], avg_pool); }},
      // Indexing, shape and sort ops move or compare values: exact. clip's bounds are rounded to
      // the dtype (as MXNet's DType(a_min)), within one unit roundoff of float64's.
      {"where", {{5, 7}, {5, 7}, {5, 7}}, [](const V& x) { return nd::where(x[0] + 0.25, x[1], x[2]); }, 0},
      {"clip", {{5, 7}}, [](const V& x) { return nd::clip(x[0], -0.3, 0.6); }, 1},
      {"take", {{6, 5}}, [](const V& x) { return nd::take(x[0], nd::array({4, 0, 4, 2}, x[0].context()), 0); }, 0},
      {"embedding", {{6, 5}},
       [](const V& x) { return nd::Embedding(nd::array({{1, 5}, {5, 0}}, x[0].context()), x[0], 6, 5); }, 0},
      {"sequence_mask", {{3, 4, 5}},
       [](const V& x) { return nd::SequenceMask(x[0], nd::array({1, 3, 0, 2}, x[0].context()), true, 0.25); }, 0},
      {"sequence_last", {{3, 4, 5}},
       [](const V& x) { return nd::SequenceLast(x[0], nd::array({1, 3, 0, 2}, x[0].context()), true); }, 0},
      {"sequence_reverse", {{3, 4, 5}},
       [](const V& x) { return nd::SequenceReverse(x[0], nd::array({1, 3, 0, 2}, x[0].context()), true); }, 0},
      {"stack", {{5, 7}, {5, 7}}, [](const V& x) { return nd::stack({x[0], x[1]}, 1); }, 0},
      {"split", {{5, 7}}, [](const V& x) { return nd::split(x[0], 7, 1)[3]; }, 0},
      {"tile", {{5, 7}}, [](const V& x) { return nd::tile(x[0], {2, 1, 3}); }, 0},
      {"repeat", {{5, 7}}, [](const V& x) { return nd::repeat(x[0], 3, 0); }, 0},
      {"reverse", {{5, 7}}, [](const V& x) { return nd::flip(x[0], {0, 1}); }, 0},
      {"sort_axis0", {{50, 6}}, [](const V& x) { return nd::sort(x[0], 0); }, 0},
      {"topk_value", {{6, 50}}, [](const V& x) { return nd::topk(x[0], -1, 5, "value"); }, 0},
  };
}

BOOST_AUTO_TEST_CASE(every_op_family_matches_float64_within_the_dtypes_precision) {
  for (const OpCase& c : op_cases()) {
    // The inputs, and the float64 reference over their values rounded to each dtype.
    std::vector<Values> inputs;
    unsigned seed = 11;
    for (const mx::Shape& s : c.shapes) {
      Values v = ndg_test::uniform_values(static_cast<std::size_t>(s.numel()), seed++);
      if (c.positive) {
        for (double& e : v) e = 1.25 + 0.75 * e;
      }
      inputs.push_back(v);
    }
    for (const DType dt : ndg_test::kHalfDTypes) {
      std::vector<nd::NDArray> reference_inputs;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        reference_inputs.push_back(typed(inputs[i], c.shapes[i], mx::cpu(), dt).astype(DType::float64));
      }
      const Values want = ndg_test::values(c.run(reference_inputs));
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST_CONTEXT(c.name << " in " << mx::dtype_name(dt)) {
          std::vector<nd::NDArray> args;
          for (std::size_t i = 0; i < inputs.size(); ++i) args.push_back(typed(inputs[i], c.shapes[i], ctx, dt));
          const nd::NDArray got = c.run(args);
          BOOST_TEST(got.dtype() == dt);
          check_within(got, want, dt, c.k);
        }
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_keeps_float32_statistics_for_16_bit_data) {
  const mx::Shape shape{4, 3, 5, 5};
  const Values x = ndg_test::uniform_values(static_cast<std::size_t>(shape.numel()), 3);
  const Values gamma = {0.5, 1.5, -1}, beta = {0.1, -0.2, 0.3};
  nd::BatchNormOptions o;
  o.fix_gamma = false;
  for (const DType dt : ndg_test::kHalfDTypes) {
    const nd::NDArray x64 = typed(x, shape, mx::cpu(), dt).astype(DType::float64);
    nd::NDArray mean64 = nd::zeros({3}, mx::cpu(), DType::float64), var64 = nd::ones({3}, mx::cpu(), DType::float64);
    Values want;
    {
      auto record = ag::record();
      want = ndg_test::values(nd::BatchNorm(x64, nd::array(gamma, {3}, mx::cpu(), DType::float64),
                                            nd::array(beta, {3}, mx::cpu(), DType::float64), mean64, var64, o));
    }
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        nd::NDArray mean = nd::zeros({3}, ctx), var = nd::ones({3}, ctx);
        nd::NDArray y;
        {
          auto record = ag::record();
          y = nd::BatchNorm(typed(x, shape, ctx, dt), nd::array(gamma, {3}, ctx, DType::float32),
                          nd::array(beta, {3}, ctx, DType::float32), mean, var, o);
        }
        BOOST_TEST(y.dtype() == dt);
        check_within(y, want, dt, 4);
        BOOST_TEST(mean.dtype() == DType::float32);
        ndg_test::check_close(mean, ndg_test::values(mean64), 1e-5, 1e-6);
        ndg_test::check_close(var, ndg_test::values(var64), 1e-5, 1e-6);
        // Parameters in the data's own 16-bit dtype are refused, naming both dtypes.
        NDG_CHECK_THROWS_WITH(nd::BatchNorm(typed(x, shape, ctx, dt), nd::ones({3}, ctx, dt), nd::zeros({3}, ctx),
                                            mean, var, o),
                              mx::DTypeError, "BatchNorm", "gamma", mx::dtype_name(dt), "float32");
      }
    });
  }
}

// y = sum(w_out * sigmoid(FullyConnected(x, W, b))): the gradients of x, W and b in each 16-bit
// dtype against float64's.
BOOST_AUTO_TEST_CASE(gradients_through_a_layer_match_float64) {
  const Values x = ndg_test::uniform_values(6 * 10, 1), w = ndg_test::uniform_values(5 * 10, 2),
               b = ndg_test::uniform_values(5, 3), head = ndg_test::uniform_values(6 * 5, 4);
  const auto grads = [&](mx::Context ctx, DType dt, DType compute) {
    std::vector<nd::NDArray> vars = {typed(x, {6, 10}, ctx, dt).astype(compute), typed(w, {5, 10}, ctx, dt).astype(compute),
                                     typed(b, {5}, ctx, dt).astype(compute)};
    for (nd::NDArray& v : vars) v.attach_grad();
    {
      auto record = ag::record();
      const nd::NDArray y = nd::sigmoid(nd::FullyConnected(vars[0], vars[1], vars[2], 5));
      (y * typed(head, {6, 5}, ctx, dt).astype(compute)).sum().backward();
    }
    return vars;
  };
  for (const DType dt : ndg_test::kHalfDTypes) {
    const std::vector<nd::NDArray> want = grads(mx::cpu(), dt, DType::float64);
    ndg_test::for_each_context([&](mx::Context ctx) {
      const std::vector<nd::NDArray> got = grads(ctx, dt, dt);
      const char* names[] = {"x", "weight", "bias"};
      for (std::size_t i = 0; i < got.size(); ++i) {
        BOOST_TEST_CONTEXT(names[i] << " in " << mx::dtype_name(dt)) {
          BOOST_TEST(got[i].grad().dtype() == dt);
          check_within(got[i].grad(), ndg_test::values(want[i].grad()), dt, 8);
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(random_draws_in_16_bit_dtypes_round_the_float32_draws) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : ndg_test::kHalfDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        mx::random::seed(7);
        const Values u32 = ndg_test::values(nd::random::uniform(-2, 3, {1000}, ctx));
        mx::random::seed(7);
        const nd::NDArray u = nd::random::uniform(-2, 3, {1000}, ctx, dt);
        BOOST_TEST(u.dtype() == dt);
        const Values u16 = ndg_test::values(u);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < u16.size(); ++i) {
          const float want = dt == DType::float16 ? float(float16(float(u32[i]))) : float(bfloat16(float(u32[i])));
          differ += u16[i] != want;
        }
        BOOST_TEST(differ == 0u);
        mx::random::seed(7);
        const Values n32 = ndg_test::values(nd::random::normal(1, 2, {1000}, ctx));
        mx::random::seed(7);
        const Values n16 = ndg_test::values(nd::random::normal(1, 2, {1000}, ctx, dt));
        differ = 0;
        for (std::size_t i = 0; i < n16.size(); ++i) {
          const float want = dt == DType::float16 ? float(float16(float(n32[i]))) : float(bfloat16(float(n32[i])));
          differ += n16[i] != want;
        }
        BOOST_TEST(differ == 0u);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(mixing_dtypes_outside_amp_names_both) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray h = nd::ones({2, 3}, ctx, DType::float16), f = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(h + f, mx::DTypeError, "float16", "float32");
    NDG_CHECK_THROWS_WITH(nd::dot(f, nd::ones({3, 2}, ctx, DType::bfloat16)), mx::DTypeError, "dot", "float32",
                          "bfloat16");
  });
}

BOOST_AUTO_TEST_CASE(printing_shows_the_shortest_digits_of_the_16_bit_value) {
  // As numpy prints float16: the fewest digits that read back as the 16-bit value (float16 0.1 is
  // 0.0999755859375, and prints as 0.1)...
  const nd::NDArray x = nd::array({0.1, 1.0 / 3, 0.5}).astype(DType::float16);
  BOOST_TEST(nd::format_values(x) == "[0.1    0.3333 0.5   ]");
  // ... bfloat16's 1/3 is 0.333984375: "0.334" is the shortest that reads back...
  BOOST_TEST(nd::format_values(nd::array({0.1, 1.0 / 3, 0.5}).astype(DType::bfloat16)) == "[0.1   0.334 0.5  ]");
  // ... and where a column needs more digits, those of the exact value (2049 is 2048 in float16).
  BOOST_TEST(nd::format_values(nd::array({0.1, 1.0 / 3, 0.5, 2049}).astype(DType::float16)) ==
             "[9.998e-02 3.333e-01 5.000e-01 2.048e+03]");
}

BOOST_AUTO_TEST_CASE(files_keep_16_bit_arrays_with_mxnets_dtype_flags) {
  const ndg_test::TempDir dir;
  const std::string path = dir.file("half.params");
  const Values v = ndg_test::uniform_values(12, 5);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray h = typed(v, {3, 4}, ctx, DType::float16), b = typed(v, {3, 4}, ctx, DType::bfloat16);
    nd::save(path, std::map<std::string, nd::NDArray>{{"h", h}, {"b", b}});
    const auto loaded = nd::load(path, ctx).as_map();
    BOOST_TEST(loaded.at("h").dtype() == DType::float16);
    BOOST_TEST(loaded.at("b").dtype() == DType::bfloat16);
    BOOST_TEST(ndg_test::values(loaded.at("h")) == ndg_test::values(h), boost::test_tools::per_element());
    BOOST_TEST(ndg_test::values(loaded.at("b")) == ndg_test::values(b), boost::test_tools::per_element());
  });
  // The dtype flags: float16 is mshadow's 2, bfloat16 its 12 (after the 24-byte header, a V2
  // record's magic, storage type, ndim, two extents and context).
  const std::string bytes = ndg_test::read_bytes(path);
  std::int32_t flag = 0;
  std::memcpy(&flag, bytes.data() + 24 + 12 + 16 + 8, 4);
  BOOST_TEST((flag == 2 || flag == 12));
}

BOOST_AUTO_TEST_SUITE_END()
