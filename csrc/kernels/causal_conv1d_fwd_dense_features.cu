// Causal depthwise conv1d forward with states and packed sequences on dense x and out. CUDA and HIP.
//
// Takes the calls of causal_conv1d_fwd_features.cu (field meanings in causal_conv1d_params.h) whose x and
// out are dense: [B, D, L] contiguous, or in varlen mode vLLM's [D, tokens] prefill input (one row of
// `tokens` positions per channel). There the feature kernels ran one thread per output (4.5-10.9x the
// plain forward, 0.07 of copy for prefill); this one keeps the plain flat kernel's memory pattern:
//   - x is one flat array of 16-byte vectors (aligned whatever L is); a warp tile is 128 consecutive
//     vectors, lane l taking vectors l, l + 32, l + 64, l + 96, every load issued before any compute;
//   - the width-1 elements before a vector come from the previous lane by warp shuffle;
//   - a vector whose outputs and window lie in one sequence ("clean", nearly all of them) is computed
//     without masks, exactly as the plain kernel does. Sequences are tracked per lane: in varlen mode by
//     a binary search over cu_seqlens at the lane's first row position, then a walk forward; with seq_idx
//     by the ids of the vector (16-byte loads of the int32 row, cached in L1: every channel of a batch
//     row reads the same ids), reduced to "one id" or "mixed" and compared with the previous vectors'
//     by shuffle;
//   - the other vectors (a sequence start, a row end, a change of seq_idx, padding) take a per-element
//     path that reads its window from global memory and masks every tap: taps before the sequence start
//     read its initial state (pool slot, has_initial_state) or zeros; with seq_idx a tap reads position s
//     only if seq_idx[s] == seq_idx[t] (positions before 0 count as seq_idx[0]); padding tokens
//     (seq_idx < 0) output 0; padded sequences and positions after the last sequence write nothing.
// Final states (not varlen, and not aliasing the initial states) are written by the lane whose vector
// holds a row's last element; the others come from the second launch of causal_conv1d_fwd_features.cu.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_dense_features.h"
#include "causal_conv1d_fwd_features.h"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

template <typename T_, int kWidth_, bool kRuns_>
struct FwdDenseFeatTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr bool kRuns = kRuns_;  // seq_idx given: taps masked by equal ids, else by sequence bounds
  static constexpr int kThreads = 128;
  // Bounds ptxas 13.0 (sm_90a) meets without spilling at W <= 4: 80 registers without seq_idx, 96 with
  // (its ids and their shuffles take ~10 more); fp32 W = 7, 8 spilled 4 bytes at 80.
  static constexpr int kMinBlocks = (kRuns || (sizeof(T_) == 4 && kWidth_ > 6)) ? 5 : 6;
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;
  static constexpr int kVecs = 4;
  static constexpr int kTileVecs = kWarpSize * kVecs;
  static constexpr int kTileElts = kTileVecs * kNElts;
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  // Vectors back that hold the halo's seq ids (0 to 2).
  static constexpr int kIdHaloVecs = (kHalo + kNElts - 1) / kNElts;
  static constexpr int kIdHaloAlloc = kIdHaloVecs > 0 ? kIdHaloVecs : 1;
  using vec_t = Vec<T, kNElts>;
  static_assert(sizeof(vec_t) == 16, "dense feature kernel moves 16-byte vectors");
  static_assert((kHaloWords + 3) / 4 < kWarpSize, "halo must come from earlier lanes");
};

struct DenseFeatArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t batch, dim, seqlen;  // varlen: batch = sequences, seqlen = tokens (rows are the D channels)
  int64_t n;                   // elements of x
  int64_t n_tiles;
  FastDivmod div_seqlen, div_dim;
  FastDivmod32 div_seqlen32;
  const void* init;
  void* final_states;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
  const int32_t* seq_idx;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;
  bool seq_idx_vec;  // seq_idx rows have stride 1 and 16-byte aligned starts, L % 4 == 0: vector loads
  const int32_t* cu_seqlens;
  const int32_t* state_indices;
  const bool* has_initial_state;
  int32_t pad_slot_id;
  int64_t state_len, state_rows;
  bool fuse_final;
  bool silu;
};

constexpr int32_t kMixedIds = INT32_MIN;  // a vector whose seq ids differ (or whose ids were not read)

