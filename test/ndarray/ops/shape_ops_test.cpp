// The shape ops (as mx.nd's): stack, split, squeeze, expand_dims, tile, repeat and reverse/flip,
// with their gradients, against hand-computed values on every context and dtype; the gradient of
// an op of several outputs of which only some are used; the errors they throw.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

// 0, 1, ..., n - 1 in `shape`.
nd::NDArray counting(const mx::Shape& shape, mx::Context ctx, DType dtype = DType::float32) {
  return nd::arange(0, static_cast<double>(shape.numel()), 1, ctx, dtype).reshape(shape);
}

// 1, 2, ..., n as the head gradient of `shape`.
nd::NDArray head_of(const mx::Shape& shape, mx::Context ctx) {
  return nd::arange(1, static_cast<double>(shape.numel()) + 1, 1, ctx).reshape(shape);
}

template <class F>
Values gradient_of(nd::NDArray x, F&& f) {
  x.attach_grad();
  {
    auto scope = ag::record();
    const nd::NDArray y = f(x);
    (y * head_of(y.shape(), y.context())).sum().backward();
  }
  return values(x.grad());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shape_ops)

BOOST_AUTO_TEST_CASE(stack_joins_along_a_new_axis_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray a = nd::array({{1, 2}, {3, 4}}, ctx, dtype), b = nd::array({{5, 6}, {7, 8}}, ctx, dtype);
        const nd::NDArray s0 = nd::stack({a, b});
        BOOST_TEST(s0.shape() == (mx::Shape{2, 2, 2}));
        BOOST_TEST(s0.dtype() == dtype);
        BOOST_TEST(values(s0) == (Values{1, 2, 3, 4, 5, 6, 7, 8}), tt::per_element());
        BOOST_TEST(values(nd::stack({a, b}, 1)) == (Values{1, 2, 5, 6, 3, 4, 7, 8}), tt::per_element());
        const nd::NDArray s2 = nd::stack({a, b, a}, -1);
        BOOST_TEST(s2.shape() == (mx::Shape{2, 2, 3}));
        BOOST_TEST(values(s2) == (Values{1, 5, 1, 2, 6, 2, 3, 7, 3, 4, 8, 4}), tt::per_element());
      }
    }
    // Each input gets its slice of the gradient; one used twice gets both.
    nd::NDArray a = nd::zeros({2, 2}, ctx), b = nd::zeros({2, 2}, ctx);
    a.attach_grad();
    b.attach_grad();
    {
      auto scope = ag::record();
      (nd::stack({a, b, a}, 1) * head_of({2, 3, 2}, ctx)).sum().backward();
    }
    BOOST_TEST(values(a.grad()) == (Values{1 + 5, 2 + 6, 7 + 11, 8 + 12}), tt::per_element());
    BOOST_TEST(values(b.grad()) == (Values{3, 4, 9, 10}), tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::stack({nd::zeros({2}, ctx), nd::zeros({3}, ctx)}), mx::ShapeError, "stack", "(3,)", "(2,)");
    NDG_CHECK_THROWS_WITH(nd::stack({nd::zeros({2}, ctx)}, 2), mx::IndexError, "stack", "axis 2");
    NDG_CHECK_THROWS_WITH(nd::stack({}), mx::ValueError, "stack");
  });
}

BOOST_AUTO_TEST_CASE(split_cuts_equal_parts_and_squeezes_the_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray x = counting({2, 6}, ctx, dtype);
        const std::vector<nd::NDArray> parts = nd::split(x, 3);  // MXNet's default axis 1
        BOOST_TEST_REQUIRE(parts.size() == 3u);
        BOOST_TEST(parts[1].shape() == (mx::Shape{2, 2}));
        BOOST_TEST(parts[1].dtype() == dtype);
        BOOST_TEST(values(parts[0]) == (Values{0, 1, 6, 7}), tt::per_element());
        BOOST_TEST(values(parts[2]) == (Values{4, 5, 10, 11}), tt::per_element());
        const std::vector<nd::NDArray> rows = nd::split(x, 2, 0, true);
        BOOST_TEST(rows[1].shape() == (mx::Shape{6}));
        BOOST_TEST(values(rows[1]) == (Values{6, 7, 8, 9, 10, 11}), tt::per_element());
      }
    }
    NDG_CHECK_THROWS_WITH(nd::split(nd::zeros({2, 5}, ctx), 2), mx::ShapeError, "split", "(2, 5)", "2 equal parts");
    NDG_CHECK_THROWS_WITH(nd::split(nd::zeros({2, 6}, ctx), 3, 1, true), mx::ShapeError, "split", "squeeze_axis",
                          "extent 2");
    NDG_CHECK_THROWS_WITH(nd::split(nd::zeros({2, 6}, ctx), 0), mx::ValueError, "split", "num_outputs");
  });
}

