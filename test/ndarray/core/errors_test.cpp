#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

// Every bad input throws a typed mx::Error whose message carries the op and the values involved.
// Messages print shapes as Python tuples ("(2, 3)", "(4,)") and operands as "(2, 3) float32 @cpu(0)".

namespace {

// "(2, 3) float32 @gpu(0)": how messages describe an operand.
std::string operand(const std::string& shape, const std::string& dtype, mx::Context ctx) {
  return shape + " " + dtype + " @" + ctx.str();
}

// "N GPUs are visible" / "1 GPU is visible", as check_context says it.
std::string visible_gpus() {
  const int n = mx::num_gpus();
  return std::to_string(n) + (n == 1 ? " GPU is visible" : " GPUs are visible");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(errors)

// ---- operands on different contexts ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(add_of_cpu_and_gpu_operands, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const nd::NDArray a = nd::ones({2, 3}, mx::cpu());
  const nd::NDArray b = nd::ones({2, 3}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(a + b, mx::ContextMismatch, "add", "different contexts",
                        "lhs (2, 3) float32 @cpu(0)", "rhs (2, 3) float32 @gpu(0)", "copyto(cpu(0))",
                        "as_in_context(cpu(0))");
  NDG_CHECK_THROWS_WITH(b - a, mx::ContextMismatch, "subtract", "lhs (2, 3) float32 @gpu(0)",
                        "rhs (2, 3) float32 @cpu(0)", "copyto(gpu(0))", "as_in_context(gpu(0))");
  NDG_CHECK_THROWS_WITH(nd::maximum(a, b), mx::ContextMismatch, "maximum", "@cpu(0)", "@gpu(0)");
}

BOOST_AUTO_TEST_CASE(dot_of_cpu_and_gpu_operands, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const nd::NDArray a = nd::ones({2, 3}, mx::gpu(0));
  const nd::NDArray b = nd::ones({3, 4}, mx::cpu());
  NDG_CHECK_THROWS_WITH(nd::dot(a, b), mx::ContextMismatch, "dot", "lhs (2, 3) float32 @gpu(0)",
                        "rhs (3, 4) float32 @cpu(0)", "copyto(gpu(0))", "as_in_context(gpu(0))");
}

BOOST_AUTO_TEST_CASE(concat_of_cpu_and_gpu_operands, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const nd::NDArray a = nd::ones({2, 2}, mx::cpu());
  const nd::NDArray b = nd::ones({1, 2}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(nd::concat({a, a, b}, 0), mx::ContextMismatch, "concat", "operand 0 (2, 2) float32 @cpu(0)",
                        "operand 2 (1, 2) float32 @gpu(0)", "copyto(cpu(0))", "as_in_context");
}

BOOST_AUTO_TEST_CASE(in_place_add_of_a_gpu_operand_leaves_the_cpu_one,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nd::NDArray a = nd::array({1, 2, 3}, mx::cpu());
  const nd::NDArray b = nd::ones({3}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(a += b, mx::ContextMismatch, "add", "lhs (3,) float32 @cpu(0)",
                        "rhs (3,) float32 @gpu(0)", "copyto(cpu(0))", "as_in_context(cpu(0))");
  NDG_CHECK_THROWS_WITH(a *= b, mx::ContextMismatch, "multiply", "@gpu(0)");
  BOOST_TEST(a.asvector() == (std::vector<float>{1, 2, 3}), tt::per_element());
  nd::NDArray g = nd::array({4, 5, 6}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(g -= a, mx::ContextMismatch, "subtract", "lhs (3,) float32 @gpu(0)",
                        "rhs (3,) float32 @cpu(0)");
  BOOST_TEST(g.asvector() == (std::vector<float>{4, 5, 6}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(ops_across_two_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  nd::NDArray a = nd::array({{1, 2}, {3, 4}}, mx::gpu(0));
  const nd::NDArray b = nd::ones({2, 2}, mx::gpu(1));
  NDG_CHECK_THROWS_WITH(a + b, mx::ContextMismatch, "add", "lhs (2, 2) float32 @gpu(0)",
                        "rhs (2, 2) float32 @gpu(1)", "copyto(gpu(0))", "as_in_context(gpu(0))");
  NDG_CHECK_THROWS_WITH(nd::dot(b, a), mx::ContextMismatch, "dot", "lhs (2, 2) float32 @gpu(1)",
                        "rhs (2, 2) float32 @gpu(0)", "copyto(gpu(1))", "as_in_context(gpu(1))");
  NDG_CHECK_THROWS_WITH(nd::concat({a, b}, 1), mx::ContextMismatch, "concat", "operand 0 (2, 2) float32 @gpu(0)",
                        "operand 1 (2, 2) float32 @gpu(1)", "copyto(gpu(0))", "as_in_context");
  NDG_CHECK_THROWS_WITH(a += b, mx::ContextMismatch, "add", "@gpu(0)", "@gpu(1)", "copyto", "as_in_context");
  BOOST_TEST(a.asvector() == (std::vector<float>{1, 2, 3, 4}), tt::per_element());
}

// ---- shapes ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(broadcast_of_incompatible_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({2, 3}, ctx);
    const nd::NDArray b = nd::ones({4}, ctx);
    NDG_CHECK_THROWS_WITH(a + b, mx::ShapeError, "add", "(2, 3)", "(4,)", "cannot be broadcast", "3 vs 4");
    NDG_CHECK_THROWS_WITH(b * a, mx::ShapeError, "multiply", "(4,) and (2, 3)");
    NDG_CHECK_THROWS_WITH(nd::ones({2, 3}, ctx) < nd::ones({3, 2}, ctx), mx::ShapeError, "less", "(2, 3)",
                          "(3, 2)");
  });
}

BOOST_AUTO_TEST_CASE(in_place_op_that_would_grow_the_lhs) {
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray a = nd::array({1, 2, 3}, ctx);
    const nd::NDArray b = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(a += b, mx::ShapeError, "add (in place)", operand("(3,)", "float32", ctx),
                          operand("(2, 3)", "float32", ctx), "to (2, 3)", "keep the lhs shape");
    NDG_CHECK_THROWS_WITH(a /= nd::ones({4}, ctx), mx::ShapeError, "divide", "(3,)", "(4,)");
    BOOST_TEST(a.asvector() == (std::vector<float>{1, 2, 3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(broadcast_to_a_smaller_shape) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::broadcast_to(nd::ones({2, 3}, ctx), {3, 3}), mx::ShapeError, "broadcast_to",
                          "(2, 3)", "(3, 3)");
    NDG_CHECK_THROWS_WITH(nd::broadcast_to(nd::ones({2, 3}, ctx), {3}), mx::ShapeError, "broadcast_to",
                          "(2, 3)", "(3,)");
  });
}

BOOST_AUTO_TEST_CASE(dot_with_mismatched_inner_dimensions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({2, 3}, ctx);
    const nd::NDArray b = nd::ones({4, 5}, ctx);
    NDG_CHECK_THROWS_WITH(nd::dot(a, b), mx::ShapeError, "dot", "inner dimensions",
                          "lhs " + operand("(2, 3)", "float32", ctx) + " has 3",
                          "rhs " + operand("(4, 5)", "float32", ctx) + " has 4");
    NDG_CHECK_THROWS_WITH(nd::dot(a, a), mx::ShapeError, "dot", "has 3", "has 2");
    NDG_CHECK_THROWS_WITH(nd::dot(nd::ones({3}, ctx), nd::ones({4}, ctx)), mx::ShapeError, "dot", "(3,)",
                          "(4,)");
    // With transposes, the message says so.
    NDG_CHECK_THROWS_WITH(nd::dot(a, b, true, false), mx::ShapeError,
                          operand("(2, 3)", "float32", ctx) + " (transposed) has 2", "has 4");
    NDG_CHECK_THROWS_WITH(nd::dot(a, b, false, true), mx::ShapeError, "has 3",
                          operand("(4, 5)", "float32", ctx) + " (transposed) has 5");
  });
}

BOOST_AUTO_TEST_CASE(dot_of_int32_operands) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({2, 2}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(nd::dot(a, a), mx::DTypeError, "dot", "float32 and float64", "not int32",
                          operand("(2, 2)", "int32", ctx), "astype");
  });
}

BOOST_AUTO_TEST_CASE(dot_of_3d_operands) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray cube = nd::ones({2, 2, 2}, ctx);
    const nd::NDArray matrix = nd::ones({2, 2}, ctx);
    NDG_CHECK_THROWS_WITH(nd::dot(cube, matrix), mx::ShapeError, "dot", "1-D and 2-D",
                          "lhs " + operand("(2, 2, 2)", "float32", ctx));
    NDG_CHECK_THROWS_WITH(nd::dot(matrix, cube), mx::ShapeError, "dot", "rhs (2, 2, 2)");
    // A transpose of a 1-D operand is not defined either.
    NDG_CHECK_THROWS_WITH(nd::dot(nd::ones({2}, ctx), matrix, true, false), mx::ShapeError, "dot", "(2,)");
  });
}