// A sequence: positions [start, end) of its row, its state slot, whether it runs at all (a padded slot
// does not) and whether it reads an initial state.
struct SeqState {
  int32_t start, end, slot;  // positions < 2^30 (the plan's bound), slots from int32 indices
  bool active, has_init;
};

__device__ __forceinline__ void set_slot(const DenseFeatArgs& a, int64_t b, SeqState& s) {
  if (a.state_indices != nullptr) {
    s.slot = a.state_indices[b];
    s.active = s.slot != a.pad_slot_id && s.slot >= 0 && s.slot < a.state_rows;
  } else {
    s.slot = static_cast<int32_t>(b);
    s.active = true;
  }
  s.has_init = s.active && a.init != nullptr && (a.has_initial_state == nullptr || a.has_initial_state[b]);
}

// Varlen: sequence b (cu_seqlens[b] .. cu_seqlens[b+1]); past the last one (b == batch): inactive up to L.
__device__ __forceinline__ SeqState varlen_sequence(const DenseFeatArgs& a, int64_t b) {
  SeqState s;
  if (b >= a.batch) {
    s.start = a.cu_seqlens[a.batch];
    s.end = static_cast<int32_t>(a.seqlen);
    s.slot = 0;
    s.active = s.has_init = false;
    return s;
  }
  s.start = a.cu_seqlens[b];
  s.end = a.cu_seqlens[b + 1];
  set_slot(a, b, s);
  return s;
}

