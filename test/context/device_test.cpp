#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <string>
#include <vector>

#include "context/device.hpp"
#include "context/error.hpp"

namespace {

// What check_context says about a GPU index past the visible ones: "gpu(N) requested but M GPUs are
// visible" ("1 GPU is visible" for one GPU).
std::string visible_gpus(int count) {
  return std::to_string(count) + (count == 1 ? " GPU is visible" : " GPUs are visible");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(device)

BOOST_AUTO_TEST_CASE(num_gpus_matches_try_all_gpus) {
  const int n = mx::num_gpus();
  BOOST_TEST(n >= 0);
  BOOST_TEST(mx::num_gpus() == n);  // stable across calls
  const std::vector<mx::Context> all = mx::try_all_gpus();
  if (n > 0) {
    BOOST_TEST(all.size() == static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) BOOST_TEST((all[static_cast<std::size_t>(i)] == mx::gpu(i)));
  } else {
    BOOST_TEST(all.size() == 1u);
    BOOST_TEST((all == std::vector<mx::Context>{mx::cpu()}));
  }
}

BOOST_AUTO_TEST_CASE(try_gpu_falls_back_to_cpu) {
  const int n = mx::num_gpus();
  for (int i = 0; i <= n + 2; ++i) {
    BOOST_TEST_CONTEXT("try_gpu(" << i << ") with " << n << " GPUs") {
      const mx::Context ctx = mx::try_gpu(i);
      if (i < n) {
        BOOST_TEST((ctx == mx::gpu(i)));
      } else {
        BOOST_TEST((ctx == mx::cpu(0)));
      }
    }
  }
  BOOST_TEST((mx::try_gpu() == (n > 0 ? mx::gpu(0) : mx::cpu(0))));
  BOOST_TEST((mx::try_gpu(-1) == mx::cpu(0)));
  BOOST_TEST((mx::try_gpu(-5) == mx::cpu(0)));
}

BOOST_AUTO_TEST_CASE(check_context_accepts_cpu0_and_visible_gpus) {
  BOOST_CHECK_NO_THROW(mx::check_context(mx::cpu(0)));
  for (int i = 0; i < mx::num_gpus(); ++i) BOOST_CHECK_NO_THROW(mx::check_context(mx::gpu(i)));
  for (mx::Context ctx : mx::try_all_gpus()) BOOST_CHECK_NO_THROW(mx::check_context(ctx));
}

BOOST_AUTO_TEST_CASE(check_context_rejects_a_missing_gpu) {
  const int n = mx::num_gpus();
  const std::string missing = "gpu(" + std::to_string(n) + ")";
  if (mx::built_with_cuda()) {
    NDG_CHECK_THROWS_WITH(mx::check_context(mx::gpu(n)), mx::DeviceError,
                          missing + " requested but " + visible_gpus(n));
    NDG_CHECK_THROWS_WITH(mx::check_context(mx::gpu(n + 5)), mx::DeviceError,
                          "gpu(" + std::to_string(n + 5) + ") requested but " + visible_gpus(n));
    NDG_CHECK_THROWS_WITH(mx::check_context(mx::gpu(-1)), mx::DeviceError, "gpu(-1)", visible_gpus(n));
  } else {
    BOOST_TEST(n == 0);  // a build without CUDA sees no GPU
    NDG_CHECK_THROWS_WITH(mx::check_context(mx::gpu(n)), mx::DeviceError, missing, "no CUDA support",
                          "-Dcuda=enabled");
    NDG_CHECK_THROWS_WITH(mx::check_context(mx::gpu(0)), mx::DeviceError, "gpu(0)", "no CUDA support");
  }
  // A DeviceError is an mx::Error.
  BOOST_CHECK_THROW(mx::check_context(mx::gpu(n)), mx::Error);
}

BOOST_AUTO_TEST_CASE(check_context_rejects_cpu1) {
  NDG_CHECK_THROWS_WITH(mx::check_context(mx::cpu(1)), mx::DeviceError, "cpu(1) requested",
                        "only cpu(0) exists");
}

BOOST_AUTO_TEST_CASE(gpu_queries_reject_a_missing_gpu) {
  const int n = mx::num_gpus();
  BOOST_CHECK_THROW(mx::gpu_name(n), mx::DeviceError);
  BOOST_CHECK_THROW(mx::gpu_memory_info(n), mx::DeviceError);
  BOOST_CHECK_THROW(mx::gpu_name(-1), mx::DeviceError);
}

BOOST_AUTO_TEST_CASE(gpu_name_is_reported, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (int i = 0; i < mx::num_gpus(); ++i) {
    BOOST_TEST_CONTEXT("gpu(" << i << ")") {
      const std::string name = mx::gpu_name(i);
      BOOST_TEST(!name.empty());
      BOOST_TEST_MESSAGE("gpu(" << i << "): " << name);
    }
  }
  BOOST_TEST(mx::gpu_name() == mx::gpu_name(0));
}

BOOST_AUTO_TEST_CASE(gpu_memory_info_is_consistent, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (int i = 0; i < mx::num_gpus(); ++i) {
    BOOST_TEST_CONTEXT("gpu(" << i << ")") {
      const mx::MemoryInfo info = mx::gpu_memory_info(i);
      BOOST_TEST(info.total > 0u);
      BOOST_TEST(info.free <= info.total);
      // Every GPU the project targets has at least 1 GiB.
      BOOST_TEST(info.total >= (std::size_t{1} << 30));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
