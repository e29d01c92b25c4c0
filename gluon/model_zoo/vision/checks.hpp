#pragma once
// Argument checks the model-zoo constructors share (internal).
#include <cstdint>
#include <string>

#include "context/error.hpp"

namespace mx::gluon::model_zoo::vision::detail {

inline std::int64_t checked_classes(const std::string& model, std::int64_t classes) {
  if (classes < 1) throw ValueError(model + ": classes must be >= 1, got " + std::to_string(classes));
  return classes;
}

}  // namespace mx::gluon::model_zoo::vision::detail
