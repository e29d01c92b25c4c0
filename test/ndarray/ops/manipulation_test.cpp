// Shape manipulation: reshape, x[i], slice (with steps), flatten, T(), transpose, swapaxes and
// broadcast_to are views of the same storage; concat and slice_axis copy. Every case runs on every
// context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/reshape_kernels.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

// Values 0, 1, ..., n - 1.
Values iota(int n) {
  Values v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// The reference transpose of a row-major (d0, d1, d2) array: out axis k is input axis axes[k].
Values transpose_3d(const Values& x, const std::array<std::int64_t, 3>& dims, const std::array<int, 3>& axes) {
  const std::array<std::int64_t, 3> strides{dims[1] * dims[2], dims[2], 1};
  Values out;
  std::array<std::int64_t, 3> index{};
  for (index[0] = 0; index[0] < dims[static_cast<std::size_t>(axes[0])]; ++index[0])
    for (index[1] = 0; index[1] < dims[static_cast<std::size_t>(axes[1])]; ++index[1])
      for (index[2] = 0; index[2] < dims[static_cast<std::size_t>(axes[2])]; ++index[2]) {
        std::int64_t offset = 0;
        for (std::size_t k = 0; k < 3; ++k) offset += index[k] * strides[static_cast<std::size_t>(axes[k])];
        out.push_back(x[static_cast<std::size_t>(offset)]);
      }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(manipulation)

// ---- views ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(reshape_infers_one_minus_one) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(12, ctx);
    BOOST_TEST(x.reshape({-1, 4}).shape() == (mx::Shape{3, 4}));
    BOOST_TEST(x.reshape({2, -1}).shape() == (mx::Shape{2, 6}));
    BOOST_TEST(x.reshape({2, -1, 3}).shape() == (mx::Shape{2, 2, 3}));
    BOOST_TEST(x.reshape({3, 4}).reshape({-1}).shape() == (mx::Shape{12}));
    BOOST_TEST(nd::reshape(x, {4, 3}).shape() == (mx::Shape{4, 3}));
    const nd::NDArray r = x.reshape({-1, 6});
    BOOST_TEST(r.context() == ctx);
    BOOST_TEST(values(r) == iota(12), tt::per_element());  // row-major order is kept
    BOOST_TEST(nd::zeros({0, 3}, ctx).reshape({-1, 3}).shape() == (mx::Shape{0, 3}));
    NDG_CHECK_THROWS_WITH(x.reshape({5, -1}), mx::ShapeError, "reshape", "(12,)", "(5, -1)");
    NDG_CHECK_THROWS_WITH(x.reshape({-1, -1}), mx::ShapeError, "reshape");
  });
}

BOOST_AUTO_TEST_CASE(reshape_is_a_view_sharing_storage) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::arange(6, ctx);
    nd::NDArray m = x.reshape({-1, 3});
    m += 10;  // through the view...
    BOOST_TEST(values(x) == (Values{10, 11, 12, 13, 14, 15}), tt::per_element());  // ...seen in x
    x *= 2;   // and the other way round
    BOOST_TEST(values(m) == (Values{20, 22, 24, 26, 28, 30}), tt::per_element());
    BOOST_TEST(m.shape() == (mx::Shape{2, 3}));
    // Reshaping to the same shape is the same array.
    BOOST_TEST(x.reshape({6}).is(x));
    BOOST_TEST(!m.is(x));
  });
}

BOOST_AUTO_TEST_CASE(indexing_gives_views_of_rows) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(6, ctx).reshape({3, 2});
    nd::NDArray row = x[1];
    BOOST_TEST(row.shape() == (mx::Shape{2}));
    BOOST_TEST(row.context() == ctx);
    BOOST_TEST(values(row) == (Values{2, 3}), tt::per_element());
    BOOST_TEST(values(x[-1]) == (Values{4, 5}), tt::per_element());  // from the end
    row.fill(7);
    BOOST_TEST(values(x) == (Values{0, 1, 7, 7, 4, 5}), tt::per_element());
    x[0] *= -1;  // writing through a temporary view reaches x too
    BOOST_TEST(values(x) == (Values{0, -1, 7, 7, 4, 5}), tt::per_element());
    NDG_CHECK_THROWS_WITH(x[3], mx::IndexError, "3", "(3, 2)");
    NDG_CHECK_THROWS_WITH(x[-4], mx::IndexError, "-4");
  });
}

