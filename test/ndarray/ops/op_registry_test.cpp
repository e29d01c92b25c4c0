// The op registry (ndarray/ops/op.hpp): every elementwise op is registered once under its name with
// its kernels and gradient; autograd records the invocation (op, attributes, inputs, outputs), and
// run_kernel replays a recorded invocation on new input values without the front end, as a traced
// graph will. Numeric cases run on every context. FullyConnected and the optimizer updates are
// registered ops too.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ndarray/ndarray.hpp>

#include "ndarray/ops/op.hpp"

namespace nd = mx::nd;
namespace op = mx::op;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(op_registry)

BOOST_AUTO_TEST_CASE(every_elementwise_op_is_registered_with_its_kernels) {
  const bool cuda_build = mx::built_with_cuda();
  for (const char* name : {"negative", "exp", "relu", "erf", "gelu", "add", "power", "less_equal", "_add_scalar",
                           "_power_scalar", "_backward_gelu", "_backward_multiply"}) {
    BOOST_TEST_CONTEXT(name) {
      const op::OpDef* def = op::find_op(name);
      BOOST_TEST_REQUIRE(def != nullptr);
      BOOST_TEST(std::string(def->name) == name);
      BOOST_TEST(def->infer != nullptr);
      BOOST_TEST(def->cpu != nullptr);
      BOOST_TEST((def->gpu != nullptr) == cuda_build);
    }
  }
  // Differentiable ops carry a gradient; comparisons and sign do not.
  BOOST_TEST(op::find_op("gelu")->gradient != nullptr);
  BOOST_TEST(op::find_op("erf")->gradient != nullptr);
  BOOST_TEST(op::find_op("greater")->gradient == nullptr);
  BOOST_TEST(op::find_op("sign")->gradient == nullptr);
  BOOST_TEST(op::find_op("no_such_op") == nullptr);
  BOOST_TEST(op::registered_ops().size() >= 4 * 13 + 2 * 13);
}

BOOST_AUTO_TEST_CASE(nn_and_optimizer_ops_are_registered) {
  const bool cuda_build = mx::built_with_cuda();
  for (const char* name : {"FullyConnected", "sgd_update", "sgd_mom_update", "adam_update"}) {
    BOOST_TEST_CONTEXT(name) {
      const op::OpDef* def = op::find_op(name);
      BOOST_TEST_REQUIRE(def != nullptr);
      BOOST_TEST(def->cpu != nullptr);
      BOOST_TEST((def->gpu != nullptr) == cuda_build);
      BOOST_TEST(def->attrs != nullptr);
      // Only FullyConnected is differentiable; the updates are not recorded.
      BOOST_TEST((def->gradient != nullptr) == (std::string(name) == "FullyConnected"));
    }
  }
}

BOOST_AUTO_TEST_CASE(reductions_products_copies_and_draws_are_registered) {
  const bool cuda_build = mx::built_with_cuda();
  // name, differentiable
  const std::vector<std::pair<const char*, bool>> ops{
      {"sum", true},     {"max", true},   {"min", true},    {"argmax", false},          {"argmin", false},
      {"dot", true},     {"Concat", true}, {"slice_axis", true}, {"Cast", true},        {"_copy", true},
      {"_full", false},  {"_arange", false}, {"_random_uniform", false}, {"_random_normal", false},
      {"Dropout", true}};
  for (const auto& [name, differentiable] : ops) {
    BOOST_TEST_CONTEXT(name) {
      const op::OpDef* def = op::find_op(name);
      BOOST_TEST_REQUIRE(def != nullptr);
      BOOST_TEST(def->cpu != nullptr);
      BOOST_TEST((def->gpu != nullptr) == cuda_build);
      BOOST_TEST((def->gradient != nullptr) == differentiable);
    }
  }
}