// Varlen: the sequence holding position t, searched from b0 upwards (b0 <= the answer), or by bisection
// (b0 < 0); a.batch when t is past the last sequence.
__device__ __forceinline__ int64_t varlen_find(const DenseFeatArgs& a, int64_t b0, int64_t t) {
  const int32_t* __restrict__ cu = a.cu_seqlens;
  if (t >= cu[a.batch]) return a.batch;
  int64_t lo = 0;
  if (b0 >= 0) {
    lo = b0;
    while (lo + 1 < a.batch && cu[lo + 1] <= t) ++lo;
    return lo;
  }
  int64_t hi = a.batch - 1;  // the last b with cu[b] <= t
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) >> 1;
    if (cu[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

__device__ __forceinline__ int32_t seq_id_at(const DenseFeatArgs& a, int64_t b, int64_t t) {
  return a.seq_idx[b * a.seq_idx_batch_stride + t * a.seq_idx_seq_stride];
}

template <typename T>
__device__ __forceinline__ float init_at(const DenseFeatArgs& a, int64_t slot, int64_t d, int64_t k) {
  return to_float(static_cast<const T*>(a.init)[slot * a.init_batch_stride + d * a.init_dim_stride +
                                                  k * a.init_seq_stride]);
}

// The seq id shared by the kNElts positions t.. of batch row b (t + kNElts <= L), or kMixedIds.
template <int kNElts>
__device__ __forceinline__ int32_t vector_seq_id(const DenseFeatArgs& a, int64_t b, int64_t t) {
  int32_t ids[kNElts];
  const int32_t* p = a.seq_idx + b * a.seq_idx_batch_stride;
  if (a.seq_idx_vec) {
#pragma unroll
    for (int c = 0; c < kNElts / 4; ++c) {
      Vec<int32_t, 4> v;
      v.load(p + t + 4 * c);
#pragma unroll
      for (int i = 0; i < 4; ++i) ids[4 * c + i] = v.elt[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kNElts; ++i) ids[i] = p[(t + i) * a.seq_idx_seq_stride];
  }
  bool same = true;
#pragma unroll
  for (int i = 1; i < kNElts; ++i) same = same && ids[i] == ids[0];
  return same ? ids[0] : kMixedIds;
}

// One element (flat index ei) with every tap masked; its window is read from global memory. b_hint:
// varlen only, a sequence at or before the element's when it is in row `row`.
template <typename Ktraits>
__device__ __forceinline__ void dense_masked_element(const DenseFeatArgs& a, int64_t ei, int64_t row, int64_t b_hint) {
  using T = typename Ktraits::T;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  int64_t t;
  const int64_t r = a.div_seqlen.divmod(t, ei);
  int64_t d;
  const int64_t b = a.div_dim.divmod(d, r);  // varlen: b = 0, d = r
  const T* __restrict__ xr = static_cast<const T*>(a.x) + r * a.seqlen;
  float w[kW];
  float acc;
  float out_v;
  if (Ktraits::kRuns) {
    const int32_t id = seq_id_at(a, b, t);
    if (id < 0) {  // padding token
      static_cast<T*>(a.out)[ei] = from_float<T>(0.f);
      return;
    }
    const int32_t id0 = seq_id_at(a, b, 0);
    load_channel_weights<kW>(w, acc, a.w, d);
#pragma unroll
    for (int j = 0; j < kW; ++j) {
      const int64_t pos = t - kHalo + j;
      float v = 0.f;
      if ((pos >= 0 ? seq_id_at(a, b, pos) : id0) == id) {
        if (pos >= 0) v = to_float(xr[pos]);
        else if (a.init != nullptr) v = init_at<T>(a, b, d, a.state_len + pos);
      }
      acc = fmaf(w[j], v, acc);
    }
  } else {
    SeqState s;
    if (a.cu_seqlens != nullptr) {
      s = varlen_sequence(a, varlen_find(a, r == row ? b_hint : -1, t));
    } else {
      s.start = 0;
      set_slot(a, b, s);
    }
    if (!s.active) return;
    load_channel_weights<kW>(w, acc, a.w, d);
#pragma unroll
    for (int j = 0; j < kW; ++j) {
      const int64_t pos = t - kHalo + j;
      float v = 0.f;
      if (pos >= s.start) v = to_float(xr[pos]);
      else if (s.has_init) v = init_at<T>(a, s.slot, d, a.state_len - (s.start - pos));
      acc = fmaf(w[j], v, acc);
    }
  }
  out_v = activate(acc, a.silu);
  static_cast<T*>(a.out)[ei] = from_float<T>(out_v);
}

// final_states[slot(b), d, k] = position L - state_len + k of cat(initial window or zeros, x row), zeros
// where neither reaches; with seq_idx only positions of the row's last run count (the initial window
// only when that run is also the first).
template <typename Ktraits>
__device__ __forceinline__ void dense_write_final_states(const DenseFeatArgs& a, int64_t row) {
  using T = typename Ktraits::T;
  constexpr int kHalo = Ktraits::kHalo;
  int64_t d;
  const int64_t b = a.div_dim.divmod(d, row);
  SeqState s;
  set_slot(a, b, s);
  if (!s.active) return;
  const int64_t L = a.seqlen;
  int32_t last_id = 0;
  bool init_ok = s.has_init;
  if (Ktraits::kRuns) {
    last_id = seq_id_at(a, b, L - 1);
    init_ok = init_ok && seq_id_at(a, b, 0) == last_id;
  }
  const T* __restrict__ xr = static_cast<const T*>(a.x) + row * L;
  T* __restrict__ fp = static_cast<T*>(a.final_states) + s.slot * a.final_batch_stride + d * a.final_dim_stride;
  for (int64_t k = 0; k < a.state_len; ++k) {
    const int64_t pos = L - a.state_len + k;
    T v = from_float<T>(0.f);
    if (pos >= 0) {
      if (!Ktraits::kRuns || seq_id_at(a, b, pos) == last_id) v = xr[pos];
    } else if (pos >= -kHalo && init_ok) {
      v = static_cast<const T*>(a.init)[s.slot * a.init_batch_stride + d * a.init_dim_stride +
                                        (a.state_len + pos) * a.init_seq_stride];
    }
    fp[k * a.final_seq_stride] = v;
  }
}

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_dense_features_kernel(const DenseFeatArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kVecs = Ktraits::kVecs;
  constexpr int kHaloWords = Ktraits::kHaloWords;
  constexpr int kHaloWordsAlloc = Ktraits::kHaloWordsAlloc;
  constexpr int kEltsPerWord = Ktraits::kEltsPerWord;
  constexpr int kIdHaloVecs = Ktraits::kIdHaloVecs;
  constexpr int kIdHaloAlloc = Ktraits::kIdHaloAlloc;
  constexpr bool kRuns = Ktraits::kRuns;

  const T* __restrict__ x = static_cast<const T*>(a.x);
  const uint32_t* __restrict__ x_words = static_cast<const uint32_t*>(a.x);
  T* __restrict__ out = static_cast<T*>(a.out);
  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;
  const bool varlen = a.cu_seqlens != nullptr;

  // Per lane: the row whose channel weights (and, without seq_idx, current sequence) are held.
  int64_t cur_row = -1;
  float w[kW];
  float bias = 0.f;
  SeqState seq{};
  int64_t seq_b = 0;  // varlen: the index of seq

  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * Ktraits::kWarps + warp; tile < a.n_tiles;
       tile += static_cast<int64_t>(gridDim.x) * Ktraits::kWarps) {
    const int64_t v0 = tile * Ktraits::kTileVecs + lane;
    int64_t t0;
    const int64_t row0 = a.div_seqlen.divmod(t0, tile * Ktraits::kTileElts);
    // Vector k of this lane starts at position t_k of row row0 + r_k (32-bit: t0 + a tile < 2^31).
    uint32_t t_k[kVecs], r_k[kVecs];
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
      r_k[k] = a.div_seqlen32.divmod(t_k[k], static_cast<uint32_t>(t0) + (k * kWarpSize + lane) * kNElts);

    vec_t xv[kVecs];
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t e = (v0 + k * kWarpSize) * kNElts;
      if (e + kNElts <= a.n) {
        xv[k].load(x + e);
      } else {
        xv[k].set_zero();
#pragma unroll
        for (int i = 0; i < kNElts; ++i)
          if (e + i < a.n) xv[k].elt[i] = x[e + i];
      }
    }
    // prev_words[h - 1]: the h-th word before this lane's vector for lanes < ceil(h / 4) at k = 0 (in the
    // previous tile), then the shuffle results of the step before.
    uint32_t prev_words[kHaloWordsAlloc] = {};
#pragma unroll
    for (int h = 1; h <= kHaloWords; ++h) {
      const int64_t wi = v0 * 4 - h;
      if (lane < (h + 3) / 4 && wi >= 0) prev_words[h - 1] = x_words[wi];
    }
    // seq_idx: uid[k] = the id of all positions of vector k; prev_uid for the first lanes at k = 0: the id
    // of all kHalo positions before their vector (kMixedIds if they differ or leave the row).
    int32_t uid[kVecs];
    int32_t prev_uid[kIdHaloAlloc];
    int64_t b0 = 0, d0 = 0;
    if (kRuns) {
      b0 = a.div_dim.divmod(d0, row0);
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int64_t row = row0 + r_k[k];
        const int64_t b = d0 + r_k[k] < a.dim ? b0 : a.div_dim.div(row);
        const int64_t e = (v0 + k * kWarpSize) * kNElts;
        uid[k] = (e < a.n && t_k[k] + kNElts <= L) ? vector_seq_id<kNElts>(a, b, t_k[k]) : kMixedIds;
      }
#pragma unroll
      for (int p = 0; p < kIdHaloAlloc; ++p) prev_uid[p] = kMixedIds;
      if (kIdHaloVecs > 0 && lane < kIdHaloVecs && t_k[0] >= kHalo && uid[0] != kMixedIds) {
        const int64_t b = d0 + r_k[0] < a.dim ? b0 : a.div_dim.div(row0 + r_k[0]);
        bool same = true;
        for (int h = 1; h <= kHalo; ++h) same = same && seq_id_at(a, b, t_k[0] - h) == uid[0];
#pragma unroll
        for (int p = 0; p < kIdHaloAlloc; ++p) prev_uid[p] = same ? uid[0] : kMixedIds;
      }
    }

    // Not unrolled, to keep one copy of the code (the masked path included): the vector being processed
    // is always slot 0 of xv, t_k, r_k and uid, and the others move down one slot after each step.
#pragma unroll 1
    for (int k = 0; k < kVecs; ++k) {
      const int64_t e = (v0 + k * kWarpSize) * kNElts;
      const uint32_t t = t_k[0];
      const int64_t row = row0 + r_k[0];
      const bool in_range = e < a.n;

      // halo_words[kHaloWords - h] = the h-th 32-bit word before this vector (h = 1: adjacent).
      uint32_t halo_words[kHaloWordsAlloc];
#pragma unroll
      for (int h = 1; h <= kHaloWords; ++h) {
        const int p = (h + 3) / 4;
        const uint32_t s = warp_shfl(xv[0].word(3 - (h - 1) % 4), (lane - p) & (kWarpSize - 1));
        halo_words[kHaloWords - h] = lane >= p ? s : prev_words[h - 1];
        prev_words[h - 1] = s;
      }
      bool clean = in_range && t >= static_cast<uint32_t>(kHalo) && t + kNElts <= L;
      if (kRuns) {
        clean = clean && uid[0] != kMixedIds;
#pragma unroll
        for (int p = 1; p <= kIdHaloVecs; ++p) {
          const int32_t s = static_cast<int32_t>(warp_shfl(static_cast<uint32_t>(uid[0]), (lane - p) & (kWarpSize - 1)));
          clean = clean && (lane >= p ? s : prev_uid[p - 1]) == uid[0];
          prev_uid[p - 1] = s;
        }
      }

      if (in_range && row != cur_row) {
        int64_t d;
        const int64_t b = a.div_dim.divmod(d, row);
        load_channel_weights<kW>(w, bias, a.w, d);
        if (!kRuns) {
          if (varlen) {
            seq_b = varlen_find(a, -1, t);
            seq = varlen_sequence(a, seq_b);
          } else {
            seq.start = 0;
            seq.end = static_cast<int32_t>(L);
            set_slot(a, b, seq);
          }
        }
        cur_row = row;
      } else if (!kRuns && varlen && in_range && t >= static_cast<uint32_t>(seq.end)) {
        seq_b = varlen_find(a, seq_b, t);
        seq = varlen_sequence(a, seq_b);
      }
      if (!kRuns) clean = clean && static_cast<int64_t>(t) >= seq.start + kHalo && t + kNElts <= static_cast<uint32_t>(seq.end);

      if (clean) {
        if (kRuns || seq.active) {
          float xs[kHalo + kNElts];  // x[e - kHalo .. e + kNElts) as fp32
#pragma unroll
          for (int i = 0; i < kHalo; ++i) {
            const int m = kHaloWords * kEltsPerWord - kHalo + i;
            xs[i] = to_float(word_elt<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord));
          }
#pragma unroll
          for (int i = 0; i < kNElts; ++i) xs[kHalo + i] = to_float(xv[0].elt[i]);
          const bool padding = kRuns && uid[0] < 0;
          vec_t yv;
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            float acc = bias;
#pragma unroll
            for (int j = 0; j < kW; ++j) acc = fmaf(w[j], xs[i + j], acc);
            yv.elt[i] = from_float<T>(padding ? 0.f : activate(acc, a.silu));
          }
          yv.store(out + e);
        }
      } else if (in_range) {
#pragma unroll 1
        for (int i = 0; i < kNElts; ++i)
          if (e + i < a.n) dense_masked_element<Ktraits>(a, e + i, row, seq_b);
      }
      if (a.fuse_final && in_range && t + kNElts >= L) dense_write_final_states<Ktraits>(a, row);

#pragma unroll
      for (int k2 = 0; k2 + 1 < kVecs; ++k2) {
        xv[k2] = xv[k2 + 1];
        t_k[k2] = t_k[k2 + 1];
        r_k[k2] = r_k[k2 + 1];
        if (kRuns) uid[k2] = uid[k2 + 1];
      }
    }
  }
}

