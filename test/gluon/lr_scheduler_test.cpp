// mx::lr_scheduler: each schedule's rates at given update counts, with and without warm-up, worked
// out by hand from MXNet's formulas; the bad arguments MXNet refuses (and the few ndgluon refuses
// besides); and a Trainer that takes its learning rate from a scheduler, step by step, on every
// context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gluon/lr_scheduler.hpp>
#include <gluon/trainer.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace sched = mx::lr_scheduler;
namespace tt = boost::test_tools;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

// Rates computed here in double precision from the same formulas: equal up to rounding.
constexpr double kTolerance = 1e-12;

// The rates a scheduler gives for num_update = 0, 1, ..., in that order, against `want`.
void check_rates(sched::LRScheduler& scheduler, const std::vector<double>& want) {
  for (std::size_t n = 0; n < want.size(); ++n) {
    BOOST_TEST_CONTEXT("num_update " << n) {
      BOOST_TEST(scheduler(static_cast<std::int64_t>(n)) == want[n], tt::tolerance(kTolerance));
    }
  }
}

// A parameter on ctx holding `values`, its gradient set to `grad`, alone in a dict.
struct OneParameter {
  gluon::Parameter param;
  gluon::ParameterDict dict;
  OneParameter(const Values& values, mx::Context ctx) : param("w", {static_cast<std::int64_t>(values.size())}) {
    param.initialize(mx::init::Zero(), {ctx});
    param.set_data(nd::array(values, param.shape(), mx::cpu(), mx::DType::float32));
    dict.add(param);
  }
  void set_grad(mx::Context ctx, const Values& grad) {
    nd::NDArray dst = param.grad(ctx);
    nd::array(grad, param.shape(), mx::cpu(), mx::DType::float32).copyto(dst);
  }
};

// A schedule of given rates, to reach the Trainer's checks of what a scheduler returns.
class ListScheduler : public sched::LRScheduler {
 public:
  explicit ListScheduler(std::vector<double> rates) : LRScheduler(0.5), rates_(std::move(rates)) {}
  double operator()(std::int64_t num_update) override { return rates_.at(static_cast<std::size_t>(num_update)); }

 private:
  std::vector<double> rates_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lr_scheduler)

// ---- the schedules --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(factor_scheduler_drops_after_every_step_updates) {
  // step 2, factor 0.5 from 1: updates 1-2 at 1, 3-4 at 0.5, 5-6 at 0.25, 7 at 0.125.
  sched::FactorScheduler scheduler(2, 0.5, 1e-8, 1.0);
  BOOST_TEST(scheduler.base_lr() == 1.0);
  check_rates(scheduler, {1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125});
  BOOST_TEST(scheduler.base_lr() == 0.125);  // decayed in place, as MXNet's base_lr
  // A smaller num_update later does not undo the decays (Note [stateful schedules]).
  BOOST_TEST(scheduler(1) == 0.125);
  // Defaults as MXNet's: factor 1 (constant), stop_factor_lr 1e-8, base_lr 0.01, no warm-up.
  sched::FactorScheduler constant(3);
  BOOST_TEST(constant.factor() == 1.0);
  BOOST_TEST(constant.stop_factor_lr() == 1e-8);
  BOOST_TEST(constant.warmup_steps() == 0);
  BOOST_TEST(constant.warmup_mode() == "linear");
  check_rates(constant, {0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01});
}

BOOST_AUTO_TEST_CASE(factor_scheduler_stops_at_stop_factor_lr_and_catches_up) {
  // factor 0.1 every update from 1, never below 1e-3: 1, 1, 0.1, 0.01, 0.001, then 1e-3 for good.
  sched::FactorScheduler scheduler(1, 0.1, 1e-3, 1.0);
  check_rates(scheduler, {1, 1, 0.1, 0.01, 0.001, 1e-3, 1e-3});
  BOOST_TEST(scheduler(100) == 1e-3);
  // Called first at update 7 (training resumed), it applies the three drops it passed at once.
  sched::FactorScheduler resumed(2, 0.5, 1e-8, 1.0);
  BOOST_TEST(resumed(7) == 0.125);
  BOOST_TEST(resumed(8) == 0.125);
  BOOST_TEST(resumed(9) == 0.0625);
}

