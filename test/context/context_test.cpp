#include "test/support/boost_test.hpp"

#include <sstream>

#include "context/context.hpp"
#include "context/device.hpp"

BOOST_AUTO_TEST_SUITE(context)

BOOST_AUTO_TEST_CASE(prints_like_mxnet) {
  BOOST_TEST(mx::cpu().str() == "cpu(0)");
  BOOST_TEST(mx::gpu().str() == "gpu(0)");
  BOOST_TEST(mx::gpu(1).str() == "gpu(1)");
  std::ostringstream os;
  os << mx::gpu(3);
  BOOST_TEST(os.str() == "gpu(3)");
}

BOOST_AUTO_TEST_CASE(compares_by_value) {
  BOOST_TEST((mx::gpu(1) == mx::gpu(1)));
  BOOST_TEST((mx::gpu(0) != mx::gpu(1)));
  BOOST_TEST((mx::cpu(0) != mx::gpu(0)));
  BOOST_TEST((mx::cpu() < mx::gpu(0)));
  BOOST_TEST((mx::gpu(0) < mx::gpu(1)));
  BOOST_TEST(mx::gpu(2).device_id() == 2);
  BOOST_TEST(mx::gpu(2).is_gpu());
  BOOST_TEST(mx::cpu().is_cpu());
}

BOOST_AUTO_TEST_CASE(current_context_guard_nests_and_restores) {
  BOOST_TEST((mx::current_context() == mx::cpu()));
  {
    mx::ContextGuard outer(mx::gpu(1));
    BOOST_TEST((mx::current_context() == mx::gpu(1)));
    {
      mx::ContextGuard inner(mx::gpu(0));
      BOOST_TEST((mx::current_context() == mx::gpu(0)));
    }
    BOOST_TEST((mx::current_context() == mx::gpu(1)));
  }
  BOOST_TEST((mx::current_context() == mx::cpu()));
}

BOOST_AUTO_TEST_CASE(list_prints_like_python) {
  BOOST_TEST(mx::to_string({mx::gpu(0), mx::gpu(1)}) == "[gpu(0), gpu(1)]");
  BOOST_TEST(mx::to_string({}) == "[]");
}

BOOST_AUTO_TEST_SUITE_END()
