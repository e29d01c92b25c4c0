// A small program that uses ndgluon the way a user project does: through dependency('ndgluon')
// (as a Meson subproject) or through pkg-config. It exits non-zero if a result is wrong.
#include <cmath>
#include <iostream>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;

int main() {
  const mx::Context ctx = mx::try_gpu();
  auto a = nd::array({{1, 2}, {3, 4}}, ctx);
  auto b = nd::ones({2, 2}, ctx);
  auto c = nd::dot(a, b) + 1;  // [[4, 4], [8, 8]]
  std::cout << c << "\n";
  const float total = c.sum().asscalar<float>();
  std::cout << "sum = " << total << " on " << c.context() << "\n";
  return std::fabs(total - 24.0f) < 1e-6f ? 0 : 1;
}
