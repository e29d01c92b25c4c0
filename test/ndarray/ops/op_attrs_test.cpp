// Reading MXNet's symbol-JSON attributes back into an op's Params (OpDef::parse_attrs, the inverse
// of OpDef::attrs; ndarray/ops/attrs.hpp): the texts MXNet writes, the round trip Params -> attrs
// -> parse_attrs -> attrs for every registered op with attributes, attributes as MXNet's Gluon
// exports them parsed and run with op::invoke against the front end on every context, MXNet's
// names of registered ops, and the errors for what ndgluon cannot read or compute.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/image_kernels.hpp"
#include "ndarray/ops/indexing_kernels.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"
#include "ndarray/ops/nn_kernels.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/optimizer_kernels.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "ndarray/ops/softmax_kernels.hpp"

namespace nd = mx::nd;
namespace op = mx::op;
namespace tt = boost::test_tools;
using mx::DType;
using op::AttrList;
using ndg_test::random_array;
using ndg_test::values;

namespace {

using Dims = std::vector<std::int64_t>;

const op::OpDef& def_of(const std::string& name) {
  const op::OpDef* def = op::find_op(name);
  BOOST_TEST_REQUIRE(def != nullptr, name << " is not registered");
  return *def;
}

op::Params parsed(const std::string& name, const AttrList& attrs) {
  const op::OpDef& def = def_of(name);
  BOOST_TEST_REQUIRE(def.parse_attrs != nullptr, name << " has no parse_attrs");
  return def.parse_attrs(attrs);
}

// The params of the invocation that produced y (y recorded under autograd::record()).
op::Params recorded_params(const nd::NDArray& y) {
  BOOST_TEST_REQUIRE(y.autograd_node() != nullptr);
  BOOST_TEST_REQUIRE(y.autograd_node()->invocation != nullptr);
  return y.autograd_node()->invocation->params;
}

template <class Fn>
op::Params recorded(Fn&& fn) {
  nd::NDArray x = random_array({2, 4, 6}, mx::cpu(), 1);
  x.attach_grad();
  auto scope = mx::autograd::record();
  return recorded_params(fn(x));
}

// Representative params of every registered op with attributes, by name (the scalar ops share
// theirs): values other than the defaults where the attribute allows.
std::map<std::string, std::vector<op::Params>> representatives() {
  op::ConvolutionParams conv;
  conv.window = op::make_window("test", {3, 3}, {2, 1}, {1, 2}, {1, 0});
  conv.num_filter = 8;
  conv.num_group = 2;
  conv.no_bias = true;
  conv.act = mx::UnaryOp::relu;
  op::ConvolutionParams conv1d;
  conv1d.window = op::make_window("test", {5}, {}, {}, {2});
  conv1d.num_filter = 3;
  op::ConvolutionParams conv_last = conv;  // layout NHWC
  conv_last.channels_last = true;
  op::PoolingParams avg;
  avg.window = op::make_window("test", {3, 3}, {2, 2}, {}, {1, 1});
  avg.max = false;
  avg.full_convention = true;
  avg.count_include_pad = false;
  op::PoolingParams global;
  global.global_pool = true;
  op::BatchNormParams bn;
  bn.eps = 1e-7;
  bn.momentum = 0.8;
  bn.axis = -1;
  bn.fix_gamma = false;
  bn.use_global_stats = true;
  bn.training = false;
  op::SyncBatchNormParams sync;
  sync.bn = bn;
  sync.bn.axis = 1;
  sync.ndev = 4;
  std::snprintf(sync.key, sizeof(sync.key), "%s", "syncbatchnorm0_");
  op::FullyConnectedParams fc7;
  fc7.num_hidden = 7;
  op::FullyConnectedParams fc;
  fc.num_hidden = 10;
  fc.no_bias = true;
  fc.flatten = false;
  fc.act = mx::UnaryOp::tanh;
  mx::functors::OptimizerStep step;
  step.lr = 0.05;
  step.wd = 1e-4;
  step.rescale = 0.5;
  step.clip = 2;
  step.momentum = 0.9;
  step.beta1 = 0.8;
  step.beta2 = 0.99;
  step.epsilon = 1e-8;
  mx::functors::OptimizerStep plain = step;  // the front end's step of an update without momentum
  plain.momentum = 0;
  const op::Params deconv = recorded([](const nd::NDArray& x) {
    return nd::Deconvolution(x.reshape({2, 4, 2, 3}), nd::ones({4, 2, 3, 3}), nd::ones({4}),
                             {.kernel = {3, 3}, .stride = {2, 2}, .dilate = {1, 2}, .adj = {1, 0},
                              .num_filter = 4, .num_group = 2, .no_bias = false, .act_type = "sigmoid"});
  });
  const op::Params deconv_target = recorded([](const nd::NDArray& x) {
    return nd::Deconvolution(x.reshape({2, 4, 6}), nd::ones({4, 1, 3}), {},
                             {.kernel = {3}, .stride = {2}, .target_shape = {12}, .num_filter = 1});
  });
  const std::vector<op::Params> softmax{op::SoftmaxParams{1, false}}, log_softmax{op::SoftmaxParams{-2, true}};
  std::map<std::string, std::vector<op::Params>> r{
      {"Convolution", {conv, conv1d, conv_last}},
      {"Deconvolution", {deconv, deconv_target}},
      {"Pooling", {avg, global, op::PoolingParams{}}},
      {"BatchNorm", {bn, op::BatchNormParams{}}},
      {"_contrib_SyncBatchNorm", {sync, op::SyncBatchNormParams{}}},
      {"FullyConnected", {fc, fc7}},
      {"Dropout", {op::DropoutParams{0.25, true}, op::DropoutParams{0.5, false}}},
      {"softmax", softmax},
      {"log_softmax", log_softmax},
      {"_backward_softmax", softmax},
      {"_backward_log_softmax", log_softmax},
      {"dot", {op::DotParams{true, false}, op::DotParams{false, true}}},
      {"batch_dot", {op::DotParams{true, false}, op::DotParams{false, true}}},
      {"Concat", {recorded([](const nd::NDArray& x) { return nd::concat({x, x}, -1); })}},
      {"slice_axis", {recorded([](const nd::NDArray& x) { return nd::slice_axis(x, 2, 1, -1); })}},
      {"Cast", {op::CastParams{DType::int32}, op::CastParams{DType::float64}}},
      {"pick", {op::PickParams{0, true, true}, op::PickParams{}}},
      {"_full", {op::FillParams{-2.5}}},
      {"_arange", {op::ArangeParams{1.5, 0.25}, op::ArangeParams{1.5, 0.25, 6, DType::int32}}},
      {"_random_uniform", {op::RandomParams{-1, 3}}},
      {"_random_normal", {op::RandomParams{0.5, 1e-3}}},
      {"sgd_update", {step}},
      {"sgd_mom_update", {step}},
      {"adam_update", {step}},
      {"multi_sgd_update", {op::MultiStep{plain, 3}}},
      {"multi_sgd_mom_update", {op::MultiStep{step, 1}}},
      {"mp_sgd_update", {plain}},
      {"mp_sgd_mom_update", {step}},
      {"mp_adam_update", {step}},
      {"multi_mp_sgd_update", {op::MultiStep{plain, 2}}},
      {"multi_mp_sgd_mom_update", {op::MultiStep{step, 1}}},
      {"multi_all_finite", {op::AllFiniteParams{3}}},
      {"_contrib_BilinearResize2D", {op::BilinearResizeParams{}, op::BilinearResizeParams{5, 7, 1.5, 0.25, false}}},
      {"_image_crop_resize", {op::CropResizeParams{}, op::CropResizeParams{224, 160, 0, 127.5f}}},
      {"_image_normalize", {op::NormalizeParams{}, op::NormalizeParams{3, {0.485f, 0.456f, 0.406f, 0}, {0.229f, 0.224f, 0.225f, 1}}}},
  };
  for (const char* name : {"_backward_Convolution_data", "_backward_Convolution_weight",
                           "_backward_Convolution_bias"}) {
    r[name] = r["Convolution"];
  }
  r["_backward_Pooling"] = r["Pooling"];
  r["_backward_contrib_BilinearResize2D"] = r["_contrib_BilinearResize2D"];
  r["_backward_BatchNorm"] = r["BatchNorm"];
  r["_backward_contrib_SyncBatchNorm"] = r["_contrib_SyncBatchNorm"];
  for (const mx::ReduceOp reduce : {mx::ReduceOp::sum, mx::ReduceOp::max, mx::ReduceOp::min, mx::ReduceOp::argmax,
                                    mx::ReduceOp::argmin}) {
    r[mx::op_name(reduce)] = {op::ReduceParams{reduce, -2, true, true}, op::ReduceParams{reduce, 0, false, false}};
  }
  return r;
}

// Attributes as MXNet writes them, parsed for more representatives: texts that no front end
// gives, and ops whose params struct is their family file's own.
const std::map<std::string, AttrList>& samples() {
  static const std::map<std::string, AttrList> s{
      {"slice_axis", {{"axis", "-1"}, {"begin", "-3"}, {"end", "None"}}},
      {"Concat", {{"dim", "0"}, {"num_args", "2"}}},
      {"Reshape", {{"shape", "(0, -1, 4)"}}},
      {"broadcast_to", {{"shape", "(2, 0, 5)"}}},
      {"Activation", {{"act_type", "tanh"}}},
      {"Deconvolution", {{"kernel", "(2, 2)"}, {"target_shape", "(0, 0)"}, {"num_filter", "3"}}},
      {"LeakyReLU", {{"act_type", "elu"}, {"slope", "0.3"}, {"lower_bound", "0.125"}, {"upper_bound", "0.334"}}},
      {"_backward_LeakyReLU", {{"act_type", "gelu"}}},
      {"SoftmaxOutput", {{"grad_scale", "0.5"}, {"ignore_label", "3"}, {"use_ignore", "True"},
                         {"normalization", "valid"}, {"multi_output", "False"}, {"preserve_shape", "True"}}},
      {"_backward_SoftmaxOutput", {{"normalization", "batch"}}},
      {"take", {{"axis", "-1"}, {"mode", "raise"}}},
      {"Embedding", {{"input_dim", "10"}, {"output_dim", "4"}, {"dtype", "float16"}, {"sparse_grad", "True"}}},
      {"clip", {{"a_min", "-0.5"}, {"a_max", "1e+20"}}},
      {"_backward_clip", {{"a_min", "0"}, {"a_max", "6"}}},
      {"SequenceMask", {{"use_sequence_length", "True"}, {"value", "-1e9"}, {"axis", "1"}}},
      {"SequenceLast", {{"use_sequence_length", "False"}, {"axis", "1"}}},
      {"SequenceReverse", {{"use_sequence_length", "True"}}},
      {"stack", {{"axis", "-1"}, {"num_args", "3"}}},
      {"SliceChannel", {{"num_outputs", "3"}, {"axis", "0"}, {"squeeze_axis", "True"}}},
      {"squeeze", {{"axis", "(0, 2)"}}},
      {"expand_dims", {{"axis", "-1"}}},
      {"tile", {{"reps", "(2, 1, 3)"}}},
      {"repeat", {{"repeats", "3"}, {"axis", "None"}}},
      {"reverse", {{"axis", "(0, 1)"}}},
      {"transpose", {{"axes", "(1, 0, 2)"}}},
      {"topk", {{"axis", "None"}, {"k", "3"}, {"ret_typ", "both"}, {"is_ascend", "True"}, {"dtype", "int32"}}},
      {"sort", {{"axis", "0"}, {"is_ascend", "False"}}},
      {"argsort", {{"axis", "-1"}, {"dtype", "int64"}}},
      {"RNN", {{"state_size", "8"}, {"num_layers", "2"}, {"bidirectional", "True"}, {"mode", "lstm"}, {"p", "0.2"},
               {"state_outputs", "True"}, {"projection_size", "4"}, {"lstm_state_clip_min", "-1"},
               {"lstm_state_clip_max", "1.5"}, {"lstm_state_clip_nan", "True"}}},
      {"_backward_RNN", {{"state_size", "4"}, {"num_layers", "1"}, {"mode", "gru"}}},
      {"softmax", {{"axis", "1"}, {"temperature", "2.5"}, {"use_length", "True"}, {"dtype", "None"}}},
      {"_backward_log_softmax", {{"axis", "-1"}, {"temperature", "0.5"}, {"use_length", "True"}}},
      {"LayerNorm", {{"axis", "1"}, {"eps", "1e-12"}, {"output_mean_var", "True"}}},
      {"_backward_LayerNorm", {{"axis", "-1"}}},
      {"GroupNorm", {{"num_groups", "4"}, {"eps", "0.001"}}},
      {"_backward_GroupNorm", {{"num_groups", "2"}, {"output_mean_var", "False"}}},
      {"InstanceNorm", {{"eps", "1e-05"}}},
      {"_backward_InstanceNorm", {}},
      {"_contrib_interleaved_matmul_selfatt_qk", {{"heads", "12"}}},
      {"_contrib_interleaved_matmul_selfatt_valatt", {{"heads", "12"}}},
      {"_contrib_interleaved_matmul_encdec_qk", {{"heads", "8"}}},
      {"_contrib_interleaved_matmul_encdec_valatt", {{"heads", "8"}}},
      {"_backward_interleaved_matmul_selfatt_qk", {{"heads", "2"}}},
      {"_backward_interleaved_matmul_selfatt_valatt", {{"heads", "2"}}},
      {"_backward_interleaved_matmul_encdec_qk", {{"heads", "1"}}},
      {"_backward_interleaved_matmul_encdec_valatt", {{"heads", "1"}}},
      {"_sdpa_fused", {{"causal", "True"}, {"dropout", "0.1"}, {"scale", "0.125"}}},
      {"_backward_sdpa_fused", {{"causal", "False"}, {"dropout", "0.0"}, {"scale", "0.08838834764831845"}}}};
  return s;
}

bool is_scalar_op(const std::string& name) {
  return name.size() > 8 && name.front() == '_' && name.compare(name.size() - 7, 7, "_scalar") == 0 &&
         name.compare(0, 10, "_backward_") != 0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(op_attrs)

// --- the texts -------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(tuples_booleans_and_numbers_as_mxnet_writes_them) {
  BOOST_TEST((op::parse_tuple("(3, 3)") == Dims{3, 3}));
  BOOST_TEST((op::parse_tuple("[3,3]") == Dims{3, 3}));
  BOOST_TEST((op::parse_tuple("3") == Dims{3}));
  BOOST_TEST((op::parse_tuple("(3,)") == Dims{3}));
  BOOST_TEST((op::parse_tuple(" ( -1 , 2 , 7 ) ") == Dims{-1, 2, 7}));
  BOOST_TEST((op::parse_tuple("(3L, 3L)") == Dims{3, 3}));  // Python 2's longs
  BOOST_TEST((op::parse_tuple("()") == Dims{}));
  BOOST_TEST((op::parse_tuple("None") == Dims{}));
  for (const char* bad : {"(3, x)", "(3", "3)", "(,)", "(3,,3)", "(1.5, 2)", "[3, 3)", "abc"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!op::parse_tuple(bad).has_value()); }
  }
  BOOST_TEST((op::parse_real_tuple("(0.1, 1e-05)") == std::vector<double>{0.1, 1e-5}));

