#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>

namespace ndg_test {

bool message_has::operator()(const std::exception& error) const {
  const std::string message = error.what();
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      BOOST_ERROR("message \"" << message << "\" lacks \"" << part << "\"");
      return false;
    }
  }
  return true;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  if (a.size() != b.size()) return INFINITY;
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30);
}

}  // namespace ndg_test
