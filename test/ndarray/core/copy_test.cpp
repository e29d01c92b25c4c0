#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

namespace {

// 0, 1, ..., n-1 as floats (exact in float32 below 2^24).
std::vector<float> iota_floats(std::int64_t n, float start = 0) {
  std::vector<float> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), start);
  return values;
}

// Runs body(src, dst) for every ordered pair of contexts: cpu->cpu, cpu->gpu, gpu->cpu, gpu->gpu.
template <class Body>
void for_each_context_pair(Body&& body) {
  for (mx::Context src : ndg_test::all_contexts()) {
    for (mx::Context dst : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("from " << src.str() << " to " << dst.str()) { body(src, dst); }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(copy)

BOOST_AUTO_TEST_CASE(a_copied_handle_shares_storage) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({1, 2, 3}, ctx);
    nd::NDArray b = a;  // Python's b = a
    BOOST_TEST(b.is(a));
    BOOST_TEST(a.is(b));
    BOOST_TEST((b.context() == ctx));
    b += 10;
    BOOST_TEST(a.asvector() == (std::vector<float>{11, 12, 13}), tt::per_element());
    a.fill(-1);
    BOOST_TEST(b.asvector() == (std::vector<float>{-1, -1, -1}), tt::per_element());
    nd::NDArray c;
    c = a;  // assignment shares too
    BOOST_TEST(c.is(a));
    c *= 2;
    BOOST_TEST(a.asvector() == (std::vector<float>{-2, -2, -2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copy_is_deep) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    nd::NDArray c = a.copy();
    BOOST_TEST(!c.is(a));
    BOOST_TEST((c.context() == ctx));
    BOOST_TEST(c.shape() == a.shape());
    BOOST_TEST((c.dtype() == a.dtype()));
    BOOST_TEST(c.asvector() == (std::vector<float>{1, 2, 3, 4, 5, 6}), tt::per_element());
    c += 100;
    c.wait_to_read();
    BOOST_TEST(a.asvector() == (std::vector<float>{1, 2, 3, 4, 5, 6}), tt::per_element());
    a.fill(0);
    BOOST_TEST(c.asvector() == (std::vector<float>{101, 102, 103, 104, 105, 106}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_the_same_context_still_allocates) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({7, 8, 9, 10}, ctx);
    nd::NDArray b = a.copyto(ctx);
    BOOST_TEST(!b.is(a));
    BOOST_TEST(b.data() != a.data());
    BOOST_TEST((b.context() == ctx));
    BOOST_TEST(b.asvector() == (std::vector<float>{7, 8, 9, 10}), tt::per_element());
    b.fill(1);
    BOOST_TEST(a.asvector() == (std::vector<float>{7, 8, 9, 10}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_a_context_is_deep_on_every_pair) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::array(iota_floats(12, 1), {3, 4}, src);
    nd::NDArray y = x.copyto(dst);
    BOOST_TEST(!y.is(x));
    BOOST_TEST((y.context() == dst));
    BOOST_TEST((x.context() == src));
    BOOST_TEST(y.shape() == x.shape());
    BOOST_TEST(y.asvector() == iota_floats(12, 1), tt::per_element());
    // Writing to the copy leaves the source alone, and the other way round.
    y.fill(-3);
    BOOST_TEST(x.asvector() == iota_floats(12, 1), tt::per_element());
    x += 1;
    BOOST_TEST(y.asvector() == std::vector<float>(12, -3), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_an_array_writes_into_it_on_every_pair) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::array({{1.5, -2}, {3, 4.25}}, src);
    nd::NDArray target = nd::zeros({2, 2}, dst);
    const void* storage = target.data();
    nd::NDArray returned = x.copyto(target);
    BOOST_TEST(returned.is(target));
    BOOST_TEST(target.data() == storage);  // written in place
    BOOST_TEST((target.context() == dst));
    BOOST_TEST(target.asvector() == (std::vector<float>{1.5f, -2, 3, 4.25f}), tt::per_element());
    // A second copy overwrites, and an op on the destination sees the new values.
    nd::NDArray other = nd::full({2, 2}, 5, src);
    other.copyto(target);
    BOOST_TEST((target * 2).asvector() == std::vector<float>(4, 10), tt::per_element());
    BOOST_TEST(x.asvector() == (std::vector<float>{1.5f, -2, 3, 4.25f}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_itself_is_a_no_op) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2}, ctx);
    nd::NDArray returned = x.copyto(x);
    BOOST_TEST(returned.is(x));
    BOOST_TEST(x.asvector() == (std::vector<float>{1, 2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(as_in_context_returns_the_same_array_on_its_context) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::array({4, 5, 6}, src);
    nd::NDArray y = x.as_in_context(dst);
    BOOST_TEST((y.context() == dst));
    BOOST_TEST(y.asvector() == (std::vector<float>{4, 5, 6}), tt::per_element());
    if (src == dst) {
      BOOST_TEST(y.is(x));
      y += 1;  // the same array: x sees it
      BOOST_TEST(x.asvector() == (std::vector<float>{5, 6, 7}), tt::per_element());
    } else {
      BOOST_TEST(!y.is(x));
      y += 1;  // a copy: x does not
      BOOST_TEST(x.asvector() == (std::vector<float>{4, 5, 6}), tt::per_element());
      BOOST_TEST(y.asvector() == (std::vector<float>{5, 6, 7}), tt::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE(copies_keep_the_dtype_on_every_pair) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    const nd::NDArray i32 = nd::array(std::vector<std::int32_t>{-7, 0, 2147483647}, {3}, src);
    BOOST_TEST((i32.copyto(dst).dtype() == mx::DType::int32));
    BOOST_TEST(i32.copyto(dst).asvector<std::int32_t>() == (std::vector<std::int32_t>{-7, 0, 2147483647}),
               tt::per_element());
    const nd::NDArray i64 = nd::array(std::vector<std::int64_t>{-(std::int64_t{1} << 40), 3}, {2}, src);
    BOOST_TEST(i64.copyto(dst).asvector<std::int64_t>() ==
                   (std::vector<std::int64_t>{-(std::int64_t{1} << 40), 3}),
               tt::per_element());
    const nd::NDArray u8 = nd::array(std::vector<std::uint8_t>{0, 128, 255}, {3}, src);
    BOOST_TEST(u8.copyto(dst).asvector<std::uint8_t>() == (std::vector<std::uint8_t>{0, 128, 255}),
               tt::per_element());
    const nd::NDArray f64 = nd::array(std::vector<double>{0.1, 1e300, -2.5}, {3}, src);
    BOOST_TEST((f64.as_in_context(dst).dtype() == mx::DType::float64));
    BOOST_TEST(f64.as_in_context(dst).asvector<double>() == (std::vector<double>{0.1, 1e300, -2.5}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(empty_arrays_copy_on_every_pair) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::zeros({0, 3}, src);
    nd::NDArray y = x.copyto(dst);
    BOOST_TEST(y.size() == 0);
    BOOST_TEST(y.shape() == (mx::Shape{0, 3}));
    BOOST_TEST((y.context() == dst));
    BOOST_TEST(y.asvector().empty());
  });
}

BOOST_AUTO_TEST_CASE(large_round_trip_through_every_gpu_is_exact) {
  constexpr std::int64_t n = 3'000'000;
  const std::vector<float> expected = iota_floats(n, -1'000'000.5f);  // fractional values, exact
  nd::NDArray host = nd::array(expected, {n}, mx::cpu());
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray there = host.copyto(ctx);
    nd::NDArray back = there.copyto(mx::cpu());
    BOOST_TEST((back.context() == mx::cpu()));
    BOOST_TEST(back.size() == n);
    BOOST_TEST((back.asvector() == expected));  // one comparison for 3M elements
    // Random bits survive too: every float pattern, not only integers.
    mx::random::seed(3);
    nd::NDArray noise = nd::random::normal(0, 1e6, {n}, mx::cpu());
    const std::vector<float> noise_values = noise.asvector();
    BOOST_TEST((noise.as_in_context(ctx).copyto(mx::cpu()).asvector() == noise_values));
    // The host array is untouched by the round trip.
    BOOST_TEST((host.asvector() == expected));
  });
}

BOOST_AUTO_TEST_CASE(views_copy_only_their_elements) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::array(iota_floats(12), {3, 4}, src);
    nd::NDArray row = x[1];  // (4,) view at offset 4
    nd::NDArray row_copy = row.copyto(dst);
    BOOST_TEST(row_copy.shape() == (mx::Shape{4}));
    BOOST_TEST(row_copy.asvector() == (std::vector<float>{4, 5, 6, 7}), tt::per_element());

    nd::NDArray rows = x.slice(1, 3);  // (2, 4) view at offset 4
    nd::NDArray rows_copy = rows.as_in_context(dst);
    BOOST_TEST(rows_copy.shape() == (mx::Shape{2, 4}));
    BOOST_TEST(rows_copy.asvector() == iota_floats(8, 4), tt::per_element());

    nd::NDArray last = x[-1][2];  // (1,) view of element 10
    BOOST_TEST(last.copyto(dst).asvector() == (std::vector<float>{10}), tt::per_element());

    nd::NDArray flat = x.reshape({12}).slice(5, 7);
    BOOST_TEST(flat.copyto(dst).asvector() == (std::vector<float>{5, 6}), tt::per_element());

    // Copying the view leaves the rest of its storage alone, and the copy is its own storage.
    row_copy.fill(-1);
    BOOST_TEST(x.asvector() == iota_floats(12), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_a_view_writes_only_the_view) {
  for_each_context_pair([](mx::Context src, mx::Context dst) {
    nd::NDArray x = nd::zeros({3, 2}, dst);
    nd::NDArray middle = x[1];  // (2,) view of x's storage
    nd::NDArray values = nd::array({8, 9}, src);
    values.copyto(middle);
    BOOST_TEST(x.asvector() == (std::vector<float>{0, 0, 8, 9, 0, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copyto_an_overlapping_view_copies_as_if_through_a_temporary) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray v = nd::array({1, 2, 3, 4}, ctx);
    nd::NDArray tail = v.slice(1, 4);
    v.slice(0, 3).copyto(tail);  // numpy: v[1:] = v[:3]
    BOOST_TEST(v.asvector() == (std::vector<float>{1, 1, 2, 3}), tt::per_element());
    nd::NDArray head = v.slice(0, 3);
    v.slice(1, 4).copyto(head);  // v[:3] = v[1:]
    BOOST_TEST(v.asvector() == (std::vector<float>{1, 2, 3, 3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(copies_between_two_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  const std::vector<float> values = iota_floats(1000, -500);
  nd::NDArray on0 = nd::array(values, {10, 100}, mx::gpu(0));
  nd::NDArray on1 = on0.copyto(mx::gpu(1));
  BOOST_TEST((on1.context() == mx::gpu(1)));
  BOOST_TEST(!on1.is(on0));
  BOOST_TEST(on1.asvector() == values, tt::per_element());

  nd::NDArray back = on1.copyto(mx::gpu(0));
  BOOST_TEST((back.context() == mx::gpu(0)));
  BOOST_TEST(back.asvector() == values, tt::per_element());

  nd::NDArray from1 = nd::array({{1, 2}, {3, 4}}, mx::gpu(1));
  nd::NDArray into0 = nd::zeros({2, 2}, mx::gpu(0));
  BOOST_TEST(from1.copyto(into0).is(into0));
  BOOST_TEST(into0.asvector() == (std::vector<float>{1, 2, 3, 4}), tt::per_element());
  nd::NDArray into1 = nd::zeros({2, 2}, mx::gpu(1));
  into0.copyto(into1);
  BOOST_TEST(into1.asvector() == (std::vector<float>{1, 2, 3, 4}), tt::per_element());

  BOOST_TEST(on0.as_in_context(mx::gpu(0)).is(on0));
  BOOST_TEST(!on0.as_in_context(mx::gpu(1)).is(on0));
}

BOOST_AUTO_TEST_CASE(gpu_chain_keeps_values_and_order, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  // Large enough that the queued work takes a while: each step must wait for the one before.
  // (Every value below stays under 2^24, so float32 holds it exactly.)
  constexpr std::int64_t n = 1 << 21;
  nd::NDArray x = nd::arange(0, static_cast<double>(n), 1, mx::gpu(0));
  x *= 2;  // queued on gpu(0)'s stream
  x += 1;
  nd::NDArray y = x.copyto(mx::gpu(1));  // after the ops on gpu(0)
  nd::NDArray z = y * 3 - 1;             // on gpu(1), right after the copy
  nd::NDArray w = z.copyto(mx::gpu(0));  // gpu0 -> gpu1 -> gpu0
  w -= 2;
  x.fill(-1);  // queued after the copy that read x: y keeps the old values
  const std::vector<float> ys = y.asvector();
  const std::vector<float> ws = w.asvector();
  bool ys_ok = true, ws_ok = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const float expected_y = static_cast<float>(2 * i + 1);
    ys_ok = ys_ok && ys[static_cast<std::size_t>(i)] == expected_y;
    ws_ok = ws_ok && ws[static_cast<std::size_t>(i)] == static_cast<float>(3 * (2 * i + 1) - 1 - 2);
  }
  BOOST_TEST(ys_ok);
  BOOST_TEST(ws_ok);
  BOOST_TEST(x.asvector() == std::vector<float>(static_cast<std::size_t>(n), -1), tt::per_element());
  BOOST_TEST((w.context() == mx::gpu(0)));
  BOOST_TEST((z.context() == mx::gpu(1)));
  // An op on gpu(1) right after a copy from gpu(0), reduced and read back.
  nd::NDArray ones0 = nd::ones({n}, mx::gpu(0));
  BOOST_TEST(ones0.copyto(mx::gpu(1)).sum().asscalar<float>() == static_cast<float>(n));
}

BOOST_AUTO_TEST_CASE(peer_copy_into_an_array_waits_for_its_readers,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  constexpr std::int64_t n = 1 << 22;
  nd::NDArray target = nd::full({n}, 5, mx::gpu(1));
  nd::NDArray doubled = target * 2;  // queued on gpu(1): reads the old values
  nd::NDArray source = nd::full({n}, 7, mx::gpu(0));
  source.copyto(target);  // must not overtake the read above
  nd::NDArray tripled = target * 3;  // must see the new values
  BOOST_TEST(doubled.asvector() == std::vector<float>(static_cast<std::size_t>(n), 10), tt::per_element());
  BOOST_TEST(tripled.asvector() == std::vector<float>(static_cast<std::size_t>(n), 21), tt::per_element());
}

BOOST_AUTO_TEST_CASE(views_copy_between_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  nd::NDArray x = nd::array(iota_floats(12), {3, 4}, mx::gpu(0));
  BOOST_TEST(x[2].copyto(mx::gpu(1)).asvector() == (std::vector<float>{8, 9, 10, 11}), tt::per_element());
  BOOST_TEST(x.slice(0, 2).copyto(mx::gpu(1)).asvector() == iota_floats(8), tt::per_element());
  nd::NDArray y = nd::zeros({2, 4}, mx::gpu(1));
  nd::NDArray second_row = y[1];
  x[0].copyto(second_row);
  BOOST_TEST(y.asvector() == (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(adding_arrays_of_two_gpus_throws, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  nd::NDArray a = nd::ones({2, 3}, mx::gpu(0));
  nd::NDArray b = nd::ones({2, 3}, mx::gpu(1));
  NDG_CHECK_THROWS_WITH(a + b, mx::ContextMismatch, "add", "(2, 3) float32 @gpu(0)",
                        "(2, 3) float32 @gpu(1)", "copyto(gpu(0))", "as_in_context(gpu(0))");
  // The fix the message suggests works.
  BOOST_TEST((a + b.copyto(mx::gpu(0))).asvector() == std::vector<float>(6, 2), tt::per_element());
  BOOST_TEST((a.as_in_context(mx::gpu(1)) + b).asvector() == std::vector<float>(6, 2), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
