#pragma once
// nn::SymbolBlock: a model loaded from files, with no C++ class of it in sight, as MXNet's
// gluon.SymbolBlock.imports. The graph comes from MXNet's symbol JSON (what Block::export_model
// writes, or MXNet's export), the parameters from MXNet's NDArray file.
//
//   auto net = nn::SymbolBlock::imports("lenet-symbol.json", {"data"}, "lenet-0000.params", mx::gpu());
//   nd::NDArray y = net(x);
#include <memory>
#include <string>
#include <vector>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

class SymbolBlock : public Block {
 public:
  // The graph of symbol_file with its one input named input_names[0], and every other variable a
  // parameter loaded from param_file ("arg:NAME" and "aux:NAME" keys, or plain names; aux ones get
  // grad_req "null") onto ctx. A loss head's label that is neither the input nor in param_file
  // (SoftmaxOutput's "softmax_label") is left out (graph::drop_labels). mx::FileError naming the
  // file for unreadable or malformed files; mx::ValueError naming the node for an op or attribute
  // ndgluon lacks, and naming the variable for a parameter the file does not hold; mx::ShapeError
  // naming the parameter and both shapes where the file's array is not the JSON's "__shape__".
  static SymbolBlock imports(const std::string& symbol_file, const std::vector<std::string>& input_names,
                             const std::string& param_file, Context ctx = cpu());

  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  SymbolBlock(std::shared_ptr<const graph::Graph> graph, std::string input);
  std::shared_ptr<const graph::Graph> graph_;
  std::string input_;
};

}  // namespace mx::gluon::nn
