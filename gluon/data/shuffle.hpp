#pragma once
// The epoch order's shuffle, shared by the DataLoader (shuffle=true) and RandomSampler. Internal.
#include <cstdint>
#include <vector>

namespace mx::gluon::data::detail {

// Fisher-Yates shuffle of `order` from a std::mt19937 seeded with (seed, epoch), its draws made
// by rejection so that every standard library gives the same order.
void shuffle(std::vector<std::int64_t>& order, std::uint64_t seed, std::uint64_t epoch);

}  // namespace mx::gluon::data::detail