BOOST_AUTO_TEST_CASE(factor_scheduler_after_a_warm_up) {
  // Linear warm-up over 4 updates from 0.2 to base_lr 1: 0.2 + 0.8 n / 4 for n < 4. Then the steps
  // (of 3) counted from update 0, as MXNet does: update 4 is past step 3 and already at 0.5.
  sched::FactorScheduler linear(3, 0.5, 1e-8, 1.0, 4, 0.2);
  BOOST_TEST(linear.warmup_final_lr() == 1.0);
  check_rates(linear, {0.2, 0.4, 0.6, 0.8, 0.5, 0.5, 0.5, 0.25});
  // Constant warm-up: warmup_begin_lr for the first 4 updates.
  sched::FactorScheduler constant(3, 0.5, 1e-8, 1.0, 4, 0.2, "constant");
  check_rates(constant, {0.2, 0.2, 0.2, 0.2, 0.5, 0.5, 0.5, 0.25});
}

BOOST_AUTO_TEST_CASE(multi_factor_scheduler_drops_after_each_listed_update) {
  // As D2L's MultiFactorScheduler(step=[15, 30], factor=0.5, base_lr=0.5): 0.5 up to update 15,
  // 0.25 up to 30, then 0.125.
  sched::MultiFactorScheduler d2l({15, 30}, 0.5, 0.5);
  for (std::int64_t n : {0, 1, 15}) BOOST_TEST(d2l(n) == 0.5);
  for (std::int64_t n : {16, 30}) BOOST_TEST(d2l(n) == 0.25);
  for (std::int64_t n : {31, 1000}) BOOST_TEST(d2l(n) == 0.125);
  BOOST_TEST((d2l.steps() == std::vector<std::int64_t>{15, 30}));
  // Both drops at once when first called past them; a single step; the default factor 1.
  sched::MultiFactorScheduler late({2, 5}, 0.1, 1.0);
  BOOST_TEST(late(6) == 0.01, tt::tolerance(kTolerance));
  sched::MultiFactorScheduler one({1}, 0.1, 1.0);
  check_rates(one, {1, 1, 0.1, 0.1});
  sched::MultiFactorScheduler unchanged({1, 2});
  check_rates(unchanged, {0.01, 0.01, 0.01, 0.01});
}

BOOST_AUTO_TEST_CASE(multi_factor_scheduler_after_a_warm_up) {
  // Linear warm-up over 2 updates from 0 to 2, then drops by half after updates 4 and 6.
  sched::MultiFactorScheduler scheduler({4, 6}, 0.5, 2.0, 2, 0.0);
  check_rates(scheduler, {0, 1, 2, 2, 2, 1, 1, 0.5, 0.5});
  sched::MultiFactorScheduler constant({4, 6}, 0.5, 2.0, 2, 0.5, "constant");
  check_rates(constant, {0.5, 0.5, 2, 2, 2, 1, 1, 0.5});
}

BOOST_AUTO_TEST_CASE(poly_scheduler_decays_to_final_lr_at_max_update) {
  // base_lr (1 - n / 4)^2 from 1: 1, 0.5625, 0.25, 0.0625, 0; past max_update, 0 still.
  sched::PolyScheduler scheduler(4, 1.0);
  BOOST_TEST(scheduler.pwr() == 2.0);
  BOOST_TEST(scheduler.final_lr() == 0.0);
  check_rates(scheduler, {1, 0.5625, 0.25, 0.0625, 0, 0, 0});
  BOOST_TEST(scheduler(1000) == 0.0);
  // pwr 3 toward final_lr 0.1: 0.1 + 0.9 (1 - n / 3)^3.
  sched::PolyScheduler cubic(3, 1.0, 3, 0.1);
  check_rates(cubic, {1, 0.1 + 0.9 * 8.0 / 27.0, 0.1 + 0.9 / 27.0, 0.1, 0.1});
  // As MXNet, a scheduler first asked past max_update has not decayed yet: it gives base_lr
  // (Note [stateful schedules]).
  sched::PolyScheduler fresh(4, 1.0);
  BOOST_TEST(fresh(10) == 1.0);
}

BOOST_AUTO_TEST_CASE(poly_scheduler_after_a_warm_up) {
  // Linear warm-up over 2 updates from 0.1 to 0.5, then 0.1 + 0.4 (1 - (n - 2) / 8) up to 10.
  sched::PolyScheduler scheduler(10, 0.5, 1, 0.1, 2, 0.1);
  check_rates(scheduler, {0.1, 0.3, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15, 0.1, 0.1});
}

