#pragma once
// CHECK(call) for the benchmarks' raw CUDA, cuBLAS and cuRAND calls: prints the call and exits
// on any status other than success (0 in all three libraries).
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if (auto status = (call); status != decltype(status)(0)) {                           \
      std::fprintf(stderr, "%s failed (%d) at line %d\n", #call, int(status), __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
