#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/names.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
using ndg_test::bits_of;
using ndg_test::prefix_number;

// Parameter: names as in MXNet 1.x, one copy per context, set_data / reset_ctx / gradients, and
// the errors a user meets (wrong context, not initialised, deferred, bad grad_req).

namespace {

nd::NDArray iota(const mx::Shape& shape, double start, double step, mx::Context ctx = mx::cpu()) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(start + step * static_cast<double>(i));
  return nd::array(values, shape, ctx);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(parameter)

BOOST_AUTO_TEST_CASE(dense_parameter_names_follow_mxnet) {
  nn::Dense first(3), second(4, "relu"), third(2, "", false);
  const int n = prefix_number(first.prefix(), "dense");
  BOOST_TEST_REQUIRE(n >= 0, "prefix " << first.prefix() << " is not dense<N>_");
  BOOST_TEST(second.prefix() == "dense" + std::to_string(n + 1) + "_");
  BOOST_TEST(third.prefix() == "dense" + std::to_string(n + 2) + "_");
  BOOST_TEST(first.weight().name() == first.prefix() + "weight");
  BOOST_TEST(first.bias().name() == first.prefix() + "bias");
  BOOST_TEST(second.weight().name() == "dense" + std::to_string(n + 1) + "_weight");
  BOOST_TEST(second.bias().name() == "dense" + std::to_string(n + 1) + "_bias");
  BOOST_TEST(third.weight().name() == "dense" + std::to_string(n + 2) + "_weight");
  // A copy of a block is the same block: no new number.
  nn::Dense same = first;
  BOOST_TEST(same.prefix() == first.prefix());
  BOOST_TEST(same.weight().is(first.weight()));
  nn::Dense fourth(1);
  BOOST_TEST(fourth.prefix() == "dense" + std::to_string(n + 3) + "_");
  // Declared shapes: (units, in_units), 0 while unknown; (units,) for the bias.
  BOOST_TEST(first.weight().shape() == (mx::Shape{3, 0}));
  BOOST_TEST(first.bias().shape() == (mx::Shape{3}));
}

BOOST_AUTO_TEST_CASE(data_on_every_context_after_initializing_on_all) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("test_weight", {6, 5});
  p.initialize(mx::init::Uniform(0.5), ctxs);
  BOOST_TEST(p.is_initialized());
  BOOST_TEST(!p.is_deferred());
  BOOST_TEST(p.list_ctx() == ctxs, tt::per_element());
  BOOST_TEST(p.list_data().size() == ctxs.size());
  BOOST_TEST(p.list_grad().size() == ctxs.size());
  const auto reference = bits_of(p.data(mx::cpu()));
  const auto values = p.data(mx::cpu()).asvector<float>();
  // Real random values, not a constant.
  BOOST_TEST(*std::max_element(values.begin(), values.end()) > *std::min_element(values.begin(), values.end()));
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray d = p.data(ctx);
    BOOST_TEST(d.context() == ctx);
    BOOST_TEST(d.shape() == (mx::Shape{6, 5}));
    BOOST_TEST((d.dtype() == mx::DType::float32));
    BOOST_TEST(bits_of(d) == reference, tt::per_element());
    BOOST_TEST(p.grad(ctx).context() == ctx);
    BOOST_TEST(p.grad(ctx).asvector<float>() == std::vector<float>(30, 0.0f), tt::per_element());
    // data(ctx) is the parameter's copy, not a fresh one.
    BOOST_TEST(p.data(ctx).is(d));
  });
  // list_data is in the order of list_ctx.
  for (std::size_t i = 0; i < ctxs.size(); ++i) BOOST_TEST(p.list_data()[i].context() == ctxs[i]);
}

