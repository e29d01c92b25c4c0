#pragma once
// mx::gluon::Parameter: a named weight with one copy of its data per context it was initialised
// on, and (for training) one gradient per context. A handle: copies share the same parameter.
//
// Shapes may hold 0 for extents that are unknown until the first forward pass (deferred
// initialisation, as Dense(units) without in_units).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gluon/init.hpp"
#include "ndarray/core/array.hpp"

namespace mx::gluon {

class Parameter {
 public:
  // grad_req: "write", "add" or "null". init: this parameter's own initializer, or empty for the
  // one given to initialize().
  Parameter(std::string name, Shape shape, DType dtype = DType::float32, std::string grad_req = "write",
            init::InitializerRef init = {});

  const std::string& name() const;
  const Shape& shape() const;  // 0 = not known yet
  DType dtype() const;
  const std::string& grad_req() const;
  void set_grad_req(const std::string& req);
  void set_initializer(init::InitializerRef init);
  // The multipliers of the optimizer's learning rate and weight decay for this parameter (MXNet's
  // Parameter.lr_mult and wd_mult, 1 by default). mx::ValueError naming the parameter, and no
  // change, unless finite and >= 0.
  double lr_mult() const;
  double wd_mult() const;
  void set_lr_mult(double mult);
  void set_wd_mult(double mult);
  // Throws what set_lr_mult (which: "lr_mult") or set_wd_mult would, changing nothing.
  void check_multiplier(const char* which, double mult) const;

  // Creates the data on every context of ctxs, filled by this parameter's initializer or else
  // default_init (by name: "...bias" gets zeros). With unknown extents the initialisation is
  // deferred until the shape is known. Already initialised: a warning on stderr and nothing
  // changes, as in MXNet, unless force_reinit.
  void initialize(const init::Initializer& default_init, const std::vector<Context>& ctxs, bool force_reinit = false);
  bool is_initialized() const;
  bool is_deferred() const;
  // Throws mx::Error naming the parameter and saying to call initialize() unless it was: its data
  // exists or waits for its shape (deferred).
  void check_initialized() const;
  // Sets the unknown extents and completes a deferred initialisation. Throws mx::ShapeError when a
  // known extent disagrees.
  void infer_shape(const Shape& shape);

  // The copy on ctx. Throws mx::Error naming the parameter, ctx and the contexts it lives on (or
  // that its initialisation is deferred / was never done).
  nd::NDArray data(Context ctx) const;
  // The only copy, or the one on current_context() when there are several.
  nd::NDArray data() const;
  std::vector<nd::NDArray> list_data() const;
  std::vector<Context> list_ctx() const;
  // Copies value into every context's copy (value may live anywhere; shape and dtype must match).
  void set_data(const nd::NDArray& value);
  // Moves the copies to ctxs (the values are kept).
  void reset_ctx(const std::vector<Context>& ctxs);

  nd::NDArray grad(Context ctx) const;
  std::vector<nd::NDArray> list_grad() const;
  void zero_grad();

  // Converts every copy (and the dtype of a deferred one) to dtype, as MXNet's Parameter.cast; the
  // gradients become zeros of dtype. mx::DTypeError for a dtype that is not floating.
  void cast(DType dtype);

  // Replaces the data with copies of value on ctxs (load_parameters); the shape becomes value's.
  void load_init(const nd::NDArray& value, const std::vector<Context>& ctxs);
  // How many times the data was given values other than by training: initialize, set_data,
  // load_init (load_parameters), cast. A Trainer makes its float32 master copies of 16-bit
  // weights (multi_precision) again from the weights after any of them. (reset_ctx moves the
  // values and is not counted; neither are values written into data() in place.)
  std::uint64_t data_version() const;

  bool is(const Parameter& other) const { return state_ == other.state_; }

 private:
  struct State;
  std::shared_ptr<State> state_;
  void allocate(const init::Initializer& default_init, const std::vector<Context>& ctxs);
  void attach_grads();
  std::size_t index_of(Context ctx, const char* what) const;
};

}  // namespace mx::gluon
