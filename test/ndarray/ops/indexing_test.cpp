// The indexing family (as mx.nd's): take in its three modes, Embedding, where, clip and the
// sequence ops, with their gradients, against hand-computed values for every index dtype on every
// context; large random cases against a float64 loop; the errors they throw.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

// (3, 4) with element [r, k] = 10 r + k.
nd::NDArray tens_and_units(mx::Context ctx, DType dtype = DType::float32) {
  return nd::array({{0, 1, 2, 3}, {10, 11, 12, 13}, {20, 21, 22, 23}}, ctx, dtype);
}

// Column 0 of a 2-D result.
nd::NDArray first_column(const nd::NDArray& y) { return nd::slice_axis(y, 1, 0, 1); }

// The gradient of sum(f(x) * head) with respect to x.
template <class F>
Values gradient_of(nd::NDArray x, const nd::NDArray& head, F&& f) {
  x.attach_grad();
  {
    auto scope = ag::record();
    (f(x) * head).sum().backward();
  }
  return values(x.grad());
}

// (T=3, N=2, 2): element [t, b, c] = 100 t + 10 b + c.
nd::NDArray time_major(mx::Context ctx, DType dtype = DType::float32) {
  Values v;
  for (int t = 0; t < 3; ++t)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c) v.push_back(100 * t + 10 * b + c);
  return nd::array(v, {3, 2, 2}, ctx, dtype);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(indexing)

BOOST_AUTO_TEST_CASE(take_rows_and_columns_in_clip_and_wrap_modes_for_every_index_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType index_dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT("indices " << mx::dtype_name(index_dtype)) {
        const nd::NDArray x = tens_and_units(ctx);
        // Rows [2, 0] along axis 0: (2, 4); indices (2, 1) give (2, 1, 4).
        const nd::NDArray rows = nd::take(x, nd::array({2, 0}, ctx, index_dtype));
        BOOST_TEST(rows.shape() == (mx::Shape{2, 4}));
        BOOST_TEST(values(rows) == (Values{20, 21, 22, 23, 0, 1, 2, 3}), tt::per_element());
        BOOST_TEST(nd::take(x, nd::array({{2}, {0}}, ctx, index_dtype)).shape() == (mx::Shape{2, 1, 4}));
        // Columns (3, 1, 3) along axis 1 (and -1): (3, 3).
        const nd::NDArray cols = nd::take(x, nd::array({3, 1, 3}, ctx, index_dtype), -1);
        BOOST_TEST(cols.shape() == (mx::Shape{3, 3}));
        BOOST_TEST(values(cols) == (Values{3, 1, 3, 13, 11, 13, 23, 21, 23}), tt::per_element());
      }
    }
    // Out of range: [-1, 5, 7] clips to [0, 2, 2] and wraps to [2, 2, 1]; 1.7 truncates to 1.
    const nd::NDArray far = nd::array({-1, 5, 7, 1.7}, ctx);
    BOOST_TEST(values(first_column(nd::take(tens_and_units(ctx), far))) == (Values{0, 20, 20, 10}),
               tt::per_element());
    BOOST_TEST(values(first_column(nd::take(tens_and_units(ctx), far, 0, "wrap"))) == (Values{20, 20, 10, 10}),
               tt::per_element());
    // MXNet's documentation: take([4, 5, 6], [[0, 1], [1, 2]]) = [[4, 5], [5, 6]], in a's dtype.
    const nd::NDArray doc = nd::take(nd::array({4, 5, 6}, ctx, DType::int32), nd::array({{0, 1}, {1, 2}}, ctx));
    BOOST_TEST(doc.dtype() == DType::int32);
    BOOST_TEST(values(doc) == (Values{4, 5, 5, 6}), tt::per_element());
  });
}