template <typename T, int kW, bool kRuns>
void dense_features_launch(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                           gpuStream_t stream) {
  using Ktraits = FwdDenseFeatTraits<T, kW, kRuns>;
  const bool varlen = p.cu_seqlens != nullptr;
  DenseFeatArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.batch = p.batch;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  a.n = (varlen ? 1 : p.batch) * p.dim * p.seqlen;
  const int64_t n_vecs = (a.n + Ktraits::kNElts - 1) / Ktraits::kNElts;
  a.n_tiles = (n_vecs + Ktraits::kTileVecs - 1) / Ktraits::kTileVecs;
  a.div_seqlen = FastDivmod(p.seqlen);
  a.div_dim = FastDivmod(p.dim);
  a.div_seqlen32 = FastDivmod32(p.seqlen);
  a.init = p.initial_states;
  a.final_states = p.final_states;
  a.init_batch_stride = p.init_batch_stride;
  a.init_dim_stride = p.init_dim_stride;
  a.init_seq_stride = p.init_seq_stride;
  a.final_batch_stride = p.final_batch_stride;
  a.final_dim_stride = p.final_dim_stride;
  a.final_seq_stride = p.final_seq_stride;
  a.seq_idx = p.seq_idx;
  a.seq_idx_batch_stride = p.seq_idx_batch_stride;
  a.seq_idx_seq_stride = p.seq_idx_seq_stride;
  a.seq_idx_vec = p.seq_idx != nullptr && (p.seqlen == 1 || p.seq_idx_seq_stride == 1) && p.seqlen % 4 == 0 &&
                  (p.batch == 1 || p.seq_idx_batch_stride % 4 == 0) && is_aligned(p.seq_idx, 16);
  a.cu_seqlens = p.cu_seqlens;
  a.state_indices = p.state_indices;
  a.has_initial_state = p.has_initial_state;
  a.pad_slot_id = p.pad_slot_id;
  a.state_len = p.state_len;
  a.state_rows = p.state_rows;
  a.fuse_final = plan.fuse_final && p.final_states != nullptr;
  a.silu = p.silu;
  const int64_t blocks = std::min((a.n_tiles + Ktraits::kWarps - 1) / Ktraits::kWarps, kMaxGridX);
  causal_conv1d_fwd_dense_features_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// Dense [B, D, L]: element (b, d, t) at b*D*L + d*L + t (strides of size-1 dims do not matter).
bool dense_rows(int64_t bs, int64_t ds, int64_t ss, int64_t B, int64_t D, int64_t L) {
  return (L == 1 || ss == 1) && (D == 1 || ds == L) && (B == 1 || bs == D * L);
}

// Bytes [first, last] that a [rows, dim, len] view with these element strides touches.
struct ByteSpan {
  uintptr_t first, last;
};
ByteSpan state_span(const void* ptr, int64_t rows, int64_t dim, int64_t len, int64_t bs, int64_t ds, int64_t ss,
                    int elt) {
  const int64_t far = (rows - 1) * bs + (dim - 1) * ds + (len - 1) * ss;
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  return {base, base + static_cast<uintptr_t>(far + 1) * elt - 1};
}

}  // namespace