// Note [gradients of several outputs]: each part's gradient reaches its slot; a part no gradient
// reaches contributes zero, and a part used twice the sum.
BOOST_AUTO_TEST_CASE(split_gradient_of_the_parts_used) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::zeros({2, 6}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      const std::vector<nd::NDArray> p = nd::split(x, 3);
      (p[0] * nd::array({{1, 2}, {3, 4}}, ctx) + p[2] * 10.0 + p[2]).sum().backward();
    }
    BOOST_TEST(values(x.grad()) == (Values{1, 2, 0, 0, 11, 11, 3, 4, 0, 0, 11, 11}), tt::per_element());
    // One part alone, as the head.
    {
      auto scope = ag::record();
      nd::split(x, 3, 1)[1].backward(nd::array({{5, 6}, {7, 8}}, ctx));
    }
    BOOST_TEST(values(x.grad()) == (Values{0, 0, 5, 6, 0, 0, 0, 0, 7, 8, 0, 0}), tt::per_element());
    // Squeezed parts.
    BOOST_TEST(gradient_of(nd::zeros({2, 3}, ctx), [](const nd::NDArray& v) {
                 const auto rows = nd::split(v, 2, 0, true);
                 return rows[1] - rows[0];
               }) == (Values{-1, -2, -3, 1, 2, 3}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(squeeze_and_expand_dims_copy_into_the_new_shape) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = counting({1, 3, 1, 2}, ctx);
    BOOST_TEST(nd::squeeze(x).shape() == (mx::Shape{3, 2}));
    BOOST_TEST(nd::squeeze(x, {0}).shape() == (mx::Shape{3, 1, 2}));
    BOOST_TEST(nd::squeeze(x, {-2, 0}).shape() == (mx::Shape{3, 2}));
    BOOST_TEST(nd::squeeze(nd::zeros({1, 1}, ctx)).shape() == (mx::Shape{1}));  // MXNet 1.x: no 0-d arrays
    BOOST_TEST(values(nd::squeeze(x)) == values(x), tt::per_element());
    BOOST_TEST(!nd::squeeze(x).shares_memory(x));
    BOOST_TEST(nd::expand_dims(x, 0).shape() == (mx::Shape{1, 1, 3, 1, 2}));
    BOOST_TEST(nd::expand_dims(x, 4).shape() == (mx::Shape{1, 3, 1, 2, 1}));
    BOOST_TEST(nd::expand_dims(x, -1).shape() == (mx::Shape{1, 3, 1, 2, 1}));
    BOOST_TEST(nd::expand_dims(x, -5).shape() == (mx::Shape{1, 1, 3, 1, 2}));
    BOOST_TEST(values(nd::expand_dims(x, 2)) == values(x), tt::per_element());
    BOOST_TEST(gradient_of(nd::zeros({1, 3}, ctx), [](const nd::NDArray& v) { return nd::expand_dims(nd::squeeze(v), 1); }) ==
                   (Values{1, 2, 3}),
               tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::squeeze(x, {1}), mx::ShapeError, "squeeze", "axis 1", "extent 3");
    NDG_CHECK_THROWS_WITH(nd::squeeze(x, {0, -4}), mx::ValueError, "squeeze", "twice");
    NDG_CHECK_THROWS_WITH(nd::expand_dims(x, 5), mx::IndexError, "expand_dims", "axis 5");
  });
}

BOOST_AUTO_TEST_CASE(tile_repeats_the_whole_array_and_sums_the_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        // MXNet's documentation: x = [[1, 2], [3, 4]].
        const nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx, dtype);
        const nd::NDArray t = nd::tile(x, {2});  // reps shorter than x.ndim: (1, 2)
        BOOST_TEST(t.shape() == (mx::Shape{2, 4}));
        BOOST_TEST(values(t) == (Values{1, 2, 1, 2, 3, 4, 3, 4}), tt::per_element());
        const nd::NDArray t3 = nd::tile(x, {2, 1, 2});  // longer: x as (1, 2, 2)
        BOOST_TEST(t3.shape() == (mx::Shape{2, 2, 4}));
        BOOST_TEST(values(t3) == (Values{1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4}), tt::per_element());
      }
    }
    BOOST_TEST(nd::tile(nd::zeros({2, 3}, ctx), {0, 1}).shape() == (mx::Shape{0, 3}));
    // Each element's gradient sums its copies': head 1..8 over tile((2, 2), (1, 2)).
    BOOST_TEST(gradient_of(nd::zeros({2, 2}, ctx), [](const nd::NDArray& v) { return nd::tile(v, {1, 2}); }) ==
                   (Values{1 + 3, 2 + 4, 5 + 7, 6 + 8}),
               tt::per_element());
    BOOST_TEST(gradient_of(nd::zeros({2}, ctx), [](const nd::NDArray& v) { return nd::tile(v, {2, 3}); }) ==
                   (Values{1 + 3 + 5 + 7 + 9 + 11, 2 + 4 + 6 + 8 + 10 + 12}),
               tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::tile(nd::zeros({2}, ctx), {-1}), mx::ValueError, "tile", "negative");
  });
}