BOOST_AUTO_TEST_CASE(indexing_a_1d_array_gives_shape_1) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({5, 6, 7}, ctx);
    const nd::NDArray first = x[0];
    BOOST_TEST(first.shape() == (mx::Shape{1}));  // (1,), as MXNet 1.x
    BOOST_TEST(first.asscalar<float>() == 5.0f);
    BOOST_TEST(x[2].asscalar<float>() == 7.0f);
    x[1].fill(-6);
    BOOST_TEST(values(x) == (Values{5, -6, 7}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(indexing_a_3d_array_nests) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx, DType::int32).reshape({2, 3, 4});
    BOOST_TEST(x[1].shape() == (mx::Shape{3, 4}));
    BOOST_TEST(x[1][2].shape() == (mx::Shape{4}));
    BOOST_TEST(values(x[1][2]) == (Values{20, 21, 22, 23}), tt::per_element());  // 12 + 8 + k
    BOOST_TEST(x[1][2][3].asscalar<std::int32_t>() == 23);
    x[0][1] += 100;
    BOOST_TEST(values(x[0]) == (Values{0, 1, 2, 3, 104, 105, 106, 107, 8, 9, 10, 11}), tt::per_element());
    BOOST_TEST(values(x[1]) == (Values{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(slice_is_a_view_of_rows) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(8, ctx).reshape({4, 2});
    nd::NDArray middle = x.slice(1, 3);
    BOOST_TEST(middle.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(middle) == (Values{2, 3, 4, 5}), tt::per_element());
    middle.fill(0);
    BOOST_TEST(values(x) == (Values{0, 1, 0, 0, 0, 0, 6, 7}), tt::per_element());
    // Negative bounds count from the end; an empty slice is allowed.
    BOOST_TEST(values(x.slice(-1, 4)) == (Values{6, 7}), tt::per_element());
    BOOST_TEST(values(x.slice(0, -3)) == (Values{0, 1}), tt::per_element());
    BOOST_TEST(x.slice(2, 2).shape() == (mx::Shape{0, 2}));
    // A slice of a slice.
    BOOST_TEST(values(x.slice(1, 4).slice(2, 3)) == (Values{6, 7}), tt::per_element());
    NDG_CHECK_THROWS_WITH(x.slice(1, 5), mx::IndexError, "slice", "(4, 2)");
  });
}

BOOST_AUTO_TEST_CASE(copies_do_not_share_storage_with_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(4, ctx);
    const nd::NDArray copy = x.slice(1, 3).copy();
    x.slice(0, 4).fill(9);
    BOOST_TEST(values(copy) == (Values{1, 2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(flatten_keeps_the_first_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx).reshape({2, 3, 4});
    nd::NDArray f = x.flatten();
    BOOST_TEST(f.shape() == (mx::Shape{2, 12}));
    BOOST_TEST(values(f) == iota(24), tt::per_element());
    BOOST_TEST(nd::arange(5, ctx).flatten().shape() == (mx::Shape{5, 1}));
    BOOST_TEST(nd::zeros({3, 4}, ctx).flatten().shape() == (mx::Shape{3, 4}));
    BOOST_TEST(nd::zeros({0, 4, 2}, ctx).flatten().shape() == (mx::Shape{0, 8}));
    f -= 1;  // a view, like reshape
    BOOST_TEST(values(x)[0] == -1);
  });
}

// ---- transposes -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(T_of_a_matrix_is_a_transposed_view) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    nd::NDArray t = a.T();
    BOOST_TEST(t.shape() == (mx::Shape{3, 2}));
    BOOST_TEST(t.context() == ctx);
    BOOST_TEST(t.strides() == (std::vector<std::int64_t>{1, 3}), tt::per_element());
    BOOST_TEST(!t.is_contiguous());
    BOOST_TEST(t.shares_memory(a));
    BOOST_TEST(values(t) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
    BOOST_TEST(a.T().T().is_contiguous());  // transposed back: the same layout as a
    t.copy().fill(0);  // a copy of the view: a is untouched
    BOOST_TEST(values(a) == (Values{1, 2, 3, 4, 5, 6}), tt::per_element());
    BOOST_TEST(values(a.T().T()) == values(a), tt::per_element());
    BOOST_TEST(values(nd::transpose(a)) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
    const nd::NDArray i = nd::array({{1, 2}, {3, 4}}, ctx, DType::int64).T();
    BOOST_TEST(i.asvector<std::int64_t>() == (std::vector<std::int64_t>{1, 3, 2, 4}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(T_of_a_vector_or_row_is_the_same_data) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray v = nd::array({1, 2, 3}, ctx);
    BOOST_TEST(v.T().shape() == (mx::Shape{3}));
    BOOST_TEST(values(v.T()) == (Values{1, 2, 3}), tt::per_element());
    const nd::NDArray row = nd::array({{1, 2, 3}}, ctx);  // (1, 3)
    const nd::NDArray column = row.T();
    BOOST_TEST(column.shape() == (mx::Shape{3, 1}));
    BOOST_TEST(values(column) == (Values{1, 2, 3}), tt::per_element());
    BOOST_TEST(column.shares_memory(row));  // T() is a view
    BOOST_TEST(column.is_contiguous());      // with the row's layout: only extent-1 axes moved
    // transpose() is a view too: writing it writes the row; a copy of it leaves the row alone.
    nd::NDArray view = nd::transpose(row);
    BOOST_TEST(view.shares_memory(row));
    view += 1;
    BOOST_TEST(values(row) == (Values{2, 3, 4}), tt::per_element());
    nd::NDArray copied = nd::transpose(row).copy();
    BOOST_TEST(!copied.shares_memory(row));
    copied += 1;
    BOOST_TEST(values(row) == (Values{2, 3, 4}), tt::per_element());
    BOOST_TEST(values(copied) == (Values{3, 4, 5}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(transpose_with_axes_on_3d) {
  const std::array<std::int64_t, 3> dims{2, 3, 4};
  const Values x_values = iota(24);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(x_values, {2, 3, 4}, ctx, DType::float32);
    const std::array<int, 3> permutations[] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                               {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (const auto& axes : permutations) {
      BOOST_TEST_CONTEXT("axes (" << axes[0] << ", " << axes[1] << ", " << axes[2] << ")") {
        const nd::NDArray t = x.transpose({axes[0], axes[1], axes[2]});
        BOOST_TEST(t.shape() == (mx::Shape{dims[static_cast<std::size_t>(axes[0])],
                                            dims[static_cast<std::size_t>(axes[1])],
                                            dims[static_cast<std::size_t>(axes[2])]}));
        BOOST_TEST(values(t) == transpose_3d(x_values, dims, axes), tt::per_element());
        BOOST_TEST(values(nd::transpose(x, {axes[0], axes[1], axes[2]})) == values(t), tt::per_element());
      }
    }
    // By hand: (1, 0, 2) swaps the first two axes: t[j, i, k] = x[i, j, k] = 12i + 4j + k.
    BOOST_TEST(values(x.transpose({1, 0, 2})[0]) == (Values{0, 1, 2, 3, 12, 13, 14, 15}), tt::per_element());
    // Default: reversed axes, (4, 3, 2).
    BOOST_TEST(x.transpose().shape() == (mx::Shape{4, 3, 2}));
    BOOST_TEST(values(x.transpose()) == transpose_3d(x_values, dims, {2, 1, 0}), tt::per_element());
    BOOST_TEST(values(x.T()) == transpose_3d(x_values, dims, {2, 1, 0}), tt::per_element());
    // Negative axes.
    BOOST_TEST(values(x.transpose({-1, 0, -2})) == transpose_3d(x_values, dims, {2, 0, 1}), tt::per_element());
    NDG_CHECK_THROWS_WITH(x.transpose({0, 0, 1}), mx::ShapeError, "transpose", "(0, 0, 1)");
    NDG_CHECK_THROWS_WITH(x.transpose({0, 1}), mx::ShapeError, "transpose");
  });
}

BOOST_AUTO_TEST_CASE(transpose_of_a_large_matrix) {
  const std::int64_t rows = 300, cols = 500;  // parallel on the CPU, many GPU blocks
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x =
        nd::arange(static_cast<double>(rows * cols), ctx, DType::float64).reshape({rows, cols});
    const Values t = values(x.T());
    bool all_equal = t.size() == static_cast<std::size_t>(rows * cols);
    for (std::int64_t j = 0; all_equal && j < cols; ++j)
      for (std::int64_t i = 0; all_equal && i < rows; ++i) {
        all_equal = t[static_cast<std::size_t>(j * rows + i)] == static_cast<double>(i * cols + j);
      }
    BOOST_TEST(all_equal);
  });
}

// ---- concat -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(concat_2d_along_each_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    const nd::NDArray below = nd::array({{7, 8, 9}}, ctx);
    const nd::NDArray right = nd::array({{10, 11}, {12, 13}}, ctx);
    const nd::NDArray rows = nd::concat({a, below}, 0);
    BOOST_TEST(rows.shape() == (mx::Shape{3, 3}));
    BOOST_TEST(rows.context() == ctx);
    BOOST_TEST(values(rows) == (Values{1, 2, 3, 4, 5, 6, 7, 8, 9}), tt::per_element());
    const nd::NDArray columns = nd::concat({a, right}, 1);
    BOOST_TEST(columns.shape() == (mx::Shape{2, 5}));
    BOOST_TEST(values(columns) == (Values{1, 2, 3, 10, 11, 4, 5, 6, 12, 13}), tt::per_element());
    BOOST_TEST(values(nd::concat({a, right}, -1)) == values(columns), tt::per_element());
    BOOST_TEST(values(nd::concat({right, a, right}, 1)) ==
                   (Values{10, 11, 1, 2, 3, 10, 11, 12, 13, 4, 5, 6, 12, 13}),
               tt::per_element());
    // The default axis is 0; a single operand is copied.
    BOOST_TEST(nd::concat({below, a}).shape() == (mx::Shape{3, 3}));
    const nd::NDArray single = nd::concat({a});
    BOOST_TEST(values(single) == values(a), tt::per_element());
    BOOST_TEST(!single.is(a));
    NDG_CHECK_THROWS_WITH(nd::concat({a, right}, 0), mx::ShapeError, "concat", "(2, 2)", "(2, 3)");
  });
}

BOOST_AUTO_TEST_CASE(concat_3d_along_each_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::arange(24, ctx).reshape({2, 3, 4});
    const nd::NDArray b = nd::arange(24, ctx).reshape({2, 3, 4}) + 100.0;
    // Each result, sliced back along its axis, gives a and b.
    for (int axis = -3; axis < 3; ++axis) {
      BOOST_TEST_CONTEXT("axis " << axis) {
        const int n = axis < 0 ? axis + 3 : axis;
        const nd::NDArray c = nd::concat({a, b}, axis);
        std::vector<std::int64_t> dims{2, 3, 4};
        dims[static_cast<std::size_t>(n)] *= 2;
        BOOST_TEST(c.shape() == mx::Shape(dims));
        const std::int64_t half = dims[static_cast<std::size_t>(n)] / 2;
        BOOST_TEST(values(nd::slice_axis(c, axis, 0, half)) == values(a), tt::per_element());
        BOOST_TEST(values(nd::slice_axis(c, axis, half, 2 * half)) == values(b), tt::per_element());
      }
    }
    // By hand along the middle axis: c[0] is a[0]'s three rows then b[0]'s.
    const nd::NDArray c = nd::concat({a, b}, 1);
    BOOST_TEST(values(c[0][2]) == (Values{8, 9, 10, 11}), tt::per_element());
    BOOST_TEST(values(c[0][3]) == (Values{100, 101, 102, 103}), tt::per_element());
    BOOST_TEST(values(c[1][0]) == (Values{12, 13, 14, 15}), tt::per_element());
    // Unequal extents along the axis, integer dtype.
    const nd::NDArray i =
        nd::concat({nd::ones({2, 1, 2}, ctx, DType::int32), nd::zeros({2, 3, 2}, ctx, DType::int32)}, 1);
    BOOST_TEST(i.shape() == (mx::Shape{2, 4, 2}));
    BOOST_TEST(values(i) == (Values{1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(concat_of_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(6, ctx).reshape({3, 2});
    const nd::NDArray c = nd::concat({x[2].reshape({1, 2}), x.slice(0, 2)}, 0);
    BOOST_TEST(values(c) == (Values{4, 5, 0, 1, 2, 3}), tt::per_element());
  });
}

// ---- slice_axis, broadcast_to -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(slice_axis_copies_a_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(12, ctx).reshape({3, 4});
    nd::NDArray columns = nd::slice_axis(x, 1, 1, 3);
    BOOST_TEST(columns.shape() == (mx::Shape{3, 2}));
    BOOST_TEST(values(columns) == (Values{1, 2, 5, 6, 9, 10}), tt::per_element());
    BOOST_TEST(values(nd::slice_axis(x, 0, 1, 2)) == (Values{4, 5, 6, 7}), tt::per_element());
    BOOST_TEST(values(nd::slice_axis(x, -1, -1, 4)) == (Values{3, 7, 11}), tt::per_element());
    BOOST_TEST(values(nd::slice_axis(x, -2, 0, -1)) == iota(8), tt::per_element());
    BOOST_TEST(nd::slice_axis(x, 1, 2, 2).shape() == (mx::Shape{3, 0}));
    columns.fill(0);  // a copy: x is untouched
    BOOST_TEST(values(x) == iota(12), tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::slice_axis(x, 1, 2, 5), mx::IndexError, "slice_axis", "(3, 4)");
  });
}

BOOST_AUTO_TEST_CASE(slice_axis_of_the_middle_axis_of_3d) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx, DType::int64).reshape({2, 3, 4});
    const nd::NDArray s = nd::slice_axis(x, 1, 1, 3);  // x[:, 1:3, :]
    BOOST_TEST(s.shape() == (mx::Shape{2, 2, 4}));
    BOOST_TEST(values(s) == (Values{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}),
               tt::per_element());
    BOOST_TEST(values(nd::slice_axis(x, 2, 3, 4)) == (Values{3, 7, 11, 15, 19, 23}), tt::per_element());
  });
}