FwdDenseFeaturesPlan fwd_dense_features_plan(const CausalConv1dFwdParams& p) {
  FwdDenseFeaturesPlan plan{};
  if (p.width > kMaxTemplateWidth || p.variant == ConvVariant::kNaive || p.variant == ConvVariant::kShared)
    return plan;
  const bool varlen = p.cu_seqlens != nullptr;
  if (p.seqlen < 1 || p.seqlen >= (int64_t{1} << 30)) return plan;
  // seq_idx comes alone or with initial/final states (the API never pairs it with a pool or varlen).
  if (p.seq_idx != nullptr && (varlen || p.state_indices != nullptr || p.has_initial_state != nullptr)) return plan;
  const int64_t B = varlen ? 1 : p.batch;
  const bool dense = dense_rows(varlen ? 0 : p.x_batch_stride, p.x_dim_stride, p.x_seq_stride, B, p.dim, p.seqlen) &&
                     dense_rows(varlen ? 0 : p.out_batch_stride, p.out_dim_stride, p.out_seq_stride, B, p.dim,
                                p.seqlen) &&
                     is_aligned(p.x, 16) && is_aligned(p.out, 16);
  if (!dense) return plan;
  plan.takes = true;
  if (p.final_states != nullptr && !varlen) {
    bool overlap = false;
    if (p.initial_states != nullptr) {
      const int elt = dtype_size(p.x_dtype);
      const ByteSpan i = state_span(p.initial_states, p.state_rows, p.dim, p.state_len, p.init_batch_stride,
                                    p.init_dim_stride, p.init_seq_stride, elt);
      const ByteSpan f = state_span(p.final_states, p.state_rows, p.dim, p.state_len, p.final_batch_stride,
                                    p.final_dim_stride, p.final_seq_stride, elt);
      overlap = i.first <= f.last && f.first <= i.last;
    }
    plan.fuse_final = !overlap;
  }
  return plan;
}

void fwd_dense_features_run(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                            gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if (p.seq_idx != nullptr) dense_features_launch<scalar_t, kW, true>(p, plan, w, stream);
      else dense_features_launch<scalar_t, kW, false>(p, plan, w, stream);
    });
  });
  // The final states this kernel did not write: a second launch, after every read of the initial states.
  if (p.final_states != nullptr && !plan.fuse_final) fwd_features_run(p, w, stream, 0);
}

}  // namespace conv1d
}  // namespace aiter_lite
