#pragma once
// Reading mx::profiler::dumps() tables in tests.
#include <sstream>
#include <string>

namespace ndg_test {

// The Calls column of the row named `name` in a dumps() table; -1 when there is no such row.
// Names may hold spaces ("one product"): a row starts with its name, then the numbers.
inline long long profiler_calls(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    long long calls = 0;
    if (line.rfind(name + " ", 0) == 0 && std::istringstream(line.substr(name.size())) >> calls) return calls;
  }
  return -1;
}

}  // namespace ndg_test
