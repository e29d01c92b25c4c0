// Foundation benchmarks: each ndgluon op against the raw CUDA library call it stands on
// (cudaMemcpy, cuBLAS, cuRAND, cudaMemcpyPeer), measured in the same run on the same GPU, with
// PyTorch on the same cases as the peer column (bench/torch_peer.py).
//
// Bytes and flops counted per case:
//   add 2^28 float32: reads 2 x 1 GiB, writes 1 GiB; memcpy D2D of 1 GiB reads and writes 1 GiB.
//   dot 8192^3: 2 * 8192^3 flop.   uniform 2^28: writes 1 GiB.   copies: 256 MiB each way.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <cstdio>
#include <optional>
#include <string>

#include <ndarray/ndarray.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "bench/peer_cli.hpp"
#include "bench/raw_kernels.hpp"

namespace nd = mx::nd;


namespace {

bench::Row row(std::string name, std::string key, std::string metric, double work, double unit, double t_nd,
               double t_raw, double target) {
  bench::Row r;
  r.name = std::move(name);
  r.peer_key = std::move(key);
  r.metric = std::move(metric);
  r.work = work;
  r.unit = unit;
  r.ndgluon = r.from_seconds(t_nd);
  r.raw = t_raw > 0 ? r.from_seconds(t_raw) : 0;
  r.target = target;
  r.higher_is_better = unit > 0;
  return r;
}

void device_sync() { CHECK(cudaDeviceSynchronize()); }

void nd_sync() { nd::waitall(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Foundation benchmarks on gpu(0): each ndgluon op against the raw CUDA library call it stands on "
               "(cudaMemcpy, cuBLAS, cuRAND, cudaMemcpyPeer) and against PyTorch, measured in one run. "
               "Run from the source root: build/bench/ndarray_bench bench/torch_peer.py"};
  std::string peer_script;
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  std::vector<bench::Row> rows;
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, ndgluon vs raw CUDA libraries vs PyTorch\n", mx::gpu_name(0).c_str());

  // --- a + b on 2^28 float32 vs cudaMemcpy device-to-device --------------------------------
  {
    const std::int64_t n = std::int64_t{1} << 28;
    auto a = nd::random::uniform(0, 1, {n}, gpu0), b = nd::random::uniform(0, 1, {n}, gpu0);
    nd::NDArray c;
    const double t_add = bench::median_seconds([&] { c = a + b; }, nd_sync, 10);
    float *src, *dst;
    CHECK(cudaMalloc(&src, n * 4));
    CHECK(cudaMalloc(&dst, n * 4));
    const double t_copy = bench::median_seconds([&] { CHECK(cudaMemcpyAsync(dst, src, n * 4, cudaMemcpyDeviceToDevice)); },
                                                device_sync, 10);
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    // memcpy moves 2 x 1 GiB in t_copy: as bandwidth, the same bytes/s ceiling for add's 3 x 1 GiB.
    rows.push_back(row("add 2^28 f32 (vs memcpy D2D bandwidth)", "add", "GB/s", 3.0 * n * 4, 1e9, t_add,
                       t_copy * 3.0 / 2.0, 0.90));
  }

  // --- dot 8192^3 vs cublasSgemm -------------------------------------------------------------
  {
    const std::int64_t m = 8192;
    auto a = nd::random::uniform(-1, 1, {m, m}, gpu0), b = nd::random::uniform(-1, 1, {m, m}, gpu0);
    nd::NDArray c;
    const double t_dot = bench::median_seconds([&] { c = nd::dot(a, b); }, nd_sync, 3);
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, m * m * 4));
    CHECK(cudaMalloc(&db, m * m * 4));
    CHECK(cudaMalloc(&dc, m * m * 4));
    cublasHandle_t handle;
    CHECK(cublasCreate(&handle));
    const float one = 1, zero = 0;
    const int mi = static_cast<int>(m);
    const double t_raw = bench::median_seconds(
        [&] { CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, mi, mi, mi, &one, db, mi, da, mi, &zero, dc, mi)); },
        device_sync, 3);
    CHECK(cublasDestroy(handle));
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    const double flop = 2.0 * m * m * m;
    rows.push_back(row("dot 8192^3 f32 (vs cublasSgemm)", "dot", "TFLOP/s", flop, 1e12, t_dot, t_raw, 0.97));
  }

  // --- random::uniform 2^28 vs curandGenerateUniform ------------------------------------------
  {
    const std::int64_t n = std::int64_t{1} << 28;
    nd::NDArray u;
    const double t_nd = bench::median_seconds([&] { u = nd::random::uniform(0, 1, {n}, gpu0); }, nd_sync, 10);
    u = nd::NDArray();
    float* out;
    CHECK(cudaMalloc(&out, n * 4));
    curandGenerator_t gen;
    CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));  // ndgluon's generator
    const double t_raw = bench::median_seconds([&] { CHECK(curandGenerateUniform(gen, out, n)); }, device_sync, 10);
    CHECK(curandDestroyGenerator(gen));
    CHECK(cudaFree(out));
    rows.push_back(row("random.uniform 2^28 f32 (vs curandGenerateUniform)", "uniform", "G values/s", double(n), 1e9,
                       t_nd, t_raw, 0.95));
  }

  // --- copies: host<->device (vs pinned cudaMemcpy), gpu(0)->gpu(1) (vs cudaMemcpyPeer) -----------
  {
    const std::int64_t n = std::int64_t{64} << 20;  // 256 MiB of float32
    const double bytes = n * 4.0;
    auto host = nd::random::uniform(0, 1, {n}, mx::cpu());
    auto dev = nd::random::uniform(0, 1, {n}, gpu0);
    nd::NDArray out;
    const double t_h2d = bench::median_seconds([&] { out = host.copyto(gpu0); }, nd_sync, 5);
    const double t_d2h = bench::median_seconds([&] { out = dev.copyto(mx::cpu()); }, nd_sync, 5);
    out = nd::NDArray();
    void *pinned, *dbuf;
    CHECK(cudaMallocHost(&pinned, n * 4));
    CHECK(cudaMalloc(&dbuf, n * 4));
    const double t_raw_h2d = bench::median_seconds([&] { CHECK(cudaMemcpy(dbuf, pinned, n * 4, cudaMemcpyHostToDevice)); },
                                                   device_sync, 5);
    const double t_raw_d2h = bench::median_seconds([&] { CHECK(cudaMemcpy(pinned, dbuf, n * 4, cudaMemcpyDeviceToHost)); },
                                                   device_sync, 5);
    rows.push_back(row("copyto cpu->gpu 256 MiB (vs pinned cudaMemcpy)", "h2d", "GB/s", bytes, 1e9, t_h2d, t_raw_h2d, 0.90));
    rows.push_back(row("copyto gpu->cpu 256 MiB (vs pinned cudaMemcpy)", "d2h", "GB/s", bytes, 1e9, t_d2h, t_raw_d2h, 0.90));
    CHECK(cudaFreeHost(pinned));
    if (mx::num_gpus() >= 2) {
      const double t_p2p = bench::median_seconds([&] { out = dev.copyto(mx::gpu(1)); }, nd_sync, 10);
      void* dbuf1;
      CHECK(cudaSetDevice(1));
      CHECK(cudaMalloc(&dbuf1, n * 4));
      CHECK(cudaSetDevice(0));
      int can = 0;
      CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
      if (can) cudaDeviceEnablePeerAccess(1, 0), cudaGetLastError();
      const double t_raw = bench::median_seconds([&] { CHECK(cudaMemcpyPeer(dbuf1, 1, dbuf, 0, n * 4)); },
                                                 [] { CHECK(cudaSetDevice(1)); device_sync(); CHECK(cudaSetDevice(0)); device_sync(); }, 10);
      CHECK(cudaFree(dbuf1));
      rows.push_back(row("copyto gpu(0)->gpu(1) 256 MiB (vs cudaMemcpyPeer)", "p2p", "GB/s", bytes, 1e9, t_p2p, t_raw, 0.90));
    }
    CHECK(cudaFree(dbuf));
  }

  // --- dispatch: a chain of 10,000 adds of 1,000 elements ----------------------------------------
  // The raw reference does the same work by hand: allocate the output from the stream-ordered pool,
  // launch the add, free the old output. The host row is the enqueue time alone (no sync inside).
  {
    auto x = nd::ones({1000}, gpu0);
    auto y = nd::zeros({1000}, gpu0);
    const int chain = 10000;
    const double t = bench::median_seconds([&] { for (int i = 0; i < chain; ++i) y = y + x; }, nd_sync, 1);
    const double t_host = bench::median_seconds([&] { for (int i = 0; i < chain; ++i) y = y + x; }, [] {}, 1);
    nd_sync();
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *rx, *ry;
    CHECK(cudaMallocAsync(&rx, 1000 * 4, stream));
    CHECK(cudaMallocAsync(&ry, 1000 * 4, stream));
    CHECK(cudaMemsetAsync(rx, 0, 1000 * 4, stream));
    CHECK(cudaMemsetAsync(ry, 0, 1000 * 4, stream));
    auto raw_chain = [&] {
      for (int i = 0; i < chain; ++i) {
        float* out;
        CHECK(cudaMallocAsync(&out, 1000 * 4, stream));
        bench::launch_add(ry, rx, out, 1000, stream);
        CHECK(cudaFreeAsync(ry, stream));
        ry = out;
      }
    };
    const double t_raw = bench::median_seconds(raw_chain, [&] { CHECK(cudaStreamSynchronize(stream)); }, 1);
    const double t_raw_host = bench::median_seconds(raw_chain, [] {}, 1);
    // The floor: the same chain of launches into two preallocated buffers, no allocation at all.
    float* rz;
    CHECK(cudaMallocAsync(&rz, 1000 * 4, stream));
    auto launch_chain = [&] {
      for (int i = 0; i < chain; ++i) {
        bench::launch_add(ry, rx, rz, 1000, stream);
        std::swap(ry, rz);
      }
    };
    const double t_launch = bench::median_seconds(launch_chain, [&] { CHECK(cudaStreamSynchronize(stream)); }, 1);
    const double t_launch_host = bench::median_seconds(launch_chain, [] {}, 1);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaFreeAsync(rz, stream));
    CHECK(cudaFreeAsync(rx, stream));
    CHECK(cudaFreeAsync(ry, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    rows.push_back(row("dispatch: chain of 10,000 adds (1,000 elements; vs raw launch + cudaMallocAsync)", "dispatch",
                       "us/op", 1, 0, t / chain, t_raw / chain, 0));
    rows.push_back(row("dispatch, host enqueue time only (vs raw)", "dispatch_host", "us/op", 1, 0, t_host / chain,
                       t_raw_host / chain, 0));
    rows.push_back(row("dispatch (vs the bare launch: no allocation at all)", "dispatch_launch", "us/op", 1, 0, t / chain,
                       t_launch / chain, 0));
    rows.push_back(row("dispatch, host enqueue time only (vs the bare launch)", "dispatch_launch_host", "us/op", 1, 0,
                       t_host / chain, t_launch_host / chain, 0));
  }

  // --- PyTorch on the same cases ----------------------------------------------------------------
  const auto peer = bench::run_peer("python3 " + peer_script);
  bench::attach_peer(rows, peer);
  std::printf("\n");
  bench::print_table(rows);
  if (peer.empty()) std::printf("\n(PyTorch peer not measured: python3 with torch not found)\n");
  return 0;
}
