// pick (as mx.nd.pick) and its gradient _backward_pick: values against hand-computed ones along
// every axis, with keepdims, in modes clip and wrap, for every index and data dtype, on every
// context; the errors it throws.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::dtype_of;
using ndg_test::Values;
using ndg_test::values;

namespace {

// MXNet's documentation example: x = [[1, 2], [3, 4], [5, 6]].
nd::NDArray doc_example(mx::Context ctx, DType dtype = DType::float32) {
  return nd::array({{1, 2}, {3, 4}, {5, 6}}, ctx, dtype);
}

// (7, 4) with element [r, k] = 10 r + k: the picked value names its row and column.
nd::NDArray tens_and_units(mx::Context ctx) {
  Values v;
  for (int r = 0; r < 7; ++r) {
    for (int k = 0; k < 4; ++k) v.push_back(10 * r + k);
  }
  return nd::array(v, {7, 4}, ctx, DType::float32);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pick)

BOOST_AUTO_TEST_CASE(pick_along_each_axis_of_a_matrix_as_mxnet_documents) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType index_dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT("index " << mx::dtype_name(index_dtype)) {
        const nd::NDArray x = doc_example(ctx);
        // pick(x, y=[0, 1], 0) = [1, 4]
        const nd::NDArray along_0 = nd::pick(x, nd::array({0, 1}, ctx, index_dtype), 0);
        BOOST_TEST(along_0.shape() == (mx::Shape{2}));
        BOOST_TEST(values(along_0) == (Values{1, 4}), tt::per_element());
        // pick(x, y=[0, 1, 0], 1) = [1, 4, 5], and the same along axis -1 (the default).
        const nd::NDArray index = nd::array({0, 1, 0}, ctx, index_dtype);
        BOOST_TEST(values(nd::pick(x, index, 1)) == (Values{1, 4, 5}), tt::per_element());
        BOOST_TEST(values(nd::pick(x, index)) == (Values{1, 4, 5}), tt::per_element());
        // y = [[1], [0], [2]]: pick(x, y, 1, keepdims=True) = [[2], [3], [6]] (2 is clipped to 1).
        const nd::NDArray column = nd::array({{1}, {0}, {2}}, ctx, index_dtype);
        const nd::NDArray kept = nd::pick(x, column, 1, true);
        BOOST_TEST(kept.shape() == (mx::Shape{3, 1}));
        BOOST_TEST(values(kept) == (Values{2, 3, 6}), tt::per_element());
        // The index may come with the axis as extent 1 without keepdims, and the other way round.
        BOOST_TEST(nd::pick(x, column, 1).shape() == (mx::Shape{3}));
        BOOST_TEST(values(nd::pick(x, column, -1)) == (Values{2, 3, 6}), tt::per_element());
        const nd::NDArray kept_0 = nd::pick(x, nd::array({0, 1}, ctx, index_dtype), 0, true);
        BOOST_TEST(kept_0.shape() == (mx::Shape{1, 2}));
        BOOST_TEST(values(kept_0) == (Values{1, 4}), tt::per_element());
        BOOST_TEST(kept.context() == ctx);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(pick_wraps_negative_indices_as_mxnet_documents) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // pick(x, y=[2, -1, -2], 1, mode='wrap') = [1, 4, 5]
    for (DType index_dtype : {DType::float32, DType::float64, DType::int32, DType::int64}) {
      BOOST_TEST_CONTEXT("index " << mx::dtype_name(index_dtype)) {
        const nd::NDArray y = nd::pick(doc_example(ctx), nd::array({2, -1, -2}, ctx, index_dtype), 1, false, "wrap");
        BOOST_TEST(values(y) == (Values{1, 4, 5}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(clip_and_wrap_of_indices_out_of_range) {
  // Rows of [10 r, 10 r + 1, 10 r + 2, 10 r + 3]. Float indices truncate toward zero first
  // (-0.5 -> 0, 1.9 -> 1, 9.7 -> 9), so that float and int32 indices pick alike:
  //   index       -5  -1  -0.5/0  1.9/1  3   4   9.7/9
  //   clip         0   0   0      1      3   3   3
  //   wrap (n=4)   3   3   0      1      3   0   1
  const Values clipped{0, 10, 20, 31, 43, 53, 63};
  const Values wrapped{3, 13, 20, 31, 43, 50, 61};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = tens_and_units(ctx);
    for (DType dtype : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT("float index " << mx::dtype_name(dtype)) {
        const nd::NDArray index = nd::array({-5, -1, -0.5, 1.9, 3, 4, 9.7}, ctx, dtype);
        BOOST_TEST(values(nd::pick(x, index, 1)) == clipped, tt::per_element());
        BOOST_TEST(values(nd::pick(x, index, 1, false, "clip")) == clipped, tt::per_element());
        BOOST_TEST(values(nd::pick(x, index, -1, false, "wrap")) == wrapped, tt::per_element());
      }
    }
    for (DType dtype : {DType::int32, DType::int64}) {
      BOOST_TEST_CONTEXT("integer index " << mx::dtype_name(dtype)) {
        const nd::NDArray index = nd::array({-5, -1, 0, 1, 3, 4, 9}, ctx, dtype);
        BOOST_TEST(values(nd::pick(x, index, 1)) == clipped, tt::per_element());
        BOOST_TEST(values(nd::pick(x, index, 1, false, "wrap")) == wrapped, tt::per_element());
      }
    }
    // uint8 indices past the extent: 255 clips to 3 and wraps to 255 % 4 = 3; 6 wraps to 2.
    const nd::NDArray bytes = nd::array({255, 6}, ctx, DType::uint8);
    const nd::NDArray two_rows = nd::slice_axis(x, 0, 1, 3);
    BOOST_TEST(values(nd::pick(two_rows, bytes, 1)) == (Values{13, 23}), tt::per_element());
    BOOST_TEST(values(nd::pick(two_rows, bytes, 1, false, "wrap")) == (Values{13, 22}), tt::per_element());
    // Along axis 0 (extent 7): -1 clips to 0 and wraps to 6, 9 clips to 6 and wraps to 2.
    const nd::NDArray rows = nd::array({-1, 9, 3, -8}, ctx, DType::int32);
    BOOST_TEST(values(nd::pick(x, rows, 0)) == (Values{0, 61, 32, 3}), tt::per_element());
    BOOST_TEST(values(nd::pick(x, rows, 0, false, "wrap")) == (Values{60, 21, 32, 63}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(pick_along_the_middle_axis_of_3d) {
  // x[i, k, j] = 6 i + 2 k + j, (2, 3, 2); out[i, j] = x[i, index[i, j], j].
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(12, ctx).reshape({2, 3, 2});
    const nd::NDArray index = nd::array({{2, 0}, {1, 5}}, ctx, DType::int32);  // 5 clips to 2
    const nd::NDArray y = nd::pick(x, index, 1);
    BOOST_TEST(y.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(y) == (Values{4, 1, 8, 11}), tt::per_element());
    const nd::NDArray kept = nd::pick(x, index.reshape({2, 1, 2}), -2, true);
    BOOST_TEST(kept.shape() == (mx::Shape{2, 1, 2}));
    BOOST_TEST(values(kept) == (Values{4, 1, 8, 11}), tt::per_element());
    // Along the last axis: out[i, k] = x[i, k, index[i, k]].
    const nd::NDArray last = nd::pick(x, nd::array({{1, 0, 1}, {0, 0, 1}}, ctx), 2);
    BOOST_TEST(values(last) == (Values{1, 2, 5, 6, 8, 11}), tt::per_element());
    // Along the first: out[k, j] = x[index[k, j], k, j].
    const nd::NDArray first = nd::pick(x, nd::array({{1, 0}, {0, 1}, {1, 1}}, ctx), 0);
    BOOST_TEST(values(first) == (Values{6, 1, 2, 9, 10, 11}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(pick_keeps_the_data_dtype_and_reads_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT("data " << mx::dtype_name(dtype)) {
        const nd::NDArray y = nd::pick(doc_example(ctx, dtype), nd::array({1, 0, 1}, ctx, DType::float32), 1);
        BOOST_TEST(dtype_of(y) == mx::dtype_name(dtype));
        BOOST_TEST(values(y) == (Values{2, 3, 6}), tt::per_element());
      }
    }
    // A transposed view as data: x.T() is [[1, 3, 5], [2, 4, 6]].
    const nd::NDArray t = nd::pick(doc_example(ctx).T(), nd::array({2, 0}, ctx), 1);
    BOOST_TEST(values(t) == (Values{5, 2}), tt::per_element());
    // A 1-D array gives one element, (1,), as MXNet 1.x.
    const nd::NDArray one = nd::pick(nd::array({7, 8, 9}, ctx), nd::array({1}, ctx), 0);
    BOOST_TEST(one.shape() == (mx::Shape{1}));
    BOOST_TEST(values(one) == (Values{8}), tt::per_element());
    // Nothing to pick: an empty result.
    BOOST_TEST(nd::pick(nd::zeros({0, 3}, ctx), nd::zeros({0}, ctx), 1).shape() == (mx::Shape{0}));
  });
}

BOOST_AUTO_TEST_CASE(gradient_is_the_head_gradient_at_the_picked_positions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dtype)) {
        nd::NDArray x = nd::array({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, ctx, dtype);
        x.attach_grad();
        const nd::NDArray head = nd::array({1, 2, 3}, ctx, dtype);
        const auto grad_of = [&](const nd::NDArray& index, int axis, bool keepdims, const std::string& mode) {
          auto scope = ag::record();
          const nd::NDArray y = nd::pick(x, index, axis, keepdims, mode);
          y.backward(head.reshape(y.shape()));
          BOOST_TEST(x.grad().dtype() == dtype);
          return values(x.grad());
        };
        // Index [1, 3, 1] along axis 1; the head gradient [1, 2, 3] lands there, zero elsewhere.
        const nd::NDArray index = nd::array({1, 3, 1}, ctx, DType::int32);
        BOOST_TEST(grad_of(index, 1, false, "clip") == (Values{0, 1, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0}), tt::per_element());
        BOOST_TEST(grad_of(index.reshape({3, 1}), -1, true, "clip") == (Values{0, 1, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0}),
                   tt::per_element());
        // Out of range: [-1, 7, 5.5] clips to [0, 3, 3] and wraps to [3, 3, 1].
        const nd::NDArray far = nd::array({-1, 7, 5.5}, ctx);
        BOOST_TEST(grad_of(far, 1, false, "clip") == (Values{1, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3}), tt::per_element());
        BOOST_TEST(grad_of(far, 1, false, "wrap") == (Values{0, 0, 0, 1, 0, 0, 0, 2, 0, 3, 0, 0}), tt::per_element());
        // Along axis 0 (kept as extent 1): one row per column; 4 columns, head [1, 2, 3, 4].
        {
          auto scope = ag::record();
          const nd::NDArray y = nd::pick(x, nd::array({2, 0, 1, -9}, ctx), 0, true);
          BOOST_TEST(y.shape() == (mx::Shape{1, 4}));
          y.backward(nd::array({{1, 2, 3, 4}}, ctx, dtype));
        }
        BOOST_TEST(values(x.grad()) == (Values{0, 2, 0, 4, 0, 0, 3, 0, 1, 0, 0, 0}), tt::per_element());
        // Through a composition: d/dx sum(pick(x * x, index) * w) = 2 x at the picks, times w.
        {
          auto scope = ag::record();
          (nd::pick(x * x, index, 1) * nd::array({1, -1, 0.5}, ctx, dtype)).sum().backward();
        }
        BOOST_TEST(values(x.grad()) == (Values{0, 4, 0, 0, 0, 0, 0, -16, 0, 10, 0, 0}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(the_index_gets_no_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = doc_example(ctx), index = nd::array({0, 1, 1}, ctx);
    x.attach_grad();
    index.attach_grad();
    {
      auto scope = ag::record();
      (nd::pick(x, index, 1) + index).sum().backward();
    }
    BOOST_TEST(values(x.grad()) == (Values{1, 0, 0, 1, 0, 1}), tt::per_element());
    BOOST_TEST(values(index.grad()) == (Values{1, 1, 1}), tt::per_element());  // through + only
  });
}

BOOST_AUTO_TEST_CASE(bad_index_shape_axis_and_mode_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({2, 3}, ctx);
    // The index must have data's shape without the axis, or with extent 1 there.
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({3}, ctx), 1), mx::ShapeError, "pick", "index (3,)", "data (2, 3)",
                          "(2,) or (2, 1)");
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2}, ctx), 0), mx::ShapeError, "pick", "(2,)", "(3,) or (1, 3)");
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2, 3}, ctx), 1), mx::ShapeError, "pick", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2, 1, 1}, ctx), 1), mx::ShapeError, "pick", "(2, 1, 1)");
    // An axis out of range, as every op's axis check reports it.
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2}, ctx), 2), mx::IndexError, "pick", "axis 2", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2}, ctx), -3), mx::IndexError, "pick", "axis -3", "(2, 3)");
    // Modes are MXNet's "clip" and "wrap" ("raise" is not supported by MXNet's pick either).
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::zeros({2}, ctx), 1, false, "raise"), mx::ValueError, "pick", "\"raise\"",
                          "clip", "wrap");
    // Nothing to pick from, and absent operands.
    NDG_CHECK_THROWS_WITH(nd::pick(nd::zeros({2, 0}, ctx), nd::zeros({2}, ctx), 1), mx::ShapeError, "pick",
                          "(2, 0)", "no element");
    NDG_CHECK_THROWS_WITH(nd::pick(nd::NDArray(), nd::zeros({2}, ctx)), mx::ValueError, "pick");
    NDG_CHECK_THROWS_WITH(nd::pick(x, nd::NDArray()), mx::ValueError, "pick");
  });
}

BOOST_AUTO_TEST_CASE(data_and_index_on_different_contexts, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  NDG_CHECK_THROWS_WITH(nd::pick(nd::zeros({2, 3}, mx::gpu(0)), nd::zeros({2}, mx::cpu()), 1), mx::ContextMismatch,
                        "pick", "gpu(0)", "cpu(0)");
}

BOOST_AUTO_TEST_SUITE_END()
