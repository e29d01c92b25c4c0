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
  // Python's collect_params().setattr(name, value); supports "grad_req".
  void setattr(const std::string& attribute, const std::string& value);

 private:
  std::vector<std::pair<std::string, Parameter>> params_;
};

}  // namespace mx::gluon
