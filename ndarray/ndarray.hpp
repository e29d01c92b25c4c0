#pragma once
// Everything a user of mx::nd needs: #include <ndarray/ndarray.hpp>.
#include "context/context.hpp"
#include "context/device.hpp"
#include "context/error.hpp"
#include "ndarray/amp/amp.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/array.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/core/memory.hpp"
#include "ndarray/core/print.hpp"
#include "ndarray/core/threads.hpp"
#include "ndarray/core/xtensor.hpp"  // asxtensor, nd::array from xtensor
#include "ndarray/dist/collective.hpp"
#include "ndarray/dist/dist.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "ndarray/ops/attention.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/image.hpp"
#include "ndarray/ops/indexing.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/norm.hpp"
#include "ndarray/ops/optimizer.hpp"
#include "ndarray/ops/random.hpp"
#include "ndarray/ops/reduce.hpp"
#include "ndarray/ops/shape_ops.hpp"
#include "ndarray/ops/softmax.hpp"
#include "ndarray/ops/sort.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::nd {

// Waits for all queued work on every context; reports a failed kernel as mx::DeviceError.
void waitall();

}  // namespace mx::nd
