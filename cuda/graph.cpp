// Backend::capture on a GPU: the copies before the work, the work and the copies after it are
// captured from the device's stream into one CUDA graph (in relaxed mode, so that the capture's
// own memory may come from cudaMalloc) and instantiated. A launch points the copy nodes at the
// current arrays where they changed, then launches the whole with one call.
//
// On Hopper the small copies and FullyConnected's few-rows kernel are programmatic dependent
// launches, so in the graph each of them is launched while the kernel ahead of it still runs (a
// programmatic edge) and waits for it on the GPU: a replay of a batch-1 MLP is five such kernels.
#include "cuda/graph.hpp"

#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/kernels.hpp"
#include "cuda/memory.hpp"

namespace mx::cuda {
namespace {

// The copies on one side of the work: the small ones (kSmallCopy bytes or fewer) by one kernel,
// which starts sooner than a memcpy (a replay of a batch-1 forward is a few µs, its copies a few
// hundred bytes); the others by a memcpy each, on the copy engines.
constexpr std::size_t kSmallCopy = 64 << 10;

class CopySide {
 public:
  // Queues the copies on the capturing stream and keeps the nodes they become.
  void capture(cudaStream_t stream, bool dependent_launch, const std::vector<CopyItem>& items) {
    items_ = items;
    std::vector<CopyItem> small;
    for (const CopyItem& c : items) {
      if (is_small(c, small)) {
        small.push_back(c);
        continue;
      }
      NDG_CUDA_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice, stream));
      memcpy_nodes_.push_back(last_node(stream));
    }
    if (small.empty()) return;
    kernel_params_ = std::make_unique<CopyNodeParams>();
    copy_node_params(small, *kernel_params_);
    const cudaKernelNodeParams& p = kernel_params_->params;
    const DependentLaunch launch(p.gridDim, p.blockDim, stream, dependent_launch);
    NDG_CUDA_CHECK(cudaLaunchKernelExC(&launch.config, p.func, p.kernelParams));
    kernel_node_ = last_node(stream);
  }

  // Points the instantiated nodes at `wanted` where it differs from what they copy now.
  void update(cudaGraphExec_t exec, const std::vector<CopyItem>& wanted) {
    if (wanted.size() != items_.size()) throw Error("captured graph: launched with another number of copies");
    bool small_changed = false;
    std::vector<CopyItem> small;
    std::size_t next_memcpy = 0;
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      const CopyItem& w = wanted[i];
      if (w.bytes != items_[i].bytes) throw Error("captured graph: launched with a copy of another size");
      const bool same = w.dst == items_[i].dst && w.src == items_[i].src;
      if (is_small(w, small)) {
        small.push_back(w);
        small_changed = small_changed || !same;
      } else {
        const cudaGraphNode_t node = memcpy_nodes_.at(next_memcpy++);
        if (!same) {
          NDG_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, node, w.dst, w.src, w.bytes, cudaMemcpyDeviceToDevice));
        }
      }
      items_[i] = w;
    }
    if (small_changed) {
      copy_node_params(small, *kernel_params_);
      NDG_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec, kernel_node_, &kernel_params_->params));
    }
  }

 private:
  static bool is_small(const CopyItem& c, const std::vector<CopyItem>& small_so_far) {
    return c.bytes <= kSmallCopy && small_so_far.size() < CopyNodeParams::kMaxItems;
  }
  // The node that the last call queued on the capturing stream became.
  static cudaGraphNode_t last_node(cudaStream_t stream) {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* nodes = nullptr;
    std::size_t count = 0;
    NDG_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &nodes, nullptr, &count));
    if (status != cudaStreamCaptureStatusActive || count != 1) throw DeviceError("captured graph: no copy node");
    return nodes[0];
  }

  std::vector<CopyItem> items_;
  std::vector<cudaGraphNode_t> memcpy_nodes_;
  cudaGraphNode_t kernel_node_ = nullptr;
  std::unique_ptr<CopyNodeParams> kernel_params_;
};

class CudaGraph final : public CapturedWork {
 public:
  CudaGraph(int id, std::unique_ptr<CaptureMemory> memory) : id_(id), memory_(std::move(memory)) {}
  ~CudaGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }

  // Captures before, work and after on gpu(id_)'s stream. Returns false where the stream's capture
  // cannot hold the work (a call it does not allow), with nothing left of it.
  bool capture(const std::function<void()>& work, const std::vector<CopyItem>& before,
               const std::vector<CopyItem>& after) {
    const cudaStream_t stream = device(id_).stream();
    const bool dependent = device(id_).dependent_launch();
    const auto drop = [&] {  // what the capture recorded, and its sticky error
      if (graph_) cudaGraphDestroy(graph_);
      graph_ = nullptr;
      cudaGetLastError();
    };
    NDG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    try {
      const CaptureMemoryScope scope(memory_.get());
      before_.capture(stream, dependent, before);
      work();
      after_.capture(stream, dependent, after);
    } catch (const DeviceError&) {
      // A call the capture cannot hold (the stream's capture is invalidated): end it, drop it.
      cudaStreamEndCapture(stream, &graph_);
      drop();
      return false;
    } catch (...) {
      cudaStreamEndCapture(stream, &graph_);
      drop();
      throw;
    }
    if (cudaStreamEndCapture(stream, &graph_) != cudaSuccess || !graph_) {
      drop();
      return false;
    }
    if (cudaGraphInstantiate(&exec_, graph_, 0) != cudaSuccess) {  // out of memory, say: no graph
      exec_ = nullptr;
      drop();
      return false;
    }
    return true;
  }

  void launch(const std::vector<CopyItem>& before, const std::vector<CopyItem>& after) override {
    DeviceGuard guard(id_);
    Device& dev = device(id_);
    dev.set_last_op("captured graph");
    before_.update(exec_, before);
    after_.update(exec_, after);
    NDG_CUDA_CHECK(cudaGraphLaunch(exec_, dev.stream()));
  }

 private:
  int id_;
  std::unique_ptr<CaptureMemory> memory_;  // destroyed after the graph (declared first)
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  CopySide before_, after_;
};

}  // namespace

std::unique_ptr<CapturedWork> capture(int id, const std::function<void()>& work, const std::vector<CopyItem>& before,
                                      const std::vector<CopyItem>& after) {
  DeviceGuard guard(id);
  auto graph = std::make_unique<CudaGraph>(id, std::make_unique<CaptureMemory>(id));
  if (!graph->capture(work, before, after)) return nullptr;
  return graph;
}

}  // namespace mx::cuda