BOOST_AUTO_TEST_CASE(data_with_a_single_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter p("single_weight", {2, 3});
    p.initialize(mx::init::Constant(1.5), {ctx});
    BOOST_TEST(p.list_ctx() == std::vector<mx::Context>{ctx}, tt::per_element());
    // data() with one copy is that copy, whatever the current context is.
    BOOST_TEST(p.data().is(p.data(ctx)));
    BOOST_TEST(p.data().context() == ctx);
    BOOST_TEST(p.data().asvector<float>() == std::vector<float>(6, 1.5f), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(data_with_several_contexts_follows_the_current_context, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("several_weight", {3});
  p.initialize(mx::init::Uniform(), ctxs);
  BOOST_TEST(p.data().context() == mx::cpu());
  BOOST_TEST(p.data().is(p.data(mx::cpu())));
  for (int i = 0; i < mx::num_gpus(); ++i) {
    mx::ContextGuard guard(mx::gpu(i));
    BOOST_TEST(p.data().context() == mx::gpu(i));
    BOOST_TEST(p.data().is(p.data(mx::gpu(i))));
  }
}

BOOST_AUTO_TEST_CASE(set_data_writes_every_copy) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("set_weight", {3, 4});
  p.initialize(mx::init::Uniform(), ctxs);
  const auto expected = iota({3, 4}, -2.0, 0.375).asvector<float>();
  // The value may live on any context: once from cpu(0), once from the last context.
  for (mx::Context source : {ctxs.front(), ctxs.back()}) {
    BOOST_TEST_CONTEXT("value on " << source.str()) {
      p.set_data(nd::zeros({3, 4}, source));
      p.set_data(iota({3, 4}, -2.0, 0.375, source));
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST(p.data(ctx).asvector<float>() == expected, tt::per_element());
        BOOST_TEST(p.data(ctx).context() == ctx);
      });
    }
  }
  // The handles returned before set_data see the new values (it writes in place).
  const nd::NDArray held = p.data(ctxs.back());
  p.set_data(nd::full({3, 4}, 7.0, mx::cpu()));
  BOOST_TEST(held.asvector<float>() == std::vector<float>(12, 7.0f), tt::per_element());
  // Wrong shape or dtype: ShapeError naming both, and nothing changes.
  NDG_CHECK_THROWS_WITH(p.set_data(nd::zeros({4, 3})), mx::ShapeError, "set_weight", "(4, 3)", "(3, 4)");
  NDG_CHECK_THROWS_WITH(p.set_data(nd::zeros({3, 4}, mx::cpu(), mx::DType::float64)), mx::DTypeError, "float64",
                        "float32");
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.data(ctx).asvector<float>() == std::vector<float>(12, 7.0f), tt::per_element());
  });
}

// Moves between cpu(0) and the GPUs: without a GPU there is nowhere to move.
BOOST_AUTO_TEST_CASE(reset_ctx_moves_copies_keeping_values, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("moving_weight", {4, 5});
  p.initialize(mx::init::Normal(1.0), {mx::cpu()});
  const auto reference = bits_of(p.data(mx::cpu()));
  // cpu(0) -> every context.
  p.reset_ctx(ctxs);
  BOOST_TEST(p.list_ctx() == ctxs, tt::per_element());
  BOOST_TEST(p.list_grad().size() == ctxs.size());
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.data(ctx).context() == ctx);
    BOOST_TEST(bits_of(p.data(ctx)) == reference, tt::per_element());
    BOOST_TEST(p.grad(ctx).context() == ctx);
  });
  // Every context -> the last one only; the other copies are gone.
  p.reset_ctx({ctxs.back()});
  BOOST_TEST(p.list_ctx() == std::vector<mx::Context>{ctxs.back()}, tt::per_element());
  BOOST_TEST(bits_of(p.data(ctxs.back())) == reference, tt::per_element());
  NDG_CHECK_THROWS_WITH(p.data(mx::cpu()), mx::Error, "moving_weight", "cpu(0)", "[" + ctxs.back().str() + "]");
  // And back to cpu(0).
  p.reset_ctx({mx::cpu()});
  BOOST_TEST(bits_of(p.data(mx::cpu())) == reference, tt::per_element());
  BOOST_TEST(p.data(mx::cpu()).context() == mx::cpu());
}