BOOST_AUTO_TEST_CASE(reshape_to_a_different_size) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.reshape({4, 2}), mx::ShapeError, "reshape", "(2, 3)", "6 elements", "(4, 2)");
    NDG_CHECK_THROWS_WITH(x.reshape({-1, 4}), mx::ShapeError, "reshape", "(2, 3)", "(-1, 4)");
    NDG_CHECK_THROWS_WITH(nd::reshape(x, {7}), mx::ShapeError, "reshape", "(7,)");
    BOOST_TEST(x.shape() == (mx::Shape{2, 3}));
  });
}

BOOST_AUTO_TEST_CASE(reshape_with_two_unknown_extents) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.reshape({-1, -1}), mx::ShapeError, "reshape", "(-1, -1)", "at most one -1");
    NDG_CHECK_THROWS_WITH(x.reshape({-2, 3}), mx::ShapeError, "reshape", "(-2, 3)");
  });
}

BOOST_AUTO_TEST_CASE(transpose_with_bad_axes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3, 4}, ctx);
    NDG_CHECK_THROWS_WITH(x.transpose({0, 0, 1}), mx::ShapeError, "transpose", "(0, 0, 1)", "not a permutation",
                          "3 axes", operand("(2, 3, 4)", "float32", ctx));
    NDG_CHECK_THROWS_WITH(x.transpose({1, 0}), mx::ShapeError, "transpose", "(1, 0)", "(2, 3, 4)");
    NDG_CHECK_THROWS_WITH(nd::transpose(x, {0, 1, 3}), mx::ShapeError, "transpose", "(0, 1, 3)");
    NDG_CHECK_THROWS_WITH(x.transpose({0, 1, -4}), mx::ShapeError, "transpose", "(0, 1, -4)");
  });
}

