#include "gluon/rnn/rnn_layer.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/rnn.hpp"

namespace mx::gluon::rnn {
namespace {

std::int64_t gates_of(const std::string& mode) { return mode == "lstm" ? 4 : mode == "gru" ? 3 : 1; }

// "l0_i2h_weight": direction d of layer l.
std::string param_name(std::int64_t d, std::int64_t l, const char* part) {
  return std::string(d == 0 ? "l" : "r") + std::to_string(l) + "_" + part;
}

}  // namespace

RecurrentLayer::RecurrentLayer(const std::string& kind, const std::string& mode, std::int64_t hidden_size,
                               std::int64_t num_layers, const LayerOptions& options)
    : Block(kind, options.prefix), mode_(mode), hidden_size_(hidden_size), num_layers_(num_layers), options_(options) {
  if (hidden_size < 1) throw ValueError(name() + ": hidden_size must be >= 1, got " + std::to_string(hidden_size));
  if (num_layers < 1) throw ValueError(name() + ": num_layers must be >= 1, got " + std::to_string(num_layers));
  if (options.layout != "TNC" && options.layout != "NTC") {
    throw ValueError(name() + ": layout must be \"TNC\" or \"NTC\", got \"" + options.layout + "\"");
  }
  if (options.input_size < 0) throw ValueError(name() + ": input_size must be >= 0 (0: inferred)");
  // The options the op checks (dropout, projection, clipping), checked now rather than at the first call.
  nd::RNNOptions o;
  o.state_size = hidden_size;
  o.num_layers = num_layers;
  o.mode = mode;
  o.p = options.dropout;
  o.projection_size = options.projection_size;
  o.lstm_state_clip_min = options.state_clip_min;
  o.lstm_state_clip_max = options.state_clip_max;
  (void)nd::rnn_param_size(o, 1);
  const std::int64_t gh = gates_of(mode) * hidden_size, directions = options.bidirectional ? 2 : 1;
  const std::int64_t state = options.projection_size > 0 ? options.projection_size : hidden_size;
  // MXNet registers, per layer and direction: i2h_weight, h2h_weight, i2h_bias, h2h_bias (h2r_weight
  // with a projection); save_parameters names them as the unfused cells of older Gluon did.
  std::int64_t input = options.input_size;
  for (std::int64_t l = 0; l < num_layers; ++l) {
    for (std::int64_t d = 0; d < directions; ++d) {
      const auto add = [&](const char* part, Shape shape, init::InitializerRef init) {
        const std::string short_name = param_name(d, l, part);
        register_parameter(short_name, std::move(shape), std::move(init));
        set_structural_key(short_name, "_unfused." + std::to_string(l) + "." +
                                           (options.bidirectional ? std::string(d == 0 ? "l" : "r") + "_cell." : "") +
                                           part);
      };
      add("i2h_weight", Shape{gh, input}, options.i2h_weight_initializer);
      add("h2h_weight", Shape{gh, state}, options.h2h_weight_initializer);
      add("i2h_bias", Shape{gh}, options.i2h_bias_initializer);
      add("h2h_bias", Shape{gh}, options.h2h_bias_initializer);
      if (options.projection_size > 0) add("h2r_weight", Shape{state, hidden_size}, options.h2r_weight_initializer);
    }
    input = directions * state;
  }
}

std::vector<Shape> RecurrentLayer::state_shapes(std::int64_t batch) const {
  const std::int64_t states = num_layers_ * (options_.bidirectional ? 2 : 1);
  const std::int64_t state = options_.projection_size > 0 ? options_.projection_size : hidden_size_;
  std::vector<Shape> shapes{Shape{states, batch, state}};
  if (mode_ == "lstm") shapes.push_back(Shape{states, batch, hidden_size_});
  return shapes;
}

RecurrentLayer::States RecurrentLayer::begin_state(std::int64_t batch, Context ctx, DType dtype) const {
  States states;
  for (const Shape& s : state_shapes(batch)) states.push_back(nd::zeros(s, ctx, dtype));
  return states;
}

nd::NDArray RecurrentLayer::flat_parameters(const nd::NDArray& x) {
  const std::int64_t directions = options_.bidirectional ? 2 : 1;
  for (std::int64_t d = 0; d < directions; ++d) {
    Parameter w = parameter(param_name(d, 0, "i2h_weight"));
    w.check_initialized();
    if (w.is_deferred()) {
      w.infer_shape(Shape{gates_of(mode_) * hidden_size_, x.shape()[2]});
    } else if (w.shape()[1] != x.shape()[2]) {
      throw ShapeError(name() + ": input " + nd::describe(x) + " has " + std::to_string(x.shape()[2]) +
                       " features, the layer's " + w.name() + " " + w.shape().tuple_str() + " expects " +
                       std::to_string(w.shape()[1]));
    }
  }
  // Every weight, then every bias, layer by layer and direction by direction: the op's order.
  std::vector<nd::NDArray> parts;
  for (const char* kind : {"weight", "bias"}) {
    for (std::int64_t l = 0; l < num_layers_; ++l) {
      for (std::int64_t d = 0; d < directions; ++d) {
        for (const char* gate : {"i2h", "h2h", "h2r"}) {
          if (std::string(gate) == "h2r" && (options_.projection_size == 0 || std::string(kind) == "bias")) continue;
          const nd::NDArray data = parameter(param_name(d, l, (std::string(gate) + "_" + kind).c_str())).data(x.context());
          parts.push_back(data.reshape(Shape{data.size()}));
        }
      }
    }
  }
  return nd::concat(parts, 0);
}

std::pair<nd::NDArray, RecurrentLayer::States> RecurrentLayer::run(const nd::NDArray& x, const States& states,
                                                                   bool state_outputs) {
  nd::check_not_none(name().c_str(), x);
  if (x.ndim() != 3) {
    throw ShapeError(name() + ": input must be 3-D (" + options_.layout + "), got " + nd::describe(x));
  }
  const bool batch_major = options_.layout == "NTC";
  const nd::NDArray data = batch_major ? nd::swapaxes(x, 0, 1) : x;
  const std::int64_t batch = data.shape()[1];
  const std::vector<Shape> want = state_shapes(batch);
  if (states.size() != want.size()) {
    throw ShapeError(name() + ": " + std::to_string(states.size()) + " states given, the layer has " +
                     std::to_string(want.size()));
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    nd::check_not_none(name().c_str(), states[i]);
    if (states[i].shape() != want[i]) {
      throw ShapeError(name() + ": state " + std::to_string(i) + " is " + nd::describe(states[i]) +
                       ", the layer needs " + want[i].tuple_str() + " for input " + nd::describe(x) + " (layout " +
                       options_.layout + ")");
    }
    if (states[i].context() != x.context()) {
      throw ContextMismatch(name() + ": state " + std::to_string(i) + " is on " + states[i].context().str() +
                            " but the input is on " + x.context().str() + "; move one with as_in_context");
    }
  }
  nd::RNNOptions o;
  o.state_size = hidden_size_;
  o.num_layers = num_layers_;
  o.mode = mode_;
  o.bidirectional = options_.bidirectional;
  o.p = options_.dropout;
  o.state_outputs = state_outputs;
  o.projection_size = options_.projection_size;
  o.lstm_state_clip_min = options_.state_clip_min;
  o.lstm_state_clip_max = options_.state_clip_max;
  o.lstm_state_clip_nan = options_.state_clip_nan;
  std::vector<nd::NDArray> out =
      nd::RNN(data, flat_parameters(data), states[0], states.size() > 1 ? states[1] : nd::NDArray(), o);
  nd::NDArray y = batch_major ? nd::swapaxes(out[0], 0, 1) : out[0];
  return {y, States(out.begin() + 1, out.end())};
}

nd::NDArray RecurrentLayer::forward(const nd::NDArray& x) {
  nd::check_not_none(name().c_str(), x);
  const std::int64_t batch = x.ndim() == 3 ? x.shape()[options_.layout == "NTC" ? 0 : 1] : 0;
  return run(x, begin_state(batch, x.context(), x.dtype()), false).first;
}

std::pair<nd::NDArray, RecurrentLayer::States> RecurrentLayer::forward(const nd::NDArray& x, const States& states) {
  return run(x, states, true);
}

RNN::RNN(std::int64_t hidden_size, std::int64_t num_layers, const std::string& activation, const LayerOptions& options)
    : RecurrentLayer("rnn", activation == "tanh" ? "rnn_tanh" : "rnn_relu", hidden_size, num_layers, options) {
  if (activation != "relu" && activation != "tanh") {
    throw ValueError(name() + ": activation must be \"relu\" or \"tanh\", got \"" + activation + "\"");
  }
}

LSTM::LSTM(std::int64_t hidden_size, std::int64_t num_layers, const LayerOptions& options)
    : RecurrentLayer("lstm", "lstm", hidden_size, num_layers, options) {}

GRU::GRU(std::int64_t hidden_size, std::int64_t num_layers, const LayerOptions& options)
    : RecurrentLayer("gru", "gru", hidden_size, num_layers, options) {}

}  // namespace mx::gluon::rnn