// Note [take's raise mode on a GPU]: cpu(0) checks, a GPU clips.
BOOST_AUTO_TEST_CASE(take_raise_checks_the_indices_on_the_cpu_and_clips_on_a_gpu) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = tens_and_units(ctx);
    BOOST_TEST(values(first_column(nd::take(x, nd::array({1, 2}, ctx), 0, "raise"))) == (Values{10, 20}),
               tt::per_element());
    const nd::NDArray bad = nd::array({1, 3}, ctx, DType::int64);
    if (ctx == mx::cpu()) {
      NDG_CHECK_THROWS_WITH(nd::take(x, bad, 0, "raise"), mx::IndexError, "take", "index 3", "[0, 2]", "(3, 4)",
                            "raise");
      NDG_CHECK_THROWS_WITH(nd::take(x, nd::array({-1}, ctx), 1, "raise"), mx::IndexError, "take", "index -1", "[0, 3]");
    } else {
      BOOST_TEST(values(first_column(nd::take(x, bad, 0, "raise"))) == (Values{10, 20}), tt::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE(take_gradient_sums_into_the_taken_positions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        // Rows [2, 0, 2, 9 (clipped to 2)] of (3, 2): row 2 gets three head rows.
        const nd::NDArray head = nd::array({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, ctx, dtype);
        const nd::NDArray rows = nd::array({2, 0, 2, 9}, ctx, DType::int32);
        BOOST_TEST(gradient_of(nd::zeros({3, 2}, ctx, dtype), head,
                               [&](const nd::NDArray& x) { return nd::take(x, rows); }) ==
                       (Values{3, 4, 0, 0, 13, 16}),
                   tt::per_element());
        // Along axis 1 of (2, 3) with wrap: columns [-1, 1, 2] are [2, 1, 2].
        const nd::NDArray head2 = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx, dtype);
        BOOST_TEST(gradient_of(nd::zeros({2, 3}, ctx, dtype), head2,
                               [&](const nd::NDArray& x) { return nd::take(x, nd::array({-1, 1, 2}, ctx), 1, "wrap"); }) ==
                       (Values{0, 2, 4, 0, 5, 10}),
                   tt::per_element());
      }
    }
    // The indices get none.
    nd::NDArray index = nd::array({0, 1}, ctx);
    index.attach_grad();
    {
      auto scope = ag::record();
      (nd::take(tens_and_units(ctx), index) + 0.0).sum().backward();
    }
    BOOST_TEST(values(index.grad()) == (Values{0, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(embedding_clips_ids_and_sums_the_weight_gradient_per_id) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType index_dtype : {DType::float32, DType::int32, DType::int64, DType::uint8}) {
      BOOST_TEST_CONTEXT("ids " << mx::dtype_name(index_dtype)) {
        nd::NDArray weight = nd::array({{0, 1}, {10, 11}, {20, 21}}, ctx);  // (input_dim 3, output_dim 2)
        const nd::NDArray ids = nd::array({{2, 0}, {2, 7}}, ctx, index_dtype);  // 7 clips to 2
        weight.attach_grad();
        nd::NDArray y;
        {
          auto scope = ag::record();
          y = nd::Embedding(ids, weight, 3, 2);
          (y * nd::array(Values{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, ctx, DType::float32)).sum().backward();
        }
        BOOST_TEST(y.shape() == (mx::Shape{2, 2, 2}));
        BOOST_TEST(values(y) == (Values{20, 21, 0, 1, 20, 21, 20, 21}), tt::per_element());
        // Row 2 collects head rows 0, 2 and 3; row 1 none.
        BOOST_TEST(values(weight.grad()) == (Values{3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8}), tt::per_element());
      }
    }
  });
}

// 1000 gradients of 0.1 for one id: summed in float32, rounded to the weight's dtype once.
BOOST_AUTO_TEST_CASE(embedding_gradient_of_16_bit_weights_accumulates_in_float32) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kHalfDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        nd::NDArray weight = nd::zeros({3, 2}, ctx, dtype);
        weight.attach_grad();
        const nd::NDArray head = nd::full({1000, 2}, 0.1, ctx, dtype);
        {
          auto scope = ag::record();
          (nd::Embedding(nd::zeros({1000}, ctx), weight, 3, 2) * head).sum().backward();
        }
        const double tenth = values(nd::full({1}, 0.1, mx::cpu(), dtype))[0];
        const double want = values(nd::full({1}, static_cast<double>(static_cast<float>(1000 * tenth)), mx::cpu(), dtype))[0];
        BOOST_TEST(values(weight.grad()) == (Values{want, want, 0, 0, 0, 0}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(take_and_embedding_of_many_repeated_ids_match_a_float64_loop) {
  // 5000 ids in [0, 40) over a (40, 33) weight: every row is hit many times.
  const std::int64_t vocab = 40, width = 33, n = 5000;
  Values ids;
  const Values noise = ndg_test::uniform_values(static_cast<std::size_t>(n), 7);
  for (double u : noise) ids.push_back(std::floor((u + 1) / 2 * vocab));
  const Values w = ndg_test::uniform_values(static_cast<std::size_t>(vocab * width), 8);
  const Values head = ndg_test::uniform_values(static_cast<std::size_t>(n * width), 9);
  Values want_out, want_grad(static_cast<std::size_t>(vocab * width), 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    const auto row = static_cast<std::int64_t>(ids[static_cast<std::size_t>(j)]);
    for (std::int64_t c = 0; c < width; ++c) {
      want_out.push_back(w[static_cast<std::size_t>(row * width + c)]);
      want_grad[static_cast<std::size_t>(row * width + c)] += head[static_cast<std::size_t>(j * width + c)];
    }
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray weight = nd::array(w, {vocab, width}, ctx);
    weight.attach_grad();
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = nd::Embedding(nd::array(ids, {n}, ctx, DType::int32), weight, vocab, width);
      (y * nd::array(head, {n, width}, ctx)).sum().backward();
    }
    ndg_test::check_close(y, want_out, 0, 0);
    ndg_test::check_close(weight.grad(), want_grad, 1e-5, 1e-5);
    ndg_test::check_close(nd::take(weight, nd::array(ids, {n}, ctx)), want_out, 0, 0);
  });
}

BOOST_AUTO_TEST_CASE(take_and_embedding_errors_name_the_op_and_the_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({3, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::take(x, nd::zeros({2}, ctx), 2), mx::IndexError, "take", "axis 2", "(3, 4)");
    NDG_CHECK_THROWS_WITH(nd::take(x, nd::zeros({2}, ctx), 0, "nearest"), mx::ValueError, "take", "\"nearest\"", "raise");
    NDG_CHECK_THROWS_WITH(nd::take(nd::zeros({0, 2}, ctx), nd::zeros({1}, ctx)), mx::IndexError, "take", "(0, 2)");
    NDG_CHECK_THROWS_WITH(nd::Embedding(nd::zeros({2}, ctx), x, 4, 3), mx::ShapeError, "Embedding", "(3, 4)",
                          "input_dim=4", "(4, 3)");
    NDG_CHECK_THROWS_WITH(nd::Embedding(nd::zeros({2}, ctx), x, 0, 4), mx::ValueError, "Embedding", "input_dim");
  });
}