BOOST_AUTO_TEST_CASE(ops_over_more_axes_than_the_kernels_index) {
  // Nine axes of extent 2 reversed, or broadcast against each other, cannot be merged into
  // eight: each op says so under its own name.
  const mx::Shape nine{2, 2, 2, 2, 2, 2, 2, 2, 2};
  const mx::Shape alternating{2, 1, 2, 1, 2, 1, 2, 1, 2};
  const mx::Shape complement{1, 2, 1, 2, 1, 2, 1, 2, 1};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::ones(nine, ctx);
    NDG_CHECK_THROWS_WITH(x.transpose(), mx::ShapeError, "transpose", "9 axes", "at most 8");
    const nd::NDArray a = nd::ones(alternating, ctx), b = nd::ones(complement, ctx);
    NDG_CHECK_THROWS_WITH(a + b, mx::ShapeError, "add", nine.tuple_str());
    NDG_CHECK_THROWS_WITH(nd::broadcast_to(a, nine), mx::ShapeError, "broadcast_to");
    // Eight such axes are fine.
    BOOST_TEST(nd::ones({2, 2, 2, 2, 2, 2, 2, 2}, ctx).transpose().sum().asscalar<float>() == 256.0f);
  });
}

// ---- axes and indices ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(sum_along_an_axis_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.sum(2), mx::IndexError, "sum", "axis 2", "shape (2, 3)", "ndim 2");
    NDG_CHECK_THROWS_WITH(x.sum(-3), mx::IndexError, "sum", "axis -3", "(2, 3)");
    NDG_CHECK_THROWS_WITH(x.mean(5), mx::IndexError, "axis 5", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::ones({4}, ctx).max(1), mx::IndexError, "max", "axis 1", "(4,)");
  });
}

