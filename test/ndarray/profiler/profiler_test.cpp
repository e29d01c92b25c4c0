// mx::profiler: the op rows count each call on every context, ranges nest, "stop" stops counting,
// dumps(true) and reset() forget, and a bad state is a typed error.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/profile.hpp"

#include <sstream>
#include <string>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace profiler = mx::profiler;

namespace {

using ndg_test::profiler_calls;

struct StopProfiler {
  ~StopProfiler() {
    profiler::set_state("stop");
    profiler::reset();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(profiler_suite)

BOOST_AUTO_TEST_CASE(counts_ops_and_ranges_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    StopProfiler stop;
    const nd::NDArray a = nd::ones({4, 4}, ctx), b = nd::ones({4, 4}, ctx);
    profiler::reset();
    profiler::set_state("run");
    BOOST_TEST(profiler::is_running());
    {
      const profiler::Range outer("three products");
      for (int i = 0; i < 3; ++i) {
        const profiler::Range inner("one product");
        nd::dot(a, b);
      }
    }
    profiler::set_state("stop");
    nd::dot(a, b);  // not counted
    {
      const profiler::Range ignored("after stop");
    }
    const std::string table = profiler::dumps();
    BOOST_TEST_INFO(table);
    BOOST_TEST(profiler_calls(table, "three products") == 1);
    BOOST_TEST(profiler_calls(table, "one product") == 3);
    BOOST_TEST(profiler_calls(table, "dot") == 3);
    BOOST_TEST(profiler_calls(table, "after stop") == -1);
    // dumps(true) returns the same rows once more, then forgets them.
    BOOST_TEST(profiler_calls(profiler::dumps(true), "dot") == 3);
    BOOST_TEST(profiler_calls(profiler::dumps(), "dot") == -1);
  });
}

BOOST_AUTO_TEST_CASE(times_are_ordered_and_reset_forgets) {
  StopProfiler stop;
  profiler::reset();
  profiler::set_state("run");
  { const profiler::Range r("span"); }
  { const profiler::Range r("span"); }
  profiler::set_state("stop");
  const std::string table = profiler::dumps();
  std::istringstream row(table.substr(table.find("\nspan") + 1));
  std::string name;
  long long calls = 0;
  double total = -1, mean = -1, min = -1, max = -1;
  row >> name >> calls >> total >> mean >> min >> max;
  BOOST_TEST(calls == 2);
  BOOST_TEST(min >= 0);
  BOOST_TEST(total >= max);
  BOOST_TEST(min <= mean);
  BOOST_TEST(mean <= max);
  profiler::reset();
  BOOST_TEST(profiler_calls(profiler::dumps(), "span") == -1);
}

BOOST_AUTO_TEST_CASE(bad_state_is_a_value_error) {
  NDG_CHECK_THROWS_WITH(profiler::set_state("start"), mx::ValueError, {"profiler::set_state", "\"start\"", "\"run\""});
  BOOST_TEST(!profiler::is_running());
}

BOOST_AUTO_TEST_SUITE_END()
