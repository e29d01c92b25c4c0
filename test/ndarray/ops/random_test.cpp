#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

namespace {

constexpr std::int64_t kDraws = 1'000'000;

struct Moments {
  double mean = 0, std = 0, min = 0, max = 0;
};

Moments moments(const std::vector<double>& values) {
  Moments m;
  m.min = *std::min_element(values.begin(), values.end());
  m.max = *std::max_element(values.begin(), values.end());
  for (double v : values) m.mean += v;
  m.mean /= static_cast<double>(values.size());
  for (double v : values) m.std += (v - m.mean) * (v - m.mean);
  m.std = std::sqrt(m.std / static_cast<double>(values.size()));
  return m;
}

// Precondition: the bit-identity of cpu(0) and GPU draws is a promise of CUDA builds (cuRAND's host
// generator on cpu(0)); a CPU-only build has its own generator.
boost::test_tools::assertion_result cuda_build(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(mx::built_with_cuda());
  result.message() << "needs a build with CUDA (cpu(0) draws with cuRAND's host generator there)";
  return result;
}

}  // namespace

// The suite's namespace `random` would clash with POSIX ::random(): open it inside a namespace.
namespace ndg_random_test {

BOOST_AUTO_TEST_SUITE(random)

BOOST_AUTO_TEST_CASE(uniform_lies_in_range_with_the_right_moments) {
  struct Range {
    double low, high;
  };
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(1);
    for (Range r : {Range{0, 1}, Range{2, 5}, Range{-3, -1}, Range{0, 10}}) {
      BOOST_TEST_CONTEXT("uniform(" << r.low << ", " << r.high << ")") {
        const nd::NDArray x = nd::random::uniform(r.low, r.high, {kDraws}, ctx);
        BOOST_TEST((x.context() == ctx));
        BOOST_TEST((x.dtype() == mx::DType::float32));
        BOOST_TEST(x.shape() == (mx::Shape{kDraws}));
        const Moments m = moments(x.asvector<double>());
        // (low, high]: cuRAND draws (0, 1], then low + u·(high − low). A draw u below half an ulp
        // of low rounds to low itself in float32, so the bound is strict only for low = 0.
        if (r.low == 0) {
          BOOST_TEST(m.min > r.low);
        } else {
          BOOST_TEST(m.min >= r.low);
        }
        BOOST_TEST(m.max <= r.high);
        // The draws fill the range: within 1e-4 of each end for 1e6 draws.
        BOOST_TEST(m.min - r.low < 1e-4 * (r.high - r.low));
        BOOST_TEST(r.high - m.max < 1e-4 * (r.high - r.low));
        BOOST_TEST(m.mean == (r.low + r.high) / 2, tt::tolerance(5e-3));
        BOOST_TEST(m.std == (r.high - r.low) / std::sqrt(12.0), tt::tolerance(5e-3));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(normal_has_the_right_mean_and_deviation) {
  struct Params {
    double loc, scale;
  };
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(2);
    for (Params p : {Params{3, 0.5}, Params{-2, 2}, Params{10, 1}}) {
      BOOST_TEST_CONTEXT("normal(" << p.loc << ", " << p.scale << ")") {
        const nd::NDArray x = nd::random::normal(p.loc, p.scale, {kDraws}, ctx);
        BOOST_TEST((x.context() == ctx));
        const Moments m = moments(x.asvector<double>());
        BOOST_TEST(m.mean == p.loc, tt::tolerance(5e-3));
        BOOST_TEST(m.std == p.scale, tt::tolerance(5e-3));
        // Tails as a normal has them: 1e6 draws reach past 4 deviations, not past 7.
        BOOST_TEST(m.max > p.loc + 4 * p.scale);
        BOOST_TEST(m.min < p.loc - 4 * p.scale);
        BOOST_TEST(m.max < p.loc + 7 * p.scale);
        BOOST_TEST(m.min > p.loc - 7 * p.scale);
      }
    }
    // Standard normal: mean 0, so compare in absolute terms.
    const Moments m = moments(nd::random::normal(0, 1, {kDraws}, ctx).asvector<double>());
    BOOST_TEST(std::abs(m.mean) < 5e-3);
    BOOST_TEST(m.std == 1.0, tt::tolerance(5e-3));
  });
}

BOOST_AUTO_TEST_CASE(float64_draws) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(3);
    const nd::NDArray u = nd::random::uniform(0, 1, {kDraws}, ctx, mx::DType::float64);
    BOOST_TEST((u.dtype() == mx::DType::float64));
    BOOST_TEST((u.context() == ctx));
    const Moments mu = moments(u.asvector<double>());
    BOOST_TEST(mu.min > 0.0);
    BOOST_TEST(mu.max <= 1.0);
    BOOST_TEST(mu.mean == 0.5, tt::tolerance(5e-3));
    // float64 draws carry more than float32's 24 bits.
    const std::vector<double> values = u.asvector<double>();
    const auto wide = std::count_if(values.begin(), values.end(),
                                    [](double v) { return static_cast<double>(static_cast<float>(v)) != v; });
    BOOST_TEST(wide > kDraws / 2);

    const nd::NDArray shifted = nd::random::uniform(-4, 6, {kDraws}, ctx, mx::DType::float64);
    const Moments ms = moments(shifted.asvector<double>());
    BOOST_TEST(ms.min >= -4.0);
    BOOST_TEST(ms.max <= 6.0);
    BOOST_TEST(ms.mean == 1.0, tt::tolerance(5e-3 * 10));  // 5e-3 of the range's width

    const nd::NDArray g = nd::random::normal(5, 3, {kDraws}, ctx, mx::DType::float64);
    BOOST_TEST((g.dtype() == mx::DType::float64));
    const Moments mg = moments(g.asvector<double>());
    BOOST_TEST(mg.mean == 5.0, tt::tolerance(5e-3));
    BOOST_TEST(mg.std == 3.0, tt::tolerance(5e-3));
  });
}

