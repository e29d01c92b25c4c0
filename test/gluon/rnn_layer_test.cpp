// gluon::rnn's layers (RNN, LSTM, GRU): MXNet's parameter names, shapes and save keys; outputs,
// last states and every parameter's gradient against the same network built from the cells (an
// NDArray implementation of the same equations: FullyConnected, sigmoid, tanh) on every context,
// in both layouts, bidirectional and several layers; states carried across batches; hybridize
// (one graph, the same values) and export/import; MXNet 1.9's files read; the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gluon/nn.hpp>
#include <gluon/rnn.hpp>
#include <ndarray/io/ndarray_file.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace rnn = mx::gluon::rnn;
namespace ag = mx::autograd;
using ndg_test::Values;
using ndg_test::values;

namespace {

// The layer's parameters by short name ("l0_i2h_weight").
std::map<std::string, mx::gluon::Parameter> by_short_name(const rnn::RecurrentLayer& layer) {
  std::map<std::string, mx::gluon::Parameter> out;
  for (const auto& [name, param] : layer.collect_params()) out.emplace(name.substr(layer.prefix().size()), param);
  return out;
}

// The same equations built from the cells: per layer a cell (or a BidirectionalCell of two) in a
// SequentialRNNCell, with the layer's weights copied in; `pairs` matches each layer parameter
// (short name) with its cell's.
struct CellNetwork {
  rnn::SequentialRNNCell stack;
  std::vector<std::pair<std::string, mx::gluon::Parameter>> pairs;
};

// make(input_size) gives one cell of the layer's kind.
template <class Make>
CellNetwork cells_like(const rnn::RecurrentLayer& layer, std::int64_t input, bool bidirectional, mx::Context ctx,
                       Make make) {
  CellNetwork net;
  auto params = by_short_name(layer);
  const auto copied = [&](auto cell, const std::string& layer_prefix) {
    cell.initialize(mx::init::Zero(), ctx);
    for (const char* part : {"i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"}) {
      mx::gluon::Parameter target = cell.collect_params()[cell.prefix() + part];
      target.set_data(params.at(layer_prefix + part).data(ctx));
      net.pairs.emplace_back(layer_prefix + part, target);
    }
    return cell;
  };
  const std::int64_t hidden = layer.hidden_size(), directions = bidirectional ? 2 : 1;
  for (std::int64_t l = 0; l < layer.num_layers(); ++l) {
    const std::int64_t in = l == 0 ? input : directions * hidden;
    auto left = copied(make(in), "l" + std::to_string(l) + "_");
    if (bidirectional) {
      net.stack.add(rnn::BidirectionalCell(left, copied(make(in), "r" + std::to_string(l) + "_")));
    } else {
      net.stack.add(left);
    }
  }
  return net;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rnn_layers)

BOOST_AUTO_TEST_CASE(parameters_have_mxnets_names_shapes_and_save_keys) {
  rnn::LayerOptions o;
  o.bidirectional = true;
  rnn::LSTM lstm(4, 2, o);
  lstm.initialize(mx::init::Xavier(), mx::cpu());
  (void)lstm(nd::ones({3, 2, 5}));  // infers the input size
  std::vector<std::string> names;
  for (const auto& [name, param] : lstm.collect_params()) names.push_back(name);
  const std::string p = lstm.prefix();
  BOOST_TEST(p.substr(0, 4) == "lstm");
  const std::vector<std::string> want = {
      p + "l0_i2h_weight", p + "l0_h2h_weight", p + "l0_i2h_bias", p + "l0_h2h_bias",
      p + "r0_i2h_weight", p + "r0_h2h_weight", p + "r0_i2h_bias", p + "r0_h2h_bias",
      p + "l1_i2h_weight", p + "l1_h2h_weight", p + "l1_i2h_bias", p + "l1_h2h_bias",
      p + "r1_i2h_weight", p + "r1_h2h_weight", p + "r1_i2h_bias", p + "r1_h2h_bias"};
  BOOST_TEST(names == want, boost::test_tools::per_element());
  auto params = by_short_name(lstm);
  BOOST_TEST((params.at("l0_i2h_weight").shape() == mx::Shape{16, 5}));
  BOOST_TEST((params.at("r1_i2h_weight").shape() == mx::Shape{16, 8}));
  BOOST_TEST((params.at("l1_h2h_weight").shape() == mx::Shape{16, 4}));
  // save_parameters writes MXNet 1.9's keys for RNN layers
  ndg_test::TempDir dir;
  lstm.save_parameters(dir.file("lstm.params"));
  const nd::LoadedArrays saved = nd::load(dir.file("lstm.params"));
  BOOST_TEST(saved.names.front() == "_unfused.0.l_cell.i2h_weight");
  BOOST_TEST(saved.names.back() == "_unfused.1.r_cell.h2h_bias");
  rnn::GRU gru(3, 1, {.input_size = 2});
  gru.initialize();
  gru.save_parameters(dir.file("gru.params"));
  BOOST_TEST(nd::load(dir.file("gru.params")).names.front() == "_unfused.0.i2h_weight");
  // inside a container the key is the child's path, as MXNet's
  nn::Sequential net;
  net.add(rnn::GRU(3, 1, {.input_size = 2}));
  net.initialize();
  net.save_parameters(dir.file("net.params"));
  BOOST_TEST(nd::load(dir.file("net.params")).names.front() == "0._unfused.0.i2h_weight");
}

BOOST_AUTO_TEST_CASE(outputs_states_and_gradients_equal_the_cells_run_over_the_sequence) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const std::string mode : {"lstm", "gru", "rnn_tanh", "rnn_relu"}) {
      for (bool bidirectional : {false, true}) {
        BOOST_TEST_CONTEXT(mode << (bidirectional ? " bidirectional" : "")) {
          const std::int64_t T = 5, N = 3, C = 4, H = 6, L = 2;
          rnn::LayerOptions o;
          o.bidirectional = bidirectional;
          o.layout = "NTC";
          std::unique_ptr<rnn::RecurrentLayer> layer;
          if (mode == "lstm") layer = std::make_unique<rnn::LSTM>(H, L, o);
          if (mode == "gru") layer = std::make_unique<rnn::GRU>(H, L, o);
          if (mode == "rnn_tanh") layer = std::make_unique<rnn::RNN>(H, L, "tanh", o);
          if (mode == "rnn_relu") layer = std::make_unique<rnn::RNN>(H, L, "relu", o);
          layer->initialize(mx::init::Uniform(0.4), ctx);
          const nd::NDArray x = ndg_test::random_array({N, T, C}, ctx, 3);
          (void)(*layer)(x);
          CellNetwork cells;
          if (mode == "lstm") cells = cells_like(*layer, C, bidirectional, ctx, [&](std::int64_t in) { return rnn::LSTMCell(H, in); });
          if (mode == "gru") cells = cells_like(*layer, C, bidirectional, ctx, [&](std::int64_t in) { return rnn::GRUCell(H, in); });
          if (mode.rfind("rnn_", 0) == 0) {
            const std::string activation = mode.substr(4);
            cells = cells_like(*layer, C, bidirectional, ctx, [&](std::int64_t in) { return rnn::RNNCell(H, activation, in); });
          }
          // states: the layer's (L·D, N, H) against the cells' per cell (N, H)
          const auto begin = layer->begin_state(N, ctx);
          const nd::NDArray head = ndg_test::random_array({N, T, (bidirectional ? 2 : 1) * H}, ctx, 4);
          nd::NDArray y_layer, y_cells;
          std::vector<nd::NDArray> last_layer, last_cells;
          {
            auto scope = ag::record();
            std::tie(y_layer, last_layer) = (*layer)(x, begin);
            (y_layer * head).sum().backward();
          }
          {
            auto scope = ag::record();
            std::tie(y_cells, last_cells) = cells.stack.unroll(T, x, {}, "NTC");
            (y_cells * head).sum().backward();
          }
          ndg_test::check_close(y_layer, values(y_cells), 1e-4, 1e-5);
          // h of layer l direction d is the cells' state (l·D + d)·(1 or 2) (an LSTM cell has h, c)
          const std::int64_t per_cell = mode == "lstm" ? 2 : 1;
          for (std::int64_t k = 0; k < L * (bidirectional ? 2 : 1); ++k) {
            ndg_test::check_close(last_layer[0][k], values(last_cells[static_cast<std::size_t>(k * per_cell)]), 1e-4, 1e-5);
            if (mode == "lstm") {
              ndg_test::check_close(last_layer[1][k], values(last_cells[static_cast<std::size_t>(k * per_cell + 1)]), 1e-4,
                                    1e-5);
            }
          }
          // every parameter's gradient: the layer's against its cell's
          auto layer_params = by_short_name(*layer);
          for (const auto& [short_name, cell_param] : cells.pairs) {
            BOOST_TEST_CONTEXT(short_name) {
              ndg_test::check_close(layer_params.at(short_name).grad(ctx), values(cell_param.grad(ctx)), 1e-4, 1e-5);
            }
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(states_carried_across_batches_equal_one_run_of_the_whole_sequence) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTM lstm(5, 2);
    lstm.initialize(mx::init::Uniform(0.3), ctx);
    const nd::NDArray x = ndg_test::random_array({8, 2, 3}, ctx, 5);
    auto [whole, whole_states] = lstm(x, lstm.begin_state(2, ctx));
    auto [first, mid] = lstm(x.slice(0, 4), lstm.begin_state(2, ctx));
    // detached states carried to the next batch, as the sequential iterator's loop does
    for (nd::NDArray& s : mid) s = s.detach();
    auto [second, last] = lstm(x.slice(4, 8), mid);
    ndg_test::check_close(second, values(whole.slice(4, 8)), 1e-5, 1e-6);
    ndg_test::check_close(last[0], values(whole_states[0]), 1e-5, 1e-6);
    ndg_test::check_close(last[1], values(whole_states[1]), 1e-5, 1e-6);
    // NTC gives the TNC outputs transposed
    rnn::LSTM ntc(5, 2, {.layout = "NTC"});
    ntc.initialize(mx::init::Zero(), ctx);
    (void)ntc(x.swapaxes(0, 1));
    auto mine = by_short_name(ntc), theirs = by_short_name(lstm);
    for (auto& [name, param] : mine) param.set_data(theirs.at(name).data(ctx));
    ndg_test::check_close(ntc(x.swapaxes(0, 1)).swapaxes(0, 1), values(whole), 1e-6, 1e-7);
  });
}

BOOST_AUTO_TEST_CASE(hybridized_layers_replay_the_same_values_and_export_to_symbol_json) {
  ndg_test::for_each_context([](mx::Context ctx) {
    ndg_test::TempDir dir;
    rnn::GRU gru(6, 2, {.bidirectional = true});
    gru.initialize(mx::init::Uniform(0.3), ctx);
    const nd::NDArray x = ndg_test::random_array({4, 3, 5}, ctx, 8);
    const Values eager = values(gru(x));
    gru.hybridize();
    BOOST_TEST(values(gru(x)) == eager, boost::test_tools::per_element());
    BOOST_TEST(values(gru(x)) == eager, boost::test_tools::per_element());
    BOOST_TEST(gru.traced_graphs() == 1u);
    gru.export_model(dir.file("gru"));
    const std::string json = ndg_test::read_bytes(dir.file("gru-symbol.json"));
    BOOST_TEST(json.find("\"op\": \"RNN\"") != std::string::npos);
    auto imported = nn::SymbolBlock::imports(dir.file("gru-symbol.json"), {"data"}, dir.file("gru-0000.params"), ctx);
    ndg_test::check_close(imported(x), eager, 1e-6, 1e-7);
    // training through the hybridized layer: the gradient of the eager one
    rnn::GRU twin(6, 2, {.bidirectional = true});
    twin.initialize(mx::init::Zero(), ctx);
    (void)twin(x);
    auto mine = by_short_name(twin), theirs = by_short_name(gru);
    for (auto& [name, param] : mine) param.set_data(theirs.at(name).data(ctx));
    {
      auto scope = ag::record();
      (gru(x) * x.slice(0, 4).sum()).sum().backward();
    }
    {
      auto scope = ag::record();
      (twin(x) * x.slice(0, 4).sum()).sum().backward();
    }
    for (auto& [name, param] : mine) {
      BOOST_TEST_CONTEXT(name) { ndg_test::check_close(theirs.at(name).grad(ctx), values(param.grad(ctx)), 1e-5, 1e-6); }
    }
  });
}

BOOST_AUTO_TEST_CASE(mxnet_files_load_by_their_keys) {
  // What MXNet 1.9's save_parameters writes for LSTM(2, input_size=1): _unfused keys; and the bare
  // l0_ keys of older files. Written byte by byte from MXNet's layout.
  ndg_test::TempDir dir;
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> parts = {
      {"i2h_weight", {8, 1}}, {"h2h_weight", {8, 2}}, {"i2h_bias", {8}}, {"h2h_bias", {8}}};
  for (const std::string style : {"_unfused.0.", "l0_"}) {
    std::vector<ndg_test::MXNetRecord> records;
    float next = 0.25f;
    for (const auto& [part, shape] : parts) {
      ndg_test::MXNetRecord r{style + part, shape, {}};
      for (std::int64_t i = 0; i < shape[0] * (shape.size() > 1 ? shape[1] : 1); ++i) r.values.push_back(next += 0.125f);
      records.push_back(r);
    }
    ndg_test::write_bytes(dir.file(style + "lstm.params"), ndg_test::mxnet_ndarray_file(records));
    rnn::LSTM lstm(2, 1, {.input_size = 1});
    lstm.load_parameters(dir.file(style + "lstm.params"));
    auto params = by_short_name(lstm);
    BOOST_TEST_CONTEXT(style) {
      BOOST_TEST(values(params.at("l0_i2h_weight").data()).front() == 0.375);
      BOOST_TEST(values(params.at("l0_h2h_bias").data()).back() == records.back().values.back());
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_inputs_and_states_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTM lstm(4, 1, {.input_size = 3});
    lstm.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = ndg_test::random_array({5, 2, 3}, ctx, 1);
    BOOST_CHECK_THROW(lstm(ndg_test::random_array({5, 2, 4}, ctx, 1)), mx::ShapeError);  // input size
    BOOST_CHECK_THROW(lstm(ndg_test::random_array({10, 3}, ctx, 1)), mx::ShapeError);    // not 3-D
    auto states = lstm.begin_state(2, ctx);
    BOOST_CHECK_THROW(lstm(x, {states[0]}), mx::ShapeError);                               // one state of two
    BOOST_CHECK_THROW(lstm(x, lstm.begin_state(3, ctx)), mx::ShapeError);                  // another batch
    if (ctx.is_gpu()) BOOST_CHECK_THROW(lstm(x, lstm.begin_state(2, mx::cpu())), mx::ContextMismatch);
    BOOST_CHECK_THROW(rnn::LSTM(4, 1, {.layout = "TCN"}), mx::ValueError);
    BOOST_CHECK_THROW(rnn::GRU(4, 1, {.projection_size = 2}), mx::ValueError);
    BOOST_CHECK_THROW(rnn::RNN(4, 1, "sigmoid"), mx::ValueError);
    BOOST_CHECK_THROW(rnn::LSTM(0), mx::ValueError);
  });
}

BOOST_AUTO_TEST_SUITE_END()