// MXNet's broadcast_to as a registered op (what a traced graph or MXNet's JSON runs where an eager
// broadcast_to is a view): the same values in a dense array, shape code 0 keeping the input's
// extent, its gradient summed back, and a shape it cannot reach refused.
BOOST_AUTO_TEST_CASE(broadcast_to_op_gives_the_views_values) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray column = nd::array({7, 8}, ctx).reshape({1, 2, 1});
    const nd::NDArray dense = mx::op::invoke1(mx::op::broadcast_to_op(), {column}, mx::op::ReshapeParams::of({3, 0, 4}));
    BOOST_TEST(dense.shape() == (mx::Shape{3, 2, 4}));
    BOOST_TEST(dense.is_contiguous());
    BOOST_TEST(values(dense) == values(nd::broadcast_to(column, {3, 2, 4})), tt::per_element());
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    x.attach_grad();
    {
      auto recording = mx::autograd::record();
      const nd::NDArray y =
          mx::op::invoke1(mx::op::broadcast_to_op(), {x.reshape({1, 3})}, mx::op::ReshapeParams::of({2, 3}));
      (y * nd::array({{1, 2, 3}, {4, 5, 6}}, ctx)).sum().backward();
    }
    BOOST_TEST(values(x.grad()) == (Values{5, 7, 9}), tt::per_element());
    NDG_CHECK_THROWS_WITH(mx::op::invoke1(mx::op::broadcast_to_op(), {x.reshape({1, 3})}, mx::op::ReshapeParams::of({2, 4})),
                          mx::ShapeError, "broadcast_to", "(1, 3)", "(2, 4)");
    NDG_CHECK_THROWS_WITH(mx::op::invoke1(mx::op::broadcast_to_op(), {x}, mx::op::ReshapeParams::of({2, 3})),
                          mx::ShapeError, "broadcast_to", "(3,)", "(2, 3)");  // another rank
  });
}

