// Causal depthwise conv1d forward with states and packed sequences (the fields of CausalConv1dFwdParams
// after `variant`; their meaning is defined in causal_conv1d_params.h). CUDA and HIP.
//
// A "sequence" is what one window may read: a batch row (plain or with initial states), a run of equal
// seq_idx inside a row, or in varlen mode positions cu_seqlens[b] .. cu_seqlens[b+1]-1 of the one packed
// row. Before its first position a sequence reads its initial state (or zeros).
//
// Kernels:
//   chunks        x and out with dim stride 1 on 8-byte channel groups, W <= 4, no cu_seqlens (with seq_idx:
//                 groups filling whole warps): the plain channel-last walk with the features only in the chunks
//                 they touch, final states from the same launch (below; fp32 calls too small for 16-step chunks
//                 go to the staged kernel instead).
//   channel_last  x and out with dim stride 1 that neither the chunks nor the staged kernel takes: a thread owns one 8-byte group of channels (or one channel)
//                 over a chunk of time steps and keeps the last W-1 inputs in registers, as the plain
//                 channel-last kernel does; at a sequence start the window is reset to that sequence's
//                 initial state or to zeros. In varlen mode a chunk finds its first sequence by binary
//                 search over cu_seqlens, then follows the boundaries it walks over.
//   per_output    any strides, any width: one thread per output (consecutive threads take consecutive
//                 time steps, so rows with seq stride 1 are read coalesced); the taps before the
//                 sequence start read the initial state.
//   finalize      the final states the outputs' kernel did not write (they may alias the initial states, varlen,
//                 other layouts), one thread per (row, channel), in a second launch: every read of an
//                 initial state (by the first launch, and by this one for sequences shorter than the
//                 state) happens before any write, so final_states may alias initial_states (a state pool
//                 updated in place, same strides). Within a thread the entries are written in increasing
//                 order: entry k reads initial-state entry L_b + k >= k, not yet overwritten.
// Widths 5..8 of per_output and channel_last share one runtime-width kernel per dtype and layout (kWideWidth taps,
// the filter right-aligned: the first 8 - W taps are skipped, and the window entries under them are never read, so
// an initial state is read at its W - 1 entries only; causal_conv1d_common.cuh).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "causal_conv1d_channel_last_walk.cuh"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_channel_last.h"
#include "causal_conv1d_fwd_features.h"
#include "causal_conv1d_fwd_sequences.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "per_device.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

struct FwdFeatureArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t batch, dim, seqlen, width;
  int64_t rows;     // rows of x: batch, or 1 in varlen mode
  int64_t out_len;  // per_output writes positions t < out_len of each row (seqlen: all)
  bool seq_heads;   // varlen: per_output writes positions start .. start + out_len - 1 of each sequence instead
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;
  const void* init;
  void* final_states;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
  const int32_t* seq_idx;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;
  const int32_t* cu_seqlens;
  const int32_t* state_indices;
  const bool* has_initial_state;
  int32_t pad_slot_id;
  int64_t state_len, state_rows;
  bool silu;
};

// One sequence: its positions [start, end) in its row, its state slot, whether it runs at all (a padded
// slot does not) and whether it reads an initial state.
struct Sequence {
  int64_t start, end, slot;
  bool active, has_init;
};

// Sequence b of varlen mode, or row b's sequence otherwise.
__device__ __forceinline__ Sequence sequence_at(const FwdFeatureArgs& a, int64_t b) {
  Sequence s;
  if (a.cu_seqlens != nullptr) {
    s.start = a.cu_seqlens[b];
    s.end = a.cu_seqlens[b + 1];
  } else {
    s.start = 0;
    s.end = a.seqlen;
  }
  set_slot(a, b, s);
  return s;
}

// ---------------------------------------------------------------------------------------------
// channel_last

template <typename T_, int kWidth_, int kV_>
struct FeatChannelLastTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kV = kV_;
  static constexpr int kThreads = 128;
  // Bounds that ptxas 13.0 (sm_90a) meets without spilling: 96 registers for W <= 3 and fp32 W = 4 (the plain
  // kernel's 80 spilled here: the sequence state takes ~16), 128 for 16-bit W = 4 (at 96 it spilled 20 bytes
  // after the same-index seq_idx rule added the window's ids) and W = 5..6, 168 for 16-bit W = 7 (84 bytes
  // spilled at 128) and W = 8: the runtime-width kernel (kW = 8, widths 5..8) keeps W = 8's bounds (16-bit groups
  // of 4: 163 registers).
  static constexpr bool k16 = sizeof(T) == 2;
  static constexpr int kMinBlocks =
      kV == 1 ? 4 : (kWidth <= 3 || (kWidth == 4 && !k16) ? 5 : (k16 && kWidth >= 7 ? 3 : 4));
  static constexpr int kUnroll = 4;
  static constexpr int kMinChunk = 8;
  static constexpr int kMaxChunk = 64;
  static constexpr int64_t kTargetThreads = int64_t{1} << 17;
  using vec_t = Vec<T, kV>;
};

struct FeatChannelLastPlan {
  int64_t n_groups, n_chunks, n_items, chunk_len;
  FastDivmod div_groups, div_chunks;
};