  for (const char* yes : {"True", "true", "1"}) BOOST_TEST((op::parse_bool(yes) == std::optional<bool>(true)));
  for (const char* no : {"False", "false", "0"}) BOOST_TEST((op::parse_bool(no) == std::optional<bool>(false)));
  for (const char* bad : {"maybe", "", "2", "None"}) BOOST_TEST(!op::parse_bool(bad).has_value());

  BOOST_TEST((op::parse_int("-1") == std::optional<std::int64_t>(-1)));
  BOOST_TEST((op::parse_int("1024") == std::optional<std::int64_t>(1024)));
  for (const char* bad : {"1.5", "", "x", "1e3", "99999999999999999999"}) BOOST_TEST(!op::parse_int(bad).has_value());

  BOOST_TEST((op::parse_real("1e-05") == std::optional<double>(1e-5)));
  BOOST_TEST((op::parse_real("0.9") == std::optional<double>(0.9)));
  BOOST_TEST((op::parse_real("2") == std::optional<double>(2.0)));
  BOOST_TEST((op::parse_real("inf") == std::optional<double>(std::numeric_limits<double>::infinity())));
  BOOST_TEST((op::parse_real("-inf") == std::optional<double>(-std::numeric_limits<double>::infinity())));
  BOOST_TEST(std::isnan(op::parse_real("nan").value_or(0.0)));
  for (const char* bad : {"", "x", "1,5", "0.5f"}) BOOST_TEST(!op::parse_real(bad).has_value());