BOOST_AUTO_TEST_CASE(broadcast_to_repeats_extent_1_axes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray row = nd::array({1, 2, 3}, ctx);
    const nd::NDArray r = nd::broadcast_to(row, {2, 3});
    BOOST_TEST(r.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(r.context() == ctx);
    BOOST_TEST(values(r) == (Values{1, 2, 3, 1, 2, 3}), tt::per_element());
    const nd::NDArray column = nd::array({7, 8}, ctx).reshape({2, 1});
    BOOST_TEST(values(nd::broadcast_to(column, {2, 3})) == (Values{7, 7, 7, 8, 8, 8}), tt::per_element());
    // (3,) -> (2, 2, 3) adds leading axes; (2, 1) -> (3, 2, 4) both kinds.
    BOOST_TEST(values(nd::broadcast_to(row, {2, 2, 3})) == (Values{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}),
               tt::per_element());
    const nd::NDArray both = nd::broadcast_to(column, {3, 2, 4});
    BOOST_TEST(both.shape() == (mx::Shape{3, 2, 4}));
    Values expected;
    for (int i = 0; i < 3; ++i)
      for (const double v : {7.0, 8.0})
        for (int k = 0; k < 4; ++k) expected.push_back(v);
    BOOST_TEST(values(both) == expected, tt::per_element());
    // Same shape: a view of the same elements.
    const nd::NDArray same = nd::broadcast_to(row, {3});
    BOOST_TEST(same.shares_memory(row));
    BOOST_TEST(values(same) == (Values{1, 2, 3}), tt::per_element());
    const nd::NDArray u = nd::broadcast_to(nd::array({255}, ctx, DType::uint8), {2, 2});
    BOOST_TEST(values(u) == (Values{255, 255, 255, 255}), tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::broadcast_to(row, {2, 4}), mx::ShapeError, "broadcast_to", "(3,)", "(2, 4)");
    NDG_CHECK_THROWS_WITH(nd::broadcast_to(nd::ones({2, 3}, ctx), {3}), mx::ShapeError, "broadcast_to");
  });
}

