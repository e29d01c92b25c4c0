// hybridize() benchmarks: each case eager and hybridized (hybridize(true, static_alloc, static_shape)),
// beside PyTorch eager and PyTorch with the same work captured in a CUDA graph (bench/torch_peer.py
// hybridize), measured in one run. Float32; the MLP is 784-256-256-10 (Dense relu, Dense relu, Dense).
//   - MLP forward at batch 1 and 64 on gpu(0): microseconds per forward (no autograd).
//   - Training step at batch 256 on gpu(0): record, forward, SoftmaxCrossEntropyLoss, backward,
//     trainer.step (SGD, lr 0.1). The data stay on the GPU.
//   - Tiny add chain on gpu(0): a block whose forward is y = x + x, then 49 times y = y + x, on a
//     (4,) array: microseconds per add, all host dispatch.
//   - On cpu(0): the MLP forward at batch 64, the training step (one batch, and 4 in turn) and a
//     chain of 10 elementwise ops on 1M floats (no peer), both modes on one block, each also eager
//     against itself, the host's spread. Without a GPU only these rows run.
// Each hybridized row's "raw" column is the same case run eagerly, so ndgluon/raw is the speed-up
// of hybridize (on the CPU, its target 1.0 says hybridized is never slower). Its PyTorch column
// is the CUDA-graph replay, which includes copying the new input into the graph's static input
// (the training step: input and labels), as users of torch.cuda.graph do.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

#include <ndarray/ops/linalg_kernels.hpp>
#include <ndarray/ops/cpu_team.hpp>

#include "bench/bench_util.hpp"
#include "bench/peer_cli.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;