BOOST_AUTO_TEST_CASE(where_selects_elements_or_rows_and_splits_the_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType condition_dtype : {DType::float32, DType::int32, DType::uint8, DType::float16}) {
      BOOST_TEST_CONTEXT("condition " << mx::dtype_name(condition_dtype)) {
        const nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx), y = nd::array({{5, 6}, {7, 8}}, ctx);
        // As MXNet's documentation: cond [[0, 1], [2, 0]] gives [[5, 2], [3, 8]]; cond [1, 0] rows.
        const nd::NDArray cond = nd::array({{0, 1}, {2, 0}}, ctx, condition_dtype);
        BOOST_TEST(values(nd::where(cond, x, y)) == (Values{5, 2, 3, 8}), tt::per_element());
        const nd::NDArray rows = nd::array({1, 0}, ctx, condition_dtype);
        BOOST_TEST(values(nd::where(rows, x, y)) == (Values{1, 2, 7, 8}), tt::per_element());
        // x gets the head where the condition holds, y elsewhere.
        nd::NDArray xv = x.copy(), yv = y.copy(), cv = cond.astype(DType::float32);
        for (nd::NDArray* v : {&xv, &yv, &cv}) v->attach_grad();
        {
          auto scope = ag::record();
          (nd::where(cv, xv, yv) * nd::array({{1, 2}, {3, 4}}, ctx)).sum().backward();
        }
        BOOST_TEST(values(xv.grad()) == (Values{0, 2, 3, 0}), tt::per_element());
        BOOST_TEST(values(yv.grad()) == (Values{1, 0, 0, 4}), tt::per_element());
        BOOST_TEST(values(cv.grad()) == (Values{0, 0, 0, 0}), tt::per_element());
      }
    }
    NDG_CHECK_THROWS_WITH(nd::where(nd::zeros({3}, ctx), nd::zeros({2, 2}, ctx), nd::zeros({2, 2}, ctx)),
                          mx::ShapeError, "where", "condition (3,)", "(2, 2)");
    NDG_CHECK_THROWS_WITH(nd::where(nd::zeros({2, 2}, ctx), nd::zeros({2, 2}, ctx), nd::zeros({2, 3}, ctx)),
                          mx::ShapeError, "where", "(2, 2)", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::where(nd::zeros({2}, ctx), nd::zeros({2}, ctx), nd::zeros({2}, ctx, DType::float64)),
                          mx::DTypeError, "where");
  });
}

