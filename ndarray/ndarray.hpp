#pragma once
// Everything a user of mx::nd needs: #include <ndarray/ndarray.hpp>.
#include "context/context.hpp"
#include "context/device.hpp"
#include "context/error.hpp"
#include "ndarray/amp.hpp"
#include "ndarray/array.hpp"
#include "ndarray/autograd.hpp"
#include "ndarray/collective.hpp"
#include "ndarray/creation.hpp"
#include "ndarray/describe.hpp"
#include "ndarray/dist.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/io.hpp"
#include "ndarray/linalg.hpp"
#include "ndarray/manipulation.hpp"
#include "ndarray/memory.hpp"
#include "ndarray/nn.hpp"
#include "ndarray/optimizer_ops.hpp"
#include "ndarray/print.hpp"
#include "ndarray/profiler.hpp"
#include "ndarray/random.hpp"
#include "ndarray/reduce.hpp"
#include "ndarray/softmax.hpp"
#include "ndarray/xtensor.hpp"  // asxtensor, nd::array from xtensor

namespace mx::nd {

// Waits for all queued work on every context; reports a failed kernel as mx::DeviceError.
void waitall();

}  // namespace mx::nd
