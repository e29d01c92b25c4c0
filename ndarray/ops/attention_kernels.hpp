#pragma once
// The attention family's attributes, element functions and GPU launches: MXNet's interleaved
// attention products (ndarray/ops/attention.cpp has the ops, the CPU loops and the products;
// cuda/ops/attention.cu the GPU gathers). Internal.
//
// Note [interleaved layout]. GluonNLP's BERT keeps each head's projections side by side on the
// last axis of a time-major array: queries_keys_values (T, B, H·3·d) holds, for batch row b at
// step t, [q_0, k_0, v_0, q_1, k_1, v_1, ...], d features each; keys_values (T, B, H·2·d) holds
// [k_0, v_0, k_1, v_1, ...]; queries and outputs (T, B, H·d) hold [x_0, x_1, ...]. The ops
// gather one slot (q, k or v) of every head into a dense (B·H, T, d) array (heads of one batch
// row together, as MXNet's outputs (B·H, Tq, Tk) order them), multiply densely, and scatter back.
#include <cstdint>

#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

enum class InterleavedKind : std::uint8_t { selfatt_qk, selfatt_valatt, encdec_qk, encdec_valatt };

struct InterleavedParams {
  std::int64_t heads = 1;
  InterleavedKind kind = InterleavedKind::selfatt_qk;
};

// An interleaved array (T, B, H·slots·d) seen as its `slot` of each head.
struct SlotView {
  std::int64_t steps = 0, batch = 0, heads = 1, slots = 1, slot = 0, d = 0;
};

// Element i of the dense (B·H, T, d) array: its offset in the interleaved one.
NDG_HD std::int64_t slot_offset(const SlotView& v, std::int64_t i) {
  const std::int64_t c = i % v.d, t = i / v.d % v.steps, bh = i / (v.d * v.steps);
  return ((t * v.batch + bh / v.heads) * v.heads + bh % v.heads) * v.slots * v.d + v.slot * v.d + c;
}

// dense[i] = interleaved[slot_offset(i)]: the gather.
template <class T>
NDG_HD void gather_slot(const SlotView& v, const T* interleaved, T* dense, std::int64_t i) {
  dense[i] = interleaved[slot_offset(v, i)];
}
// interleaved[slot_offset(i)] = dense[i], or 0 without dense: the scatter (each element of the
// slot written once).
template <class T>
NDG_HD void scatter_slot(const SlotView& v, const T* dense, T* interleaved, std::int64_t i) {
  interleaved[slot_offset(v, i)] = dense ? dense[i] : T(0);
}

namespace gpu {
// Over all B·H·T·d elements of the view, on ec's stream; dtype: the arrays' (scatter_slot writes
// zeros when dense is null).
void gather_slot(const ExecContext& ec, DType dtype, const SlotView& v, const void* interleaved, void* dense);
void scatter_slot(const ExecContext& ec, DType dtype, const SlotView& v, const void* dense, void* interleaved);
}  // namespace gpu

}  // namespace mx::op
