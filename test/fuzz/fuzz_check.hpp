#pragma once
// What the fuzz targets share: a failed property aborts with its message, which libFuzzer reports as
// a crash and saves the input that caused it.
#include <cstdio>
#include <cstdlib>

namespace ndg_fuzz {

// Aborts unless `holds`: the property `what` of an input the reader accepted does not hold.
inline void expect(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property failed: %s\n", what);
  std::abort();
}

}  // namespace ndg_fuzz
