// Build-time shards: one source file's kernels compiled by several compiler processes at once.
//
// A cold JIT build is bound by its longest translation unit. A registry source with "shards": N
// (jit_config.json; docs/jit.md, "Shards") is compiled N times: unit i with -DAITER_LITE_SHARD=i
// -DAITER_LITE_SHARDS=N. Every file of the module also gets -DAITER_LITE_SHARDS_<STEM>=N (STEM: the
// file name without extension, upper case, e.g. MATMUL_TC_FP16), so the dispatch, in another file,
// knows which shard holds which kernel. A file compiled with no such defines (by hand, or listed
// without "shards") is shard 0 of 1 and holds all of its kernels.
//
// How a file opts in (matmul_tc_fp16.cu and matmul_launch.h are the example):
//   1. Number the kernels the file instantiates: items 0, 1, ... (e.g. config ordinal x layouts).
//      Item i belongs to shard shard_of(i, N).
//   2. Its launcher is a template over <kShard, kShards> that turns the runtime choice into
//      compile-time kernels only for the items of its shard (`if constexpr (in_shard(...))`).
//   3. The file explicitly instantiates launcher<AITER_LITE_SHARD, AITER_LITE_SHARDS>, once.
//   4. The dispatch computes the item, then calls launcher<s, N> for s = shard_of(item, N) through
//      with_shard<N>; it sees the launcher's declaration only (the linker finds the shard's copy).
//   5. The registry entry becomes {"path": ..., "shards": N}. N = 1 (or no "shards") is the
//      unsharded build; any N works, so N is tuned in jit_config.json alone.
// When the dispatch sits in the sharded file itself (compiled in shard 0 only: #if AITER_LITE_SHARD
// == 0), the launcher's definition is visible to it, and calling launcher<s, N> would compile shard
// s's kernels there too. AITER_LITE_FOR_EACH_SHARD declares every shard's launcher `extern
// template` first (causal_conv1d_update.cu is the example), for at most kMaxFileShards shards.
#pragma once

#include <type_traits>
#include <utility>

#if !defined(AITER_LITE_SHARD)
#define AITER_LITE_SHARD 0
#define AITER_LITE_SHARDS 1
#endif

// M(s) for s = 0 .. 15: e.g. `extern template void f<s, AITER_LITE_SHARDS>(int);` for every shard.
#define AITER_LITE_FOR_EACH_SHARD(M) \
  M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

namespace aiter_lite {

inline constexpr int kMaxFileShards = 16;  // shards AITER_LITE_FOR_EACH_SHARD covers

// Round robin: neighbouring items (often kernels of similar cost) go to different shards.
constexpr int shard_of(int item, int shards) { return item % shards; }
constexpr bool in_shard(int item, int shard, int shards) { return shard_of(item, shards) == shard; }

// Runtime shard -> compile-time: returns f(std::integral_constant<int, shard>{}) for shard in
// [0, kShards); shard must be in range.
template <int kShards, typename F, int... kS>
decltype(auto) with_shard_impl(int shard, F& f, std::integer_sequence<int, kS...>) {
  using R = decltype(f(std::integral_constant<int, 0>{}));
  if constexpr (std::is_void_v<R>) {
    (void)((shard == kS ? (f(std::integral_constant<int, kS>{}), true) : false) || ...);
  } else {
    R result{};
    (void)((shard == kS ? (result = f(std::integral_constant<int, kS>{}), true) : false) || ...);
    return result;
  }
}

template <int kShards, typename F>
decltype(auto) with_shard(int shard, F&& f) {
  static_assert(kShards >= 1, "a source has at least one shard");
  return with_shard_impl<kShards>(shard, f, std::make_integer_sequence<int, kShards>{});
}

}  // namespace aiter_lite
