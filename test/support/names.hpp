#pragma once
// Gluon's automatic block names ("dense3_"), read back in tests.
#include <string>

namespace ndg_test {

// The N of a prefix "<kind><N>_"; -1 when it has another form.
inline int prefix_number(const std::string& prefix, const std::string& kind) {
  if (prefix.rfind(kind, 0) != 0 || prefix.size() < kind.size() + 2 || prefix.back() != '_') return -1;
  const std::string digits = prefix.substr(kind.size(), prefix.size() - kind.size() - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

}  // namespace ndg_test