// Work item (row, chunk, group), group fastest.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_features_channel_last_kernel(const FwdFeatureArgs a, const FeatChannelLastPlan plan) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  constexpr int kV = Ktraits::kV;
  constexpr int kUnroll = Ktraits::kUnroll;
  const bool varlen = a.cu_seqlens != nullptr;
  const bool use_seq_idx = a.seq_idx != nullptr;

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; item < plan.n_items;
       item += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t g, chunk;
    const int64_t rest = plan.div_groups.divmod(g, item);
    const int64_t r = plan.div_chunks.divmod(chunk, rest);
    const int64_t d0 = g * kV;
    const int64_t t0 = chunk * plan.chunk_len;
    const int64_t t_end = t0 + plan.chunk_len < a.seqlen ? t0 + plan.chunk_len : a.seqlen;
    const T* __restrict__ xp = static_cast<const T*>(a.x) + r * a.x_batch_stride + d0 * a.x_dim_stride;
    T* __restrict__ op = static_cast<T*>(a.out) + r * a.out_batch_stride + d0 * a.out_dim_stride;

    if (varlen && t0 >= a.cu_seqlens[a.batch]) continue;  // positions after the last sequence: not written
    int64_t b = varlen ? last_sequence_starting_by(a.cu_seqlens, 0, a.batch, t0) : r;
    Sequence s = sequence_at(a, b);
    int32_t cur_id = 0;
    if (use_seq_idx) {
      cur_id = seq_id_at(a, r, t0);
      if (seq_id_at(a, r, 0) != cur_id) s.has_init = false;  // initial states continue the first run only
    }
    float w[kV][kW];
    float bias[kV];
    load_weight_block<kV, kW, kW == kWideWidth>(w, bias, a.w, d0);
    const int lead = wide_lead<kW>(a.w);  // the runtime-width kernel skips the first `lead` taps

    // The chunk is walked in pieces that lie in one sequence of varlen mode (one piece otherwise), so
    // the unrolled walk has no boundary to check; a piece starts with the window its sequence gives.
    for (int64_t t1 = t0; t1 < t_end;) {
      const int64_t t2 = s.end < t_end ? s.end : t_end;
      vec_t xv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (t1 + u < t2) xv[u].load(xp + (t1 + u) * a.x_seq_stride);
      // win[i] = input at position t - kHalo + i for the next output t (initial state or zeros before the
      // sequence start), win_id[i] its seq_idx: a tap reads it only for an output of the same index
      // (causal-conv1d's rule; the window before the start carries the first run's index). The runtime-width
      // kernel's entries i < lead (skipped taps) are not read: before the sequence start they would lie before the
      // initial state's W - 1 entries, maybe outside its allocation.
      float win[kHaloAlloc][kV];
      int32_t win_id[kHaloAlloc];
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int64_t pos = t1 - kHalo + i;
        if (!wide_tap_runs(i, lead)) {
#pragma unroll
          for (int c = 0; c < kV; ++c) win[i][c] = 0.f;
          win_id[i] = cur_id;
        } else if (pos >= s.start) {
          vec_t h;
          h.load(xp + pos * a.x_seq_stride);
#pragma unroll
          for (int c = 0; c < kV; ++c) win[i][c] = to_float(h.elt[c]);
          win_id[i] = use_seq_idx ? seq_id_at(a, r, pos) : 0;
        } else {
#pragma unroll
          for (int c = 0; c < kV; ++c)
            win[i][c] = s.has_init ? init_at<T>(a, s.slot, d0 + c, a.state_len - (s.start - pos)) : 0.f;
          win_id[i] = cur_id;
        }
      }

      for (int64_t t = t1; t < t2; t += kUnroll) {
        vec_t xn[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          if (t + kUnroll + u < t2) xn[u].load(xp + (t + kUnroll + u) * a.x_seq_stride);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (t + u < t2) {
            const int32_t id = use_seq_idx ? seq_id_at(a, r, t + u) : 0;  // same address across the warp
            float cur[kV];
            vec_t yv;
#pragma unroll
            for (int c = 0; c < kV; ++c) {
              cur[c] = to_float(xv[u].elt[c]);
              float acc = fmaf(w[c][kHalo], cur[c], bias[c]);
#pragma unroll
              for (int j = 0; j < kHalo; ++j)
                if (wide_tap_runs(j, lead)) acc = fmaf(w[c][j], win_id[j] == id ? win[j][c] : 0.f, acc);
              yv.elt[c] = from_float<T>(id < 0 ? 0.f : activate(acc, a.silu));  // padding tokens output 0
            }
            if (s.active) yv.store(op + (t + u) * a.out_seq_stride);
#pragma unroll
            for (int c = 0; c < kV; ++c) {
#pragma unroll
              for (int j = 0; j + 1 < kHalo; ++j) win[j][c] = win[j + 1][c];
              if (kHalo > 0) win[kHaloAlloc - 1][c] = cur[c];
            }
#pragma unroll
            for (int j = 0; j + 1 < kHalo; ++j) win_id[j] = win_id[j + 1];
            if (kHalo > 0) win_id[kHaloAlloc - 1] = id;
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) xv[u] = xn[u];
      }
      t1 = t2;
      if (t1 < t_end) {  // varlen: the next non-empty sequence starts at t1 (if any)
        do { ++b; } while (b < a.batch && a.cu_seqlens[b + 1] <= t1);
        if (b >= a.batch) break;
        s = sequence_at(a, b);
      }
    }
  }
}