BOOST_AUTO_TEST_CASE(argmax_along_an_axis_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.argmax(2), mx::IndexError, "argmax", "axis 2", "(2, 3)");
    NDG_CHECK_THROWS_WITH(x.argmin(-5), mx::IndexError, "argmin", "axis -5", "(2, 3)");
  });
}

BOOST_AUTO_TEST_CASE(concat_along_an_axis_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::concat({x, x}, 2), mx::IndexError, "concat", "axis 2", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::concat({x, x}, -3), mx::IndexError, "concat", "axis -3", "(2, 3)");
  });
}

BOOST_AUTO_TEST_CASE(slice_axis_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::slice_axis(x, 3, 0, 1), mx::IndexError, "slice_axis", "axis 3", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::slice_axis(x, 1, 0, 5), mx::IndexError, "slice_axis", "range [0, 5)", "axis 1",
                          operand("(2, 3)", "float32", ctx));
    NDG_CHECK_THROWS_WITH(nd::slice_axis(x, 0, 2, 1), mx::IndexError, "slice_axis", "[2, 1)", "axis 0");
  });
}

BOOST_AUTO_TEST_CASE(index_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x[5], mx::IndexError, "index 5", "out of range", "axis 0", "shape (3,)");
    NDG_CHECK_THROWS_WITH(x[3], mx::IndexError, "index 3", "(3,)");
    NDG_CHECK_THROWS_WITH(x[-4], mx::IndexError, "index -4", "(3,)");
    const nd::NDArray m = nd::ones({2, 4}, ctx);
    NDG_CHECK_THROWS_WITH(m[2], mx::IndexError, "index 2", "(2, 4)");
    NDG_CHECK_THROWS_WITH(m[1][4], mx::IndexError, "index 4", "(4,)");
  });
}

BOOST_AUTO_TEST_CASE(slice_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(x.slice(1, 5), mx::IndexError, "slice", "[1, 5)", "axis 0", "(3,)");
    NDG_CHECK_THROWS_WITH(x.slice(2, 1), mx::IndexError, "slice", "[2, 1)", "(3,)");
    NDG_CHECK_THROWS_WITH(x.slice(-5, 2), mx::IndexError, "slice", "(3,)");
  });
}

// ---- concat ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(concat_of_mismatched_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({2, 3}, ctx);
    const nd::NDArray b = nd::ones({2, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::concat({a, b}, 0), mx::ShapeError, "concat",
                          "operand 1 " + operand("(2, 4)", "float32", ctx),
                          "operand 0 " + operand("(2, 3)", "float32", ctx), "outside axis 0");
    NDG_CHECK_THROWS_WITH(nd::concat({a, nd::ones({2, 3, 1}, ctx)}, 1), mx::ShapeError, "concat", "(2, 3, 1)");
    // Along axis 1 the extents may differ.
    BOOST_TEST(nd::concat({a, b}, 1).shape() == (mx::Shape{2, 7}));
  });
}

BOOST_AUTO_TEST_CASE(concat_of_mismatched_dtypes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({2, 2}, ctx);
    const nd::NDArray b = nd::ones({2, 2}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(nd::concat({a, b}), mx::DTypeError, "concat", "different dtypes", "float32", "int32",
                          operand("(2, 2)", "int32", ctx));
  });
}

BOOST_AUTO_TEST_CASE(concat_of_an_empty_list) {
  NDG_CHECK_THROWS_WITH(nd::concat({}), mx::ValueError, "concat", "at least one array");
  NDG_CHECK_THROWS_WITH(nd::concat(std::vector<nd::NDArray>{}, 1), mx::ValueError, "concat");
}

