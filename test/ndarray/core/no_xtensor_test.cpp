// xtensor enters the public API only through ndarray/core/xtensor.hpp (and the umbrella headers that
// include it): this file includes every other public header, umbrellas aside, and fails to compile
// if any of them pulls in xtensor. Its one case makes an array and reads it back without xtensor.
#include "context/context.hpp"
#include "context/device.hpp"
#include "context/error.hpp"
#include "gluon/block.hpp"
#include "gluon/data/data_loader.hpp"
#include "gluon/data/dataset.hpp"
#include "gluon/data/fashion_mnist.hpp"
#include "gluon/data/transforms.hpp"
#include "gluon/init.hpp"
#include "gluon/loss.hpp"
#include "gluon/metric.hpp"
#include "gluon/nn/activation.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/flatten.hpp"
#include "gluon/nn/sequential.hpp"
#include "gluon/optimizer.hpp"
#include "gluon/parameter.hpp"
#include "gluon/parameter_dict.hpp"
#include "gluon/parameter_file.hpp"
#include "gluon/trainer.hpp"
#include "gluon/utils.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/array.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/core/dtype.hpp"
#include "ndarray/core/memory.hpp"
#include "ndarray/core/print.hpp"
#include "ndarray/core/shape.hpp"
#include "ndarray/core/storage.hpp"
#include "ndarray/dist/collective.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/op_kinds.hpp"
#include "ndarray/ops/optimizer.hpp"
#include "ndarray/ops/random.hpp"
#include "ndarray/ops/reduce.hpp"
#include "ndarray/ops/softmax.hpp"

#ifdef XTENSOR_VERSION_MAJOR
#error "a public header other than ndarray/core/xtensor.hpp includes xtensor"
#endif

#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <vector>

namespace nd = mx::nd;

BOOST_AUTO_TEST_SUITE(no_xtensor)

BOOST_AUTO_TEST_CASE(arrays_round_trip_without_xtensor) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx) + 1;
    BOOST_TEST(x.asvector<float>() == (std::vector<float>{2, 3, 4, 5}),
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