BOOST_AUTO_TEST_CASE(cosine_scheduler_follows_half_a_cosine) {
  // (1 + cos(pi n / 4)) / 2 from 1 to 0: 1, (1 + 1/√2) / 2, 0.5, (1 - 1/√2) / 2, 0, then 0.
  sched::CosineScheduler scheduler(4, 1.0);
  const double h = std::sqrt(0.5) / 2;
  check_rates(scheduler, {1, 0.5 + h, 0.5, 0.5 - h, 0, 0});
  // As D2L's CosineScheduler(max_update=20, base_lr=0.3, final_lr=0.01): 0.155 halfway, 0.01 at 20.
  sched::CosineScheduler d2l(20, 0.3, 0.01);
  BOOST_TEST(d2l(10) == 0.155, tt::tolerance(kTolerance));
  BOOST_TEST(d2l(20) == 0.01, tt::tolerance(kTolerance));
  BOOST_TEST(d2l(25) == 0.01, tt::tolerance(kTolerance));
  BOOST_TEST(d2l.max_update() == 20);
}

BOOST_AUTO_TEST_CASE(cosine_scheduler_after_a_warm_up) {
  // Warm-up over 4 updates to 0.5, then 0.1 + 0.4 (1 + cos(pi (n - 4) / 8)) / 2 up to update 12.
  sched::CosineScheduler linear(12, 0.5, 0.1, 4, 0.1);
  const double h = 0.2 * std::sqrt(0.5);
  check_rates(linear, {0.1, 0.2, 0.3, 0.4, 0.5});
  BOOST_TEST(linear(6) == 0.3 + h, tt::tolerance(kTolerance));
  BOOST_TEST(linear(8) == 0.3, tt::tolerance(kTolerance));
  BOOST_TEST(linear(10) == 0.3 - h, tt::tolerance(kTolerance));
  BOOST_TEST(linear(12) == 0.1, tt::tolerance(kTolerance));
  BOOST_TEST(linear(13) == 0.1, tt::tolerance(kTolerance));
  sched::CosineScheduler constant(12, 0.5, 0.1, 4, 0.1, "constant");
  check_rates(constant, {0.1, 0.1, 0.1, 0.1, 0.5});
}

