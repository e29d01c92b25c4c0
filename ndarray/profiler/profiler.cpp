#include "ndarray/profiler/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "context/error.hpp"

namespace mx::profiler {
namespace {

struct Stats {
  std::int64_t calls = 0;
  double total = 0, min = std::numeric_limits<double>::infinity(), max = 0;  // seconds
};

std::atomic<bool> running{false};

struct Table {
  std::mutex mutex;
  std::map<std::string, Stats, std::less<>> rows;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: ranges may end during static destruction
  return *t;
}

void add(std::string_view name, double seconds) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.rows.find(name);
  if (it == t.rows.end()) it = t.rows.emplace(std::string(name), Stats{}).first;
  Stats& s = it->second;
  ++s.calls;
  s.total += seconds;
  s.min = std::min(s.min, seconds);
  s.max = std::max(s.max, seconds);
}

}  // namespace

void set_state(const std::string& state) {
  if (state != "run" && state != "stop") {
    throw ValueError("profiler::set_state: the state must be \"run\" or \"stop\", not \"" + state + "\"");
  }
  running.store(state == "run", std::memory_order_relaxed);
}

bool is_running() { return running.load(std::memory_order_relaxed); }

void reset() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.rows.clear();
}

std::string dumps(bool reset_after) {
  std::vector<std::pair<std::string, Stats>> rows;
  {
    Table& t = table();
    std::lock_guard lock(t.mutex);
    rows.assign(t.rows.begin(), t.rows.end());
    if (reset_after) t.rows.clear();
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
  std::size_t width = 4;
  for (const auto& [name, s] : rows) width = std::max(width, name.size());
  std::string out = "Profile statistics (host time, µs; nested ranges are counted in each)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %10s %12s %10s %10s %10s\n", static_cast<int>(width), "Name", "Calls",
                "Total", "Mean", "Min", "Max");
  out += line;
  for (const auto& [name, s] : rows) {
    std::snprintf(line, sizeof line, "%-*s %10lld %12.2f %10.2f %10.2f %10.2f\n", static_cast<int>(width),
                  name.c_str(), static_cast<long long>(s.calls), s.total * 1e6, s.total * 1e6 / static_cast<double>(s.calls),
                  s.min * 1e6, s.max * 1e6);
    out += line;
  }
  return out;
}

Range::Range(std::string_view name) : name_(name), timing_(is_running()) {
  if (timing_) start_ = std::chrono::steady_clock::now();
}

Range::~Range() {
  if (timing_) add(name_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

}  // namespace mx::profiler
