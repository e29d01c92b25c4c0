// The copy-engine all-reduce of one process's GPUs (Note [copy-engine all-reduce] in
// cuda/peer_reduce.hpp).
#include "cuda/peer_reduce.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/launch.hpp"
#include "ndarray/core/half.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::cuda {
namespace {

// A run of one item inside a chunk: elements [offset, offset + length) of item `item`, at
// `position` in the chunk.
struct Piece {
  std::size_t item;
  std::int64_t offset, length, position;
};

// Up to kMaxPieces pieces of one chunk for one launch of the sum: piece p is elements [end[p - 1],
// end[p]) of the launch, at mine[p] on this GPU and at position[p] in each peer's scratch copy.
constexpr int kMaxPieces = 32;
template <class T>
struct SumList {
  T* mine[kMaxPieces];
  std::int64_t position[kMaxPieces];
  std::int64_t end[kMaxPieces];
  int count = 0;
};

// mine += the peers' copies, added in peer order: scratch holds `peers` copies of the chunk, of
// chunk_length elements each.
template <class T>
__global__ void add_peer_copies(SumList<T> list, const T* scratch, std::int64_t chunk_length, int peers) {
  const std::int64_t total = list.end[list.count - 1];
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    int lo = 0, hi = list.count - 1;  // the first piece whose end is past i
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (list.end[mid] > i) hi = mid;
      else lo = mid + 1;
    }
    const std::int64_t j = i - (lo ? list.end[lo - 1] : 0);
    const std::int64_t at = list.position[lo] + j;
    ComputeType<T> sum = list.mine[lo][j];
    for (int q = 0; q < peers; ++q) sum += static_cast<ComputeType<T>>(scratch[q * chunk_length + at]);
    list.mine[lo][j] = static_cast<T>(sum);
  }
}

template <class T>
void add_pieces(cudaStream_t stream, const std::vector<Piece>& pieces, const std::vector<void*>& mine,
                const void* scratch, std::int64_t chunk_length, int peers) {
  SumList<T> list;
  const auto flush = [&] {
    if (list.count > 0) {
      launch(stream, "all_reduce (copy engines)", list.end[list.count - 1], &add_peer_copies<T>, list,
             static_cast<const T*>(scratch), chunk_length, peers);
    }
    list.count = 0;
  };
  for (const Piece& piece : pieces) {
    const int c = list.count++;
    list.mine[c] = static_cast<T*>(mine[piece.item]) + piece.offset;
    list.position[c] = piece.position;
    list.end[c] = (c ? list.end[c - 1] : 0) + piece.length;
    if (list.count == kMaxPieces) flush();
  }
  flush();
}

// A device's events and copy lanes, made on first use and reused by every call (a wait refers to
// the record queued before it): `opened`, the point its stream reached (its buffers ready and its
// scratch made, then its chunk summed). The copies to each other GPU run on a lane of their own
// (lanes[to], of the communication stream's priority), so that several copy engines work at once;
// `done[to]` ends them.
struct PeerState {
  cudaEvent_t opened = nullptr;
  std::vector<cudaStream_t> lanes;  // by the index of the GPU copied to, in the call's devices
  std::vector<cudaEvent_t> done;
};
PeerState& peer_state(int device, std::size_t lanes) {
  static std::mutex mutex;
  static std::map<int, PeerState> all;
  const std::lock_guard lock(mutex);
  PeerState& s = all[device];
  DeviceGuard guard(device);
  const auto event = [] {
    cudaEvent_t e = nullptr;
    NDG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  };
  if (!s.opened) s.opened = event();
  while (s.lanes.size() < lanes) {
    s.lanes.push_back(make_priority_stream());
    s.done.push_back(event());
  }
  return s;
}

// Peer copies in one call where the runtime takes a batch; one by one where it does not.
void copy_all(cudaStream_t stream, const std::vector<void*>& dst, const std::vector<const void*>& src,
              const std::vector<std::size_t>& bytes) {
  if (dst.empty()) return;
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::size_t first = 0;
  if (cudaMemcpyBatchAsync(dst.data(), src.data(), bytes.data(), dst.size(), &attributes, &first, 1, stream) ==
      cudaSuccess) {
    return;
  }
  cudaGetLastError();  // not supported here: one copy at a time
  for (std::size_t c = 0; c < dst.size(); ++c) {
    NDG_CUDA_CHECK(cudaMemcpyAsync(dst[c], src[c], bytes[c], cudaMemcpyDefault, stream));
  }
}

}  // namespace

bool copy_engines_reach(const std::vector<int>& devices) {
  if (devices.size() < 2) return false;
  for (std::size_t a = 0; a < devices.size(); ++a) {
    for (std::size_t b = a + 1; b < devices.size(); ++b) {
      if (!enable_peer_access(devices[a], devices[b])) return false;
    }
  }
  return true;
}

