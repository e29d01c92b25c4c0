#pragma once
// mx::gluon::Block: the base of every layer and model.
//
// Blocks are handles, like Python objects: a copy of a block is the same block (its parameters and
// children are shared), so a block the caller holds and adds to a Sequential stays one block.
// Keep a block's mutable state in parameters and child blocks; plain members are configuration.
//
// A user block derives from Block, registers its children and parameters in its constructor, and
// overrides forward(). Blocks have no default constructor, so child members are registered in the
// member initializer list (Block, the base, is constructed first):
//
//   class Mlp : public mx::gluon::Block {
//    public:
//     Mlp() : Block("mlp"), hidden_(register_child(nn::Dense(256, "relu"), "hidden")),
//             out_(register_child(nn::Dense(10), "out")) {}
//     nd::NDArray forward(const nd::NDArray& x) override { return out_(hidden_(x)); }
//    private:
//     nn::Dense hidden_, out_;
//   };
//
// A residual block (D2L 7.6's Residual, ResNet's BasicBlock) is such a subclass: its body's layers
// are children, and forward adds the input back. hybridize() traces it like any block, the add
// included (test/gluon/containers_test.cpp trains one eagerly and hybridized):
//
//   class Residual : public mx::gluon::Block {
//    public:
//     explicit Residual(std::int64_t channels)
//         : Block("residual"),
//           conv1_(register_child(nn::Conv2D(channels, 3, {.padding = 1}), "conv1")),
//           bn1_(register_child(nn::BatchNorm(), "bn1")),
//           conv2_(register_child(nn::Conv2D(channels, 3, {.padding = 1}), "conv2")),
//           bn2_(register_child(nn::BatchNorm(), "bn2")) {}
//     nd::NDArray forward(const nd::NDArray& x) override {
//       const nd::NDArray y = nd::unary(mx::UnaryOp::relu, bn1_(conv1_(x)));
//       return nd::unary(mx::UnaryOp::relu, bn2_(conv2_(y)) + x);
//     }
//    private:
//     nn::Conv2D conv1_;
//     nn::BatchNorm bn1_;
//     nn::Conv2D conv2_;
//     nn::BatchNorm bn2_;
//   };
//
// Names follow MXNet 1.x: a block gets prefix kind + a counter ("dense0_"), unique per kind in the
// process, unless it is constructed while another block's name_scope() is held: then its prefix
// is that block's prefix + kind + that block's own counter ("resnetv10_conv0_"), or that block's
// prefix + an explicit prefix ("resnetv10_" + "stage1_"). Model-zoo networks built so get
// MXNet's parameter names, which the legacy files of its model zoo are keyed by. Only blocks of
// one kind are counted together, so the order matters only among blocks of the same kind: build
// them one per statement (the arguments of one call are constructed in no set order).
#include <cstddef>
#include <memory>
#include <string>
#include <typeinfo>
#include <type_traits>
#include <vector>

#include "gluon/init.hpp"
#include "gluon/parameter.hpp"
#include "gluon/parameter_dict.hpp"
#include "ndarray/core/array.hpp"

namespace mx::graph {
struct Graph;
}

namespace mx::gluon {

struct CachedGraph;  // a traced signature's graph and executors (block.cpp)

class Block {
  struct Core;

 public:
  // kind names the block in parameter names: "dense" gives prefix "dense0_", "dense1_", ...
  // An explicit prefix replaces the generated one.
  explicit Block(const std::string& kind = "block", const std::string& prefix = "");
  virtual ~Block() = default;

  // x -> forward(x). Runs on x.context(), with the parameters' copies there. Hybridized, the
  // forward of each new input signature is traced into a graph, which later calls replay.
  nd::NDArray operator()(const nd::NDArray& x);

  // The declarative mode, as MXNet's HybridBlock.hybridize: the first call with a new signature
  // (the input's shape, dtype and context, and train or predict mode) traces forward through the
  // op layer into a graph of ops whose variables are the input ("data") and the parameters (by
  // name); later calls with that signature replay the graph over memory planned once, as one
  // CUDA graph launch on a GPU (graph::Executor), and under autograd::record() as one autograd node
  // whose backward replays a traced backward graph. A forward that reads an array that is neither
  // its input nor a parameter cannot be traced (mx::ValueError naming the op). static_shape: a
  // second signature is an mx::ValueError. Every call drops the graphs traced so far (so does
  // adding a child, and a parameter's grad_req changing traces again); active = false returns to
  // eager calls. Memory is always planned statically; static_alloc is accepted for MXNet's
  // signature. A call that records nothing returns a buffer of the plan itself (no copy) when
  // nobody holds the one it returned last: a held result is never overwritten by a later call.
  // The graphs of up to 64 signatures are kept, the least recently used dropped first (traced
  // again if its signature comes back), so that inputs of ever new shapes do not hold memory
  // without bound.
  void hybridize(bool active = true, bool static_alloc = false, bool static_shape = false);
  bool is_hybridized() const;
  // How many signatures' graphs are kept now.
  std::size_t traced_graphs() const;
  // MXNet's HybridBlock.export (`export` is a C++ keyword): writes path-symbol.json (MXNet's symbol
  // JSON of the last traced graph) and path-EPOCH.params (MXNet's NDArray file, keys "arg:NAME" for
  // parameters and "aux:NAME" for running statistics), which SymbolBlock::imports and MXNet load.
  // mx::ValueError unless the block is hybridized and has run forward once.
  void export_model(const std::string& path, int epoch = 0) const;
  virtual nd::NDArray forward(const nd::NDArray& x) = 0;

  const std::string& prefix() const;  // "dense0_"
  std::string name() const;           // "dense0"

