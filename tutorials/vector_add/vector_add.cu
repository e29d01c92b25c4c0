// A hand-written CUDA kernel: c = a + b over 10M floats, timed on cpu(0) and on gpu(0) and checked
// against the CPU result. It also times ndgluon's own `a + b` on the same data.
// Without a GPU it runs the CPU part and says so.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"

namespace nd = mx::nd;

// One thread per element, with a bounds check for the last block.
__global__ void add_vectors(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(call)                                                                     \
  do {                                                                                  \
    const cudaError_t status = (call);                                                  \
    if (status != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status));       \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

int main(int argc, char** argv) {
  CLI::App app{"A hand-written CUDA kernel, c = a + b over 10M floats, timed on cpu(0) and gpu(0) and checked "
               "against the CPU result, next to ndgluon's own a + b. Without a GPU it runs the CPU part. No options."};
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;

  constexpr int n = 10'000'000;
  std::vector<float> a(n), b(n), c_cpu(n), c_gpu(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i % 1000);
    b[i] = 2.0f - 0.25f * static_cast<float>(i % 77);
  }

  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) c_cpu[i] = a[i] + b[i];
  const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("cpu(0): %d additions in %.3f ms (%.2f GB/s)\n", n, cpu_ms, 3.0 * 4 * n / cpu_ms / 1e6);

  if (mx::num_gpus() == 0) {
    std::printf("gpu(0): no GPU visible, skipping the kernel\n");
    return 0;
  }
  std::printf("gpu(0): %s\n", mx::gpu_name(0).c_str());

  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const int threads = 256, blocks = (n + threads - 1) / threads;
  add_vectors<<<blocks, threads>>>(da, db, dc, n);  // warm-up: loads the module
  CHECK(cudaGetLastError());
  cudaEvent_t begin, end;
  CHECK(cudaEventCreate(&begin));
  CHECK(cudaEventCreate(&end));
  constexpr int reps = 20;
  CHECK(cudaEventRecord(begin));
  for (int r = 0; r < reps; ++r) add_vectors<<<blocks, threads>>>(da, db, dc, n);
  CHECK(cudaEventRecord(end));
  CHECK(cudaEventSynchronize(end));
  CHECK(cudaGetLastError());
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, begin, end));
  gpu_ms /= reps;
  CHECK(cudaMemcpy(c_gpu.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));

  int mismatches = 0;
  for (int i = 0; i < n; ++i) mismatches += c_gpu[i] != c_cpu[i];
  std::printf("gpu(0): %d additions in %.3f ms (%.1f GB/s), %.1fx the CPU loop, %d mismatches\n", n, gpu_ms,
              3.0 * 4 * n / gpu_ms / 1e6, cpu_ms / gpu_ms, mismatches);

  // The same sum through ndgluon.
  auto x = nd::array(a, {n}, mx::gpu(0)), y = nd::array(b, {n}, mx::gpu(0));
  (x + y).wait_to_read();
  const auto t0 = std::chrono::steady_clock::now();
  nd::NDArray z;
  for (int r = 0; r < reps; ++r) z = x + y;
  z.wait_to_read();
  const double nd_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  const auto values = z.asvector<float>();
  int nd_mismatches = 0;
  for (int i = 0; i < n; ++i) nd_mismatches += values[i] != c_cpu[i];
  std::printf("ndgluon x + y on gpu(0): %.3f ms (%.1f GB/s), %d mismatches\n", nd_ms, 3.0 * 4 * n / nd_ms / 1e6,
              nd_mismatches);

  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return mismatches == 0 && nd_mismatches == 0 ? 0 : 1;
}
