#pragma once
// ParameterDict: the parameters of a block and its children by name, in registration order
// (what collect_params() returns), with bulk operations.
#include <string>
#include <utility>
#include <vector>

#include "gluon/parameter.hpp"

namespace mx::gluon {

class ParameterDict {
 public:
  // Adds param; the same parameter again is kept once. Throws mx::ValueError on another parameter
  // with a name that is already there.
  void add(const Parameter& param);

  std::size_t size() const { return params_.size(); }
  bool contains(const std::string& name) const;
  // The parameter (a handle to it). Throws mx::ValueError listing the names there are.
  Parameter operator[](const std::string& name) const;
  std::vector<std::string> keys() const;
  auto begin() { return params_.begin(); }
  auto end() { return params_.end(); }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }

  void initialize(const init::Initializer& init = init::Uniform(), const std::vector<Context>& ctxs = {current_context()},
                  bool force_reinit = false);
  void reset_ctx(const std::vector<Context>& ctxs);
  void zero_grad();
  // Python's collect_params().setattr(name, value): "grad_req", "lr_mult" or "wd_mult" (a number
  // as text) of every parameter; mx::ValueError, and nothing changed, for another name or value.
  void setattr(const std::string& attribute, const std::string& value);

  // Every parameter by full name ("dense0_weight") less strip_prefix, in MXNet's NDArray file
  // (MXNet's ParameterDict.save: nd::save of a dict; the copy on the first context). Throws
  // mx::ValueError naming a parameter whose name does not start with strip_prefix, mx::FileError
  // when the file cannot be written.
  void save(const std::string& path, const std::string& strip_prefix = "") const;
  // Loads a file of save (MXNet's or this one's; keys "arg:"/"aux:" as export writes them lose
  // that prefix) or of ndgluon's earlier format onto ctx (or ctxs): entry key k fills the parameter
  // named restore_prefix + k. Errors as Block::load_parameters, and mx::ValueError naming a
  // parameter whose name does not start with restore_prefix; a bad file changes nothing.
  void load(const std::string& path, Context ctx = cpu(), bool allow_missing = false, bool ignore_extra = false,
            const std::string& restore_prefix = "");
  void load(const std::string& path, const std::vector<Context>& ctxs, bool allow_missing = false,
            bool ignore_extra = false, const std::string& restore_prefix = "");

 private:
  std::vector<std::pair<std::string, Parameter>> params_;
};

}  // namespace mx::gluon
