#pragma once
// mx::profiler: where the host's time goes, aggregated per op, as MXNet's profiler with
// aggregate_stats does (mx.profiler.set_state('run') ... mx.profiler.dumps()).
//
//   mx::profiler::set_state("run");
//   ... train a few steps ...
//   mx::profiler::set_state("stop");
//   std::cout << mx::profiler::dumps(/*reset=*/true);
//
// Every registered op is timed from its front end's call to its return: checks, inference,
// allocation, recording and the kernel's launch. On a GPU that is the host's time to queue the
// work, not the kernel's run time, which is what an eager loop that keeps the GPU waiting pays.
// Range times a span of the user's own code under a name of its choice; ranges nest (a step's
// range holds its ops), so the rows do not add up to a total. Off (the default), a Range costs one
// relaxed atomic load. Thread-safe.
#include <chrono>
#include <string>
#include <string_view>

namespace mx::profiler {

// "run" starts collecting, "stop" stops (what was collected stays until dumps(true) or reset());
// anything else is an mx::ValueError.
void set_state(const std::string& state);
bool is_running();

// The table of every name timed while running: calls, total, mean, min and max host time in µs,
// the largest total first. reset: forget what was collected.
std::string dumps(bool reset = false);
void reset();

// Times its own lifetime under `name` while the profiler runs. `name` is copied only when the
// range ends, so a temporary string outlives it as long as the range lives.
class Range {
 public:
  explicit Range(std::string_view name);
  explicit Range(const char* name) : Range(std::string_view(name)) {}
  // A temporary string would be gone before the range ends: name a variable that outlives it.
  explicit Range(std::string&& name) = delete;
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  std::string_view name_;
  std::chrono::steady_clock::time_point start_;
  bool timing_;
};

}  // namespace mx::profiler