BOOST_AUTO_TEST_CASE(reset_ctx_errors) {
  gluon::Parameter p("staying_weight", {4, 5});
  p.initialize(mx::init::Normal(1.0), {mx::cpu()});
  const auto reference = bits_of(p.data(mx::cpu()));
  NDG_CHECK_THROWS_WITH(p.reset_ctx({}), mx::ValueError, "staying_weight", "at least one context");
  BOOST_TEST(bits_of(p.data(mx::cpu())) == reference, tt::per_element());
  // A parameter that was never initialised cannot be moved.
  gluon::Parameter fresh("fresh_weight", {2});
  NDG_CHECK_THROWS_WITH(fresh.reset_ctx({mx::cpu()}), mx::Error, "fresh_weight", "has not been initialized");
}

BOOST_AUTO_TEST_CASE(zero_grad_zeroes_every_gradient) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("graded_weight", {2, 3});
  p.initialize(mx::init::Uniform(), ctxs);
  for (std::size_t i = 0; i < ctxs.size(); ++i) {
    nd::NDArray g = p.grad(ctxs[i]);
    g.fill(3.0 + static_cast<double>(i));
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.grad(ctx).sum().asscalar<float>() != 0.0f);  // the fill reached the gradient
  });
  const auto data_before = bits_of(p.data(mx::cpu()));
  p.zero_grad();
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.grad(ctx).asvector<float>() == std::vector<float>(6, 0.0f), tt::per_element());
    BOOST_TEST(bits_of(p.data(ctx)) == data_before, tt::per_element());  // the data is left alone
  });
}

