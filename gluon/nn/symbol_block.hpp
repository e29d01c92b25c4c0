#pragma once
// nn::SymbolBlock: a model loaded from files, with no C++ class of it in sight, as MXNet's
// gluon.SymbolBlock.imports. The graph comes from MXNet's symbol JSON (what Block::export_model
// writes, or MXNet's export, or an older MXNet's save), the parameters from MXNet's NDArray file,
// or from initialize() when there is none.
//
//   auto net = nn::SymbolBlock::imports("lenet-symbol.json", {"data"}, "lenet-0000.params", mx::gpu());
//   nd::NDArray y = net(x);
//
//   auto fresh = nn::SymbolBlock::imports("lenet-symbol.json", {"data"});   // param_file=None
//   fresh.initialize(mx::init::Xavier(), mx::gpu());                          // then train it
#include <memory>
#include <string>
#include <vector>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

class SymbolBlock : public Block {
 public:
  // The graph of symbol_file with its one input named input_names[0], and every other variable a
  // parameter. A loss head's label that is neither the input nor in param_file (SoftmaxOutput's
  // "softmax_label") is left out (graph::drop_labels).
  //
  // With param_file, the parameters are loaded from it ("arg:NAME" and "aux:NAME" keys, or plain
  // names; aux ones get grad_req "null") onto ctx. mx::ValueError naming the variable for a
  // parameter the file does not hold; mx::ShapeError naming the parameter and both shapes where the
  // file's array is not the JSON's "__shape__".
  //
  // With an empty param_file (MXNet's param_file=None; ctx is then unused), the parameters exist
  // uninitialised, float32, as MXNet creates them: initialize(init, ctx) initialises them, and a
  // forward before that throws the mx::Error every block throws. Their shapes come from the JSON's
  // "__shape__" hints and from the op that reads each (graph::infer_input_shape: FullyConnected,
  // Convolution, Deconvolution, BatchNorm); extents still unknown (Dense's in_units, a
  // convolution's channels) are inferred from the data at the first forward (deferred
  // initialisation). The auxiliary states (BatchNorm's moving_mean and moving_var, what the op
  // writes) get grad_req "null". A parameter whose variable has an "__init__" that ndgluon reads
  // ("zeros", "ones", ["zero", {}], ["one", {}], ["constant", {"value": v}], ["uniform", ...],
  // ["normal", ...], ["xavier", ...]) is initialised by it, else auxiliary states by their op's
  // default (graph::compose_init: moving_mean zeros, moving_var ones), else by initialize()'s
  // initializer by name (a "bias" or "beta" zeros, a "gamma" ones). mx::ShapeError naming the
  // parameter where no hint and no op gives its rank, or where the hint and the op disagree.
  // At the first forward, an extent still unknown is inferred from the op that reads the
  // parameter first; where that op has no shape rule (a BlockGrad ahead of the FullyConnected),
  // the forward throws mx::ShapeError naming both, and a "__shape__" hint is needed.
  //
  // Where ndgluon differs from MXNet on purpose: MXNet's Gluon ignores "__init__" and gives every
  // parameter initialize()'s initializer (Xavier on moving_var even throws there); ndgluon keeps
  // the initial values the file asks for, as MXNet's Module does. "__dtype__" hints are read but
  // the parameters are float32 (cast() converts them).
  //
  // mx::FileError naming the file for unreadable or malformed files; mx::ValueError naming the
  // node for an op or attribute ndgluon lacks.
  static SymbolBlock imports(const std::string& symbol_file, const std::vector<std::string>& input_names,
                             const std::string& param_file = "", Context ctx = cpu());

  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  SymbolBlock(std::shared_ptr<const graph::Graph> graph, std::string input);
  std::shared_ptr<const graph::Graph> graph_;
  std::string input_;
};

}  // namespace mx::gluon::nn
