// The dispatch of the sharded test module: picks the shard that compiled an item.
#include <pybind11/pybind11.h>

#include "parts.h"
#include "shard.h"

#ifndef AITER_LITE_SHARDS_PARTS
#define AITER_LITE_SHARDS_PARTS 1
#endif

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  constexpr int kShards = AITER_LITE_SHARDS_PARTS;
  m.attr("shards") = kShards;
  m.def("part", [](int item) {
    return aiter_lite::with_shard<kShards>(aiter_lite::shard_of(item, kShards),
                                           [&](auto s) { return part<decltype(s)::value, kShards>(item); });
  });
  // The shard item 0 belongs to, asked for item 1 (another shard's when kShards > 1): -1.
  m.def("wrong_shard", [] { return part<0, kShards>(1); });
}