// ---- errors ----------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bad_arguments_are_value_errors_naming_the_scheduler_and_the_value) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  using Make = std::function<void()>;
  struct Case {
    Make make;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      // As MXNet raises.
      {[] { sched::FactorScheduler(0); }, {"FactorScheduler", "greater or equal than 1", "step 0"}},
      {[] { sched::FactorScheduler(-4); }, {"step -4"}},
      {[] { sched::FactorScheduler(2, 1.5); }, {"FactorScheduler", "Factor must be no more than 1", "1.5"}},
      {[] { sched::MultiFactorScheduler({5, 5}); }, {"MultiFactorScheduler", "increasing", "[5, 5]"}},
      {[] { sched::MultiFactorScheduler({3, 10, 7}); }, {"increasing", "[3, 10, 7]"}},
      {[] { sched::MultiFactorScheduler({0, 2}); }, {"greater or equal than 1", "[0, 2]"}},
      {[] { sched::MultiFactorScheduler({2}, 1.25); }, {"MultiFactorScheduler", "no more than 1", "1.25"}},
      {[] { sched::MultiFactorScheduler({}); }, {"MultiFactorScheduler", "at least one"}},
      {[] { sched::PolyScheduler(0); }, {"PolyScheduler", "strictly positive", "max_update 0"}},
      {[] { sched::CosineScheduler(-3); }, {"CosineScheduler", "max_update -3"}},
      {[] { sched::FactorScheduler(2, 1, 1e-8, 0.1, -1); }, {"FactorScheduler", "Warmup steps", "-1"}},
      {[] { sched::CosineScheduler(10, 0.1, 0, -2); }, {"CosineScheduler", "Warmup steps", "-2"}},
      {[] { sched::PolyScheduler(10, 0.1, 2, 0, 2, 0, "cosine"); },
       {"PolyScheduler", "linear and constant", "'cosine'"}},
      {[] { sched::CosineScheduler(10, 0.1, 0, 2, 0.5); },
       {"CosineScheduler", "Base lr has to be higher than warmup_begin_lr", "0.1", "0.5"}},
      {[] { sched::MultiFactorScheduler({4}, 0.5, -0.1); }, {"MultiFactorScheduler", "base_lr", "-0.1"}},
      // Where MXNet divides by zero (warmup_steps == max_update) or never decays (>).
      {[] { sched::PolyScheduler(5, 0.1, 2, 0, 5); }, {"PolyScheduler", "warmup_steps is 5 and max_update 5"}},
      {[] { sched::CosineScheduler(10, 0.1, 0, 12); }, {"CosineScheduler", "warmup_steps is 12 and max_update 10"}},
      // Values MXNet takes but that would give a negative, infinite or NaN rate.
      {[] { sched::FactorScheduler(2, -0.5); }, {"FactorScheduler", "factor -0.5"}},
      {[nan] { sched::MultiFactorScheduler({2}, nan); }, {"factor nan"}},
      {[] { sched::FactorScheduler(2, 0.5, -1); }, {"FactorScheduler", "stop_factor_lr", "-1"}},
      {[nan] { sched::FactorScheduler(2, 0.5, 1e-8, nan); }, {"base_lr", "nan"}},
      {[inf] { sched::CosineScheduler(10, inf); }, {"CosineScheduler", "base_lr", "inf"}},
      {[] { sched::PolyScheduler(10, 0.1, -1); }, {"PolyScheduler", "pwr", "-1"}},
      {[] { sched::PolyScheduler(10, 0.1, 2, -0.1); }, {"PolyScheduler", "final_lr", "-0.1"}},
      {[inf] { sched::CosineScheduler(10, 0.1, inf); }, {"final_lr", "inf"}},
      {[] { sched::FactorScheduler(2, 1, 1e-8, 0.1, 2, -0.5); }, {"warmup_begin_lr", "-0.5"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    BOOST_TEST_CONTEXT("case " << i) {
      BOOST_CHECK_EXCEPTION(cases[i].make(), mx::ValueError, ndg_test::message_has{cases[i].parts});
    }
  }
  // The edges are accepted: step 1, factor 1 and 0, warmup_begin_lr = base_lr, max_update 1.
  BOOST_CHECK_NO_THROW(sched::FactorScheduler(1, 1.0));
  BOOST_CHECK_NO_THROW(sched::MultiFactorScheduler({1}, 0.0));
  BOOST_CHECK_NO_THROW(sched::CosineScheduler(5, 0.1, 0, 4, 0.1));
  BOOST_CHECK_NO_THROW(sched::PolyScheduler(1));
}

BOOST_AUTO_TEST_CASE(set_base_lr_is_checked_and_moves_a_factor_schedule) {
  sched::FactorScheduler scheduler(2, 0.5, 1e-8, 1.0);
  NDG_CHECK_THROWS_WITH(scheduler.set_base_lr(-2), mx::ValueError, "FactorScheduler", "base_lr", "-2");
  NDG_CHECK_THROWS_WITH(scheduler.set_base_lr(std::numeric_limits<double>::quiet_NaN()), mx::ValueError, "nan");
  BOOST_TEST(scheduler.base_lr() == 1.0);
  scheduler.set_base_lr(0.4);
  check_rates(scheduler, {0.4, 0.4, 0.4, 0.2});
}

// state() and set_state() (what Trainer::save_states keeps): a scheduler given another's state
// goes on as that one does, also where replaying num_update alone would not (a rate set by hand
// after some decays).
BOOST_AUTO_TEST_CASE(a_restored_state_continues_the_schedule) {
  using Make = std::function<std::unique_ptr<sched::LRScheduler>()>;
  const std::vector<std::pair<std::string, Make>> makes = {
      {"FactorScheduler", [] { return std::make_unique<sched::FactorScheduler>(2, 0.5, 1e-8, 1.0); }},
      {"MultiFactorScheduler", [] { return std::make_unique<sched::MultiFactorScheduler>(std::vector<std::int64_t>{2, 3, 6}, 0.5, 1.0); }},
      {"PolyScheduler", [] { return std::make_unique<sched::PolyScheduler>(6, 1.0, 2, 0.1); }},
      {"CosineScheduler", [] { return std::make_unique<sched::CosineScheduler>(6, 1.0, 0.1, 1); }},
  };
  for (const auto& [type, make] : makes) {
    BOOST_TEST_CONTEXT(type) {
      const std::unique_ptr<sched::LRScheduler> first = make(), second = make();
      BOOST_TEST(first->type() == type);
      for (std::int64_t n = 1; n <= 4; ++n) (*first)(n);
      first->set_base_lr(0.8);  // by hand, after the decays
      second->set_state(first->state());
      BOOST_TEST(second->state().base_lr == first->state().base_lr);
      BOOST_TEST(second->state().position == first->state().position);
      for (std::int64_t n = 5; n <= 8; ++n) BOOST_TEST((*second)(n) == (*first)(n), "num_update " << n);
    }
  }
  sched::FactorScheduler factor(2, 0.5);
  factor(5);
  BOOST_TEST(factor.state().position == 4);
  sched::MultiFactorScheduler multi({2, 3, 6}, 0.5);
  multi(4);
  BOOST_TEST(multi.state().position == 2);
}

BOOST_AUTO_TEST_CASE(a_state_the_schedule_cannot_reach_is_refused) {
  sched::FactorScheduler factor(3, 0.5, 1e-8, 1.0);
  NDG_CHECK_THROWS_WITH(factor.set_state({0.5, 4}), mx::ValueError, "FactorScheduler", "4", "step 3");
  NDG_CHECK_THROWS_WITH(factor.set_state({0.5, -3}), mx::ValueError, "-3");
  NDG_CHECK_THROWS_WITH(factor.set_state({-0.5, 3}), mx::ValueError, "base_lr", "-0.5");
  NDG_CHECK_THROWS_WITH(factor.check_state({std::numeric_limits<double>::quiet_NaN(), 0}), mx::ValueError, "nan");
  BOOST_TEST(factor.state().base_lr == 1.0);  // unchanged
  BOOST_TEST(factor.state().position == 0);
  sched::MultiFactorScheduler multi({2, 3}, 0.5);
  NDG_CHECK_THROWS_WITH(multi.set_state({0.5, 3}), mx::ValueError, "MultiFactorScheduler", "3", "[2, 3]");
  BOOST_CHECK_NO_THROW(multi.set_state({0.25, 2}));
  BOOST_TEST(multi(10) == 0.25);
  sched::CosineScheduler cosine(10, 0.1);
  NDG_CHECK_THROWS_WITH(cosine.set_state({0.05, 1}), mx::ValueError, "CosineScheduler", "position 1");
}

// ---- with a Trainer --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(trainer_steps_at_the_scheduled_rate) {
  // FactorScheduler(step 2, factor 0.5, base_lr 1): steps 1-2 at 1, 3-4 at 0.5, 5 at 0.25. SGD with
  // gradient (1, 2), batch 1: w -= lr g, from (1, -1):
  //   (0, -3), (-1, -5), (-1.5, -6), (-2, -7), (-2.25, -7.5).
  ndg_test::for_each_context([](mx::Context ctx) {
    OneParameter p({1, -1}, ctx);
    auto scheduler = std::make_shared<sched::FactorScheduler>(2, 0.5, 1e-8, 1.0);
    gluon::Trainer trainer(p.dict, "sgd", {}, scheduler);
    BOOST_TEST(trainer.lr_scheduler() == scheduler);
    BOOST_TEST(trainer.num_update() == 0);
    BOOST_TEST(trainer.learning_rate() == 1.0);  // scheduler(0), as MXNet's learning_rate
    const std::vector<double> rates = {1, 1, 0.5, 0.5, 0.25};
    const std::vector<Values> weights = {{0, -3}, {-1, -5}, {-1.5, -6}, {-2, -7}, {-2.25, -7.5}};
    for (std::size_t t = 0; t < rates.size(); ++t) {
      BOOST_TEST_CONTEXT("step " << t + 1) {
        p.set_grad(ctx, {1, 2});
        trainer.step(1);
        BOOST_TEST(trainer.num_update() == static_cast<std::int64_t>(t + 1));
        BOOST_TEST(trainer.learning_rate() == rates[t]);
        BOOST_TEST(trainer.optimizer().learning_rate() == rates[t]);  // the rate the step used
        check_close(p.param.data(ctx), weights[t]);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(trainer_with_a_cosine_schedule_and_momentum) {
  // CosineScheduler(4, base_lr 1): the steps use 0.5 + h, 0.5, 0.5 - h, 0 (h = √2 / 4). SGD with
  // momentum 0.5, gradient 1 and batch 2 (so a rescaled gradient 0.5): mom = 0.5 mom - lr 0.5.
  ndg_test::for_each_context([](mx::Context ctx) {
    OneParameter p({1}, ctx);
    auto scheduler = std::make_shared<sched::CosineScheduler>(4, 1.0);
    gluon::Trainer trainer(p.dict, "sgd", {{"momentum", 0.5}}, scheduler);
    const double h = std::sqrt(2.0) / 4;
    double w = 1, mom = 0;
    for (double lr : {0.5 + h, 0.5, 0.5 - h, 0.0, 0.0}) {
      mom = 0.5 * mom - lr * 0.5;
      w += mom;
      p.set_grad(ctx, {1});
      trainer.step(2);
      BOOST_TEST(trainer.optimizer().learning_rate() == lr, tt::tolerance(kTolerance));
      check_close(p.param.data(ctx), {w});
    }
    // By hand: momenta -0.4267767, -0.4633883, -0.3049175, -0.1524587, -0.0762294 from 1.
    check_close(p.param.data(ctx), {-0.4237706});
  });
}

BOOST_AUTO_TEST_CASE(adam_takes_the_scheduled_rate) {
  // With a constant gradient, each Adam step moves the weight by its learning rate (bias-corrected
  // m / sqrt(v) is 1, up to epsilon): 0.1, then 0.05, from 1.
  OneParameter p({1}, mx::cpu());
  gluon::Trainer trainer(p.dict, "adam", {}, std::make_shared<sched::FactorScheduler>(1, 0.5, 1e-8, 0.1));
  p.set_grad(mx::cpu(), {3});
  trainer.step(1);
  check_close(p.param.data(mx::cpu()), {0.9}, 0, 1e-6);
  trainer.step(1);
  check_close(p.param.data(mx::cpu()), {0.85}, 0, 1e-6);
  BOOST_TEST(trainer.learning_rate() == 0.05);
}

BOOST_AUTO_TEST_CASE(a_given_learning_rate_replaces_the_schedulers_base_lr) {
  OneParameter p({1}, mx::cpu());
  // As MXNet's Optimizer.__init__: learning_rate in optimizer_params becomes the scheduler's
  // base_lr; FactorScheduler(1, 0.5) then goes 0.5, 0.5, 0.25.
  auto factor = std::make_shared<sched::FactorScheduler>(1, 0.5, 1e-8, 1.0);
  gluon::Trainer trainer(p.dict, "sgd", {{"learning_rate", 0.5}}, factor);
  BOOST_TEST(factor->base_lr() == 0.5);
  BOOST_TEST(trainer.learning_rate() == 0.5);
  p.set_grad(mx::cpu(), {1});
  trainer.step(1);  // at 0.5
  trainer.step(1);  // at 0.25
  check_close(p.param.data(mx::cpu()), {0.25});
  // Without one, the scheduler's rates stand (for Adam too, whose default is 0.001).
  auto kept = std::make_shared<sched::FactorScheduler>(1, 0.5, 1e-8, 1.0);
  gluon::Trainer sgd(p.dict, "sgd", {{"momentum", 0.9}}, kept);
  gluon::Trainer adam(p.dict, "adam", {}, kept);
  BOOST_TEST(kept->base_lr() == 1.0);
  // As MXNet, a cosine schedule recomputes its rates from the base_lr it was made with (its
  // base_lr_orig), so the replaced base_lr does not last past its next call.
  auto cosine = std::make_shared<sched::CosineScheduler>(4, 1.0);
  gluon::Trainer cosine_trainer(p.dict, "sgd", {{"learning_rate", 0.5}}, cosine);
  BOOST_TEST(cosine->base_lr() == 0.5);
  BOOST_TEST(cosine_trainer.learning_rate() == 1.0);
}

BOOST_AUTO_TEST_CASE(set_learning_rate_is_refused_while_a_scheduler_sets_the_rate) {
  OneParameter p({1}, mx::cpu());
  gluon::Trainer trainer(p.dict, "sgd", {}, std::make_shared<sched::FactorScheduler>(1, 0.5, 1e-8, 0.2));
  p.set_grad(mx::cpu(), {1});
  trainer.step(1);
  NDG_CHECK_THROWS_WITH(trainer.set_learning_rate(0.7), mx::ValueError, "Trainer::set_learning_rate",
                        "lr_scheduler", "0.7", "now 0.2", "num_update 1");
  BOOST_TEST(trainer.learning_rate() == 0.2);
  trainer.step(1);  // still on the schedule: at 0.1
  check_close(p.param.data(mx::cpu()), {0.7});
  // A null scheduler is none: the Trainer keeps its own rate, which may be set.
  gluon::Trainer plain(p.dict, "sgd", {{"learning_rate", 0.3}}, std::shared_ptr<sched::LRScheduler>());
  BOOST_TEST(plain.lr_scheduler() == nullptr);
  plain.set_learning_rate(0.4);
  BOOST_TEST(plain.learning_rate() == 0.4);
}

BOOST_AUTO_TEST_CASE(a_refused_trainer_leaves_its_scheduler_alone) {
  OneParameter p({1}, mx::cpu());
  auto scheduler = std::make_shared<sched::FactorScheduler>(1, 0.5, 1e-8, 1.0);
  NDG_CHECK_THROWS_WITH(gluon::Trainer(p.dict, "sgd", {{"learning_rate", 0.5}}, scheduler, "dist_sync"),
                        mx::ValueError, "dist_sync");
  NDG_CHECK_THROWS_WITH(gluon::Trainer(p.dict, "sgd", {{"learning_rate", -0.5}}, scheduler), mx::ValueError,
                        "Invalid learning rate: -0.5");
  BOOST_TEST(scheduler->base_lr() == 1.0);
  BOOST_TEST(scheduler->warmup_final_lr() == 1.0);
}

BOOST_AUTO_TEST_CASE(num_update_counts_steps_as_mxnet_does) {
  // A parameter on every context counts one update per step, not one per copy; update() counts as
  // step() does; a frozen parameter that trains again does not move the count; a failed step
  // counts nothing.
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter a("a", {1}), b("b", {1});
  a.initialize(mx::init::One(), ctxs);
  b.initialize(mx::init::One(), ctxs);
  gluon::ParameterDict dict;
  dict.add(a);
  dict.add(b);
  auto scheduler = std::make_shared<sched::MultiFactorScheduler>(std::vector<std::int64_t>{2, 3}, 0.5, 1.0);
  gluon::Trainer trainer(dict, "sgd", {}, scheduler);
  trainer.step(1);
  BOOST_TEST(trainer.num_update() == 1);
  a.set_grad_req("null");
  trainer.update(1);
  trainer.step(1);
  BOOST_TEST(trainer.num_update() == 3);  // b updated 3 times, a once
  BOOST_TEST(trainer.learning_rate() == 0.5);
  a.set_grad_req("write");
  trainer.step(1);  // a's 2nd update, b's 4th: num_update 4
  BOOST_TEST(trainer.num_update() == 4);
  BOOST_TEST(trainer.learning_rate() == 0.25);
  NDG_CHECK_THROWS_WITH(trainer.step(0), mx::ValueError, "batch_size");
  BOOST_TEST(trainer.num_update() == 4);
}

BOOST_AUTO_TEST_CASE(a_bad_scheduled_rate_fails_the_step_before_anything_changes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    OneParameter p({1, 2}, ctx);
    gluon::Trainer trainer(p.dict, "sgd", {}, std::make_shared<ListScheduler>(std::vector<double>{0.5, 0.5, -1}));
    p.set_grad(ctx, {1, 1});
    trainer.step(1);
    check_close(p.param.data(ctx), {0.5, 1.5});
    NDG_CHECK_THROWS_WITH(trainer.step(1), mx::ValueError, "Trainer::step", "lr_scheduler", "learning rate -1",
                          "num_update 2");
    NDG_CHECK_THROWS_WITH(trainer.update(1), mx::ValueError, "Trainer::update", "learning rate -1");
    BOOST_TEST(trainer.num_update() == 1);
    BOOST_TEST(trainer.optimizer().learning_rate() == 0.5);
    check_close(p.param.data(ctx), {0.5, 1.5}, 0, 0);
  });
}

BOOST_AUTO_TEST_SUITE_END()