template <class Ktraits>
int64_t features_channel_last_resident_threads() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    return resident_blocks_on(dev, causal_conv1d_fwd_features_channel_last_kernel<Ktraits>, Ktraits::kThreads, 0) *
           Ktraits::kThreads;
  });
}

template <typename T, int kW, int kV>
void features_channel_last_launch(const FwdFeatureArgs& a, gpuStream_t stream) {
  using Ktraits = FeatChannelLastTraits<T, kW, kV>;
  FeatChannelLastPlan plan{};
  plan.n_groups = a.dim / kV;
  plan.chunk_len = plan_time_chunk_len(a.rows * plan.n_groups, a.seqlen, features_channel_last_resident_threads<Ktraits>(),
                                       Ktraits::kUnroll, Ktraits::kMinChunk, Ktraits::kMaxChunk, Ktraits::kTargetThreads);
  plan.n_chunks = (a.seqlen + plan.chunk_len - 1) / plan.chunk_len;
  plan.n_items = a.rows * plan.n_chunks * plan.n_groups;
  plan.div_groups = FastDivmod(plan.n_groups);
  plan.div_chunks = FastDivmod(plan.n_chunks);
  const int64_t blocks = std::min((plan.n_items + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_fwd_features_channel_last_kernel<Ktraits>
      <<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a, plan);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// chunks: rows (no varlen) with dim stride 1, 8-byte channel groups, W <= 4. The plain channel-last kernel's
// walk (causal_conv1d_channel_last_walk.cuh: same items, same chunk lengths, same bound), where the features touch
// only a few chunks: initial states change only the window of a chunk that starts before kHalo, and a chunk whose
// window [t0 - kHalo, t_end) lies in one run of non-negative seq_idx is a plain chunk. With seq_idx the channel
// groups fill whole warps (else the launch declines), so a warp holds one chunk: its lanes read the window's ids
// (one each), a vote picks the plain walk or the masked one (a tap reads a window entry only when it carries the
// output's id; ids shuffled from the lanes) where the run changes or padding tokens lie. After its items each thread writes the
// final state of one (row, group) (write_final_state) when final_states cannot alias initial_states and
// state_len = W - 1; otherwise the finalize launch does.

constexpr int kChunksMaxWidth = 4;

template <typename T_, int kWidth_, bool kIds_>
struct FeatChunksTraits {
  using T = T_;
  static constexpr bool kIds = kIds_;  // seq_idx given: the ids check and the masked walk exist
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kV = kChannelLastVecBytes / static_cast<int>(sizeof(T));
  static constexpr int kThreads = 128;
  // The plain channel-last kernel's bound at W <= 4 (80 registers), which the kernel without seq_idx meets
  // without spilling; with seq_idx 16-bit W = 4 spilled 72 bytes there and takes 5 blocks (96 registers; both
  // ran at the same speed on the H100, 2026-11-25).
  static constexpr int kMinBlocks = kIds && sizeof(T) == 2 && kWidth == 4 ? 5 : 6;
  static constexpr int kUnroll = 4;
  static constexpr int kMinChunk = 8;
  static constexpr int kMaxChunk = 64;
  static constexpr int64_t kShortChunk = 16;  // as the plain kernel (channel_last_chunk_len)
  static constexpr int64_t kTargetThreads = int64_t{1} << 17;
  using vec_t = Vec<T, kV>;
  static_assert(kWidth <= kChunksMaxWidth, "wider filters keep the staged kernel");
};

struct FeatChunksPlan {
  int64_t n_groups, n_chunks, n_items, chunk_len;
  FastDivmod div_groups, div_chunks;
  bool fuse_final;  // the kernel writes the final states too
};

// Work item (row, chunk, group), group fastest.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_features_chunks_kernel(const FwdFeatureArgs a, const FeatChunksPlan plan) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  constexpr int kV = Ktraits::kV;
  constexpr int kUnroll = Ktraits::kUnroll;

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; item < plan.n_items;
       item += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t g, chunk;
    const int64_t rest = plan.div_groups.divmod(g, item);
    const int64_t b = plan.div_chunks.divmod(chunk, rest);
    const int64_t d0 = g * kV;
    const int64_t t0 = chunk * plan.chunk_len;
    const int64_t t_end = t0 + plan.chunk_len < a.seqlen ? t0 + plan.chunk_len : a.seqlen;
    const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d0;
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + d0;

    // As the plain kernel: the halo and the first kUnroll steps are loaded before anything else.
    vec_t halo[kHaloAlloc];
    vec_t xv[kUnroll];
    channel_last_chunk_loads<kHalo, kUnroll>(xp, a.x_seq_stride, t0, t_end, halo, xv);
    const int32_t* __restrict__ ids = Ktraits::kIds ? a.seq_idx + b * a.seq_idx_batch_stride : nullptr;
    float w[kV][kW];
    float bias[kV];
    load_weight_block<kV, kW>(w, bias, a.w, d0);
    // seq_idx: whether the chunk's window [lo, t_end) is one run of non-negative ids. The warp's lanes share the
    // chunk (the launch makes sure of it) and the window has at most kWarpSize positions: lane l holds the id at
    // lo + l, one vote decides, and the masked walk takes its ids from those lanes by shuffle.
    const int64_t lo = t0 - kHalo > 0 ? t0 - kHalo : 0;
    int32_t lane_seq_id = 0;
    bool plain = true;
    if (Ktraits::kIds) {
      const int64_t t = lo + lane_id();
      lane_seq_id = ids[(t < t_end ? t : lo) * a.seq_idx_seq_stride];
      const int32_t ref = static_cast<int32_t>(warp_shfl(static_cast<unsigned int>(lane_seq_id), 0));
      plain = warp_all(lane_seq_id == ref) && ref >= 0;
    }
    // The id at position t (lo <= t < t_end) of this chunk; every lane of the warp calls it together.
    auto id_at = [&](int64_t t) {
      return static_cast<int32_t>(warp_shfl(static_cast<unsigned int>(lane_seq_id), static_cast<int>(t - lo)));
    };
    Sequence s;
    set_slot(a, b, s);
    if (!s.active) continue;  // a padded slot: nothing written

    // win[i] = input at t - kHalo + i for the next output t; before t = 0 the initial state (or zeros).
    float win[kHaloAlloc][kV];
#pragma unroll
    for (int i = 0; i < kHalo; ++i) {
      const int64_t tt = t0 - kHalo + i;
#pragma unroll
      for (int c = 0; c < kV; ++c)
        win[i][c] = tt >= 0 || !s.has_init ? to_float(halo[i].elt[c]) : init_at<T>(a, s.slot, d0 + c, a.state_len + tt);
    }

    // The plain walk, or the masked one (the window before t = 0 carries seq_idx[b, 0], as the initial state does).
    int32_t win_id[kHaloAlloc];
    if (!Ktraits::kIds || plain) {
      channel_last_walk<false, kW, kUnroll>(xp, op, a.x_seq_stride, a.out_seq_stride, t0, t_end, xv, win, win_id, w,
                                            bias, a.silu, id_at);
    } else {
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int64_t tt = t0 - kHalo + i;
        win_id[i] = id_at(tt >= 0 ? tt : 0);
      }
      channel_last_walk<Ktraits::kIds, kW, kUnroll>(xp, op, a.x_seq_stride, a.out_seq_stride, t0, t_end, xv, win,
                                                    win_id, w, bias, a.silu, id_at);
    }
  }
  // The final states, after every walk of this thread (so nothing of them stays in registers over a walk: written
  // before the walk, they made ptxas spill 60 bytes at 16-bit W = 4): one (row, group) per thread, from x again.
  if (plan.fuse_final) {
    for (int64_t r = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; r < a.rows * plan.n_groups;
         r += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
      int64_t g;
      const int64_t b = plan.div_groups.divmod(g, r);
      Sequence s;
      set_slot(a, b, s);
      if (s.active) write_final_state<T, kV, kHalo>(a, b, s.slot, s.has_init, g * kV);
    }
  }
}