BOOST_AUTO_TEST_CASE(seed_makes_draws_reproducible) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(7);
    const std::vector<float> u1 = nd::random::uniform(0, 1, {1000}, ctx).asvector();
    const std::vector<float> n1 = nd::random::normal(0, 1, {999}, ctx).asvector();
    const std::vector<float> u1_next = nd::random::uniform(0, 1, {1000}, ctx).asvector();
    BOOST_TEST(mx::random::current_seed() == 7u);

    mx::random::seed(7);
    const std::vector<float> u2 = nd::random::uniform(0, 1, {1000}, ctx).asvector();
    const std::vector<float> n2 = nd::random::normal(0, 1, {999}, ctx).asvector();
    const std::vector<float> u2_next = nd::random::uniform(0, 1, {1000}, ctx).asvector();
    BOOST_TEST(u1 == u2, tt::per_element());
    BOOST_TEST(n1 == n2, tt::per_element());
    BOOST_TEST(u1_next == u2_next, tt::per_element());
    // The sequence moves on between draws.
    BOOST_TEST((u1 != u1_next));

    mx::random::seed(8);
    const std::vector<float> u3 = nd::random::uniform(0, 1, {1000}, ctx).asvector();
    const std::vector<float> n3 = nd::random::normal(0, 1, {999}, ctx).asvector();
    BOOST_TEST((u3 != u1));
    BOOST_TEST((n3 != n1));
    // Different seeds give mostly different values, not a shifted copy.
    std::size_t same = 0;
    for (std::size_t i = 0; i < u1.size(); ++i) same += u1[i] == u3[i];
    BOOST_TEST(same < 10u);
  });
}

BOOST_AUTO_TEST_CASE(seed_counts_generations) {
  const std::uint64_t before = mx::random::seed_generation();
  mx::random::seed(11);
  mx::random::seed(11);
  BOOST_TEST(mx::random::seed_generation() == before + 2);
  BOOST_TEST(mx::random::current_seed() == 11u);
}

BOOST_AUTO_TEST_CASE(reseeding_with_the_same_seed_restarts_the_sequence) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(5);
    const std::vector<float> first = nd::random::uniform(0, 1, {64}, ctx).asvector();
    (void)nd::random::uniform(0, 1, {64}, ctx);
    mx::random::seed(5);  // same value, new generation: starts again
    BOOST_TEST(nd::random::uniform(0, 1, {64}, ctx).asvector() == first, tt::per_element());
  });
}

// Needs a GPU: without one, every context is cpu(0) and the comparison would be with itself.
BOOST_AUTO_TEST_CASE(cpu_and_every_gpu_draw_bit_identical_uniforms, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  // One seed and call order give the same uniform bits on cpu(0) (cuRAND's host generator) and on
  // each GPU (its device generator). Each context's generator restarts at seed().
  struct Draws {
    std::vector<float> unit, shifted, odd_sized, unit_again;
    std::vector<double> wide;
  };
  auto draw = [](mx::Context ctx) {
    Draws d;
    d.unit = nd::random::uniform(0, 1, {4096}, ctx).asvector();
    d.shifted = nd::random::uniform(-2, 3, {4, 5}, ctx).asvector();
    d.odd_sized = nd::random::uniform(0, 1, {3, 5}, ctx).asvector();
    d.wide = nd::random::uniform(0, 1, {1001}, ctx, mx::DType::float64).asvector<double>();
    d.unit_again = nd::random::uniform(10, 20, {kDraws}, ctx).asvector();
    return d;
  };
  mx::random::seed(42);
  const Draws reference = draw(mx::cpu());
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(42);  // restarts every context's generator
    const Draws d = draw(ctx);
    BOOST_TEST((d.unit == reference.unit));
    BOOST_TEST((d.shifted == reference.shifted));
    BOOST_TEST((d.odd_sized == reference.odd_sized));
    BOOST_TEST((d.wide == reference.wide));
    BOOST_TEST((d.unit_again == reference.unit_again));
  });
  // Interleaved: after one seed, a draw on each context in turn still matches.
  mx::random::seed(42);
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST((nd::random::uniform(0, 1, {4096}, ctx).asvector() == reference.unit));
  });
}

