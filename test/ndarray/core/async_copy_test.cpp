// Copies from cpu(0) to a GPU return without waiting (cuda/backend.cpp: a pinned staging copy,
// the DMA on the device's copy stream, ordered by events). These cases check what that must keep:
// the copy holds the values of the call, whatever the host does afterwards; a staging block is
// not reused while its copy reads it; a copy into an array the device still reads waits for it;
// and the values are those of a blocking copy. Each runs on every GPU.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

namespace {

std::vector<mx::Context> gpus() {
  std::vector<mx::Context> out;
  for (int i = 0; i < mx::num_gpus(); ++i) out.push_back(mx::gpu(i));
  return out;
}

// Queues about a millisecond of work on ctx (40 passes over 32 MB: the GPU runs them slower than
// the host queues them) and returns its result (ones), so that what is queued after it on the
// device waits behind it. Elementwise kernels use no shared memory, so compute-sanitizer's
// racecheck runs them nearly as fast as natively; it takes hours over cuBLAS products.
nd::NDArray busy(mx::Context ctx) {
  nd::NDArray a = nd::ones({std::int64_t{1} << 23}, ctx);
  for (int i = 0; i < 40; ++i) a = a * 1.0;
  return a;
}

std::vector<float> iota(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(async_copy, *boost::unit_test::precondition(ndg_test::needs_gpus{1}))

// Into an existing array, the DMA waits behind the queued work, so a copy that read the host
// array late would see the overwrite; into a new array it starts at once. 1M floats (pinned) and
// 1000 (pageable) are staged; 8M floats (32 MiB) are read in place, the host waiting for the copy.
BOOST_AUTO_TEST_CASE(a_host_array_overwritten_after_copyto_returns_leaves_the_copy_alone) {
  for (mx::Context ctx : gpus()) {
    for (const std::int64_t n : {std::int64_t{1} << 20, std::int64_t{1000}, std::int64_t{8} << 20})
    BOOST_TEST_CONTEXT(ctx.str() << ", " << n) {
      nd::NDArray host = nd::array(iota(n, 0), {n});
      nd::NDArray existing = nd::zeros({n}, ctx);
      nd::NDArray work = busy(ctx);
      host.copyto(existing);
      host.fill(-1);  // at once, while the copy still waits
      host += 3;
      nd::NDArray fresh = host.copyto(ctx);
      host.fill(99);
      BOOST_TEST(existing.asvector() == iota(n, 0), tt::per_element());
      BOOST_TEST(fresh.asvector() == std::vector<float>(static_cast<std::size_t>(n), 2.0f), tt::per_element());
      BOOST_TEST(work.asvector()[0] == 1.0f);
    }
  }
}

// Many copies of one reused host buffer, each with other values, queued behind work: if a
// staging block went back to its cache before its copy ran, a later call would overwrite it and
// an earlier copy would carry a later value.
BOOST_AUTO_TEST_CASE(a_staging_block_is_not_reused_while_its_copy_reads_it) {
  for (mx::Context ctx : gpus()) {
    BOOST_TEST_CONTEXT(ctx.str()) {
      const std::vector<std::int64_t> sizes{1, 7, 64, 1000, 65536, 300000};
      nd::NDArray work = busy(ctx);
      std::vector<nd::NDArray> copies;
      std::vector<float> expected;
      for (int i = 0; i < 240; ++i) {
        const std::int64_t n = sizes[static_cast<std::size_t>(i) % sizes.size()];
        nd::NDArray host = nd::full({n}, static_cast<double>(i), mx::cpu());
        if (i % 2 == 0) {
          copies.push_back(host.copyto(ctx));
        } else {
          nd::NDArray into = nd::zeros({n}, ctx);
          host.copyto(into);
          copies.push_back(into);
        }
        expected.push_back(static_cast<float>(i));
      }
      for (std::size_t i = 0; i < copies.size(); ++i) {
        const std::vector<float> got = copies[i].asvector();
        const std::vector<float> want(got.size(), expected[i]);
        BOOST_TEST_CONTEXT("copy " << i) { BOOST_TEST(got == want, tt::per_element()); }
      }
      BOOST_TEST(work.asvector()[0] == 1.0f);
    }
  }
}

// y is read by queued work (z = y * 2) when new values are copied into it: z sees the old ones.
BOOST_AUTO_TEST_CASE(a_copy_into_an_array_the_device_still_reads_waits_for_that_work) {
  for (mx::Context ctx : gpus()) {
    BOOST_TEST_CONTEXT(ctx.str()) {
      const std::int64_t n = 1 << 18;
      nd::NDArray y = nd::ones({n}, ctx);
      nd::NDArray work = busy(ctx);
      nd::NDArray z = y * 2;
      nd::full({n}, 5.0, mx::cpu()).copyto(y);
      nd::NDArray after = y * 2;
      BOOST_TEST(z.asvector() == std::vector<float>(static_cast<std::size_t>(n), 2.0f), tt::per_element());
      BOOST_TEST(after.asvector() == std::vector<float>(static_cast<std::size_t>(n), 10.0f), tt::per_element());
      BOOST_TEST(work.asvector()[0] == 1.0f);
    }
  }
}

// The values of every dtype, shape and view arrive as a blocking copy would give them, and a GPU
// op right after the copy reads them.
BOOST_AUTO_TEST_CASE(async_copies_give_the_values_of_a_blocking_copy) {
  for (mx::Context ctx : gpus()) {
    BOOST_TEST_CONTEXT(ctx.str()) {
      for (mx::DType dt : {mx::DType::float32, mx::DType::float64, mx::DType::float16, mx::DType::bfloat16,
                           mx::DType::int32, mx::DType::int64, mx::DType::uint8}) {
        BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
          nd::NDArray host = nd::arange(0, 60).astype(dt).reshape({3, 4, 5});
          BOOST_TEST(host.copyto(ctx).copyto(mx::cpu()).asvector<double>() == host.asvector<double>(),
                     tt::per_element());
          nd::NDArray view = host.transpose({2, 0, 1});  // strided: gathered on the host first
          BOOST_TEST(view.copyto(ctx).copyto(mx::cpu()).asvector<double>() == view.asvector<double>(),
                     tt::per_element());
          BOOST_TEST((host.copyto(ctx) + host.copyto(ctx)).copyto(mx::cpu()).asvector<double>() ==
                         (host + host).asvector<double>(),
                     tt::per_element());
        }
      }
      nd::NDArray empty = nd::zeros({0, 3});
      BOOST_TEST(empty.copyto(ctx).shape() == (mx::Shape{0, 3}));
      // Into a strided view on the GPU: the values staged on the device, then scattered.
      nd::NDArray target = nd::zeros({4, 3}, ctx);
      nd::NDArray column = target.T()[1];  // target's second column: (4,), stride 3
      nd::array({7, 8, 9, 10}).copyto(column);
      BOOST_TEST(target.asvector() == (std::vector<float>{0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 10, 0}), tt::per_element());
    }
  }
}

// No device memory is left behind by the copies once their arrays are gone.
BOOST_AUTO_TEST_CASE(async_copies_leave_no_device_memory_behind) {
  for (mx::Context ctx : gpus()) {
    BOOST_TEST_CONTEXT(ctx.str()) {
      nd::waitall();
      const std::size_t before = mx::memory_allocated(ctx);
      {
        nd::NDArray host = nd::ones({1 << 20});
        for (int i = 0; i < 50; ++i) host.copyto(ctx);
        nd::NDArray kept = host.copyto(ctx);
        BOOST_TEST(mx::memory_allocated(ctx) >= before + (std::size_t{4} << 20));
      }
      BOOST_TEST(mx::memory_allocated(ctx) == before);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
