// Backend::capture on a GPU: the work is captured from the device's stream into a CUDA graph (in
// relaxed mode, so that the capture's own memory may come from cudaMalloc), wrapped between memcpy
// nodes for the copies before and after it, and instantiated. A launch points the memcpy nodes at
// the current arrays where they changed, then launches the whole with one call.
#include "cuda/graph.hpp"

#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/memory.hpp"

namespace mx::cuda {
namespace {

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
    for (const CopyItem& c : before) before_nodes_.push_back(add_copy(c, nullptr, 0));
    cudaGraphNode_t child = nullptr;
    NDG_CUDA_CHECK(cudaGraphAddChildGraphNode(&child, graph_, before_nodes_.data(), before_nodes_.size(), body_));
    for (const CopyItem& c : after) after_nodes_.push_back(add_copy(c, &child, 1));
    NDG_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
    before_ = before;
    after_ = after;
  }

  void launch(const std::vector<CopyItem>& before, const std::vector<CopyItem>& after) override {
    DeviceGuard guard(id_);
    Device& dev = device(id_);
    dev.set_last_op("captured graph");
    update(before_nodes_, before_, before);
    update(after_nodes_, after_, after);
    NDG_CUDA_CHECK(cudaGraphLaunch(exec_, dev.stream()));
  }

 private:
  cudaGraphNode_t add_copy(const CopyItem& c, const cudaGraphNode_t* deps, std::size_t n) {
    cudaGraphNode_t node = nullptr;
    NDG_CUDA_CHECK(cudaGraphAddMemcpyNode1D(&node, graph_, deps, n, c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice));
    return node;
  }

  void update(const std::vector<cudaGraphNode_t>& nodes, std::vector<CopyItem>& current,
              const std::vector<CopyItem>& wanted) {
    if (wanted.size() != nodes.size()) throw Error("captured graph: launched with another number of copies");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const CopyItem& w = wanted[i];
      if (w.bytes != current[i].bytes) throw Error("captured graph: launched with a copy of another size");
      if (w.dst == current[i].dst && w.src == current[i].src) continue;
      NDG_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec_, nodes[i], w.dst, w.src, w.bytes, cudaMemcpyDeviceToDevice));
      current[i] = w;
    }
  }

  int id_;
  std::unique_ptr<CaptureMemory> memory_;  // destroyed after the graph (declared first)
  cudaGraph_t body_ = nullptr, graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<cudaGraphNode_t> before_nodes_, after_nodes_;
  std::vector<CopyItem> before_, after_;
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
