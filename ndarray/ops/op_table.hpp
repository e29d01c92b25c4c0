#pragma once
// OpTable: a constexpr table [op][dtype] of pointers to Kernel<op, T>::run, so that kernels
// dispatch by indexing instead of switching over ops and dtypes. The dtypes are NDG_DTYPES.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "ndarray/core/dtype.hpp"

namespace mx {

template <class Enum, template <Enum, class> class Kernel, class Fn>
struct OpTable {
  template <Enum op>
  static constexpr std::array<Fn, kNumDTypes> row() {
#define NDG_OP_TABLE_ENTRY(NAME, TYPE) &Kernel<op, TYPE>::run,
    return {NDG_DTYPES(NDG_OP_TABLE_ENTRY)};
#undef NDG_OP_TABLE_ENTRY
  }
  template <std::size_t... O>
  static constexpr auto build(std::index_sequence<O...>) {
    return std::array<std::array<Fn, kNumDTypes>, sizeof...(O)>{row<static_cast<Enum>(O)>()...};
  }
  static constexpr auto table = build(std::make_index_sequence<static_cast<std::size_t>(Enum::count)>{});

  static Fn get(Enum op, DType dt) {
    return table[static_cast<std::size_t>(op)][static_cast<std::size_t>(dt)];
  }
};

}  // namespace mx
