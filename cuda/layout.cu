// GPU copies through strided views: gather (a view made contiguous) and scatter (written into one).
// The op families are in cuda/ops/.
#include "cuda/kernels.hpp"

#include <cstring>

#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::cuda {
namespace {

// gather: out[i] = in[index(i)]; scatter: out[index(i)] = in[i].
template <bool kScatter, class T>
__global__ void move_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    if constexpr (kScatter) out[off[0]] = in[i];
    else out[i] = in[off[0]];
  }
}

template <int N>
std::int64_t index_size(const StridedIndex<N>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

template <bool kScatter>
void move(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, kScatter ? "scatter" : "gather", index_size(index), &move_elements<kScatter, T>, static_cast<T*>(out),
           static_cast<const T*>(in), index, index_size(index));
  });
}

}  // namespace

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  move<false>(stream, dt, index, in, out);
}
void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  move<true>(stream, dt, index, in, out);
}

namespace {

// Up to kMaxCopies copies of one launch, as one virtual concatenation of words of type W: copy c
// holds words [end[c - 1], end[c]).
constexpr int kMaxCopies = 48;
template <class W>
struct CopyList {
  W* dst[kMaxCopies];
  const W* src[kMaxCopies];
  std::int64_t end[kMaxCopies];
  int count = 0;
};

// Launched as a programmatic dependent launch in a captured graph (cuda/graph.cpp), it lets the
// next kernel be launched at once and waits for the kernel ahead of it before reading; launched
// plainly, the wait returns at once.
template <class W>
__global__ void copy_words(CopyList<W> list) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const std::int64_t total = list.end[list.count - 1];
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    int lo = 0, hi = list.count - 1;  // the first copy whose end is past i
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (list.end[mid] > i) hi = mid;
      else lo = mid + 1;
    }
    list.dst[lo][i - (lo ? list.end[lo - 1] : 0)] = list.src[lo][i - (lo ? list.end[lo - 1] : 0)];
  }
}

// The items in words of W (every address and size a multiple of sizeof(W)).
template <class W>
void copy_lists(cudaStream_t stream, const std::vector<CopyItem>& items) {
  CopyList<W> list;
  const auto flush = [&] {
    if (list.count > 0) launch(stream, "copy_batch", list.end[list.count - 1], &copy_words<W>, list);
    list.count = 0;
  };
  for (const CopyItem& item : items) {
    if (item.bytes == 0) continue;
    const int c = list.count++;
    list.dst[c] = static_cast<W*>(item.dst);
    list.src[c] = static_cast<const W*>(item.src);
    list.end[c] = (c ? list.end[c - 1] : 0) + static_cast<std::int64_t>(item.bytes / sizeof(W));
    if (list.count == kMaxCopies) flush();
  }
  flush();
}

}  // namespace

bool kernels_wait_on_dependencies() {
  cudaFuncAttributes attributes{};
  NDG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, copy_words<unsigned char>));
  return attributes.ptxVersion >= 90;
}

void copy_node_params(const std::vector<CopyItem>& items, CopyNodeParams& out) {
  static_assert(CopyNodeParams::kMaxItems == kMaxCopies && sizeof(CopyList<unsigned char>) <= sizeof out.argument);
  if (items.empty() || items.size() > CopyNodeParams::kMaxItems) throw Error("copy_node_params: 1 to 48 copies");
  CopyList<unsigned char> list;
  for (const CopyItem& item : items) {
    const int c = list.count++;
    list.dst[c] = static_cast<unsigned char*>(item.dst);
    list.src[c] = static_cast<const unsigned char*>(item.src);
    list.end[c] = (c ? list.end[c - 1] : 0) + static_cast<std::int64_t>(item.bytes);
  }
  std::memcpy(out.argument, &list, sizeof list);
  out.arguments[0] = out.argument;
  out.params = {};
  out.params.func = reinterpret_cast<void*>(&copy_words<unsigned char>);
  out.params.gridDim = dim3(blocks_for(list.end[list.count - 1]));
  out.params.blockDim = dim3(kThreads);
  out.params.kernelParams = out.arguments;
}

void copy_batch(cudaStream_t stream, const std::vector<CopyItem>& items) {
  std::uintptr_t bits = 0;
  for (const CopyItem& item : items) {
    bits |= reinterpret_cast<std::uintptr_t>(item.dst) | reinterpret_cast<std::uintptr_t>(item.src) | item.bytes;
  }
  if (bits % 16 == 0) return copy_lists<uint4>(stream, items);
  if (bits % 4 == 0) return copy_lists<std::uint32_t>(stream, items);
  copy_lists<unsigned char>(stream, items);
}

}  // namespace mx::cuda
