// main() of every ndgluon test program. It names the master suite after the program (test_ndarray
// runs the suite "ndarray"), runs Boost.Test, then
// - exits 77 when every case was skipped (meson test shows SKIP), e.g. GPU suites without a GPU;
// - appends "name passed failed skipped" to $NDG_TEST_COUNTS when set, which .ci/run sums into
//   its closing line "N passed, N failed, N skipped". Cases left out by --run_test are not counted
//   as skipped: only cases that were meant to run and did not (a "needs N GPUs" precondition).
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#ifdef NDG_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>
#else
#include <boost/test/unit_test.hpp>
#endif
#include <boost/test/results_collector.hpp>
#include <boost/test/tree/traverse.hpp>
#include <boost/test/tree/visitor.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <ndarray/core/memory.hpp>

namespace {
std::string suite_name;  // the program's name without "test_"

// Counts the test cases that a --run_test filter left out.
struct FilteredOut : boost::unit_test::test_tree_visitor {
  unsigned long count = 0;
  void visit(const boost::unit_test::test_case& tc) override { count += !tc.is_enabled(); }
};

bool init_suite() {
  boost::unit_test::framework::master_test_suite().p_name.value = suite_name;
  return true;
}
}  // namespace

int main(int argc, char* argv[]) {
  suite_name = argc > 0 ? argv[0] : "test";
  suite_name = suite_name.substr(suite_name.find_last_of('/') + 1);
  if (suite_name.rfind("test_", 0) == 0) suite_name.erase(0, 5);
  const int status = boost::unit_test::unit_test_main(&init_suite, argc, argv);
  // Before any library's teardown: under compute-sanitizer's leak check, what is still allocated
  // after this is a leak of the suites' arrays.
  mx::release_cached_resources();
  const auto& results =
      boost::unit_test::results_collector.results(boost::unit_test::framework::master_test_suite().p_id);
  const auto passed = results.p_test_cases_passed.get();
  const auto failed = results.p_test_cases_failed.get() + results.p_test_cases_aborted.get();
  FilteredOut filtered_out;
  boost::unit_test::traverse_test_tree(boost::unit_test::framework::master_test_suite(), filtered_out, true);
  // A filter that matches no case is a setup error, with no case counted as skipped either.
  const unsigned long skipped_all = results.p_test_cases_skipped.get();
  const unsigned long skipped = skipped_all > filtered_out.count ? skipped_all - filtered_out.count : 0;
  if (const char* path = std::getenv("NDG_TEST_COUNTS")) {
    std::ofstream(path, std::ios::app) << suite_name << ' ' << passed << ' ' << failed << ' ' << skipped << '\n';
  }
  std::printf("%s: %lu passed, %lu failed, %lu skipped\n", suite_name.c_str(), static_cast<unsigned long>(passed),
              static_cast<unsigned long>(failed), static_cast<unsigned long>(skipped));
  if (status == 0 && passed == 0 && failed == 0 && skipped > 0) return 77;
  return status;
}
