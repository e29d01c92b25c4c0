#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <optional>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;

namespace {

constexpr std::int64_t kElements = std::int64_t{1} << 24;  // float32: 64 MiB
constexpr std::size_t kBytes = static_cast<std::size_t>(kElements) * 4;

// Settles queued work and stream-ordered frees (GPU memory is returned to the pool in stream order).
void settle() { nd::waitall(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(memory)

BOOST_AUTO_TEST_CASE(allocated_grows_while_an_array_lives_and_returns_when_freed) {
  ndg_test::for_each_context([](mx::Context ctx) {
    settle();
    const std::size_t before = mx::memory_allocated(ctx);
    {
      const nd::NDArray x = nd::zeros({kElements}, ctx);
      settle();
      const std::size_t during = mx::memory_allocated(ctx);
      BOOST_TEST(during >= before + kBytes);
      BOOST_TEST(mx::memory_reserved(ctx) >= during);
      {
        const nd::NDArray y = nd::ones({kElements / 2}, ctx, mx::DType::float64);  // also 64 MiB
        settle();
        BOOST_TEST(mx::memory_allocated(ctx) >= during + kBytes);
        BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
      }
      settle();
      BOOST_TEST(mx::memory_allocated(ctx) == during);
      BOOST_TEST(x.size() == kElements);
    }
    settle();
    BOOST_TEST(mx::memory_allocated(ctx) == before);
    BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
  });
}

BOOST_AUTO_TEST_CASE(storage_lives_while_any_handle_or_view_does) {
  ndg_test::for_each_context([](mx::Context ctx) {
    settle();
    const std::size_t before = mx::memory_allocated(ctx);
    std::optional<nd::NDArray> x = nd::zeros({kElements / 4, 4}, ctx);
    settle();
    const std::size_t with_x = mx::memory_allocated(ctx);
    BOOST_TEST(with_x >= before + kBytes);
    // Handles and views share the storage: no new bytes.
    nd::NDArray handle = *x;
    nd::NDArray row = (*x)[3];
    nd::NDArray reshaped = x->reshape({kElements});
    nd::NDArray rows = x->slice(0, 10);
    settle();
    BOOST_TEST(mx::memory_allocated(ctx) == with_x);
    // Dropping the first handle frees nothing while the others hold the storage.
    x.reset();
    handle = nd::NDArray();
    reshaped = nd::NDArray();
    rows = nd::NDArray();
    settle();
    BOOST_TEST(mx::memory_allocated(ctx) == with_x);
    row.fill(2);
    BOOST_TEST(row.asvector() == std::vector<float>(4, 2), boost::test_tools::per_element());
    row = nd::NDArray();  // the last one
    settle();
    BOOST_TEST(mx::memory_allocated(ctx) == before);
  });
}

BOOST_AUTO_TEST_CASE(deep_copies_allocate) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::ones({kElements}, ctx);
    settle();
    const std::size_t with_x = mx::memory_allocated(ctx);
    {
      const nd::NDArray c = x.copy();
      settle();
      BOOST_TEST(mx::memory_allocated(ctx) >= with_x + kBytes);
    }
    {
      const nd::NDArray same = x.as_in_context(ctx);  // the same array
      settle();
      BOOST_TEST(mx::memory_allocated(ctx) == with_x);
    }
    settle();
    BOOST_TEST(mx::memory_allocated(ctx) == with_x);
  });
}

BOOST_AUTO_TEST_CASE(reserved_is_at_least_allocated) {
  ndg_test::for_each_context([](mx::Context ctx) {
    settle();
    BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
    std::vector<nd::NDArray> arrays;
    for (std::int64_t n : {1, 1000, 1 << 20, 3 << 20}) {
      arrays.push_back(nd::zeros({n}, ctx));
      settle();
      BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
    }
    arrays.erase(arrays.begin() + 1);
    settle();
    BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
    arrays.clear();
    settle();
    BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
  });
}