BOOST_AUTO_TEST_CASE(pick_and_the_softmax_backward_ops_are_registered) {
  const bool cuda_build = mx::built_with_cuda();
  // name, differentiable (the backward ops are not)
  const std::vector<std::pair<const char*, bool>> ops{{"pick", true},
                                                      {"_backward_pick", false},
                                                      {"softmax", true},
                                                      {"log_softmax", true},
                                                      {"_backward_softmax", false},
                                                      {"_backward_log_softmax", false}};
  for (const auto& [name, differentiable] : ops) {
    BOOST_TEST_CONTEXT(name) {
      const op::OpDef* def = op::find_op(name);
      BOOST_TEST_REQUIRE(def != nullptr);
      BOOST_TEST(def->cpu != nullptr);
      BOOST_TEST((def->gpu != nullptr) == cuda_build);
      BOOST_TEST(def->attrs != nullptr);
      BOOST_TEST((def->gradient != nullptr) == differentiable);
    }
  }
}

BOOST_AUTO_TEST_CASE(mxnet_model_ops_are_registered) {
  const bool cuda_build = mx::built_with_cuda();
  // name, differentiable, has attributes
  const std::vector<std::tuple<const char*, bool, bool>> ops{{"LeakyReLU", true, true},
                                                             {"_backward_LeakyReLU", false, true},
                                                             {"BlockGrad", true, false},
                                                             {"SoftmaxOutput", true, true},
                                                             {"_backward_SoftmaxOutput", false, true}};
  for (const auto& [name, differentiable, has_attrs] : ops) {
    BOOST_TEST_CONTEXT(name) {
      const op::OpDef* def = op::find_op(name);
      BOOST_TEST_REQUIRE(def != nullptr);
      BOOST_TEST(std::string(def->name) == name);
      BOOST_TEST(def->cpu != nullptr);
      BOOST_TEST((def->gpu != nullptr) == cuda_build);
      BOOST_TEST((def->attrs != nullptr) == has_attrs);
      BOOST_TEST((def->gradient != nullptr) == differentiable);
    }
  }
  BOOST_TEST(op::find_op("SoftmaxOutput")->arity == 2u);  // the label may be absent
}

