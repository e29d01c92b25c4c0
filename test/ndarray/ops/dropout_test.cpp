// nd::Dropout: in training about p of the elements are zeroed and the rest scaled by 1 / (1 - p);
// backward multiplies by the same mask; prediction, p = 0 and mode "always" behave as in MXNet;
// one seed gives one mask; bad arguments give typed errors. Every case runs on every context.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;

namespace {

// Fraction of zeros in v, and whether every other value is `kept`.
double zero_fraction(const std::vector<double>& v, double kept, bool& others_are_kept) {
  std::int64_t zeros = 0;
  others_are_kept = true;
  for (double x : v) {
    if (x == 0) ++zeros;
    else if (std::abs(x - kept) > 1e-5 * kept) others_are_kept = false;
  }
  return static_cast<double>(zeros) / static_cast<double>(v.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dropout)

BOOST_AUTO_TEST_CASE(training_zeroes_about_p_and_scales_the_rest) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (double p : {0.1, 0.3, 0.75}) {
      BOOST_TEST_CONTEXT("p " << p) {
        const nd::NDArray x = nd::full({100003}, 2.0, ctx);  // not a multiple of 4
        nd::NDArray y;
        {
          auto scope = ag::record();
          y = nd::Dropout(x, p);
        }
        bool kept_ok = false;
        // 100,003 Bernoulli draws: the fraction is within 0.01 of p (more than 6 deviations).
        BOOST_TEST(zero_fraction(y.asvector<double>(), 2.0 / (1.0 - p), kept_ok) == p, tt::tolerance(0.01 / p));
        BOOST_TEST(kept_ok);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(backward_multiplies_by_the_forward_mask) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::arange(1, 1001, 1, ctx).reshape({10, 100});
    x.attach_grad();
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = nd::Dropout(x, 0.5);
      (y * 3.0).backward();
    }
    const auto out = y.asvector<double>(), in = x.asvector<double>(), grad = x.grad().asvector<double>();
    int dropped = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double mask = out[i] / in[i];  // 0 or 2
      BOOST_TEST((mask == 0 || std::abs(mask - 2) < 1e-5));
      BOOST_TEST(grad[i] == 3 * mask, tt::tolerance(1e-5));
      dropped += mask == 0;
    }
    BOOST_TEST(dropped > 400);
    BOOST_TEST(dropped < 600);
  });
}

BOOST_AUTO_TEST_CASE(prediction_and_p_zero_are_the_identity_and_always_drops) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({1000}, ctx);
    BOOST_TEST(nd::Dropout(x, 0.5).is(x));  // outside record(): prediction
    {
      auto scope = ag::record(/*train_mode=*/false);
      BOOST_TEST(nd::Dropout(x, 0.5).is(x));
    }
    {
      auto scope = ag::record();
      BOOST_TEST(nd::Dropout(x, 0.0).is(x));
    }
    {
      auto scope = ag::train_mode();  // training without recording
      BOOST_TEST(nd::sum(nd::Dropout(x, 0.5) == 0.0).asscalar<double>() > 0);
    }
    BOOST_TEST(nd::sum(nd::Dropout(x, 0.5, "always") == 0.0).asscalar<double>() > 0);
  });
}

BOOST_AUTO_TEST_CASE(one_seed_gives_one_mask_and_the_next_draw_another) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({4096}, ctx, mx::DType::float64);
    auto scope = ag::train_mode();
    mx::random::seed(11);
    const auto first = nd::Dropout(x, 0.5).asvector<double>();
    const auto second = nd::Dropout(x, 0.5).asvector<double>();
    mx::random::seed(11);
    const auto again = nd::Dropout(x, 0.5).asvector<double>();
    BOOST_TEST(first == again, tt::per_element());
    BOOST_TEST((first != second));
  });
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({4}, ctx);
    auto scope = ag::train_mode();
    NDG_CHECK_THROWS_WITH(nd::Dropout(x, 1.0), mx::ValueError, "Dropout", "[0, 1)", "1.0");
    NDG_CHECK_THROWS_WITH(nd::Dropout(x, -0.1), mx::ValueError, "Dropout", "-0.1");
    NDG_CHECK_THROWS_WITH(nd::Dropout(x, 0.5, "sometimes"), mx::ValueError, "Dropout", "sometimes", "always");
    NDG_CHECK_THROWS_WITH(nd::Dropout(nd::ones({4}, ctx, mx::DType::int32), 0.5), mx::DTypeError, "Dropout", "int32");
    NDG_CHECK_THROWS_WITH(nd::Dropout(nd::NDArray(), 0.5), mx::ValueError, "Dropout");
  });
}

BOOST_AUTO_TEST_SUITE_END()