template <class Ktraits>
int64_t features_chunks_resident_threads() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    return resident_blocks_on(dev, causal_conv1d_fwd_features_chunks_kernel<Ktraits>, Ktraits::kThreads, 0) *
           Ktraits::kThreads;
  });
}

// Launches the chunks kernel and returns true, or returns false without launching when small_to_staged is set
// and the call is too small for 16-step chunks (fp32 there: the staged kernel, as the plain forward chooses).
template <typename T, int kW, bool kIds>
bool features_chunks_launch(const FwdFeatureArgs& a, bool fuse_final, bool small_to_staged, gpuStream_t stream) {
  using Ktraits = FeatChunksTraits<T, kW, kIds>;
  FeatChunksPlan plan{};
  plan.n_groups = a.dim / Ktraits::kV;
  // The plain channel-last kernel's choice: 16-step chunks when they make two rounds of resident threads.
  const int64_t resident = features_chunks_resident_threads<Ktraits>();
  const int64_t rows = a.rows * plan.n_groups;
  // seq_idx: the ids check needs warps whose lanes share one chunk: items are (row, chunk, group) with the group
  // fastest and the grid a whole number of warps, so n_groups % kWarpSize == 0 gives that; and a chunk window
  // (chunk_len + kHalo positions) of at most kWarpSize. Other calls go to the staged or register feature kernel.
  if (kIds && plan.n_groups % kWarpSize != 0) return false;
  constexpr int64_t kMaxChunk =
      kIds ? std::min<int64_t>(Ktraits::kMaxChunk, (kWarpSize - (kW - 1)) / Ktraits::kUnroll * Ktraits::kUnroll)
           : Ktraits::kMaxChunk;
  static_assert(Ktraits::kShortChunk + kW - 1 <= kWarpSize, "a short chunk's window fits a warp");
  if (rows * ((a.seqlen + Ktraits::kShortChunk - 1) / Ktraits::kShortChunk) >= 2 * resident) {
    plan.chunk_len = Ktraits::kShortChunk;
  } else {
    if (small_to_staged) return false;
    plan.chunk_len = std::min(kMaxChunk, plan_time_chunk_len(rows, a.seqlen, resident, Ktraits::kUnroll,
                                                             Ktraits::kMinChunk, kMaxChunk, Ktraits::kTargetThreads));
  }
  plan.n_chunks = (a.seqlen + plan.chunk_len - 1) / plan.chunk_len;
  plan.n_items = rows * plan.n_chunks;
  plan.div_groups = FastDivmod(plan.n_groups);
  plan.div_chunks = FastDivmod(plan.n_chunks);
  plan.fuse_final = fuse_final;
  const int64_t blocks = std::min((plan.n_items + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_fwd_features_chunks_kernel<Ktraits>
      <<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a, plan);
  AITER_LITE_LAUNCH_CHECK();
  return true;
}

// ---------------------------------------------------------------------------------------------
// per_output: any strides; kW = 0 reads the width at run time (widths above kMaxTemplateWidth, the naive variant,
// and the seq_idx fix-up's outputs); kW = kWideWidth serves widths 5..8 (filter right-aligned, `lead` taps skipped)

constexpr int kPerOutputThreads = 256;

// The outputs per_output computes (some may be skipped: short sequences, positions outside every sequence).
__host__ __device__ __forceinline__ int64_t per_output_count(const FwdFeatureArgs& a) {
  return (a.seq_heads ? a.batch : a.rows) * a.dim * a.out_len;
}

// Output (r, d, t) of batch row (or varlen sequence) b, with every feature's rule, as fp32 (after the
// activation; padding tokens give 0); false when the row or sequence is padding (nothing is written). kW = 0
// reads the width at run time; the runtime-width kernel (kW = kWideWidth) walks kW taps and skips the first lead.
template <typename T, int kW>
__device__ __forceinline__ bool output_at(const FwdFeatureArgs& a, int64_t r, int64_t b, int64_t d, int64_t t,
                                          float& y) {
  const int64_t width = kW > 0 ? kW : a.width;  // taps walked
  const int lead = wide_lead<kW>(a.w);
  Sequence s = sequence_at(a, b);
  if (!s.active) return false;
  int32_t id = 0;
  if (a.seq_idx != nullptr) {
    id = seq_id_at(a, r, t);
    if (seq_id_at(a, r, 0) != id) s.has_init = false;
  }
  const T* __restrict__ xp = static_cast<const T*>(a.x) + r * a.x_batch_stride + d * a.x_dim_stride;
  float acc = a.w.bias == nullptr ? 0.f : load_as_float(a.w.bias, a.w.dtype, d * a.w.bias_stride);
#pragma unroll
  for (int64_t j = 0; j < (kW > 0 ? kW : width); ++j) {
    // Before the filter: not read (an initial state has W - 1 entries), not multiplied.
    if (kW == kWideWidth && !wide_tap_runs(static_cast<int>(j), lead)) continue;
    const int64_t pos = t - (width - 1) + j;
    float v = 0.f;
    if (pos >= s.start) {
      if (a.seq_idx == nullptr || seq_id_at(a, r, pos) == id) v = to_float(xp[pos * a.x_seq_stride]);
    } else if (s.has_init) {
      v = init_at<T>(a, s.slot, d, a.state_len - (s.start - pos));
    }
    const float wj = load_as_float(a.w.weight, a.w.dtype, d * a.w.dim_stride + (j - lead) * a.w.width_stride);
    acc = fmaf(wj, v, acc);
  }
  y = id < 0 ? 0.f : activate(acc, a.silu);  // padding tokens (seq_idx < 0) output 0
  return true;
}

template <typename T>
__device__ __forceinline__ T* out_ptr(const FwdFeatureArgs& a, int64_t r, int64_t d, int64_t t) {
  return static_cast<T*>(a.out) + r * a.out_batch_stride + d * a.out_dim_stride + t * a.out_seq_stride;
}

template <typename T, int kW>
__global__ void __launch_bounds__(kPerOutputThreads)
    causal_conv1d_fwd_features_per_output_kernel(const FwdFeatureArgs a, const FastDivmod div_out_len,
                                                 const FastDivmod div_dim) {
  const int64_t n = per_output_count(a);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kPerOutputThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kPerOutputThreads) {
    int64_t t, d, r, b;
    const int64_t rd = div_out_len.divmod(t, i);
    if (a.seq_heads) {  // (sequence, channel, position in the sequence)
      b = div_dim.divmod(d, rd);
      r = 0;
      t += a.cu_seqlens[b];
      if (t >= a.cu_seqlens[b + 1]) continue;  // a sequence shorter than out_len
    } else {
      r = div_dim.divmod(d, rd);
      if (a.cu_seqlens != nullptr && t >= a.cu_seqlens[a.batch]) continue;  // after the last sequence
      b = a.cu_seqlens != nullptr ? last_sequence_starting_by(a.cu_seqlens, 0, a.batch, t) : r;
    }
    float y;
    if (output_at<T, kW>(a, r, b, d, t, y)) *out_ptr<T>(a, r, d, t) = from_float<T>(y);
  }
}

