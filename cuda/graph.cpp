// Backend::capture on a GPU: the work is captured from the device's stream into a CUDA graph (in
// relaxed mode, so that the capture's own memory may come from cudaMalloc), wrapped between copy
// nodes for the copies before and after it, and instantiated. A launch points the copy nodes at
// the current arrays where they changed, then launches the whole with one call.
#include "cuda/graph.hpp"

#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/kernels.hpp"
#include "cuda/memory.hpp"

namespace mx::cuda {
namespace {

// The copies on one side of the body: the small ones (kSmallCopy bytes or fewer) by one kernel
// node, which starts sooner than a memcpy node (a replay of a batch-1 forward is a few µs, its
// copies a few hundred bytes); the others by a memcpy node each, on the copy engines.
constexpr std::size_t kSmallCopy = 64 << 10;

class CopySide {
 public:
  void add(cudaGraph_t graph, const std::vector<CopyItem>& items, const cudaGraphNode_t* deps, std::size_t n) {
    items_ = items;
    std::vector<CopyItem> small;
    for (const CopyItem& c : items) {
      if (c.bytes <= kSmallCopy && small.size() < CopyNodeParams::kMaxItems) {
        small.push_back(c);
        continue;
      }
      cudaGraphNode_t node = nullptr;
      NDG_CUDA_CHECK(cudaGraphAddMemcpyNode1D(&node, graph, deps, n, c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice));
      memcpy_nodes_.push_back(node);
    }
    if (!small.empty()) {
      kernel_params_ = std::make_unique<CopyNodeParams>();
      copy_node_params(small, *kernel_params_);
      NDG_CUDA_CHECK(cudaGraphAddKernelNode(&kernel_node_, graph, deps, n, &kernel_params_->params));
    }
  }
  // The nodes, for what comes after them.
  std::vector<cudaGraphNode_t> nodes() const {
    std::vector<cudaGraphNode_t> out = memcpy_nodes_;
    if (kernel_node_) out.push_back(kernel_node_);
    return out;
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
      if (w.bytes <= kSmallCopy && small.size() < CopyNodeParams::kMaxItems) {
        small.push_back(w);
        small_changed = small_changed || !same;
      } else {
        const cudaGraphNode_t node = memcpy_nodes_[next_memcpy++];
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
    if (body_) cudaGraphDestroy(body_);
  }

  // Builds body -> the outer graph: copies before, the body as a child graph, copies after.
  void build(cudaGraph_t body, const std::vector<CopyItem>& before, const std::vector<CopyItem>& after) {
    body_ = body;
    NDG_CUDA_CHECK(cudaGraphCreate(&graph_, 0));
    before_.add(graph_, before, nullptr, 0);
    const std::vector<cudaGraphNode_t> first = before_.nodes();
    cudaGraphNode_t child = nullptr;
    NDG_CUDA_CHECK(cudaGraphAddChildGraphNode(&child, graph_, first.data(), first.size(), body_));
    after_.add(graph_, after, &child, 1);
    NDG_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
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
  cudaGraph_t body_ = nullptr, graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  CopySide before_, after_;
};

}  // namespace

std::unique_ptr<CapturedWork> capture(int id, const std::function<void()>& work, const std::vector<CopyItem>& before,
                                      const std::vector<CopyItem>& after) {
  DeviceGuard guard(id);
  const cudaStream_t stream = device(id).stream();
  auto memory = std::make_unique<CaptureMemory>(id);
  cudaGraph_t body = nullptr;
  const auto drop_body = [&] {  // what the capture recorded, and its sticky error
    if (body) cudaGraphDestroy(body);
    cudaGetLastError();
  };
  NDG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    const CaptureMemoryScope scope(memory.get());
    work();
  } catch (const DeviceError&) {
    // A call the capture cannot hold (the stream's capture is invalidated): end it, drop it.
    cudaStreamEndCapture(stream, &body);
    drop_body();
    return nullptr;
  } catch (...) {
    cudaStreamEndCapture(stream, &body);
    drop_body();
    throw;
  }
  const cudaError_t status = cudaStreamEndCapture(stream, &body);
  if (status != cudaSuccess || !body) {
    drop_body();
    return nullptr;
  }
  auto graph = std::make_unique<CudaGraph>(id, std::move(memory));
  try {
    graph->build(body, before, after);
  } catch (const DeviceError&) {  // no instantiation (out of memory, say): no graph, nothing lost
    cudaGetLastError();
    return nullptr;
  }
  return graph;
}

}  // namespace mx::cuda
