#pragma once
// Test fixtures over contexts: every numeric test runs on cpu(0) and on each visible GPU, through
// the public kit (ndarray/testing/testing.hpp, mx::test_utils) that users' suites use as well.
#include <exception>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "ndarray/testing/testing.hpp"

namespace ndg_test {

// cpu(0) followed by every visible GPU.
inline std::vector<mx::Context> all_contexts() { return mx::test_utils::contexts(); }

// Precondition for cases that need n GPUs; its message says how many were found.
using mx::test_utils::needs_gpus;

// Precondition for cases whose cost is full-size arithmetic (a 299x299 Inception forward pass on
// cpu(0)) rather than new code paths: skipped in builds under AddressSanitizer, whose CI run has
// a time limit; the unsanitized builds run them.
struct not_sanitized {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool sanitized = true;
#elif defined(__has_feature)
    constexpr bool sanitized = __has_feature(address_sanitizer);
#else
    constexpr bool sanitized = false;
#endif
    boost::test_tools::assertion_result result(!sanitized);
    result.message() << "full-size arithmetic: run in the builds without AddressSanitizer";
    return result;
  }
};

// Runs body(ctx) for every context in all_contexts(), naming the context in failure messages.
using mx::test_utils::for_each_context;

// A predicate for BOOST_CHECK_EXCEPTION: true when the message contains every part, false (with
// an error that shows the message and the missing part) otherwise.
//
//   BOOST_CHECK_EXCEPTION(f(), mx::FileError, ndg_test::message_has({path, "is a directory"}));
struct message_has {
  message_has(std::vector<std::string> parts_) : parts(std::move(parts_)) {}
  std::vector<std::string> parts;
  bool operator()(const std::exception& error) const;
};

// Relative L2 distance ‖a − b‖ / max(‖b‖, tiny): the comparison of GPU results against CPU ones.
double relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ndg_test

// Checks that `statement` throws `type` and that its message contains every string in `parts`.
#define NDG_CHECK_THROWS_WITH(statement, type, ...)                                          \
  do {                                                                                        \
    bool ndg_thrown = false;                                                                  \
    try {                                                                                     \
      statement;                                                                              \
    } catch (const type& ndg_error) {                                                         \
      ndg_thrown = true;                                                                      \
      const std::string ndg_message = ndg_error.what();                                       \
      for (const std::string& ndg_part : std::vector<std::string>{__VA_ARGS__}) {             \
        BOOST_TEST(ndg_message.find(ndg_part) != std::string::npos,                           \
                   "message \"" << ndg_message << "\" lacks \"" << ndg_part << "\"");         \
      }                                                                                       \
    }                                                                                         \
    BOOST_TEST(ndg_thrown, #statement " did not throw " #type);                               \
  } while (0)