template <typename T, int kW>
void features_per_output_launch(const FwdFeatureArgs& a, gpuStream_t stream) {
  const int64_t n = per_output_count(a);
  const int64_t blocks = std::min((n + kPerOutputThreads - 1) / kPerOutputThreads, kMaxGridX);
  causal_conv1d_fwd_features_per_output_kernel<T, kW><<<static_cast<unsigned>(blocks), kPerOutputThreads, 0, stream>>>(
      a, FastDivmod(a.out_len), FastDivmod(a.dim));
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// seq_idx fix-up, after the plain kernels (fwd_states_split): they computed every output as if the row were one
// sequence starting from zeros, which is wrong only where the window meets a change of seq_idx, at padding tokens
// (output 0) and, with initial states, at t < width-1. A block takes kFixTile positions of one row and
// kFixThreads channels: its first kFixTile threads list the positions to rewrite (the ids are L1/L2 hits: every
// channel reads the same row of seq_idx), most blocks find none and stop; padding positions are zeroed, and
// each thread recomputes its channel at the other listed positions, kFixBatch at a time so that their loads
// overlap (16 outputs one after another per thread, each waiting for its loads, took 1.9x the plain forward at
// bf16 8x5120x2048 against 1.26x; H100, session 18).
constexpr int kFixTile = 32, kFixThreads = 256, kFixBatch = 4;

__device__ __forceinline__ bool seq_idx_output_wrong(const FwdFeatureArgs& a, int64_t r, int64_t t) {
  const int32_t id = seq_id_at(a, r, t);
  if (id < 0 || (a.init != nullptr && t < a.width - 1)) return true;
  for (int64_t j = 1; j < a.width && j <= t; ++j)  // padding may sit anywhere: every tap is compared
    if (seq_id_at(a, r, t - j) != id) return true;
  return false;
}

template <typename T>
__global__ void __launch_bounds__(kFixThreads) causal_conv1d_fwd_seq_idx_fix_kernel(const FwdFeatureArgs a,
                                                                                    const FastDivmod div_tiles) {
  __shared__ int32_t wrong[kFixTile];   // offsets in the tile of the wrong positions that are not padding
  __shared__ bool padding[kFixTile];
  __shared__ int n_wrong, n_padding;
  int64_t tile;
  const int64_t r = div_tiles.divmod(tile, static_cast<int64_t>(blockIdx.x));
  const int64_t t0 = tile * kFixTile;
  if (threadIdx.x == 0) n_wrong = n_padding = 0;
  __syncthreads();
  if (threadIdx.x < kFixTile) {
    const int64_t t = t0 + threadIdx.x;
    const bool in_row = t < a.seqlen;
    padding[threadIdx.x] = in_row && seq_id_at(a, r, t) < 0;
    if (padding[threadIdx.x]) atomicAdd(&n_padding, 1);
    else if (in_row && seq_idx_output_wrong(a, r, t)) wrong[atomicAdd(&n_wrong, 1)] = static_cast<int32_t>(threadIdx.x);
  }
  __syncthreads();
  const int n = n_wrong;
  const int64_t d_block = static_cast<int64_t>(blockIdx.y) * kFixThreads;
  // Padding tokens output 0: position-major, so each kFixTile threads write consecutive addresses (channel-major,
  // a thread a channel, each store touched kFixThreads rows: 3.7x the plain forward with a fifth of every row
  // padding; H100, session 18).
  if (n_padding > 0) {
    for (int i = static_cast<int>(threadIdx.x); i < kFixTile * kFixThreads; i += kFixThreads) {
      const int64_t d = d_block + i / kFixTile;
      const int pos = i % kFixTile;
      if (padding[pos] && d < a.dim) *out_ptr<T>(a, r, d, t0 + pos) = from_float<T>(0.f);
    }
  }
  const int64_t d = d_block + threadIdx.x;
  if (n == 0 || d >= a.dim) return;
  for (int k0 = 0; k0 < n; k0 += kFixBatch) {
    float y[kFixBatch];
#pragma unroll
    for (int k = 0; k < kFixBatch; ++k)
      if (k0 + k < n) output_at<T, 0>(a, r, r, d, t0 + wrong[k0 + k], y[k]);
#pragma unroll
    for (int k = 0; k < kFixBatch; ++k)
      if (k0 + k < n) *out_ptr<T>(a, r, d, t0 + wrong[k0 + k]) = from_float<T>(y[k]);
  }
}

template <typename T>
void seq_idx_fix_launch(const FwdFeatureArgs& a, gpuStream_t stream) {
  const int64_t tiles = (a.seqlen + kFixTile - 1) / kFixTile;
  const int64_t chunks = (a.dim + kFixThreads - 1) / kFixThreads;
  if (a.rows * tiles > kMaxGridX || chunks > 65535)
    throw std::invalid_argument("aiter_lite causal_conv1d_fwd: seq_idx call too large for the fix-up grid");
  const dim3 grid(static_cast<unsigned>(a.rows * tiles), static_cast<unsigned>(chunks));
  causal_conv1d_fwd_seq_idx_fix_kernel<T><<<grid, kFixThreads, 0, stream>>>(a, FastDivmod(tiles));
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// finalize: final_states[slot(b), d, k] = the last state_len entries of cat(initial window, sequence)

constexpr int kFinalizeThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kFinalizeThreads) causal_conv1d_fwd_final_states_kernel(const FwdFeatureArgs a) {
  const int64_t n = a.batch * a.dim;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kFinalizeThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kFinalizeThreads) {
    const int64_t b = i / a.dim;
    const int64_t d = i - b * a.dim;
    Sequence s = sequence_at(a, b);
    if (!s.active) continue;
    const int64_t r = a.cu_seqlens != nullptr ? 0 : b;
    int32_t last_id = 0;
    if (a.seq_idx != nullptr && a.seqlen > 0) {  // the row's last run; the initial window only if it is the first
      last_id = seq_id_at(a, r, a.seqlen - 1);
      if (seq_id_at(a, r, 0) != last_id) s.has_init = false;
    }
    const T* __restrict__ xp = static_cast<const T*>(a.x) + r * a.x_batch_stride + d * a.x_dim_stride;
    const T* __restrict__ ip =
        s.has_init ? static_cast<const T*>(a.init) + s.slot * a.init_batch_stride + d * a.init_dim_stride : nullptr;
    T* __restrict__ fp = static_cast<T*>(a.final_states) + s.slot * a.final_batch_stride + d * a.final_dim_stride;
    const int64_t len = s.end - s.start;
    const T zero = from_float<T>(0.f);
    for (int64_t k = 0; k < a.state_len; ++k) {
      const int64_t c = len - a.state_len + k;  // position inside the sequence
      T v = zero;
      if (c >= 0) {
        const int64_t pos = s.start + c;
        if (a.seq_idx == nullptr || seq_id_at(a, r, pos) == last_id) v = xp[pos * a.x_seq_stride];
      } else if (c >= -(a.width - 1) && s.has_init) {
        v = ip[(a.state_len + c) * a.init_seq_stride];
      }
      fp[k * a.final_seq_stride] = v;
    }
  }
}