namespace {

constexpr int kAdds = 50;               // ops in the tiny add chain
constexpr std::int64_t kStepBatch = 256;  // training step batch

void nd_sync() { nd::waitall(); }

// The MLP 784-256-256-10 on ctx, hybridized with static_alloc and static_shape when asked.
nn::Sequential mlp(mx::Context ctx, bool hybridized) {
  nn::Sequential net;
  net.add(nn::Dense(256, "relu"), nn::Dense(256, "relu"), nn::Dense(10));
  net.initialize(mx::init::Xavier(), ctx);
  if (hybridized) net.hybridize(true, true, true);
  return net;
}

// y = x + x, then y = y + x until kAdds adds: a forward of tiny ops only.
class AddChain : public mx::gluon::Block {
 public:
  AddChain() : Block("add_chain") {}
  nd::NDArray forward(const nd::NDArray& x) override {
    nd::NDArray y = x + x;
    for (int i = 1; i < kAdds; ++i) y = y + x;
    return y;
  }
};

using SharedMlp = std::shared_ptr<nn::Sequential>;
SharedMlp shared_mlp(mx::Context ctx, bool hybridized) { return std::make_shared<nn::Sequential>(mlp(ctx, hybridized)); }

// A call of net's forward on a (batch, 784) input on ctx: the same array every call (inputs 1: a
// static input, which a hybridized replay reads in place), or the next of `inputs` arrays in turn
// (each copied into the graph's input). The first call traces.
std::function<void()> forward_call(SharedMlp net, mx::Context ctx, std::int64_t batch, int inputs = 1) {
  std::vector<nd::NDArray> xs;
  for (int i = 0; i < inputs; ++i) xs.push_back(nd::random::uniform(0, 1, {batch, 784}, ctx));
  auto next = std::make_shared<std::size_t>(0);
  return [net, xs, next] {
    nd::NDArray y = (*net)(xs[*next]);
    *next = (*next + 1) % xs.size();
  };
}

// A training step of net (batch kStepBatch, SGD lr 0.1) on ctx with its trainer and data; the same
// code for both modes. With `batches` > 1 each step takes the next of that many input batches, as
// a loop over a data set does.
std::function<void()> training_step_call(const SharedMlp& net, mx::Context ctx, int batches = 1) {
  struct Step {
    nn::Sequential net;
    mx::gluon::Trainer trainer;
    mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
    nd::NDArray x, label;
    std::vector<nd::NDArray> xs{};
    std::size_t next = 0;
  };
  mx::gluon::Trainer trainer(net->collect_params(), "sgd", {{"learning_rate", 0.1}});
  // Labels 0..9: uniform in [0, 9.99), truncated.
  auto s = std::make_shared<Step>(Step{*net, std::move(trainer), mx::gluon::loss::SoftmaxCrossEntropyLoss(),
                                       nd::random::uniform(0, 1, {kStepBatch, 784}, ctx),
                                       nd::random::uniform(0, 9.99, {kStepBatch}, ctx)
                                           .astype(mx::DType::int32)
                                           .astype(mx::DType::float32)});
  for (int b = 1; b < batches; ++b) s->xs.push_back(nd::random::uniform(0, 1, {kStepBatch, 784}, ctx));
  if (batches > 1) s->xs.push_back(s->x);
  return [s] {
    nd::NDArray l;
    if (!s->xs.empty()) s->x = s->xs[s->next++ % s->xs.size()];
    {
      auto recording = mx::autograd::record();
      l = s->loss(s->net(s->x), s->label);
    }
    l.backward();
    s->trainer.step(kStepBatch);
  };
}

// 10 elementwise ops of several kinds on one array (an activation block's arithmetic).
class ElementwiseChain : public mx::gluon::Block {
 public:
  ElementwiseChain() : Block("elementwise_chain") {}
  nd::NDArray forward(const nd::NDArray& x) override {
    nd::NDArray y = x * 2.0 + 1.0;
    y = (y.tanh() * x - 0.5).sigmoid() * 1.5 + x;
    return y.relu() * y;
  }
};

// A call of the chain on a static input of n floats on ctx.
std::function<void()> elementwise_call(std::shared_ptr<ElementwiseChain> chain, mx::Context ctx, std::int64_t n) {
  const nd::NDArray x = nd::random::uniform(0, 1, {n}, ctx);
  return [chain, x] { nd::NDArray y = (*chain)(x); };
}

// Seconds per add of the chain on ctx, in dtype.
double add_chain_seconds_per_op(mx::Context ctx, bool hybridized, int reps, mx::DType dtype = mx::DType::float32) {
  AddChain chain;
  if (hybridized) chain.hybridize(true, true, true);
  const nd::NDArray x = nd::random::uniform(0, 1, {4}, ctx).astype(dtype);
  nd::NDArray y;
  return bench::median_seconds([&] { y = chain(x); }, nd_sync, reps) / kAdds;
}

// The rows of one case: eager (PyTorch eager as its peer) and hybridized (eager as its raw column,
// PyTorch's CUDA graph as its peer). limit: the hybridized row's target, in `metric`. peer_key ""
// (the cpu(0) cases) leaves the PyTorch columns empty and sets the target ndgluon/raw >= 1.0:
// hybridized at least as fast as eager.
void add_case(std::vector<bench::Row>& rows, const std::string& name, const std::string& metric,
              const std::string& peer_key, double eager_seconds, double hybridized_seconds, double limit = 0) {
  bench::Row eager;
  eager.name = name + ", eager";
  eager.peer_key = peer_key;
  eager.metric = metric;
  eager.unit = 0;
  eager.higher_is_better = false;
  eager.ndgluon = eager.from_seconds(eager_seconds);
  rows.push_back(eager);
  bench::Row hybridized = eager;
  hybridized.name = name + (peer_key.empty() ? ", hybridized (vs eager)" : ", hybridized (vs eager; PyTorch: CUDA graph)");
  hybridized.peer_key = peer_key.empty() ? "" : peer_key + "_graph";
  hybridized.ndgluon = hybridized.from_seconds(hybridized_seconds);
  hybridized.raw = eager.ndgluon;
  hybridized.limit = limit;
  if (peer_key.empty()) hybridized.target = 1.0;  // the CPU rows: never slower than eager
  rows.push_back(hybridized);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybridize() on gpu(0) and cpu(0): MLP 784-256-256-10 forward (batch 1, 64), training step (batch "
               "256, SGD) and a chain of 50 tiny adds, eager and hybridized, against PyTorch eager and PyTorch "
               "CUDA graphs, measured in one run. Run from the source root: "
               "build/bench/hybridize_bench bench/torch_peer.py"};
  std::string peer_script;
  bool cpu_only = false;
  app.add_flag("--cpu-only", cpu_only, "run the cpu(0) rows alone, without the GPU rows and PyTorch");
  if (const std::optional<int> exit_code =
          bench::parse_peer_command_line(app, argc, argv, peer_script, /*needs_gpu=*/false)) {
    return *exit_code;
  }
  const bool have_gpu = !cpu_only && mx::num_gpus() > 0;
  const mx::Context gpu0 = mx::gpu(0), cpu0 = mx::cpu(0);
  std::printf("device: %s, hybridize: ndgluon eager and hybridized vs PyTorch eager and CUDA graph; "
              "cpu(0) rows on %u hardware threads, a team of %d\n",
              have_gpu ? mx::gpu_name(0).c_str() : cpu_only ? "cpu(0) rows only (--cpu-only)" : "no GPU (cpu(0) rows only)",
              std::thread::hardware_concurrency(), mx::op::cpu_team());
  std::vector<bench::Row> rows;

  if (have_gpu) {
    for (const std::int64_t batch : {1, 64}) {
      // A static input (PyTorch: its graph replayed on the static input as it is), then a new
      // input each call (PyTorch: copied into the static input before each replay).
      const std::string name = "MLP 784-256-256-10 forward, batch " + std::to_string(batch);
      const std::string key = "mlp" + std::to_string(batch);
      const auto [eager, hybridized] =
          bench::paired_median_seconds(forward_call(shared_mlp(gpu0, false), gpu0, batch),
                                       forward_call(shared_mlp(gpu0, true), gpu0, batch), nd_sync, 1000);
      add_case(rows, name + ", static input", "us/forward", key + "_static", eager, hybridized, batch == 1 ? 6.0 : 0.0);
      if (batch == 1) {
        // Which side sets the pace of a replay: the host's part alone is 200 calls queued without
        // waiting (the GPU's queue holds them), timed up to the last call's return.
        const auto call = forward_call(shared_mlp(gpu0, true), gpu0, batch);
        std::vector<double> host;
        for (int t = 0; t <= 9; ++t) {  // trial 0 warms up
          nd_sync();
          const auto start = std::chrono::steady_clock::now();
          for (int r = 0; r < 200; ++r) call();
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 200;
          if (t > 0) host.push_back(s);
        }
        nd_sync();
        std::sort(host.begin(), host.end());
        std::printf("MLP forward, batch 1, static input, hybridized: the host's part %.3f us/forward (median of 9 "
                    "trials of 200 calls), the whole %.3f us/forward\n",
                    host[host.size() / 2] * 1e6, hybridized * 1e6);
      }
      const auto [eager8, hybridized8] =
          bench::paired_median_seconds(forward_call(shared_mlp(gpu0, false), gpu0, batch, 8),
                                       forward_call(shared_mlp(gpu0, true), gpu0, batch, 8), nd_sync, 1000);
      add_case(rows, name + ", 8 inputs in turn", "us/forward", key, eager8, hybridized8, batch == 1 ? 6.0 : 0.0);
    }
    {
      const auto [eager, hybridized] =
          bench::paired_median_seconds(training_step_call(shared_mlp(gpu0, false), gpu0),
                                       training_step_call(shared_mlp(gpu0, true), gpu0), nd_sync, 200);
      add_case(rows, "training step, MLP 784-256-256-10, batch 256, SGD", "us/step", "step256", eager, hybridized, 100.0);
    }
    {
      const double eager = add_chain_seconds_per_op(gpu0, false, 1000);
      const double hybridized = add_chain_seconds_per_op(gpu0, true, 1000);
      add_case(rows, "tiny add chain, 50 adds on (4,)", "us/op", "add_chain", eager, hybridized, 1.0);
    }
    {  // the 16-bit types fuse as float32 does (ndarray/graph/fused.hpp)
      const double eager = add_chain_seconds_per_op(gpu0, false, 1000, mx::DType::bfloat16);
      const double hybridized = add_chain_seconds_per_op(gpu0, true, 1000, mx::DType::bfloat16);
      add_case(rows, "tiny add chain, 50 adds on (4,), bfloat16", "us/op", "", eager, hybridized, 1.0);
    }
  }
  // cpu(0): the two modes run the same GEMMs and differ by a few percent at most, less than a
  // many-core host's spread between trials, so many short trials in turn. Both modes run one block
  // with its parameters and inputs, switching mode at each trial (its first call, untimed, traces
  // again): two blocks hold their weights and buffers at different addresses, which alone moved
  // these cases by up to 10% on a 16-core host (two eager blocks doing the same work: 0.965-1.107).
  // Each case is also timed eager against itself, how far apart two runs of the same code land on
  // this host: the resolution of the hybridized/eager ratio. The ratio is also taken per pair of
  // trials run back to back (bench::Paired), which the host's slow drifts do not move.
  constexpr int kCpuTrials = 101;
  struct CpuCase {
    const char* name;
    const char* metric;
    int reps;
    std::shared_ptr<mx::gluon::Block> block;
    std::function<void()> call;
  };
  const auto mlp_forward = shared_mlp(cpu0, false), mlp_step = shared_mlp(cpu0, false),
             mlp_steps = shared_mlp(cpu0, false);
  const auto chain = std::make_shared<ElementwiseChain>();
  const std::vector<CpuCase> cpu_cases = {
      {"cpu(0): MLP 784-256-256-10 forward, batch 64", "us/forward", 50, mlp_forward,
       forward_call(mlp_forward, cpu0, 64)},
      {"cpu(0): training step, MLP 784-256-256-10, batch 256, SGD", "us/step", 5, mlp_step,
       training_step_call(mlp_step, cpu0)},
      {"cpu(0): training step, MLP 784-256-256-10, batch 256, SGD, 4 batches in turn", "us/step", 8, mlp_steps,
       training_step_call(mlp_steps, cpu0, 4)},
      {"cpu(0): 10 elementwise ops on 1M floats", "us/call", 5, chain,
       elementwise_call(chain, cpu0, std::int64_t{1} << 20)},
  };
  for (const CpuCase& c : cpu_cases) {
    const auto in_mode = [&c](bool hybridized) {
      return [&c, hybridized] {
        if (c.block->is_hybridized() != hybridized) c.block->hybridize(hybridized, true, true);
        c.call();
      };
    };
    constexpr int kWarm = 2;  // a trace, then a replay that finds its buffers free
    const bench::Paired modes = bench::paired_seconds(in_mode(false), in_mode(true), nd_sync, c.reps, kCpuTrials, kWarm);
    add_case(rows, c.name, c.metric, "", modes.a, modes.b);
    const bench::Paired same = bench::paired_seconds(in_mode(false), in_mode(false), nd_sync, c.reps, kCpuTrials, kWarm);
    std::printf("%s: hybridized over eager %.3fx of the medians; per pair of trials %.4fx (quartiles %.4f-%.4f, "
                "%d pairs); eager against itself %.3fx of the medians, per pair %.4fx (quartiles %.4f-%.4f)\n",
                c.name, modes.a / modes.b, modes.ratio, modes.ratio_low, modes.ratio_high, modes.pairs,
                same.a / same.b, same.ratio, same.ratio_low, same.ratio_high);
  }

  // cpu(0)'s products split over ndgluon's OpenMP team (the default with any OpenBLAS but the
  // OpenMP build) against handed to OpenBLAS's own threads (Note [one thread team],
  // ndarray/ops/linalg.cpp), on the eager training step. With the OpenMP build both run the same
  // code (the ratio is the host's spread); run the program with the pthread build first on the
  // library path to see what the split saves (bench/RESULTS.md, "One thread team"). With that
  // build the baseline switches OpenBLAS's thread count at each trial, which costs its pool more
  // than one setting kept for a whole process does (NDG_CPU_GEMM_SPLIT=0): a bound, not a figure.
  {
    const auto net = shared_mlp(cpu0, false);
    const std::function<void()> step = training_step_call(net, cpu0);
    const auto split = [&step](bool on) {
      return [&step, on] {
        mx::op::set_cpu_gemm_split(on);
        step();
      };
    };
    const bench::Paired p = bench::paired_seconds(split(false), split(true), nd_sync, 5, kCpuTrials, 2);
    mx::op::set_cpu_gemm_split(true);
    bench::Row row;
    row.name = "cpu(0): training step, batch 256, products split over ndgluon's team (vs OpenBLAS's threads; " +
               mx::op::openblas_threading() + " OpenBLAS)";
    row.metric = "us/step";
    row.unit = 0;
    row.higher_is_better = false;
    row.ndgluon = row.from_seconds(p.b);
    row.raw = row.from_seconds(p.a);
    row.target = 1.0;
    rows.push_back(row);
    std::printf("cpu(0) products split over the team (%s OpenBLAS): per pair of trials %.4fx of OpenBLAS's threads "
                "(quartiles %.4f-%.4f, %d pairs)\n",
                mx::op::openblas_threading().c_str(), p.ratio, p.ratio_low, p.ratio_high, p.pairs);
  }

  if (have_gpu) bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " hybridize"));
  std::printf("\n");
  bench::print_table(rows);
  return 0;
}