// On cpu(0) reserved is always what is allocated: the reuse to check is the GPU pool's.
BOOST_AUTO_TEST_CASE(freed_memory_is_reused, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (mx::Context ctx : mx::try_all_gpus()) {
    settle();
    { const nd::NDArray x = nd::zeros({kElements}, ctx); }
    settle();
    const std::size_t reserved = mx::memory_reserved(ctx);
    { const nd::NDArray y = nd::zeros({kElements}, ctx); }
    settle();
    // The second array of the same size came from what the first one left cached.
    BOOST_TEST(mx::memory_reserved(ctx) <= reserved, "on " << ctx.str());
  }
}

BOOST_AUTO_TEST_CASE(gpu_pool_keeps_freed_blocks_cached, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (int i = 0; i < mx::num_gpus(); ++i) {
    BOOST_TEST_CONTEXT("gpu(" << i << ")") {
      const mx::Context ctx = mx::gpu(i);
      { const nd::NDArray x = nd::zeros({kElements}, ctx); }
      settle();
      // The pool keeps the block for the next allocation instead of returning it to the driver.
      BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx) + kBytes);
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_cache_returns_cached_memory) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray kept = nd::ones({1000}, ctx);
    { const nd::NDArray x = nd::zeros({kElements}, ctx); }
    settle();
    const std::size_t reserved_before = mx::memory_reserved(ctx);
    const std::size_t allocated_before = mx::memory_allocated(ctx);
    mx::empty_cache(ctx);
    const std::size_t reserved_after = mx::memory_reserved(ctx);
    BOOST_TEST(reserved_after <= reserved_before);
    BOOST_TEST(reserved_after >= mx::memory_allocated(ctx));
    BOOST_TEST(mx::memory_allocated(ctx) == allocated_before);  // live arrays are untouched
    // What stays reserved is what live arrays need, not the 64 MiB block freed above.
    BOOST_TEST(reserved_after - mx::memory_allocated(ctx) < kBytes);
    if (ctx.is_cpu()) BOOST_TEST(reserved_after == mx::memory_allocated(ctx));  // nothing cached on cpu(0)
    // The live array still holds its values, and allocation works after the cache is gone.
    BOOST_TEST(kept.sum().asscalar<float>() == 1000.0f);
    const nd::NDArray again = nd::full({kElements}, 3, ctx);
    BOOST_TEST(again.max().asscalar<float>() == 3.0f);
    BOOST_TEST(mx::memory_reserved(ctx) >= mx::memory_allocated(ctx));
    // Twice in a row is fine.
    mx::empty_cache(ctx);
    mx::empty_cache(ctx);
    BOOST_TEST(again.min().asscalar<float>() == 3.0f);
  });
}

BOOST_AUTO_TEST_CASE(each_gpu_counts_its_own_memory, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  settle();
  const std::size_t cpu_before = mx::memory_allocated(mx::cpu());
  const std::size_t gpu0_before = mx::memory_allocated(mx::gpu(0));
  const std::size_t gpu1_before = mx::memory_allocated(mx::gpu(1));
  {
    const nd::NDArray x = nd::zeros({kElements}, mx::gpu(1));
    settle();
    BOOST_TEST(mx::memory_allocated(mx::gpu(1)) >= gpu1_before + kBytes);
    BOOST_TEST(mx::memory_allocated(mx::gpu(0)) == gpu0_before);
    BOOST_TEST(mx::memory_allocated(mx::cpu()) == cpu_before);
    const nd::NDArray y = x.copyto(mx::gpu(0));
    settle();
    BOOST_TEST(mx::memory_allocated(mx::gpu(0)) >= gpu0_before + kBytes);
  }
  settle();
  BOOST_TEST(mx::memory_allocated(mx::gpu(0)) == gpu0_before);
  BOOST_TEST(mx::memory_allocated(mx::gpu(1)) == gpu1_before);
}

BOOST_AUTO_TEST_CASE(queries_of_a_missing_device_throw) {
  const int missing = mx::num_gpus();
  BOOST_CHECK_THROW(mx::memory_allocated(mx::gpu(missing)), mx::DeviceError);
  BOOST_CHECK_THROW(mx::memory_reserved(mx::gpu(missing)), mx::DeviceError);
  BOOST_CHECK_THROW(mx::empty_cache(mx::gpu(missing)), mx::DeviceError);
  BOOST_CHECK_THROW(mx::memory_allocated(mx::cpu(1)), mx::DeviceError);
}

BOOST_AUTO_TEST_SUITE_END()