BOOST_AUTO_TEST_CASE(clip_limits_values_and_passes_the_gradient_inside_the_bounds) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        const nd::NDArray x = nd::array({-3, -1, 0, 2, 5}, ctx, dtype);
        const nd::NDArray y = nd::clip(x, -1, 2);
        BOOST_TEST(y.dtype() == dtype);
        BOOST_TEST(values(y) == (Values{-1, -1, 0, 2, 2}), tt::per_element());
      }
    }
    // a_min > a_max: above a_max is checked first, as MXNet's.
    BOOST_TEST(values(nd::clip(nd::array({0, 5, 10}, ctx), 6, 4)) == (Values{6, 4, 4}), tt::per_element());
    // NaN passes through.
    BOOST_TEST(std::isnan(values(nd::clip(nd::array({std::nan("")}, ctx), 0, 1))[0]));
    // The gradient passes where a_min <= x <= a_max (the bounds included), as MXNet's clip_grad.
    BOOST_TEST(gradient_of(nd::array({-3, -1, 0, 2, 5}, ctx), nd::array({1, 2, 3, 4, 5}, ctx),
                           [](const nd::NDArray& v) { return nd::clip(v, -1, 2); }) == (Values{0, 2, 3, 4, 0}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sequence_mask_along_time_first_and_batch_first_data) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType length_dtype : {DType::float32, DType::int32, DType::int64, DType::float64}) {
      BOOST_TEST_CONTEXT("lengths " << mx::dtype_name(length_dtype)) {
        const nd::NDArray x = time_major(ctx);
        const nd::NDArray lengths = nd::array({1, 2.9}, ctx, length_dtype == DType::float32 ? DType::float32 : DType::float64)
                                        .astype(length_dtype);  // 2.9 truncates to 2
        // Sequence 0 keeps step 0, sequence 1 steps 0 and 1.
        BOOST_TEST(values(nd::SequenceMask(x, lengths, true, -1)) ==
                       (Values{0, 1, 10, 11, -1, -1, 110, 111, -1, -1, -1, -1}),
                   tt::per_element());
        // Batch first: (N=2, T=3, 2) = the transpose; the same masked elements.
        const nd::NDArray batch_first = nd::swapaxes(x, 0, 1).copy();
        BOOST_TEST(values(nd::SequenceMask(batch_first, lengths, true, -1, 1)) ==
                       (Values{0, 1, -1, -1, -1, -1, 10, 11, 110, 111, -1, -1}),
                   tt::per_element());
      }
    }
    // Without lengths, nothing is masked; lengths past T keep everything, below 0 mask everything.
    BOOST_TEST(values(nd::SequenceMask(time_major(ctx))) == values(time_major(ctx)), tt::per_element());
    BOOST_TEST(values(nd::SequenceMask(time_major(ctx), nd::array({5, -2}, ctx), true)) ==
                   (Values{0, 1, 0, 0, 100, 101, 0, 0, 200, 201, 0, 0}),
               tt::per_element());
    // The gradient is the head masked with 0; the lengths get none.
    BOOST_TEST(gradient_of(nd::zeros({3, 2, 2}, ctx), nd::ones({3, 2, 2}, ctx),
                           [&](const nd::NDArray& v) { return nd::SequenceMask(v, nd::array({1, 2}, ctx), true, 7); }) ==
                   (Values{1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sequence_last_takes_each_sequence_last_step) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = time_major(ctx);
    // Lengths [3, 1]: steps 2 and 0. Without lengths: step 2 for both; length 0 reads step 0.
    const nd::NDArray last = nd::SequenceLast(x, nd::array({3, 1}, ctx, DType::int32), true);
    BOOST_TEST(last.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(last) == (Values{200, 201, 10, 11}), tt::per_element());
    BOOST_TEST(values(nd::SequenceLast(x)) == (Values{200, 201, 210, 211}), tt::per_element());
    BOOST_TEST(values(nd::SequenceLast(x, nd::array({0, 9}, ctx), true)) == (Values{0, 1, 210, 211}), tt::per_element());
    // Batch first.
    const nd::NDArray batch_first = nd::swapaxes(x, 0, 1).copy();
    BOOST_TEST(values(nd::SequenceLast(batch_first, nd::array({3, 1}, ctx), true, 1)) == (Values{200, 201, 10, 11}),
               tt::per_element());
    // The gradient lands on the last steps only.
    BOOST_TEST(gradient_of(nd::zeros({3, 2, 2}, ctx), nd::array({{1, 2}, {3, 4}}, ctx),
                           [&](const nd::NDArray& v) { return nd::SequenceLast(v, nd::array({3, 1}, ctx), true); }) ==
                   (Values{0, 0, 3, 4, 0, 0, 0, 0, 1, 2, 0, 0}),
               tt::per_element());
    BOOST_TEST(gradient_of(nd::zeros({2, 3, 2}, ctx), nd::array({{1, 2}, {3, 4}}, ctx),
                           [&](const nd::NDArray& v) { return nd::SequenceLast(v, nd::array({2, 3}, ctx), true, 1); }) ==
                   (Values{0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sequence_reverse_reverses_the_first_length_steps) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = time_major(ctx);
    // Lengths [2, 3]: sequence 0 swaps steps 0 and 1 and keeps step 2; sequence 1 reverses all.
    BOOST_TEST(values(nd::SequenceReverse(x, nd::array({2, 3}, ctx), true)) ==
                   (Values{100, 101, 210, 211, 0, 1, 110, 111, 200, 201, 10, 11}),
               tt::per_element());
    BOOST_TEST(values(nd::SequenceReverse(x)) == (Values{200, 201, 210, 211, 100, 101, 110, 111, 0, 1, 10, 11}),
               tt::per_element());
    // The gradient is the head reversed the same way.
    Values head;
    for (int i = 0; i < 12; ++i) head.push_back(i + 1);
    BOOST_TEST(gradient_of(nd::zeros({3, 2, 2}, ctx), nd::array(head, {3, 2, 2}, ctx, DType::float32),
                           [&](const nd::NDArray& v) { return nd::SequenceReverse(v, nd::array({2, 3}, ctx), true); }) ==
                   (Values{5, 6, 11, 12, 1, 2, 7, 8, 9, 10, 3, 4}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sequence_errors_name_the_op_and_the_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({3, 2, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::SequenceMask(x, nd::zeros({3}, ctx), true), mx::ShapeError, "SequenceMask", "(3,)", "(2,)");
    NDG_CHECK_THROWS_WITH(nd::SequenceMask(x, {}, true), mx::ValueError, "SequenceMask", "use_sequence_length");
    NDG_CHECK_THROWS_WITH(nd::SequenceLast(x, nd::zeros({2}, ctx)), mx::ValueError, "SequenceLast",
                          "use_sequence_length is False");
    NDG_CHECK_THROWS_WITH(nd::SequenceLast(x, {}, false, 2), mx::ValueError, "SequenceLast", "axis");
    NDG_CHECK_THROWS_WITH(nd::SequenceReverse(x, {}, false, 1), mx::ValueError, "SequenceReverse", "axis 0");
    NDG_CHECK_THROWS_WITH(nd::SequenceMask(nd::zeros({3}, ctx)), mx::ShapeError, "SequenceMask", "(3,)");
  });
}

BOOST_AUTO_TEST_CASE(operands_on_different_contexts, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  NDG_CHECK_THROWS_WITH(nd::take(nd::zeros({2, 3}, mx::gpu(0)), nd::zeros({2}, mx::cpu())), mx::ContextMismatch,
                        "take", "gpu(0)", "cpu(0)");
  NDG_CHECK_THROWS_WITH(nd::SequenceMask(nd::zeros({2, 3}, mx::gpu(0)), nd::zeros({3}, mx::cpu()), true),
                        mx::ContextMismatch, "SequenceMask", "gpu(0)", "cpu(0)");
}

BOOST_AUTO_TEST_SUITE_END()
