// mx::profiler: the op rows count each call on every context, ranges nest, "stop" stops counting,
// dumps(true) and reset() forget, and a bad state is a typed error.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <sstream>
#include <string>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace profiler = mx::profiler;

namespace {

// The Calls column of the row named `name` in a dumps() table; -1 when there is no such row.
long long calls_of(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    // Names may hold spaces ("one product"): the row starts with the name, then the numbers.
    long long calls = 0;
    if (line.rfind(name + " ", 0) == 0 && std::istringstream(line.substr(name.size())) >> calls) return calls;
  }
  return -1;
}

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
    BOOST_TEST(calls_of(table, "three products") == 1);
    BOOST_TEST(calls_of(table, "one product") == 3);
    BOOST_TEST(calls_of(table, "dot") == 3);
    BOOST_TEST(calls_of(table, "after stop") == -1);
    // dumps(true) returns the same rows once more, then forgets them.
    BOOST_TEST(calls_of(profiler::dumps(true), "dot") == 3);
    BOOST_TEST(calls_of(profiler::dumps(), "dot") == -1);
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
  BOOST_TEST(calls_of(profiler::dumps(), "span") == -1);
}

BOOST_AUTO_TEST_CASE(bad_state_is_a_value_error) {
  NDG_CHECK_THROWS_WITH(profiler::set_state("start"), mx::ValueError, {"profiler::set_state", "\"start\"", "\"run\""});
  BOOST_TEST(!profiler::is_running());
}

BOOST_AUTO_TEST_SUITE_END()