BOOST_AUTO_TEST_CASE(repeat_repeats_each_element_and_sums_the_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx, dtype);
        // MXNet's documentation: repeat(x, 2) flattens; axis 1 and 0 keep the other axes.
        BOOST_TEST(values(nd::repeat(x, 2)) == (Values{1, 1, 2, 2, 3, 3, 4, 4}), tt::per_element());
        BOOST_TEST(nd::repeat(x, 2).shape() == (mx::Shape{8}));
        BOOST_TEST(values(nd::repeat(x, 2, 1)) == (Values{1, 1, 2, 2, 3, 3, 4, 4}), tt::per_element());
        BOOST_TEST(nd::repeat(x, 2, 1).shape() == (mx::Shape{2, 4}));
        BOOST_TEST(values(nd::repeat(x, 2, 0)) == (Values{1, 2, 1, 2, 3, 4, 3, 4}), tt::per_element());
        BOOST_TEST(values(nd::repeat(x, 3, -1)).size() == 12u);
      }
    }
    BOOST_TEST(nd::repeat(nd::zeros({2, 3}, ctx), 0, 1).shape() == (mx::Shape{2, 0}));
    BOOST_TEST(gradient_of(nd::zeros({2, 2}, ctx), [](const nd::NDArray& v) { return nd::repeat(v, 2, 0); }) ==
                   (Values{1 + 3, 2 + 4, 5 + 7, 6 + 8}),
               tt::per_element());
    BOOST_TEST(gradient_of(nd::zeros({3}, ctx), [](const nd::NDArray& v) { return nd::repeat(v, 2); }) ==
                   (Values{3, 7, 11}),
               tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::repeat(nd::zeros({2}, ctx), -1), mx::ValueError, "repeat", "-1");
    NDG_CHECK_THROWS_WITH(nd::repeat(nd::zeros({2}, ctx), 2, 1), mx::IndexError, "repeat", "axis 1");
  });
}

BOOST_AUTO_TEST_CASE(reverse_and_flip_reverse_the_given_axes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray x = counting({2, 3, 2}, ctx, dtype);
        BOOST_TEST(values(nd::reverse(x, {1})) == (Values{4, 5, 2, 3, 0, 1, 10, 11, 8, 9, 6, 7}), tt::per_element());
        BOOST_TEST(values(nd::flip(x, {0, 2})) == (Values{7, 6, 9, 8, 11, 10, 1, 0, 3, 2, 5, 4}), tt::per_element());
        BOOST_TEST(values(nd::flip(x, {-1, -2, 0})) == (Values{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}), tt::per_element());
      }
    }
    BOOST_TEST(gradient_of(nd::zeros({2, 2}, ctx), [](const nd::NDArray& v) { return nd::reverse(v, {0}); }) ==
                   (Values{3, 4, 1, 2}),
               tt::per_element());
    NDG_CHECK_THROWS_WITH(nd::reverse(nd::zeros({2}, ctx), {1}), mx::IndexError, "reverse", "axis 1");
    NDG_CHECK_THROWS_WITH(nd::reverse(nd::zeros({2, 2}, ctx), {0, -2}), mx::ValueError, "reverse", "twice");
  });
}

BOOST_AUTO_TEST_CASE(shape_ops_read_strided_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray t = counting({2, 3}, ctx).T();  // (3, 2): [[0, 3], [1, 4], [2, 5]]
    BOOST_TEST(values(nd::reverse(t, {0})) == (Values{2, 5, 1, 4, 0, 3}), tt::per_element());
    BOOST_TEST(values(nd::tile(t, {1, 2})) == (Values{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5}), tt::per_element());
    BOOST_TEST(values(nd::stack({t, t}, 2)) == (Values{0, 0, 3, 3, 1, 1, 4, 4, 2, 2, 5, 5}), tt::per_element());
    BOOST_TEST(values(nd::split(t, 2, 1)[1]) == (Values{3, 4, 5}), tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