  // MXNet's Block.name_scope(): while the returned guard lives, blocks constructed on this thread
  // are named inside this block (see the top of this file). Guards nest; each restores the scope
  // that was current when it was made.
  class NameScope {
   public:
    NameScope(const NameScope&) = delete;
    NameScope& operator=(const NameScope&) = delete;
    ~NameScope();

   private:
    friend class Block;
    explicit NameScope(Core* core);
    Core* previous_;
  };
  [[nodiscard]] NameScope name_scope() const;

  // Initialises every parameter of this block and its children on ctx / each of ctxs. The default
  // initializer is MXNet's Uniform(0.07); parameters with their own initializer use it.
  void initialize(const init::Initializer& init = init::Uniform(), Context ctx = current_context(),
                  bool force_reinit = false);
  void initialize(const init::Initializer& init, const std::vector<Context>& ctxs, bool force_reinit = false);
  void initialize(Context ctx) { initialize(init::Uniform(), ctx); }
  void initialize(const std::vector<Context>& ctxs) { initialize(init::Uniform(), ctxs); }

  // Converts the parameters of this block and its children to dtype, as MXNet's Block.cast (the
  // input must then be given in dtype too). BatchNorm keeps float32 parameters for float16 and
  // bfloat16, as MXNet's. Drops the graphs hybridize traced.
  virtual void cast(DType dtype);

  // The parameters of this block and its children, by full name ("dense0_weight").
  ParameterDict collect_params() const;

  // Every parameter by structural name ("0.weight") in MXNet's NDArray file, as MXNet's
  // save_parameters writes it (nd::save of a dict; the copy on the first context).
  void save_parameters(const std::string& path) const;
  // Loads onto ctx (or ctxs) a file of MXNet's save_parameters or this one's (structural names),
  // of collect_params().save or MXNet's export ("arg:"/"aux:" and full names such as
  // "dense0_weight", matched to the parameters' names, or to prefix() + key as MXNet's
  // restore_prefix), or of ndgluon's earlier format. A truncated, corrupted or mismatching file
  // throws mx::FileError / mx::ShapeError (mx::DTypeError for a dtype ndgluon lacks) and leaves
  // the parameters unchanged. allow_missing leaves parameters the file lacks as they are;
  // ignore_extra skips entries the block lacks.
  void load_parameters(const std::string& path, Context ctx = cpu(), bool allow_missing = false,
                       bool ignore_extra = false);
  void load_parameters(const std::string& path, const std::vector<Context>& ctxs, bool allow_missing = false,
                       bool ignore_extra = false);

  std::size_t num_children() const;
  Block& child(std::size_t i) const;

  // Parameters keyed by structural name: "weight" here, "0.weight" in child 0 (MXNet's
  // _collect_params_with_prefix, used by save/load).
  std::vector<std::pair<std::string, Parameter>> structural_params(const std::string& prefix = "") const;

 protected:
  // Registers a parameter named prefix() + short_name ("dense0_" + "weight"). Parameters are
  // handles: the one returned and the one registered are the same parameter.
  Parameter register_parameter(const std::string& short_name, Shape shape, init::InitializerRef init = {},
                               DType dtype = DType::float32);
  Parameter parameter(const std::string& short_name) const;
  // Registers `param`, another block's parameter, under short_name here too (MXNet's params=
  // sharing: GluonNLP's BERT decoder reuses the word embedding's weight). It is one parameter
  // under two structural keys: save_parameters writes both, as MXNet's does, load_parameters
  // fills it from either, collect_params and the Trainer see it once.
  Parameter share_parameter(const std::string& short_name, const Parameter& param);
  // The key save_parameters writes for a parameter (and load_parameters reads), where it is not
  // its short name: MXNet's RNN layers save "l0_i2h_weight" as "_unfused.0.i2h_weight". The
  // short name is still read as a key.
  void set_structural_key(const std::string& short_name, const std::string& key);
  // make() run while this block's name_scope() is held: children built in a constructor's member
  // initializer list are named inside this block, as under MXNet's `with self.name_scope():`.
  template <class Make>
  auto in_name_scope(Make&& make) const {
    const NameScope scope = name_scope();
    return make();
  }
  // Registers a parameter under exactly `name`, without the prefix (SymbolBlock's, named by its file).
  Parameter register_named_parameter(const std::string& name, Shape shape, DType dtype, const std::string& grad_req);

  // Registers a child block (the same block, not a copy) under `name` (default: its index) and
  // returns it.
  template <class B>
  B register_child(const B& block, std::string name = "") {
    static_assert(std::is_base_of_v<Block, B>, "register_child takes a Block");
    if (typeid(block) != typeid(B)) throw_sliced(block, typeid(B));
    add_child(std::make_shared<B>(block), std::move(name));
    return block;
  }

 private:
  static thread_local Core* current_scope_;  // the block whose name_scope() this thread holds
  nd::NDArray call_graph(const nd::NDArray& x);
  std::shared_ptr<CachedGraph> trace_forward(const nd::NDArray& x, bool recording, bool input_grad);
  std::shared_ptr<Core> core_;
  // The parameters whose structural key was changed, under their short names (prefix + short name).
  std::vector<std::pair<std::string, Parameter>> structural_aliases(const std::string& prefix = "") const;
  void add_child(std::shared_ptr<Block> child, std::string name);
  // A block passed through a reference to its base class would be copied as the base, losing its
  // own forward: mx::ValueError naming both types.
  [[noreturn]] static void throw_sliced(const Block& block, const std::type_info& as);
};

// MXNet's HybridBlock: every Block can be hybridized, so the two names are one class.
using HybridBlock = Block;

}  // namespace mx::gluon