BOOST_AUTO_TEST_CASE(pick_records_one_invocation_with_mxnet_attributes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    x.attach_grad();
    nd::NDArray y;
    {
      auto scope = mx::autograd::record();
      y = nd::pick(nd::log_softmax(x), nd::array({{2}, {-1}}, ctx), 1, true, "wrap");
    }
    const op::Invocation& pick = *y.autograd_node()->invocation;
    BOOST_TEST(std::string(pick.op->name) == "pick");
    const std::vector<std::pair<std::string, std::string>> expected{
        {"axis", "1"}, {"keepdims", "True"}, {"mode", "wrap"}};
    BOOST_TEST((pick.op->attrs(pick.params) == expected));
    const op::Invocation& log_softmax = *y.autograd_node()->inputs.at(0)->invocation;
    BOOST_TEST(std::string(log_softmax.op->name) == "log_softmax");
    BOOST_TEST((log_softmax.op->attrs(log_softmax.params) ==
                std::vector<std::pair<std::string, std::string>>{{"axis", "-1"}}));
    // The gradient of each is its one backward op.
    const std::vector<nd::NDArray> pick_grads = pick.op->gradient(pick, {nd::ones({2, 1}, ctx)});
    BOOST_TEST_REQUIRE(pick_grads.size() == 2u);
    BOOST_TEST(pick_grads[1].is_none());  // the index
    BOOST_TEST(pick_grads[0].shape() == (mx::Shape{2, 3}));
    BOOST_TEST(pick_grads[0].asvector<double>() == (std::vector<double>{0, 0, 1, 0, 0, 1}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(a_recorded_product_reduction_and_concat_replay_on_new_values) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({{1, 2}, {3, 4}}, ctx);
    nd::NDArray b = nd::array({{1, 0}, {0, 1}}, ctx);
    a.attach_grad();
    nd::NDArray y;
    {
      auto scope = mx::autograd::record();
      y = nd::sum(nd::concat({nd::dot(a, b, false, true), a}, 1), 1);  // row sums of [a·bᵀ, a]
    }
    BOOST_TEST(y.asvector<double>() == (std::vector<double>{6, 14}), tt::per_element());
    const op::Invocation& sum = *y.autograd_node()->invocation;
    const op::Invocation& concat = *y.autograd_node()->inputs.at(0)->invocation;
    const op::Invocation& dot = *y.autograd_node()->inputs.at(0)->inputs.at(0)->invocation;
    BOOST_TEST(std::string(sum.op->name) == "sum");
    BOOST_TEST(std::string(concat.op->name) == "Concat");
    BOOST_TEST(std::string(dot.op->name) == "dot");
    BOOST_TEST((dot.op->attrs(dot.params).at(1) == std::pair<std::string, std::string>{"transpose_b", "True"}));
    // b becomes 2·I: a·bᵀ doubles, so each row sum is 3 times a's.
    b.fill(0.0);
    b[0][0].fill(2.0);
    b[1][1].fill(2.0);
    for (const op::Invocation* inv : {&dot, &concat, &sum}) op::run_kernel(*inv);
    BOOST_TEST(y.asvector<double>() == (std::vector<double>{9, 21}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(fully_connected_records_one_invocation_with_mxnet_attributes) {
  nd::NDArray x = nd::ones({2, 3});
  nd::NDArray w = nd::ones({4, 3});
  w.attach_grad();
  nd::NDArray y;
  {
    auto scope = mx::autograd::record();
    y = nd::FullyConnected(x, w, nd::NDArray(), 4, true, true, "relu");
  }
  BOOST_TEST_REQUIRE(y.autograd_node() != nullptr);
  BOOST_TEST_REQUIRE(y.autograd_node()->invocation != nullptr);
  const op::Invocation& fc = *y.autograd_node()->invocation;
  BOOST_TEST(std::string(fc.op->name) == "FullyConnected");
  BOOST_TEST(fc.inputs.at(2).is_none());
  const auto attrs = fc.op->attrs(fc.params);
  const std::vector<std::pair<std::string, std::string>> expected{
      {"num_hidden", "4"}, {"no_bias", "True"}, {"flatten", "True"}, {"act_type", "relu"}};
  BOOST_TEST((attrs == expected));
}

BOOST_AUTO_TEST_CASE(autograd_records_the_invocation_and_replays_it) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({-1.0, 0.5, 2.0}, ctx);
    x.attach_grad();
    nd::NDArray y;
    {
      auto scope = mx::autograd::record();
      y = nd::gelu(x) * 3.0;
    }
    const auto& node = y.autograd_node();
    BOOST_TEST_REQUIRE(node != nullptr);
    BOOST_TEST_REQUIRE(node->invocation != nullptr);
    const op::Invocation& mul = *node->invocation;
    BOOST_TEST(std::string(mul.op->name) == "_multiply_scalar");
    BOOST_TEST(mul.op->attrs(mul.params).at(0).first == "scalar");
    BOOST_TEST(std::stod(mul.op->attrs(mul.params).at(0).second) == 3.0);
    // Its input is the recorded gelu, whose invocation names x's storage.
    const auto& gelu_node = node->inputs.at(0);
    BOOST_TEST_REQUIRE(gelu_node->invocation != nullptr);
    const op::Invocation& gelu = *gelu_node->invocation;
    BOOST_TEST(std::string(gelu.op->name) == "gelu");
    BOOST_TEST(gelu.inputs.at(0).data() == x.data());
    // Replay with new input values, without the front end: the outputs follow.
    x.fill(1.0);
    op::run_kernel(gelu);
    op::run_kernel(mul);
    const double gelu1 = 0.5 * (1 + std::erf(1 / std::sqrt(2.0)));
    BOOST_TEST(y.asvector<double>() == std::vector<double>(3, 3 * gelu1), tt::tolerance(1e-6) << tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(params_are_read_as_the_type_they_were_written) {
  struct A { int v; };
  struct B { int v; };
  const op::Params p = A{7};
  BOOST_TEST(p.as<A>().v == 7);
  BOOST_CHECK_THROW(p.as<B>(), mx::Error);
}

BOOST_AUTO_TEST_SUITE_END()