// ---- dtypes ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(add_of_mixed_dtypes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray f32 = nd::ones({2}, ctx);
    const nd::NDArray f64 = nd::ones({2}, ctx, mx::DType::float64);
    NDG_CHECK_THROWS_WITH(f32 + f64, mx::DTypeError, "add", "different dtypes", "lhs " + operand("(2,)", "float32", ctx),
                          "rhs " + operand("(2,)", "float64", ctx), "astype");
    const nd::NDArray i32 = nd::ones({2}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(i32 * f32, mx::DTypeError, "multiply", "int32", "float32");
    nd::NDArray target = nd::array({5, 6}, ctx);
    NDG_CHECK_THROWS_WITH(target += f64, mx::DTypeError, "add", "float32", "float64");
    BOOST_TEST(target.asvector() == (std::vector<float>{5, 6}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(exp_of_int32) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({3}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(nd::exp(x), mx::DTypeError, "exp", "float32 and float64", "not int32",
                          operand("(3,)", "int32", ctx), "astype");
    NDG_CHECK_THROWS_WITH(x.log(), mx::DTypeError, "log", "int32");
    NDG_CHECK_THROWS_WITH(x.sqrt(), mx::DTypeError, "sqrt", "int32");
    NDG_CHECK_THROWS_WITH(nd::sigmoid(nd::ones({3}, ctx, mx::DType::uint8)), mx::DTypeError, "sigmoid", "uint8");
    NDG_CHECK_THROWS_WITH(x.mean(), mx::DTypeError, "mean", "int32");
    NDG_CHECK_THROWS_WITH(x.norm(), mx::DTypeError, "norm", "int32");
    // The fix the message suggests works.
    BOOST_TEST(nd::exp(x.astype(mx::DType::float32)).asvector() == std::vector<float>(3, std::exp(1.0f)),
               tt::tolerance(1e-6f) << tt::per_element());
  });
}

// ---- reading values and copying --------------------------------------------------------------

BOOST_AUTO_TEST_CASE(asscalar_of_more_than_one_element) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::ones({2, 2}, ctx).asscalar<float>(), mx::ShapeError, "asscalar", "exactly one element",
                          "(2, 2)");
    NDG_CHECK_THROWS_WITH(nd::zeros({0}, ctx).asscalar<float>(), mx::ShapeError, "asscalar", "(0,)");
    BOOST_TEST(nd::ones({1, 1}, ctx).asscalar<float>() == 1.0f);
  });
}

BOOST_AUTO_TEST_CASE(copyto_an_array_of_another_shape_or_dtype) {
  for (mx::Context src : ndg_test::all_contexts()) {
    for (mx::Context dst : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("from " << src.str() << " to " << dst.str()) {
        const nd::NDArray x = nd::ones({2, 3}, src);
        nd::NDArray wrong_shape = nd::zeros({3, 2}, dst);
        NDG_CHECK_THROWS_WITH(x.copyto(wrong_shape), mx::ShapeError, "copyto",
                              "destination " + operand("(3, 2)", "float32", dst),
                              "source " + operand("(2, 3)", "float32", src));
        BOOST_TEST(wrong_shape.asvector() == std::vector<float>(6, 0), tt::per_element());
        nd::NDArray wrong_dtype = nd::zeros({2, 3}, dst, mx::DType::float64);
        NDG_CHECK_THROWS_WITH(x.copyto(wrong_dtype), mx::ShapeError, "copyto", "float64", "float32");
        BOOST_TEST(wrong_dtype.asvector<double>() == std::vector<double>(6, 0), tt::per_element());
      }
    }
  }
}

// ---- creation --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(array_from_a_vector_of_the_wrong_size) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::array(std::vector<float>(5, 1), {2, 3}, ctx), mx::ShapeError, "array", "5 values",
                          "(2, 3)", "6 elements");
    NDG_CHECK_THROWS_WITH(nd::array(std::vector<std::int32_t>{1, 2}, {3}, ctx), mx::ShapeError, "2 values", "(3,)");
  });
}

BOOST_AUTO_TEST_CASE(ragged_nested_list) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::array({{1, 2}, {3}}, ctx), mx::ShapeError, "array", "ragged", "row 1 has 1",
                          "first row has 2");
    NDG_CHECK_THROWS_WITH(nd::array({{1, 2, 3}, {4, 5, 6}, {7, 8}}, ctx), mx::ShapeError, "row 2 has 2",
                          "first row has 3");
  });
}