template <typename T>
void final_states_launch(const FwdFeatureArgs& a, gpuStream_t stream) {
  const int64_t n = a.batch * a.dim;
  const int64_t blocks = std::min((n + kFinalizeThreads - 1) / kFinalizeThreads, kMaxGridX);
  causal_conv1d_fwd_final_states_kernel<T><<<static_cast<unsigned>(blocks), kFinalizeThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// out_len as fwd_features_run takes it: the heads of the rows or sequences set out_len and seq_heads here.
FwdFeatureArgs make_feature_args(const CausalConv1dFwdParams& p, const WeightArgs& w, int64_t out_len = -1) {
  FwdFeatureArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.batch = p.batch;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  a.width = p.width;
  a.rows = p.cu_seqlens != nullptr ? 1 : p.batch;
  a.out_len = p.seqlen;
  a.x_batch_stride = p.cu_seqlens != nullptr ? 0 : p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = p.cu_seqlens != nullptr ? 0 : p.out_batch_stride;
  a.out_dim_stride = p.out_dim_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.init = p.initial_states;
  a.final_states = p.final_states;
  a.init_batch_stride = p.init_batch_stride;
  a.init_dim_stride = p.init_dim_stride;
  a.init_seq_stride = p.init_seq_stride;
  a.final_batch_stride = p.final_batch_stride;
  a.final_dim_stride = p.final_dim_stride;
  a.final_seq_stride = p.final_seq_stride;
  a.seq_idx = p.cu_seqlens != nullptr ? nullptr : p.seq_idx;  // never set together (header)
  a.seq_idx_batch_stride = p.seq_idx_batch_stride;
  a.seq_idx_seq_stride = p.seq_idx_seq_stride;
  a.cu_seqlens = p.cu_seqlens;
  a.state_indices = p.state_indices;
  a.has_initial_state = p.has_initial_state;
  a.pad_slot_id = p.pad_slot_id;
  a.state_len = p.state_len;
  a.state_rows = p.state_rows;
  a.silu = p.silu;
  if (fwd_features_heads_only(p, out_len)) {
    a.out_len = out_len;
    a.seq_heads = p.cu_seqlens != nullptr;
  }
  return a;
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards;
// shard s holds the per-output, channel-last and chunks kernels of the widths w with
// width_shard(wide_shard_width(w), N) == s: widths 1..4 each their own (chunks: only these), widths 5..8 the
// kWideWidth kernels, in width 5's shard (AITER_LITE_CONV_WIDE_WIDTH_SWITCH skips the others).
// fwd_features_run, the entry, compiles in shard 0 with the per-output kernel that reads the width at run time
// (kW = 0: widths > 8, the naive variant), the seq_idx fix-up and the final-state kernel.
template <int kShard, int kShards>
void fwd_features_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream, int64_t out_len);
template <int kShard, int kShards>
bool fwd_features_chunks_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, bool fuse_final,
                               bool small_to_staged, gpuStream_t stream);