  BOOST_TEST((op::parse_dtype("float64") == std::optional<DType>(DType::float64)));
  BOOST_TEST((op::parse_dtype("float16") == std::optional<DType>(DType::float16)));
  BOOST_TEST((op::parse_dtype("bfloat16") == std::optional<DType>(DType::bfloat16)));
  BOOST_TEST(!op::parse_dtype("int8").has_value());
}

BOOST_AUTO_TEST_CASE(reals_are_written_as_python_repr_and_read_back_exactly) {
  const std::vector<std::pair<double, std::string>> cases{
      {0.9, "0.9"},     {1e-5, "1e-05"},   {1e-8, "1e-08"},   {2.0, "2.0"},         {0.0, "0.0"},
      {-0.5, "-0.5"},   {0.0001, "0.0001"}, {123456.789, "123456.789"}, {1e16, "1e+16"}, {-1.0, "-1.0"},
      {0.1 + 0.2, "0.30000000000000004"}, {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"}};
  for (const auto& [v, text] : cases) {
    BOOST_TEST_CONTEXT(text) {
      BOOST_TEST(op::format_real(v) == text);
      BOOST_TEST((op::parse_real(op::format_real(v)) == std::optional<double>(v)));
    }
  }
  BOOST_TEST(op::format_real(std::nan("")) == "nan");
}

// --- every op's round trip -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(every_op_with_attributes_parses_what_it_writes) {
  const auto cases = representatives();
  const op::Params scalar = op::ScalarParams{2.5, true};
  std::size_t checked = 0;
  for (const op::OpDef* def : op::registered_ops()) {
    const std::string name = def->name;
    BOOST_TEST_CONTEXT(name) {
      // Ops without attributes have nothing to parse; _backward_pick's params carry the data's
      // shape, which its attributes do not give.
      if (!def->attrs || name == "_backward_pick") {
        BOOST_TEST(def->parse_attrs == nullptr);
        continue;
      }
      BOOST_TEST_REQUIRE(def->parse_attrs != nullptr);
      std::vector<op::Params> params_list;
      if (is_scalar_op(name)) params_list.push_back(scalar);
      if (const auto it = cases.find(name); it != cases.end()) params_list = it->second;
      if (const auto it = samples().find(name); it != samples().end()) {
        params_list.push_back(def->parse_attrs(it->second));
      }
      BOOST_TEST_REQUIRE(!params_list.empty(), "no representative params for " << name);
      for (const op::Params& params : params_list) {
        const AttrList written = def->attrs(params);
        const AttrList again = def->attrs(def->parse_attrs(written));
        BOOST_TEST((again == written));
        ++checked;
      }
    }
  }
  BOOST_TEST(checked >= 60u);
}

BOOST_AUTO_TEST_CASE(parsed_params_are_the_written_ones) {
  const AttrList bn = def_of("BatchNorm").attrs(op::BatchNormParams{1e-7, 0.8, -1, false, true, false});
  const auto p = def_of("BatchNorm").parse_attrs(bn).as<op::BatchNormParams>();
  BOOST_TEST(p.eps == 1e-7);  // not "0.000000"
  BOOST_TEST(p.momentum == 0.8);
  BOOST_TEST(p.axis == -1);
  BOOST_TEST(!p.fix_gamma);
  BOOST_TEST(p.use_global_stats);
  BOOST_TEST(!p.training);  // the running statistics, as the front end uses them with use_global_stats

  mx::functors::OptimizerStep step;
  step.lr = 1e-5;
  step.epsilon = 1e-8;
  const auto adam = parsed("adam_update", def_of("adam_update").attrs(step)).as<mx::functors::OptimizerStep>();
  BOOST_TEST(adam.lr == 1e-5);
  BOOST_TEST(adam.epsilon == 1e-8);

  const auto conv = parsed("Convolution", {{"kernel", "(3,)"}, {"num_filter", "4"}}).as<op::ConvolutionParams>();
  BOOST_TEST(conv.window.spatial == 1);
  BOOST_TEST(conv.window.kernel[2] == 3);
  BOOST_TEST(conv.window.stride[2] == 1);
  BOOST_TEST(conv.num_group == 1);
  BOOST_TEST(!conv.no_bias);  // MXNet's defaults
  BOOST_TEST(!conv.act.has_value());
  BOOST_TEST(conv.data_grad);
}

// --- attributes as MXNet writes them, run ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(mxnet_convolution_and_pooling_attributes_compute_as_the_front_end) {
  const AttrList conv_attrs{{"kernel", "(3, 3)"},  {"num_filter", "8"},    {"pad", "(1, 1)"},
                            {"stride", "(1, 1)"},  {"no_bias", "False"},   {"workspace", "1024"},
                            {"cudnn_tune", "limited_workspace"},           {"layout", "NCHW"},
                            {"dilate", "(1, 1)"},  {"num_group", "1"},     {"cudnn_off", "False"}};
  const AttrList pool_attrs{{"kernel", "(2, 2)"}, {"pool_type", "max"}, {"stride", "(2, 2)"},
                            {"pooling_convention", "valid"}, {"global_pool", "False"}, {"pad", "(0, 0)"},
                            {"layout", "NCHW"}, {"cudnn_off", "False"}, {"p_value", "None"},
                            {"count_include_pad", "None"}};
  const AttrList global_avg{{"kernel", "(1, 1)"}, {"pool_type", "avg"}, {"global_pool", "True"},
                            {"pooling_convention", "valid"}, {"count_include_pad", "True"}, {"layout", "NCHW"}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = random_array({2, 3, 6, 6}, ctx, 1), w = random_array({8, 3, 3, 3}, ctx, 2);
    const nd::NDArray b = random_array({8}, ctx, 3);
    const nd::NDArray y = op::invoke1(def_of("Convolution"), {x, w, b}, parsed("Convolution", conv_attrs));
    const nd::NDArray want =
        nd::Convolution(x, w, b, {.kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .num_filter = 8});
    BOOST_TEST(y.shape() == (mx::Shape{2, 8, 6, 6}));
    BOOST_TEST(values(y) == values(want), tt::per_element());

    const auto pooled = op::invoke(def_of("Pooling"), {y}, parsed("Pooling", pool_attrs));
    const nd::NDArray pool_want = nd::Pooling(y, {.kernel = {2, 2}, .pool_type = "max", .stride = {2, 2}});
    BOOST_TEST(pooled.at(0).shape() == (mx::Shape{2, 8, 3, 3}));
    BOOST_TEST(values(pooled.at(0)) == values(pool_want), tt::per_element());

    const nd::NDArray gap = op::invoke(def_of("Pooling"), {y}, parsed("Pooling", global_avg)).at(0);
    BOOST_TEST(values(gap) == values(nd::Pooling(y, {.pool_type = "avg", .global_pool = true})), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(mxnet_dense_activation_dropout_and_softmax_attributes_compute_as_the_front_end) {
  const AttrList dense{{"num_hidden", "10"}, {"no_bias", "False"}, {"flatten", "True"}};
  // MXNet's Activation {"act_type": "relu"} is no ndgluon op: the same act_type is FullyConnected's
  // and Convolution's fused activation (an ndgluon extension of their attributes).
  const AttrList dense_relu{{"num_hidden", "10"}, {"act_type", "relu"}};
  const AttrList conv_relu{{"kernel", "(1, 1)"}, {"num_filter", "2"}, {"no_bias", "True"}, {"act_type", "relu"}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = random_array({4, 2, 3}, ctx, 4), w = random_array({10, 6}, ctx, 5);
    const nd::NDArray b = random_array({10}, ctx, 6);
    const nd::NDArray y = op::invoke1(def_of("FullyConnected"), {x, w, b}, parsed("FullyConnected", dense));
    BOOST_TEST(values(y) == values(nd::FullyConnected(x, w, b, 10)), tt::per_element());
    const nd::NDArray relu = op::invoke1(def_of("FullyConnected"), {x, w, b}, parsed("FullyConnected", dense_relu));
    BOOST_TEST(values(relu) == values(nd::FullyConnected(x, w, b, 10, false, true, "relu")), tt::per_element());
    const nd::NDArray w1 = random_array({2, 2, 1, 1}, ctx, 7), x4 = x.reshape({4, 2, 3, 1});
    const nd::NDArray conv =
        op::invoke1(def_of("Convolution"), {x4, w1, nd::NDArray()}, parsed("Convolution", conv_relu));
    BOOST_TEST(values(conv) == values(nd::Convolution(x4, w1, {}, {.kernel = {1, 1}, .num_filter = 2, .no_bias = true,
                                                                    .act_type = "relu"})),
               tt::per_element());

    // Dropout {"p": "0.5"}: the same mask as the front end's in training, for the same seed.
    mx::random::seed(11);
    const nd::NDArray dropped = op::invoke(def_of("Dropout"), {y}, parsed("Dropout", {{"p", "0.5"}})).at(0);
    mx::random::seed(11);
    nd::NDArray dropped_want;
    {
      auto training = mx::autograd::train_mode();
      dropped_want = nd::Dropout(y, 0.5);
    }
    BOOST_TEST(values(dropped) == values(dropped_want), tt::per_element());
    const ndg_test::Values yv = values(y), dv = values(dropped);
    for (std::size_t i = 0; i < yv.size(); ++i) BOOST_TEST((dv[i] == 0.0 || std::abs(dv[i] - 2 * yv[i]) < 1e-6));

    const AttrList softmax{{"axis", "-1"}};
    BOOST_TEST(values(op::invoke1(def_of("softmax"), {y}, parsed("softmax", softmax))) == values(nd::softmax(y, -1)),
               tt::per_element());
    const AttrList log_softmax{{"axis", "0"}, {"temperature", "None"}, {"dtype", "None"}, {"use_length", "False"}};
    BOOST_TEST(values(op::invoke1(def_of("log_softmax"), {y}, parsed("log_softmax", log_softmax))) ==
                   values(nd::log_softmax(y, 0)),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(mxnet_batch_norm_attributes_compute_as_the_front_end_in_training) {
  const AttrList attrs{{"eps", "1e-05"}, {"momentum", "0.9"}, {"fix_gamma", "False"}, {"use_global_stats", "False"},
                       {"axis", "1"}, {"output_mean_var", "False"}, {"cudnn_off", "False"},
                       {"min_calib_range", "None"}, {"max_calib_range", "None"}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = random_array({4, 3, 2, 2}, ctx, 8), gamma = random_array({3}, ctx, 9);
    const nd::NDArray beta = random_array({3}, ctx, 10);
    const auto stats = [&] { return std::pair{nd::zeros({3}, ctx), nd::ones({3}, ctx)}; };
    auto [mean, var] = stats();
    const op::Params params = parsed("BatchNorm", attrs);
    const nd::NDArray y = op::invoke(def_of("BatchNorm"), {x, gamma, beta, mean, var}, params).at(0);
    auto [mean_want, var_want] = stats();
    nd::NDArray want;
    {
      auto training = mx::autograd::train_mode();
      want = nd::BatchNorm(x, gamma, beta, mean_want, var_want,
                           {.eps = 1e-5, .momentum = 0.9, .fix_gamma = false, .use_global_stats = false, .axis = 1});
    }
    BOOST_TEST(values(y) == values(want), tt::per_element());
    BOOST_TEST(values(mean) == values(mean_want), tt::per_element());  // the running statistics updated alike
    BOOST_TEST(values(var) == values(var_want), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(mxnet_deconvolution_reduction_and_arithmetic_attributes_compute_as_the_front_end) {
  // target_shape is resolved against the data when the op runs, as MXNet does: pad and adj follow.
  const AttrList deconv{{"kernel", "(3, 3)"}, {"stride", "(2, 2)"}, {"dilate", "(1, 1)"}, {"pad", "(0, 0)"},
                        {"adj", "(0, 0)"}, {"target_shape", "(8, 8)"}, {"num_filter", "4"}, {"num_group", "1"},
                        {"workspace", "512"}, {"no_bias", "True"}, {"cudnn_tune", "None"}, {"cudnn_off", "False"},
                        {"layout", "None"}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = random_array({1, 2, 4, 4}, ctx, 12), w = random_array({2, 4, 3, 3}, ctx, 13);
    const nd::NDArray y = op::invoke1(def_of("Deconvolution"), {x, w, nd::NDArray()}, parsed("Deconvolution", deconv));
    BOOST_TEST(y.shape() == (mx::Shape{1, 4, 8, 8}));
    const nd::NDArray want =
        nd::Deconvolution(x, w, {}, {.kernel = {3, 3}, .stride = {2, 2}, .target_shape = {8, 8}, .num_filter = 4});
    BOOST_TEST(values(y) == values(want), tt::per_element());

    const AttrList sum{{"axis", "(1,)"}, {"keepdims", "True"}, {"exclude", "False"}};
    BOOST_TEST(values(op::invoke1(def_of("sum"), {y}, parsed("sum", sum))) == values(nd::sum(y, 1, true)),
               tt::per_element());
    BOOST_TEST(values(op::invoke1(def_of("argmax"), {y}, parsed("argmax", {{"axis", "None"}}))) ==
                   values(nd::argmax(y)),
               tt::per_element());

    // MXNet's names of registered ops, with MXNet's attributes.
    const nd::NDArray a = random_array({2, 3}, ctx, 14), b = random_array({1, 3}, ctx, 15);
    BOOST_TEST(values(op::invoke1(def_of("broadcast_mul"), {a, b})) == values(a * b), tt::per_element());
    BOOST_TEST(values(op::invoke1(def_of("elemwise_add"), {a, a})) == values(a + a), tt::per_element());
    const AttrList two{{"scalar", "2.0"}, {"is_int", "False"}};
    BOOST_TEST(values(op::invoke1(def_of("_plus_scalar"), {a}, parsed("_plus_scalar", two))) == values(a + 2.0),
               tt::per_element());
    BOOST_TEST(values(op::invoke1(def_of("_div_scalar"), {a}, parsed("_div_scalar", two))) == values(a / 2.0),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(mxnet_names_find_the_registered_ops) {
  const std::vector<std::pair<const char*, const char*>> synonyms{
      {"elemwise_add", "add"},       {"broadcast_add", "add"},        {"elemwise_sub", "subtract"},
      {"broadcast_sub", "subtract"}, {"elemwise_mul", "multiply"},    {"broadcast_mul", "multiply"},
      {"elemwise_div", "divide"},    {"broadcast_div", "divide"},     {"broadcast_power", "power"},
      {"broadcast_maximum", "maximum"}, {"broadcast_lesser", "less"}, {"_plus_scalar", "_add_scalar"},
      {"_minus_scalar", "_subtract_scalar"}, {"_mul_scalar", "_multiply_scalar"},
      {"_div_scalar", "_divide_scalar"}, {"_lesser_scalar", "_less_scalar"},
      {"flip", "reverse"},           {"split", "SliceChannel"}};
  for (const auto& [mxnet, ndgluon] : synonyms) {
    BOOST_TEST_CONTEXT(mxnet) { BOOST_TEST(op::find_op(mxnet) == &def_of(ndgluon)); }
  }
  // ndgluon's own names are found as they are; unknown ones are not.
  BOOST_TEST(std::string(def_of("add").name) == "add");
  BOOST_TEST(op::find_op("elemwise_no_such_op") == nullptr);
}

// MXNet's defaults where attributes are absent, and what the parsed attributes compute.
BOOST_AUTO_TEST_CASE(mxnet_indexing_shape_and_sort_attributes_compute_as_the_front_end) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = random_array({2, 6}, ctx, 3);
    const auto run = [&](const std::string& name, std::vector<nd::NDArray> inputs, const AttrList& attrs) {
      return op::invoke(def_of(name), std::move(inputs), parsed(name, attrs));
    };
    BOOST_TEST(values(run("SliceChannel", {x}, {{"num_outputs", "3"}})[2]) == values(nd::split(x, 3)[2]),
               tt::per_element());  // axis 1 by default
    BOOST_TEST(values(run("topk", {x}, {})[0]) == values(nd::topk(x)), tt::per_element());
    BOOST_TEST(values(run("sort", {x}, {{"axis", "None"}})[0]) == values(nd::sort(x, std::nullopt)), tt::per_element());
    BOOST_TEST(values(run("tile", {x}, {{"reps", "(2,)"}})[0]) == values(nd::tile(x, {2})), tt::per_element());
    BOOST_TEST(values(run("reverse", {x}, {{"axis", "(1,)"}})[0]) == values(nd::flip(x, {1})), tt::per_element());
    BOOST_TEST(values(run("transpose", {x}, {{"axes", "(1, 0)"}})[0]) == values(nd::transpose(x, {1, 0})),
               tt::per_element());
    BOOST_TEST(values(run("transpose", {x}, {})[0]) == values(nd::transpose(x)), tt::per_element());  // axes () reverses
    // Without use_sequence_length, MXNet's node has data alone: the absent input is a none array.
    BOOST_TEST(values(run("SequenceLast", {x, nd::NDArray()}, {})[0]) == values(nd::SequenceLast(x)), tt::per_element());
    BOOST_TEST(def_of("SequenceMask").arity == 2u);
    const auto clip = parsed("clip", {{"a_min", "-0.25"}, {"a_max", "0.5"}}).as<op::ClipParams>();
    BOOST_TEST(clip.a_min == -0.25);
    BOOST_TEST(clip.a_max == 0.5);
    const auto take = parsed("take", {}).as<op::TakeParams>();
    BOOST_TEST(take.axis == 0);
    BOOST_TEST((take.mode == op::TakeMode::clip));
  });
  NDG_CHECK_THROWS_WITH(parsed("take", {{"mode", "nearest"}}), mx::ValueError, "take", "mode", "nearest");
  NDG_CHECK_THROWS_WITH(parsed("topk", {{"ret_typ", "all"}}), mx::ValueError, "topk", "ret_typ", "all");
  NDG_CHECK_THROWS_WITH(parsed("clip", {{"a_min", "0"}}), mx::ValueError, "clip", "a_max");
  NDG_CHECK_THROWS_WITH(parsed("SliceChannel", {{"num_outputs", "0"}}), mx::ValueError, "SliceChannel", "num_outputs");
}

// --- errors ------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bad_or_unknown_attributes_throw_value_errors_naming_op_attribute_and_text) {
  NDG_CHECK_THROWS_WITH(parsed("Convolution", {{"kernel", "(3, x)"}, {"num_filter", "8"}}), mx::ValueError,
                        "Convolution", "kernel", "(3, x)", "tuple of integers");
  NDG_CHECK_THROWS_WITH(parsed("BatchNorm", {{"fix_gamma", "maybe"}}), mx::ValueError, "BatchNorm", "fix_gamma",
                        "maybe", "boolean");
  NDG_CHECK_THROWS_WITH(parsed("Convolution", {{"kernel", "(3, 3)"}, {"num_filter", "8"}, {"layout", "NWC"}}),
                        mx::ValueError, "Convolution", "layout", "NWC", "NCHW", "NHWC");
  NDG_CHECK_THROWS_WITH(parsed("Deconvolution", {{"kernel", "(3, 3)"}, {"num_filter", "8"}, {"layout", "NHWC"}}),
                        mx::ValueError, "Deconvolution", "layout", "NHWC", "NCHW");
  NDG_CHECK_THROWS_WITH(parsed("Pooling", {{"kernel", "(2,)"}, {"layout", "NCHW"}}), mx::ValueError, "Pooling",
                        "layout", "NCHW", "NCW");
  NDG_CHECK_THROWS_WITH(parsed("FullyConnected", {{"num_hidden", "10"}, {"foo", "bar"}}), mx::ValueError,
                        "FullyConnected", "unknown attribute", "foo", "bar", "num_hidden");
  NDG_CHECK_THROWS_WITH(parsed("FullyConnected", {{"no_bias", "True"}}), mx::ValueError, "FullyConnected",
                        "num_hidden", "required");
  NDG_CHECK_THROWS_WITH(parsed("FullyConnected", {{"num_hidden", "10"}, {"act_type", "softsign"}}), mx::ValueError,
                        "FullyConnected", "act_type", "softsign");
  NDG_CHECK_THROWS_WITH(parsed("Convolution", {{"kernel", "(3, 3)"}, {"num_filter", "0"}}), mx::ValueError,
                        "Convolution", "num_filter", "0");
  NDG_CHECK_THROWS_WITH(parsed("Deconvolution", {{"kernel", "(3, 3)"}, {"num_filter", "2"}, {"adj", "(2, 2)"},
                                                 {"stride", "(2, 2)"}}),
                        mx::ValueError, "Deconvolution", "adj (2, 2)", "stride (2, 2)");
  NDG_CHECK_THROWS_WITH(parsed("Pooling", {{"kernel", "(2, 2)"}, {"pool_type", "sum"}}), mx::ValueError, "Pooling",
                        "pool_type", "sum", "\"max\", \"avg\"");
  NDG_CHECK_THROWS_WITH(parsed("Pooling", {{"kernel", "(2, 2)"}, {"pooling_convention", "same"}}), mx::ValueError,
                        "Pooling", "pooling_convention", "same");
  NDG_CHECK_THROWS_WITH(parsed("Pooling", {{"kernel", "(2, 2)"}, {"pad", "(2, 0)"}}), mx::ValueError, "Pooling",
                        "pad (2, 0)");
  NDG_CHECK_THROWS_WITH(parsed("Dropout", {{"p", "0.5"}, {"axes", "(2, 3)"}}), mx::ValueError, "Dropout", "axes",
                        "(2, 3)");
  NDG_CHECK_THROWS_WITH(parsed("Dropout", {{"p", "1.5"}}), mx::ValueError, "Dropout", "p", "1.5");
  NDG_CHECK_THROWS_WITH(parsed("Cast", {{"dtype", "int8"}}), mx::ValueError, "Cast", "dtype", "int8");
  NDG_CHECK_THROWS_WITH(parsed("sum", {{"axis", "(0, 1)"}}), mx::ValueError, "sum", "axis", "(0, 1)");
  NDG_CHECK_THROWS_WITH(parsed("max", {{"exclude", "True"}}), mx::ValueError, "max", "exclude");
  NDG_CHECK_THROWS_WITH(parsed("softmax", {{"temperature", "-2.5"}}), mx::ValueError, "softmax", "temperature", "-2.5");
  NDG_CHECK_THROWS_WITH(parsed("log_softmax", {{"dtype", "float16"}}), mx::ValueError, "log_softmax", "dtype");
  NDG_CHECK_THROWS_WITH(parsed("pick", {{"axis", "None"}}), mx::ValueError, "pick", "axis", "None");
  NDG_CHECK_THROWS_WITH(parsed("slice_axis", {{"axis", "0"}, {"begin", "x"}, {"end", "None"}}), mx::ValueError,
                        "slice_axis", "begin", "x");
  NDG_CHECK_THROWS_WITH(parsed("_arange", {{"start", "0"}, {"repeat", "2"}}), mx::ValueError, "_arange", "repeat",
                        "2");
  NDG_CHECK_THROWS_WITH(parsed("_full", {{"value", "1"}, {"dtype", "bool"}}), mx::ValueError, "_full", "dtype",
                        "bool");
  NDG_CHECK_THROWS_WITH(parsed("multi_sgd_update", {{"lrs", "(0.1, 0.2)"}, {"wds", "(0, 0)"}, {"num_weights", "2"}}),
                        mx::ValueError, "multi_sgd_update", "lrs", "(0.1, 0.2)");
  NDG_CHECK_THROWS_WITH(parsed("_plus_scalar", {{"scalar", "two"}}), mx::ValueError, "_add_scalar", "scalar", "two");
  NDG_CHECK_THROWS_WITH(parsed("FullyConnected", {{"num_hidden", "10"}, {"num_hidden", "11"}}), mx::ValueError,
                        "FullyConnected", "num_hidden", "twice");
}

BOOST_AUTO_TEST_CASE(nnvm_hidden_attributes_and_ignored_ones_are_accepted) {
  const op::Params dense =
      parsed("FullyConnected", {{"num_hidden", "3"}, {"__profiler_scope__", "dense0:"}, {"__lr_mult__", "1.0"}});
  BOOST_TEST(dense.as<op::FullyConnectedParams>().num_hidden == 3);
  const op::Params fill =
      parsed("_full", {{"shape", "(2, 3)"}, {"ctx", "cpu(0)"}, {"dtype", "float32"}, {"value", "0.5"}});
  BOOST_TEST(fill.as<op::FillParams>().value == 0.5);
  const op::OpDef& concat = def_of("Concat");
  BOOST_TEST((concat.attrs(concat.parse_attrs({{"num_args", "3"}})) == AttrList{{"dim", "1"}}));  // MXNet's default
}

BOOST_AUTO_TEST_SUITE_END()