BOOST_AUTO_TEST_CASE(negative_extent) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::zeros({-1, 2}, ctx), mx::ShapeError, "zeros", "negative extent", "(-1, 2)");
    NDG_CHECK_THROWS_WITH(nd::empty({3, -4}, ctx), mx::ShapeError, "empty", "(3, -4)");
    NDG_CHECK_THROWS_WITH(nd::full({-2, -2}, 1.0, ctx), mx::ShapeError, "full", "(-2, -2)");
    // Two negative extents multiply to a positive size: still rejected, before anything is drawn.
    mx::random::seed(5);
    NDG_CHECK_THROWS_WITH(nd::random::uniform(0, 1, {-2, -2}, ctx), mx::ShapeError, "random.uniform", "(-2, -2)");
    const auto after_error = nd::random::uniform(0, 1, {4}, ctx).asvector<float>();
    mx::random::seed(5);
    BOOST_TEST(nd::random::uniform(0, 1, {4}, ctx).asvector<float>() == after_error, tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(shape_whose_size_overflows) {
  const std::int64_t huge = (std::int64_t{1} << 62) + 1;  // times 4 bytes wraps to 4
  ndg_test::for_each_context([&](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::zeros({huge}, ctx), mx::ShapeError, "zeros", std::to_string(huge), "63 bits");
    NDG_CHECK_THROWS_WITH(nd::ones({huge, 4}, ctx, mx::DType::uint8), mx::ShapeError, "ones", "uint8");
    NDG_CHECK_THROWS_WITH(nd::random::normal(0, 1, {huge}, ctx), mx::ShapeError, "random.normal");
    // A product of extents that wraps to the array's size is not a reshape of it.
    const nd::NDArray x = nd::ones({4}, ctx);
    NDG_CHECK_THROWS_WITH(x.reshape({huge, 4}), mx::ShapeError, "reshape", "(4,)", std::to_string(huge));
    NDG_CHECK_THROWS_WITH(x.reshape({huge, 4, -1}), mx::ShapeError, "reshape");
  });
}

BOOST_AUTO_TEST_CASE(random_parameters_out_of_their_domain) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::random::uniform(1, 0, {3}, ctx), mx::ValueError, "random.uniform", "low <= high",
                          "low 1", "high 0");
    NDG_CHECK_THROWS_WITH(nd::random::uniform(0, INFINITY, {3}, ctx), mx::ValueError, "random.uniform", "finite");
    NDG_CHECK_THROWS_WITH(nd::random::normal(0, -1, {3}, ctx), mx::ValueError, "random.normal", "scale >= 0",
                          "scale -1");
    NDG_CHECK_THROWS_WITH(nd::random::normal(NAN, 1, {3}, ctx), mx::ValueError, "random.normal", "loc nan");
    std::vector<nd::NDArray> targets{nd::zeros({3}, ctx)};
    NDG_CHECK_THROWS_WITH(nd::random::fill_uniform(targets, 2, 1), mx::ValueError, "random.fill_uniform");
    NDG_CHECK_THROWS_WITH(nd::random::fill_normal(targets, 0, -2), mx::ValueError, "random.fill_normal");
    BOOST_TEST(targets[0].asvector<float>() == std::vector<float>(3, 0.0f), tt::per_element());
    // The edges are valid: a point interval and a zero scale give constants.
    BOOST_TEST(nd::random::uniform(2, 2, {3}, ctx).asvector<float>() == std::vector<float>(3, 2.0f), tt::per_element());
    BOOST_TEST(nd::random::normal(-1, 0, {3}, ctx).asvector<float>() == std::vector<float>(3, -1.0f), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(softmax_along_an_axis_out_of_range) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::softmax(x, 5), mx::IndexError, "softmax", "axis 5", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::log_softmax(x, -3), mx::IndexError, "log_softmax", "axis -3");
  });
}

BOOST_AUTO_TEST_CASE(arange_with_step_zero) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::arange(0, 10, 0, ctx), mx::ValueError, "arange", "step must not be 0");
  });
}

BOOST_AUTO_TEST_CASE(max_of_an_empty_array) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({0}, ctx);
    NDG_CHECK_THROWS_WITH(x.max(), mx::ShapeError, "max", "zero-size reduction", operand("(0,)", "float32", ctx),
                          "no identity");
    NDG_CHECK_THROWS_WITH(x.min(), mx::ShapeError, "min", "(0,)");
    NDG_CHECK_THROWS_WITH(x.argmax(), mx::ShapeError, "argmax", "(0,)");
    NDG_CHECK_THROWS_WITH(nd::zeros({3, 0}, ctx).max(1), mx::ShapeError, "max", "(3, 0)", "along axis 1");
    // A sum of nothing is 0.
    BOOST_TEST(x.sum().asscalar<float>() == 0.0f);
  });
}