// ---- strided views -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(writing_through_a_transposed_view_writes_the_base) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    nd::NDArray t = a.T();
    // The base written: seen through the view.
    a[0].fill(0);
    BOOST_TEST(values(t) == (Values{0, 4, 0, 5, 0, 6}), tt::per_element());
    // The view written: seen in the base. t[1] is a's column 1, itself a strided view.
    nd::NDArray column = t[1];
    BOOST_TEST(column.strides() == (std::vector<std::int64_t>{3}), tt::per_element());
    column += 10;
    BOOST_TEST(values(a) == (Values{0, 10, 0, 4, 15, 6}), tt::per_element());
    t *= 2;
    BOOST_TEST(values(a) == (Values{0, 20, 0, 8, 30, 12}), tt::per_element());
    t -= nd::array({1, 2}, ctx);  // a broadcast rhs: t's column j gets j + 1 off, so a's row j does
    BOOST_TEST(values(a) == (Values{-1, 19, -1, 6, 28, 10}), tt::per_element());
    t.fill(7);
    BOOST_TEST(values(a) == (Values{7, 7, 7, 7, 7, 7}), tt::per_element());
    // copyto into the view, from this context and from cpu(0).
    nd::array({{1, 2}, {3, 4}, {5, 6}}, ctx).copyto(t);
    BOOST_TEST(values(a) == (Values{1, 3, 5, 2, 4, 6}), tt::per_element());
    nd::array({{6, 5}, {4, 3}, {2, 1}}, mx::cpu()).copyto(t);
    BOOST_TEST(values(a) == (Values{6, 4, 2, 5, 3, 1}), tt::per_element());
    // swapaxes is the same kind of view.
    nd::NDArray s = nd::swapaxes(a, 0, -1);
    BOOST_TEST(s.shape() == (mx::Shape{3, 2}));
    BOOST_TEST(values(s) == (Values{6, 5, 4, 3, 2, 1}), tt::per_element());
    s += 1;
    BOOST_TEST(values(a) == (Values{7, 5, 3, 6, 4, 2}), tt::per_element());
    BOOST_TEST(values(a.swapaxes(1, 0)) == values(s), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_updates_with_an_overlapping_transposed_rhs) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({{1, 2}, {3, 4}}, ctx);
    a += a.T();  // reads a.T() as it was before the update
    BOOST_TEST(values(a) == (Values{2, 5, 5, 8}), tt::per_element());
    nd::NDArray t = a.T();
    t += a;  // the output is the transposed view, the rhs the base
    BOOST_TEST(values(a) == (Values{4, 10, 10, 16}), tt::per_element());
    a.T().copyto(a);  // copyto between overlapping views
    BOOST_TEST(values(a) == (Values{4, 10, 10, 16}), tt::per_element());
    nd::NDArray m = nd::array({{1, 2}, {3, 4}}, ctx);
    m.T().copyto(m);
    BOOST_TEST(values(m) == (Values{1, 3, 2, 4}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(stepped_slices_are_views_of_every_step_th_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::arange(10, ctx).reshape({5, 2});  // rows (0, 1), (2, 3), ... (8, 9)
    nd::NDArray even = x.slice(0, 5, 2);
    BOOST_TEST(even.shape() == (mx::Shape{3, 2}));
    BOOST_TEST(even.strides() == (std::vector<std::int64_t>{4, 1}), tt::per_element());
    BOOST_TEST(!even.is_contiguous());
    BOOST_TEST(even.shares_memory(x));
    BOOST_TEST(values(even) == (Values{0, 1, 4, 5, 8, 9}), tt::per_element());
    BOOST_TEST(values(x.slice(1, -1, 2)) == (Values{2, 3, 6, 7}), tt::per_element());
    BOOST_TEST(values(x.slice(1, 5, 3)) == (Values{2, 3, 8, 9}), tt::per_element());
    BOOST_TEST(values(x.slice(-2, 5, 5)) == (Values{6, 7}), tt::per_element());
    BOOST_TEST(x.slice(3, 3, 2).shape() == (mx::Shape{0, 2}));
    BOOST_TEST(x.slice(1, 4, 1).is_contiguous());  // step 1: the plain slice
    BOOST_TEST(values(nd::arange(7, ctx).slice(0, 7, 3)) == (Values{0, 3, 6}), tt::per_element());
    // Rows of the view, and the view of a view.
    BOOST_TEST(values(even[1]) == (Values{4, 5}), tt::per_element());
    BOOST_TEST(values(even.slice(0, 3, 2)) == (Values{0, 1, 8, 9}), tt::per_element());
    // Writing the view writes every other row of x; writing x shows in the view.
    even.fill(-1);
    BOOST_TEST(values(x) == (Values{-1, -1, 2, 3, -1, -1, 6, 7, -1, -1}), tt::per_element());
    even += nd::array({1, 2}, ctx);
    BOOST_TEST(values(x) == (Values{0, 1, 2, 3, 0, 1, 6, 7, 0, 1}), tt::per_element());
    x[2].fill(5);
    BOOST_TEST(values(even) == (Values{0, 1, 5, 5, 0, 1}), tt::per_element());
    nd::NDArray odd = x.slice(1, 5, 2).reshape({2, 2});
    nd::array({{10, 11}, {12, 13}}, ctx).copyto(odd);
    BOOST_TEST(values(x) == (Values{0, 1, 10, 11, 5, 5, 12, 13, 0, 1}), tt::per_element());
    // A stepped slice of a transposed view: columns 0 and 2 of a (2, 3) matrix.
    const nd::NDArray m = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    BOOST_TEST(values(m.T().slice(0, 3, 2)) == (Values{1, 4, 3, 6}), tt::per_element());
    NDG_CHECK_THROWS_WITH(x.slice(0, 5, 0), mx::ValueError, "slice", "step");
    NDG_CHECK_THROWS_WITH(x.slice(0, 6, 2), mx::IndexError, "slice");
  });
}