bool copy_engine_all_reduce(const std::vector<int>& devices, const std::vector<AllReduceItem>& items, int slot) {
  if (items.empty()) return false;
  const DType dt = items[0].dtype;
  std::int64_t total = 0;
  for (const AllReduceItem& item : items) {
    if (item.dtype != dt) return false;
    total += item.count;
  }
  const std::size_t esize = dtype_size(dt);
  const bool small = static_cast<std::size_t>(total) * esize < kCopyEngineMinBytes;
  if (!is_floating(dt) || (slot == kOnStream && small) || !copy_engines_reach(devices)) return false;
  const auto n = static_cast<std::int64_t>(devices.size());
  // Chunk j: elements [bound(j), bound(j + 1)) of the concatenation, whole multiples of 64 (some
  // empty when there are few).
  const auto bound = [&](std::int64_t j) { return j == n ? total : (total * j / n) / 64 * 64; };
  const auto pieces_of = [&](std::int64_t j) {
    std::vector<Piece> pieces;
    const std::int64_t lo = bound(j), hi = bound(j + 1);
    std::int64_t start = 0;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const std::int64_t a = std::max(lo, start), b = std::min(hi, start + items[k].count);
      if (a < b) pieces.push_back({k, a - start, b - a, a - lo});
      start += items[k].count;
    }
    return pieces;
  };
  std::vector<std::vector<Piece>> chunks;  // by chunk
  std::vector<std::vector<void*>> buffers;  // by device, then item
  for (std::size_t r = 0; r < devices.size(); ++r) {
    chunks.push_back(pieces_of(static_cast<std::int64_t>(r)));
    buffers.emplace_back();
    for (const AllReduceItem& item : items) buffers.back().push_back(item.buffers[r]);
  }
  const auto at = [&](void* base, std::int64_t element) { return static_cast<char*>(base) + element * esize; };
  const auto length_of = [&](std::size_t j) {
    return bound(static_cast<std::int64_t>(j) + 1) - bound(static_cast<std::int64_t>(j));
  };

  std::vector<cudaStream_t> streams;
  std::vector<PeerState*> states;
  std::vector<void*> scratch(devices.size(), nullptr);  // on GPU j: the others' copies of chunk j
  for (std::size_t j = 0; j < devices.size(); ++j) {
    Device& dev = device(devices[j]);
    DeviceGuard guard(devices[j]);
    states.push_back(&peer_state(devices[j], devices.size()));
    streams.push_back(dev.collective_stream(slot));
    NDG_CUDA_CHECK(cudaMallocFromPoolAsync(&scratch[j], static_cast<std::size_t>(length_of(j) * (n - 1)) * esize + 1,
                                           dev.pool(), streams.back()));
    NDG_CUDA_CHECK(cudaEventRecord(states.back()->opened, streams.back()));
  }
  struct Copies {
    std::vector<void*> dst;
    std::vector<const void*> src;
    std::vector<std::size_t> bytes;
  };
  // Chunk j's pieces from `from`'s buffers to to_of(piece).
  const auto chunk_copies = [&](std::size_t j, std::size_t from, const auto& to_of) {
    Copies c;
    for (const Piece& p : chunks[j]) {
      c.dst.push_back(to_of(p));
      c.src.push_back(at(buffers[from][p.item], p.offset));
      c.bytes.push_back(static_cast<std::size_t>(p.length) * esize);
    }
    return c;
  };
  // Copies from GPU `from` to GPU `to` on from's lane for `to`, once both have reached `opened`
  // (`to`'s is skipped with waits_for_to false), ending at that lane's `done`.
  const auto copy_to = [&](std::size_t from, std::size_t to, bool waits_for_to, const Copies& c) {
    DeviceGuard guard(devices[from]);
    PeerState& s = *states[from];
    NDG_CUDA_CHECK(cudaStreamWaitEvent(s.lanes[to], s.opened, 0));
    if (waits_for_to) NDG_CUDA_CHECK(cudaStreamWaitEvent(s.lanes[to], states[to]->opened, 0));
    copy_all(s.lanes[to], c.dst, c.src, c.bytes);
    NDG_CUDA_CHECK(cudaEventRecord(s.done[to], s.lanes[to]));
  };
  // Each GPU writes its part of every other chunk into that chunk's GPU: GPU i's copy of chunk j is
  // copy i (i < j) or i - 1 (i > j) of j's scratch.
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j < devices.size(); ++j) {
      if (j == i) continue;
      const auto copy = static_cast<std::int64_t>(i < j ? i : i - 1);
      copy_to(i, j, true, chunk_copies(j, i, [&](const Piece& p) {
                return at(scratch[j], copy * length_of(j) + p.position);
              }));
    }
  }
  // Each GPU adds the others' copies into its chunk, in the order of the devices.
  for (std::size_t j = 0; j < devices.size(); ++j) {
    DeviceGuard guard(devices[j]);
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (i != j) NDG_CUDA_CHECK(cudaStreamWaitEvent(streams[j], states[i]->done[j], 0));
    }
    dispatch_floating(dt, "all_reduce", [&](auto tag) {
      add_pieces<decltype(tag)>(streams[j], chunks[j], buffers[j], scratch[j], length_of(j), static_cast<int>(n - 1));
    });
    NDG_CUDA_CHECK(cudaFreeAsync(scratch[j], streams[j]));
    NDG_CUDA_CHECK(cudaEventRecord(states[j]->opened, streams[j]));  // now: the chunk summed
  }
  // Each GPU writes its summed chunk into the others' buffers; each waits for all of them.
  for (std::size_t j = 0; j < devices.size(); ++j) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (i == j) continue;
      copy_to(j, i, false, chunk_copies(j, j, [&](const Piece& p) { return at(buffers[i][p.item], p.offset); }));
    }
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    DeviceGuard guard(devices[i]);
    for (std::size_t j = 0; j < devices.size(); ++j) {
      if (j != i) NDG_CUDA_CHECK(cudaStreamWaitEvent(streams[i], states[j]->done[i], 0));
    }
  }
  return true;
}

}  // namespace mx::cuda