#define AITER_LITE_FEATURES_SHARD_EXTERN(s) \
  extern template void fwd_features_shard<s, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const WeightArgs&, \
                                                                gpuStream_t, int64_t); \
  extern template bool fwd_features_chunks_shard<s, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, \
                                                                       const WeightArgs&, bool, bool, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_FEATURES_SHARD_EXTERN)
#undef AITER_LITE_FEATURES_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The compile-time-width launches of fwd_features_run, for a width of this shard (width_shard of
// wide_shard_width): the heads of every row or sequence (fwd_features_heads_only) per output, else per output or
// channel-last by the layout.
template <int kShard, int kShards>
void fwd_features_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream, int64_t out_len) {
  FwdFeatureArgs a = make_feature_args(p, w, out_len);
  const bool prefix = fwd_features_heads_only(p, out_len);
  const int64_t B = a.rows, D = p.dim, L = p.seqlen;
  const bool channel_last = !prefix && (D == 1 || (p.x_dim_stride == 1 && p.out_dim_stride == 1));
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    constexpr int kV = kChannelLastVecBytes / static_cast<int>(sizeof(scalar_t));
    const bool vec = channel_last && D > 1 &&
                     channel_vectors_aligned(p.x, a.x_batch_stride, p.x_seq_stride, B, D, L, kV) &&
                     channel_vectors_aligned(p.out, a.out_batch_stride, p.out_seq_stride, B, D, L, kV);
    // Widths 5..8: one runtime-width kernel per dtype and layout (kWideWidth).
    AITER_LITE_CONV_WIDE_WIDTH_SWITCH(p.width, kW, [&] {
      a.w = weight_args_for<kW>(w, p.width);
      if (!channel_last) features_per_output_launch<scalar_t, kW>(a, stream);
      else if (vec) features_channel_last_launch<scalar_t, kW, kV>(a, stream);
      else features_channel_last_launch<scalar_t, kW, 1>(a, stream);
    });
  });
}