BOOST_AUTO_TEST_CASE(grad_req_null_has_no_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter p("frozen_weight", {2, 2}, mx::DType::float32, "null");
    BOOST_TEST(p.grad_req() == "null");
    p.initialize(mx::init::One(), {ctx});
    BOOST_TEST(p.data(ctx).asvector<float>() == std::vector<float>(4, 1.0f), tt::per_element());
    BOOST_TEST(p.list_grad().empty());
    NDG_CHECK_THROWS_WITH(p.grad(ctx), mx::Error, "frozen_weight", "grad_req", "null");
    p.zero_grad();  // nothing to zero: no error

    // "write" -> "null" drops the gradients; back to "write" gives zero ones.
    gluon::Parameter q("thawed_weight", {3});
    q.initialize(mx::init::One(), {ctx});
    BOOST_TEST(q.grad_req() == "write");
    q.set_grad_req("null");
    BOOST_TEST(q.list_grad().empty());
    NDG_CHECK_THROWS_WITH(q.grad(ctx), mx::Error, "thawed_weight", "null");
    q.set_grad_req("add");
    BOOST_TEST(q.grad_req() == "add");
    BOOST_TEST(q.grad(ctx).context() == ctx);
    BOOST_TEST(q.grad(ctx).asvector<float>() == std::vector<float>(3, 0.0f), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(data_on_a_context_the_parameter_is_not_on) {
  gluon::Parameter p("cpu_only_weight", {2, 2});
  p.initialize(mx::init::Uniform(), {mx::cpu()});
  // The lookup fails before any device is touched: the same error with or without GPUs.
  NDG_CHECK_THROWS_WITH(p.data(mx::gpu(0)), mx::Error, "'cpu_only_weight'", "gpu(0)", "[cpu(0)]");
  NDG_CHECK_THROWS_WITH(p.data(mx::gpu(1)), mx::Error, "'cpu_only_weight'", "gpu(1)", "[cpu(0)]");
  NDG_CHECK_THROWS_WITH(p.grad(mx::gpu(1)), mx::Error, "'cpu_only_weight'", "gpu(1)", "[cpu(0)]");
  // And it is not a more specific error than it should be: not a device error.
  bool device_error = false;
  try {
    p.data(mx::gpu(0));
  } catch (const mx::DeviceError&) {
    device_error = true;
  } catch (const mx::Error&) {
  }
  BOOST_TEST(!device_error);
  // The copy on cpu(0) is still there.
  BOOST_TEST(p.data(mx::cpu()).context() == mx::cpu());
}

BOOST_AUTO_TEST_CASE(data_on_a_gpu_the_parameter_is_not_on, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  gluon::Parameter p("gpu_only_weight", {2});
  p.initialize(mx::init::Uniform(), {mx::gpu(0)});
  NDG_CHECK_THROWS_WITH(p.data(mx::cpu()), mx::Error, "'gpu_only_weight'", "cpu(0)", "[gpu(0)]");
  gluon::Parameter q("two_weight", {2});
  q.initialize(mx::init::Uniform(), {mx::cpu(), mx::gpu(0)});
  NDG_CHECK_THROWS_WITH(q.data(mx::gpu(1)), mx::Error, "'two_weight'", "gpu(1)", "[cpu(0), gpu(0)]");
}

BOOST_AUTO_TEST_CASE(uninitialized_parameter_errors) {
  gluon::Parameter p("lonely_weight", {3, 3});
  BOOST_TEST(!p.is_initialized());
  BOOST_TEST(!p.is_deferred());
  BOOST_TEST(p.list_ctx().empty());
  NDG_CHECK_THROWS_WITH(p.data(), mx::Error, "'lonely_weight'", "has not been initialized");
  NDG_CHECK_THROWS_WITH(p.data(mx::cpu()), mx::Error, "'lonely_weight'", "has not been initialized");
  NDG_CHECK_THROWS_WITH(p.list_data(), mx::Error, "'lonely_weight'", "has not been initialized");
  NDG_CHECK_THROWS_WITH(p.grad(mx::cpu()), mx::Error, "'lonely_weight'", "has not been initialized");
  NDG_CHECK_THROWS_WITH(p.set_data(nd::zeros({3, 3})), mx::Error, "'lonely_weight'", "has not been initialized");
  // Through a block: a Dense that was never initialised.
  nn::Dense dense(2, "", true, 3);
  NDG_CHECK_THROWS_WITH(dense(nd::ones({1, 3})), mx::Error, dense.prefix() + "weight", "has not been initialized");
}

BOOST_AUTO_TEST_CASE(deferred_parameter) {
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter p("later_weight", {4, 0});
  p.initialize(mx::init::Constant(0.25), ctxs);
  BOOST_TEST(p.is_deferred());
  BOOST_TEST(!p.is_initialized());
  BOOST_TEST(p.list_ctx() == ctxs, tt::per_element());
  NDG_CHECK_THROWS_WITH(p.data(mx::cpu()), mx::Error, "'later_weight'", "deferred", "(4, 0)");
  NDG_CHECK_THROWS_WITH(p.data(), mx::Error, "'later_weight'", "deferred");
  NDG_CHECK_THROWS_WITH(p.list_data(), mx::Error, "'later_weight'", "deferred");
  NDG_CHECK_THROWS_WITH(p.grad(mx::cpu()), mx::Error, "'later_weight'", "deferred");
  // A known extent that disagrees: ShapeError, still deferred.
  NDG_CHECK_THROWS_WITH(p.infer_shape({5, 3}), mx::ShapeError, "later_weight", "(5, 3)", "(4, 0)");
  NDG_CHECK_THROWS_WITH(p.infer_shape({4}), mx::ShapeError, "later_weight", "(4,)");
  // An empty input cannot fix the unknown extent (Dense on a (batch, 0) input).
  NDG_CHECK_THROWS_WITH(p.infer_shape({4, 0}), mx::ShapeError, "later_weight", "(4, 0)", "extent <= 0");
  // Data of another dtype is refused before the shape is fixed.
  NDG_CHECK_THROWS_WITH(p.set_data(nd::zeros({4, 3}, mx::cpu(), mx::DType::float64)), mx::DTypeError,
                        "later_weight", "float64", "float32");
  BOOST_TEST(p.is_deferred());
  BOOST_TEST(p.shape() == (mx::Shape{4, 0}));
  // Once the shape is known the data appears on every context given to initialize.
  p.infer_shape({4, 3});
  BOOST_TEST(!p.is_deferred());
  BOOST_TEST(p.is_initialized());
  BOOST_TEST(p.shape() == (mx::Shape{4, 3}));
  BOOST_TEST(p.list_ctx() == ctxs, tt::per_element());
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(p.data(ctx).shape() == (mx::Shape{4, 3}));
    BOOST_TEST(p.data(ctx).asvector<float>() == std::vector<float>(12, 0.25f), tt::per_element());
  });
  // set_data on a deferred parameter fixes its shape (as MXNet).
  gluon::Parameter q("set_later_weight", {2, 0});
  q.initialize(mx::init::Uniform(), ctxs);
  q.set_data(iota({2, 5}, 1.0, 1.0));
  BOOST_TEST(q.shape() == (mx::Shape{2, 5}));
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(q.data(ctx).asvector<float>() == iota({2, 5}, 1.0, 1.0).asvector<float>(), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(initialize_twice_keeps_values_and_force_reinit_changes_them) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter p("twice_weight", {5, 4});
    p.initialize(mx::init::Uniform(0.5), {ctx});
    const nd::NDArray first = p.data(ctx);
    const auto before = bits_of(first);
    // As MXNet: a warning, and nothing changes (not the values, not the array).
    p.initialize(mx::init::Constant(3.0), {ctx});
    BOOST_TEST(bits_of(p.data(ctx)) == before, tt::per_element());
    BOOST_TEST(p.data(ctx).is(first));
    // force_reinit replaces them.
    p.initialize(mx::init::Constant(3.0), {ctx}, true);
    BOOST_TEST(p.data(ctx).asvector<float>() == std::vector<float>(20, 3.0f), tt::per_element());
    // Also through a block.
    nn::Dense dense(3, "", true, 2);
    dense.initialize(mx::init::Uniform(), ctx);
    const auto weight_before = bits_of(dense.weight().data(ctx));
    dense.initialize(mx::init::One(), ctx);
    BOOST_TEST(bits_of(dense.weight().data(ctx)) == weight_before, tt::per_element());
    dense.initialize(mx::init::One(), ctx, true);
    BOOST_TEST(dense.weight().data(ctx).asvector<float>() == std::vector<float>(6, 1.0f), tt::per_element());
    BOOST_TEST(dense.bias().data(ctx).asvector<float>() == std::vector<float>(3, 0.0f), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(bad_grad_req_is_a_value_error) {
  NDG_CHECK_THROWS_WITH(gluon::Parameter("odd_weight", {2}, mx::DType::float32, "sometimes"), mx::ValueError,
                        "odd_weight", "sometimes", "write", "add", "null");
  gluon::Parameter p("even_weight", {2});
  NDG_CHECK_THROWS_WITH(p.set_grad_req("Write"), mx::ValueError, "even_weight", "\"Write\"");
  BOOST_TEST(p.grad_req() == "write");
  // Initialising on no context at all is an error too.
  NDG_CHECK_THROWS_WITH(p.initialize(mx::init::Uniform(), {}), mx::ValueError, "even_weight", "at least one context");
}

BOOST_AUTO_TEST_CASE(parameter_is_a_handle) {
  gluon::Parameter p("shared_weight", {2, 2});
  gluon::Parameter copy = p;
  BOOST_TEST(copy.is(p));
  copy.initialize(mx::init::Constant(2.0), {mx::cpu()});
  BOOST_TEST(p.is_initialized());
  BOOST_TEST(p.data(mx::cpu()).asvector<float>() == std::vector<float>(4, 2.0f), tt::per_element());
  gluon::Parameter other("shared_weight", {2, 2});
  BOOST_TEST(!other.is(p));  // same name, another parameter
}

BOOST_AUTO_TEST_SUITE_END()