BOOST_AUTO_TEST_CASE(default_constructed_operand) {
  const nd::NDArray none;
  BOOST_TEST(none.is_none());
  NDG_CHECK_THROWS_WITH(none + nd::ones({2}), mx::ValueError, "add", "empty");
  NDG_CHECK_THROWS_WITH(nd::exp(none), mx::ValueError, "exp", "empty");
  NDG_CHECK_THROWS_WITH(none.copyto(mx::cpu()), mx::ValueError, "copyto", "empty");
  NDG_CHECK_THROWS_WITH(none.reshape({1}), mx::ValueError, "reshape");
  NDG_CHECK_THROWS_WITH(nd::concat({none}), mx::ValueError, "concat", "empty");
  NDG_CHECK_THROWS_WITH(nd::concat({nd::ones({2}), none}), mx::ValueError, "concat", "empty");
}

// ---- devices ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_missing_gpu) {
  const int missing = std::max(7, mx::num_gpus());
  const std::string name = "gpu(" + std::to_string(missing) + ")";
  if (mx::built_with_cuda()) {
    NDG_CHECK_THROWS_WITH(nd::zeros({2}, mx::gpu(missing)), mx::DeviceError, name + " requested but " + visible_gpus());
    NDG_CHECK_THROWS_WITH(nd::array({1, 2}, mx::gpu(missing)), mx::DeviceError, name, visible_gpus());
    NDG_CHECK_THROWS_WITH(nd::ones({2}).copyto(mx::gpu(missing)), mx::DeviceError, name, visible_gpus());
  } else {
    NDG_CHECK_THROWS_WITH(nd::zeros({2}, mx::gpu(missing)), mx::DeviceError, name, "no CUDA support",
                          "-Dcuda=enabled");
    NDG_CHECK_THROWS_WITH(nd::zeros({2}, mx::gpu(0)), mx::DeviceError, "gpu(0)", "no CUDA support");
    NDG_CHECK_THROWS_WITH(nd::random::uniform(0, 1, {2}, mx::gpu(0)), mx::DeviceError, "no CUDA support");
  }
}

BOOST_AUTO_TEST_CASE(cpu1_does_not_exist) {
  NDG_CHECK_THROWS_WITH(nd::zeros({2}, mx::cpu(1)), mx::DeviceError, "cpu(1) requested", "only cpu(0) exists");
  NDG_CHECK_THROWS_WITH(nd::ones({2}).copyto(mx::cpu(1)), mx::DeviceError, "cpu(1)");
}