BOOST_AUTO_TEST_CASE(cuda_builds_draw_curand_philox_values_everywhere, *boost::unit_test::precondition(cuda_build)) {
  // cuRAND's Philox4x32-10 (default ordering) seeded with 42, offset 0: the first four uniform
  // floats. cpu(0) must draw them too, also on a machine without a GPU.
  const std::vector<float> expected{0x1.39d5ep-1f, 0x1.dfd524p-2f, 0x1.2bf50ap-4f, 0x1.5d0adp-2f};
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(42);
    BOOST_TEST(nd::random::uniform(0, 1, {4}, ctx).asvector() == expected, tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(cpu_and_every_gpu_draw_matching_normals, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  // Same sequence on every context; the transforms (log, sincos) may round differently on host and
  // device, so normals are compared to a few ulps.
  mx::random::seed(42);
  const std::vector<double> reference = nd::random::normal(1, 2, {2001}, mx::cpu()).asvector<double>();
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(42);
    const std::vector<double> values = nd::random::normal(1, 2, {2001}, ctx).asvector<double>();
    BOOST_TEST(values.size() == reference.size());
    double worst = 0;
    for (std::size_t i = 0; i < std::min(values.size(), reference.size()); ++i) {
      worst = std::max(worst, std::abs(values[i] - reference[i]) / std::max(1.0, std::abs(reference[i])));
    }
    BOOST_TEST(worst < 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(odd_sizes_and_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(9);
    for (const mx::Shape& shape : {mx::Shape{3, 5}, mx::Shape{1}, mx::Shape{7}, mx::Shape{2, 3, 3}, mx::Shape{1, 1}}) {
      BOOST_TEST_CONTEXT("shape " << shape) {
        const nd::NDArray g = nd::random::normal(0, 1, shape, ctx);
        BOOST_TEST(g.shape() == shape);
        BOOST_TEST(g.size() == shape.numel());
        const std::vector<float> gv = g.asvector();
        BOOST_TEST(std::all_of(gv.begin(), gv.end(), [](float v) { return std::isfinite(v) && std::abs(v) < 8; }));
        const nd::NDArray u = nd::random::uniform(-1, 1, shape, ctx);
        BOOST_TEST(u.shape() == shape);
        const std::vector<float> uv = u.asvector();
        BOOST_TEST(std::all_of(uv.begin(), uv.end(), [](float v) { return v >= -1 && v <= 1; }));
        if (shape.numel() > 1) {
          BOOST_TEST((std::adjacent_find(gv.begin(), gv.end(), std::not_equal_to<>()) != gv.end()));
        }
        // The result is an ordinary array: ops and copies see exactly its elements.
        BOOST_TEST(g.copy().asvector() == gv, tt::per_element());
        BOOST_TEST((g * 2).asvector().size() == gv.size());
        const double total = std::accumulate(gv.begin(), gv.end(), 0.0);
        BOOST_TEST(std::abs(g.sum().asscalar<float>() - total) < 1e-5 * (1.0 + static_cast<double>(gv.size()) * 4));
      }
    }
    // An odd draw followed by an even one: both have their own sizes.
    const nd::NDArray a = nd::random::normal(0, 1, {3, 5}, ctx);
    const nd::NDArray b = nd::random::normal(0, 1, {4}, ctx);
    BOOST_TEST(a.size() == 15);
    BOOST_TEST(b.size() == 4);
  });
}

BOOST_AUTO_TEST_CASE(empty_and_default_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray none = nd::random::uniform(0, 1, {0}, ctx);
    BOOST_TEST(none.size() == 0);
    BOOST_TEST(none.asvector().empty());
    const nd::NDArray empty_rows = nd::random::normal(0, 1, {0, 4}, ctx);
    BOOST_TEST(empty_rows.shape() == (mx::Shape{0, 4}));
    const nd::NDArray one = nd::random::uniform(0, 1, {1}, ctx);
    BOOST_TEST(one.shape() == (mx::Shape{1}));
    const float v = one.asscalar<float>();
    BOOST_TEST(v > 0.0f);
    BOOST_TEST(v <= 1.0f);
  });
  // Without a context: mx::current_context(), shape (1,).
  const nd::NDArray d = nd::random::uniform();
  BOOST_TEST((d.context() == mx::current_context()));
  BOOST_TEST(d.shape() == (mx::Shape{1}));
  BOOST_TEST(nd::random::normal().shape() == (mx::Shape{1}));
}

BOOST_AUTO_TEST_CASE(integer_dtypes_throw) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::random::uniform(0, 1, {2}, ctx, mx::DType::int32), mx::DTypeError,
                          "random.uniform", "float32, float64, float16 or bfloat16", "int32");
    NDG_CHECK_THROWS_WITH(nd::random::uniform(0, 10, {2, 2}, ctx, mx::DType::uint8), mx::DTypeError,
                          "random.uniform", "uint8");
    NDG_CHECK_THROWS_WITH(nd::random::normal(0, 1, {3}, ctx, mx::DType::int64), mx::DTypeError,
                          "random.normal", "int64");
    BOOST_CHECK_THROW(nd::random::normal(0, 1, {3}, ctx, mx::DType::int32), mx::Error);
  });
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ndg_random_test