BOOST_AUTO_TEST_CASE(broadcast_to_is_a_read_only_view) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray row = nd::array({1, 2, 3}, ctx);
    nd::NDArray b = nd::broadcast_to(row, {2, 3});
    BOOST_TEST(b.strides() == (std::vector<std::int64_t>{0, 1}), tt::per_element());
    BOOST_TEST(b.shares_memory(row));
    row.slice(1, 2).fill(20);
    BOOST_TEST(values(b) == (Values{1, 20, 3, 1, 20, 3}), tt::per_element());
    // A view of a view: m.T()[1] is m's column 1, broadcast along a new axis.
    const nd::NDArray m = nd::array({{1, 2}, {3, 4}}, ctx);
    BOOST_TEST(values(nd::broadcast_to(m.T()[1].reshape({2, 1}), {2, 3})) == (Values{2, 2, 2, 4, 4, 4}),
               tt::per_element());
    NDG_CHECK_THROWS_WITH(b.fill(0), mx::ValueError, "fill", "read-only");
    NDG_CHECK_THROWS_WITH(b += 1, mx::ValueError, "read-only");
    NDG_CHECK_THROWS_WITH(nd::zeros({2, 3}, ctx).copyto(b), mx::ValueError, "copyto", "read-only");
    BOOST_TEST(values(row) == (Values{1, 20, 3}), tt::per_element());
    // A copy is writable.
    nd::NDArray c = b.copy();
    c += 1;
    BOOST_TEST(values(c) == (Values{2, 21, 4, 2, 21, 4}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(reshape_and_contiguous_of_strided_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    BOOST_TEST(a.contiguous().is(a));
    const nd::NDArray t = a.T();
    const nd::NDArray c = t.contiguous();
    BOOST_TEST(c.is_contiguous());
    BOOST_TEST(!c.shares_memory(a));
    BOOST_TEST(values(c) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
    // Adding or dropping extent-1 axes keeps the view; any other reshape copies, as NumPy's.
    const nd::NDArray r = t.reshape({3, 1, 2});
    BOOST_TEST(r.shares_memory(a));
    BOOST_TEST(values(r) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
    const nd::NDArray flat = t.reshape({-1});
    BOOST_TEST(!flat.shares_memory(a));
    BOOST_TEST(flat.is_contiguous());
    BOOST_TEST(values(flat) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
    BOOST_TEST(values(t.flatten()) == (Values{1, 4, 2, 5, 3, 6}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(ops_on_views_equal_ops_on_copies) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx, DType::float64).reshape({2, 3, 4});
    const std::vector<std::pair<std::string, nd::NDArray>> views = {
        {"T", x.T()},
        {"transpose (1, 0, 2)", x.transpose({1, 0, 2})},
        {"swapaxes(0, 2)", nd::swapaxes(x, 0, 2)},
        {"stepped slice", nd::arange(48, ctx, DType::float64).reshape({4, 3, 4}).slice(1, 4, 2)},
        {"broadcast_to", nd::broadcast_to(x[1].T().reshape({4, 1, 3}), {4, 2, 3})},
    };
    for (const auto& [name, v] : views) {
      BOOST_TEST_CONTEXT(name) {
        BOOST_TEST(!v.is_contiguous());
        const nd::NDArray c = v.copy();
        BOOST_TEST(c.is_contiguous());
        BOOST_TEST(values(v + 1.0) == values(c + 1.0), tt::per_element());
        BOOST_TEST(values(v * v) == values(c * c), tt::per_element());
        BOOST_TEST(values(v - c) == values(nd::zeros_like(c)), tt::per_element());
        BOOST_TEST(values(nd::exp(v / 10.0)) == values(nd::exp(c / 10.0)), tt::per_element());
        BOOST_TEST(values(v.sum()) == values(c.sum()), tt::per_element());
        BOOST_TEST(values(v.sum(1)) == values(c.sum(1)), tt::per_element());
        BOOST_TEST(values(v.max(-1)) == values(c.max(-1)), tt::per_element());
        BOOST_TEST(values(v.argmin(0)) == values(c.argmin(0)), tt::per_element());
        BOOST_TEST(values(v.astype(DType::float32)) == values(c.astype(DType::float32)), tt::per_element());
        BOOST_TEST(values(nd::concat({v, c}, 1)) == values(nd::concat({c, c}, 1)), tt::per_element());
        BOOST_TEST(values(nd::slice_axis(v, 2, 0, 2)) == values(nd::slice_axis(c, 2, 0, 2)), tt::per_element());
        BOOST_TEST(values(v.reshape({-1, 2})) == values(c.reshape({-1, 2})), tt::per_element());
        BOOST_TEST(v.asvector<std::int64_t>() == c.asvector<std::int64_t>(), tt::per_element());
      }
    }
    // dot of transposed views: the same as the transpose flags.
    const nd::NDArray a = nd::arange(6, ctx, DType::float64).reshape({2, 3});
    const nd::NDArray b = nd::arange(8, ctx, DType::float64).reshape({2, 4});
    BOOST_TEST(values(nd::dot(a.T(), b)) == values(nd::dot(a, b, true, false)), tt::per_element());
    BOOST_TEST(values(nd::dot(a.T(), b)) == values(nd::dot(a.T().copy(), b)), tt::per_element());
    BOOST_TEST(values(nd::dot(b.T(), a.T().T())) == values(nd::dot(b, a, true, false)), tt::per_element());
    BOOST_TEST(values(nd::dot(a, a.T())) == values(nd::dot(a, a, false, true)), tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
