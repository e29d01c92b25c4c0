#pragma once
// CUDA graphs: the GPU backend's Backend::capture (ndarray/backend/backend.hpp). Internal to cuda/.
#include <functional>
#include <memory>
#include <vector>

#include "ndarray/backend/backend.hpp"

namespace mx::cuda {

std::unique_ptr<CapturedWork> capture(int id, const std::function<void()>& work, const std::vector<CopyItem>& before,
                                      const std::vector<CopyItem>& after);

}  // namespace mx::cuda