template void fwd_features_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const WeightArgs&,
                                                                      gpuStream_t, int64_t);

// The chunks kernel (channel-last rows of 8-byte channel groups, W <= kChunksMaxWidth) for a width of this
// shard; false where it declines the call (features_chunks_launch).
template <int kShard, int kShards>
bool fwd_features_chunks_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, bool fuse_final,
                               bool small_to_staged, gpuStream_t stream) {
  const FwdFeatureArgs a = make_feature_args(p, w);
  bool ran = false;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if constexpr (kW <= kChunksMaxWidth) {
        ran = a.seq_idx != nullptr
                  ? features_chunks_launch<scalar_t, kW, true>(a, fuse_final, small_to_staged, stream)
                  : features_chunks_launch<scalar_t, kW, false>(a, fuse_final, small_to_staged, stream);
      }
    });
  });
  return ran;
}

template bool fwd_features_chunks_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&,
                                                                             const WeightArgs&, bool, bool,
                                                                             gpuStream_t);

#if AITER_LITE_SHARD == 0
void fwd_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream,
                      int64_t out_len) {
  if (p.batch == 0 || p.dim == 0) return;
  const FwdFeatureArgs a = make_feature_args(p, w, out_len);
  const int64_t L = p.seqlen;
  bool fused_final = false;  // the outputs' kernel wrote the final states
  auto width_kernels = [&] {
    with_shard<AITER_LITE_SHARDS>(width_shard(wide_shard_width(p.width), AITER_LITE_SHARDS), [&](auto shard) {
      fwd_features_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, w, stream, out_len);
    });
  };
  if (out_len == kFwdSeqIdxFixup) {  // after the plain kernels: the outputs under a change of seq_idx
    if (L > 0) AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { seq_idx_fix_launch<scalar_t>(a, stream); });
  } else if (fwd_features_heads_only(p, out_len)) {  // the heads of every row or sequence: the per-output kernel only
    if (out_len > 0) {
      if (p.width > kMaxTemplateWidth)
        AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { features_per_output_launch<scalar_t, 0>(a, stream); });
      else
        width_kernels();
    }
  } else if (L > 0) {
    const int64_t B = a.rows, D = p.dim;
    const bool channel_last = D == 1 || (p.x_dim_stride == 1 && p.out_dim_stride == 1);
    const bool templated = p.width <= kMaxTemplateWidth && p.variant != ConvVariant::kNaive;
    constexpr int kV16 = kChannelLastVecBytes / 2, kV32 = kChannelLastVecBytes / 4;
    const int kVx = p.x_dtype == DType::kFloat32 ? kV32 : kV16;
    const bool groups8 = channel_last && D > 1 &&
                         channel_vectors_aligned(p.x, a.x_batch_stride, p.x_seq_stride, B, D, L, kVx) &&
                         channel_vectors_aligned(p.out, a.out_batch_stride, p.out_seq_stride, B, D, L, kVx);
    // The outputs' kernel writes the final states too when they cannot alias the initial ones.
    const bool fuse_final = p.final_states != nullptr && p.cu_seqlens == nullptr && p.width > 1 &&
                            p.state_len == p.width - 1 && !fwd_final_may_alias_init(p);
    // Rows of 8-byte channel groups at W <= 4: the chunks kernel (above), but for fp32 calls too small for its
    // 16-step chunks, whose plain forward runs on the staged kernel (causal_conv1d_fwd.cu's choice) and whose
    // features cost that kernel nothing (H100, 2026-11-25: 4x512x2048 W = 2 +seq_idx 16.1 us, plain 16.2).
    bool chunks = false;
    if (groups8 && templated && p.cu_seqlens == nullptr && p.width <= kChunksMaxWidth) {
      const bool small_to_staged = fwd_channel_last_staged_takes(p);
      chunks = with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
        return fwd_features_chunks_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, w, fuse_final,
                                                                                    small_to_staged, stream);
      });
    }
    // Other channel rows on 16-byte boundaries: the staged channel-last kernel (causal_conv1d_fwd_channel_last.cu).
    const bool staged =
        !chunks && channel_last && templated && fwd_channel_last_staged_features_run(p, w, fuse_final, stream);
    fused_final = (chunks || staged) && fuse_final;
    if (!chunks && !staged) {
      if (!templated)
        AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { features_per_output_launch<scalar_t, 0>(a, stream); });
      else
        width_kernels();
    }
  }
  if (p.final_states != nullptr && !fused_final) {
    AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { final_states_launch<scalar_t>(a, stream); });
  }
}
#endif  // AITER_LITE_SHARD == 0

}  // namespace conv1d
}  // namespace aiter_lite
