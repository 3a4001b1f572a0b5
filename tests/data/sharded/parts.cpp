// Compiled once per shard: each copy defines the items of its shard only (shard.h).
#include "parts.h"

#include "shard.h"

namespace {

template <int kItem>
int compute() { return kItem * 100 + AITER_LITE_SHARD; }

template <int kShard, int kShards, int... kItems>
int pick(int item, std::integer_sequence<int, kItems...>) {
  int result = -1;
  auto one = [&](auto i) {
    constexpr int kI = decltype(i)::value;
    if constexpr (aiter_lite::in_shard(kI, kShard, kShards)) {
      if (item == kI) result = compute<kI>();
    }
  };
  (one(std::integral_constant<int, kItems>{}), ...);
  return result;
}

}  // namespace

template <int kShard, int kShards>
int part(int item) {
  return pick<kShard, kShards>(item, std::make_integer_sequence<int, 8>{});
}

template int part<AITER_LITE_SHARD, AITER_LITE_SHARDS>(int);