BOOST_AUTO_TEST_CASE(out_of_gpu_memory_then_the_process_goes_on,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nd::waitall();  // earlier stream-ordered frees are done
  const std::size_t before = mx::memory_allocated(mx::gpu(0));
  // 2^40 float32 values: 4 TiB, more than any GPU has.
  NDG_CHECK_THROWS_WITH(nd::empty({std::int64_t{1} << 40}, mx::gpu(0)), mx::OutOfMemory, "gpu(0)", "out of memory",
                        "4194304 MiB", "MiB", "in use", "cached", "free");
  try {
    nd::zeros({std::int64_t{1} << 40}, mx::gpu(0));
    BOOST_ERROR("a 4 TiB allocation succeeded");
  } catch (const mx::DeviceError& e) {  // OutOfMemory is a DeviceError, and so an mx::Error
    BOOST_TEST(std::string(e.what()).find("out of memory") != std::string::npos);
  }
  BOOST_CHECK_THROW(nd::ones({std::int64_t{1} << 40}, mx::gpu(0)), mx::Error);
  // Nothing leaked, and the device still works.
  nd::waitall();
  BOOST_TEST(mx::memory_allocated(mx::gpu(0)) == before);
  const nd::NDArray x = nd::arange(0, 1000, 1, mx::gpu(0));
  BOOST_TEST((x * 2).sum().asscalar<float>() == 999000.0f);
  const nd::NDArray big = nd::ones({1 << 20}, mx::gpu(0));
  BOOST_TEST(big.sum().asscalar<float>() == static_cast<float>(1 << 20));
  BOOST_TEST(nd::dot(nd::ones({4, 8}, mx::gpu(0)), nd::ones({8, 2}, mx::gpu(0))).asvector() == std::vector<float>(8, 8),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(out_of_host_memory_then_the_process_goes_on) {
  // 2^58 float32 values: 2^60 bytes, past any address space.
  NDG_CHECK_THROWS_WITH(nd::empty({std::int64_t{1} << 58}, mx::cpu()), mx::OutOfMemory, "cpu(0)", "out of host memory",
                        "MiB");
  BOOST_TEST(nd::arange(0, 10, 1, mx::cpu()).sum().asscalar<float>() == 45.0f);
}

// ---- the hierarchy and the operands after a failure --------------------------------------------

BOOST_AUTO_TEST_CASE(every_error_is_an_mx_error) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({2, 3}, ctx);
    const auto message_of = [](auto&& statement) -> std::string {
      try {
        statement();
      } catch (const mx::Error& e) {
        return e.what();
      }
      return "";
    };
    BOOST_TEST(message_of([&] { (void)(x + nd::ones({4}, ctx)); }).find("(2, 3)") != std::string::npos);  // ShapeError
    BOOST_TEST(message_of([&] { (void)x.sum(4); }).find("axis 4") != std::string::npos);                      // IndexError
    BOOST_TEST(message_of([&] { (void)nd::exp(x.astype(mx::DType::int64)); }).find("int64") != std::string::npos);
    BOOST_TEST(message_of([&] { (void)nd::concat({}); }).find("concat") != std::string::npos);               // ValueError
    BOOST_TEST(message_of([&] { (void)nd::zeros({1}, mx::cpu(3)); }).find("cpu(3)") != std::string::npos);   // DeviceError
    BOOST_TEST(message_of([&] { (void)x[9]; }).find("index 9") != std::string::npos);
    // And std::runtime_error, for callers that catch that.
    BOOST_CHECK_THROW(x.reshape({5}), std::runtime_error);
    BOOST_CHECK_THROW(x.transpose({2, 0}), mx::Error);
  });
}

BOOST_AUTO_TEST_CASE(context_mismatch_is_an_mx_error, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  try {
    (void)(nd::ones({2}, mx::cpu()) + nd::ones({2}, mx::gpu(0)));
    BOOST_ERROR("no exception");
  } catch (const mx::Error& e) {
    BOOST_TEST(std::string(e.what()).find("as_in_context") != std::string::npos);
    BOOST_TEST(dynamic_cast<const mx::ContextMismatch*>(&e) != nullptr);
  }
}

BOOST_AUTO_TEST_CASE(failed_ops_leave_their_operands_unchanged) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    const std::vector<float> original{1, 2, 3, 4, 5, 6};
    nd::NDArray bad_shape = nd::ones({2, 3, 2}, ctx);
    nd::NDArray bad_dtype = nd::ones({2, 3}, ctx, mx::DType::float64);
    BOOST_CHECK_THROW(a += bad_shape, mx::ShapeError);
    BOOST_CHECK_THROW(a -= nd::ones({4}, ctx), mx::ShapeError);
    BOOST_CHECK_THROW(a *= bad_dtype, mx::DTypeError);
    BOOST_CHECK_THROW(a.copyto(bad_shape), mx::ShapeError);
    BOOST_CHECK_THROW(a.reshape({4}), mx::ShapeError);
    BOOST_CHECK_THROW(nd::concat({a, bad_shape}), mx::ShapeError);
    BOOST_CHECK_THROW(nd::dot(a, a), mx::ShapeError);
    BOOST_TEST(a.asvector() == original, tt::per_element());
    BOOST_TEST(a.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(bad_shape.asvector() == std::vector<float>(12, 1), tt::per_element());
    BOOST_TEST(bad_dtype.asvector<double>() == std::vector<double>(6, 1), tt::per_element());
    // And the arrays still work afterwards.
    a += 1;
    BOOST_TEST(a.sum().asscalar<float>() == 27.0f);
  });
}

BOOST_AUTO_TEST_SUITE_END()
