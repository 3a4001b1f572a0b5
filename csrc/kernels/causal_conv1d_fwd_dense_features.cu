// Causal depthwise conv1d forward with states and packed sequences on dense x and out. CUDA and HIP.
//
// Takes the calls of causal_conv1d_fwd_features.cu (field meanings in causal_conv1d_params.h) whose x and
// out are dense [B, D, L] contiguous (varlen calls take the plain kernels and a rewrite of each sequence's
// head instead: fwd_states_split). There the feature kernels ran one thread per output (4.5-10.9x the
// plain forward, 0.07 of copy for prefill); this one keeps the plain kernels' memory pattern:
//   - x is one flat array of 16-byte vectors (aligned whatever L is); a warp tile is 32 * vecs vectors that
//     overlap one row, lane l taking vectors l, l + 32, ..., every load issued before any compute; a row's
//     first and last vectors may hold the neighbouring rows' elements, which that row's tile writes;
//   - a tile has one channel (weights loaded once) and one sequence state; the row's
//     initial window is loaded with x by its first tile;
//   - the width-1 elements before a vector come from the previous lane by warp shuffle;
//   - a vector whose outputs and window lie in one sequence ("clean", nearly all of them) is computed
//     without masks, as the plain kernel does. With seq_idx the ids of each vector are read with 16-byte
//     loads (L1-resident: every channel of a batch row reads the same ids), reduced to "one id" or
//     "mixed" and compared with the previous vectors' by shuffle;
//   - the other vectors (a row's ends, a sequence start, a change of seq_idx, padding) mask every tap on
//     the same registers: taps before the sequence start read its initial state (pool slot,
//     has_initial_state) or zeros; with seq_idx a tap reads position s only if seq_idx[s] == seq_idx[t]
//     (positions before 0 count as seq_idx[0]); padding tokens (seq_idx < 0) output 0; padded rows write
//     nothing.
// Final states (not aliasing the initial states) are written by the tile holding a row's
// last element, one entry per lane; the others come from the second launch of causal_conv1d_fwd_features.cu.
// Widths 5..8 share one runtime-width kernel per dtype and mode (kWideWidth taps, the filter right-aligned: the
// first 8 - W taps are skipped, the initial state is read at its W - 1 entries only, and the window that decides
// "clean" is W - 1 positions long; causal_conv1d_common.cuh).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_dense_features.h"
#include "causal_conv1d_fwd_features.h"
#include "causal_conv1d_fwd_sequences.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

// What bounds a sequence: the row (initial/final states, pool slots) or seq_idx runs.
enum class DenseMode : int { kRows = 0, kRuns = 1 };

template <typename T_, int kWidth_, DenseMode kMode_>
struct FwdDenseFeatTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr bool kRuns = kMode_ == DenseMode::kRuns;      // taps masked by equal seq ids
  static constexpr int kThreads = 128;
  // Blocks per SM: ptxas 13.0 (sm_90a) fits W <= 4 in 80 registers for kRows and 96 otherwise without
  // spilling (4 bytes for 16-bit W = 4 with seq_idx); wider windows (W = 5..8 kernels, now the runtime-width
  // one) spilled up to 180 bytes at 96, so 128.
  static constexpr int kMinBlocks = kWidth_ > 4 ? 4 : (kMode_ == DenseMode::kRows ? 6 : 5);
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;
  static constexpr int kMaxVecs = 4;  // vectors per lane, at most (the plan picks 1, 2 or 4 per call)
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
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
  int64_t batch, dim, seqlen;
  int64_t n;                   // elements of x
  int64_t n_tiles;             // rows * tiles_per_row
  int vecs;                    // vectors per lane: a warp tile is kWarpSize * vecs vectors of one row
  FastDivmod div_tiles, div_dim;
  const void* init;
  void* final_states;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
  const int32_t* seq_idx;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;
  bool seq_idx_vec;  // seq_idx rows have stride 1 and a 16-byte aligned base: aligned vector loads
  bool seq_idx_vec_exact;  // and every vector's ids start on a 16-byte boundary (L % kNElts == 0, batch stride % 4 == 0)
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

// The seq id shared by positions t .. t + kNElts - 1 (inside the row) of batch row b, or kMixedIds. With
// aligned rows the ids come as 16-byte loads from the aligned word at or before the first, shifted by a
// tile-uniform 0..3 (t's remainder mod 4 is the same for every vector of a tile).
template <int kNElts>
__device__ __forceinline__ int32_t vector_seq_id(const DenseFeatArgs& a, int64_t b, int64_t t) {
  int32_t ids[kNElts];
  if (a.seq_idx_vec_exact) {  // no shift: the vector's ids are kNElts / 4 aligned 16-byte words
    const int32_t* p = a.seq_idx + b * a.seq_idx_batch_stride + t;
#pragma unroll
    for (int c = 0; c < kNElts / 4; ++c) {
      Vec<int32_t, 4> v;
      v.load(p + 4 * c);
#pragma unroll
      for (int i = 0; i < 4; ++i) ids[4 * c + i] = v.elt[i];
    }
  } else if (a.seq_idx_vec) {
    const int64_t first = b * a.seq_idx_batch_stride + t;
    const int shift = static_cast<int>(first & 3);
    const int32_t* p = a.seq_idx + (first - shift);
    int32_t words[kNElts + 4];
#pragma unroll
    for (int c = 0; c < kNElts / 4 + 1; ++c) {
      Vec<int32_t, 4> v;
      if (c < kNElts / 4 || shift != 0) v.load(p + 4 * c); else v.set_zero();  // the extra one holds valid ids
#pragma unroll
      for (int i = 0; i < 4; ++i) words[4 * c + i] = v.elt[i];
    }
#pragma unroll
    for (int i = 0; i < kNElts; ++i)
      ids[i] = shift == 0 ? words[i] : shift == 1 ? words[i + 1] : shift == 2 ? words[i + 2] : words[i + 3];
  } else {
    const int32_t* p = a.seq_idx + b * a.seq_idx_batch_stride;
#pragma unroll
    for (int i = 0; i < kNElts; ++i) ids[i] = p[(t + i) * a.seq_idx_seq_stride];
  }
  bool same = true;
#pragma unroll
  for (int i = 1; i < kNElts; ++i) same = same && ids[i] == ids[0];
  return same ? ids[0] : kMixedIds;
}

// Work item: a warp tile of kWarpSize * vecs consecutive 16-byte vectors of the flat array that overlap one
// row (row = b * D + d); lane l takes vectors l, l + 32, ... A row's first and
// last vectors may hold elements of the neighbouring rows: they are computed here only for this row's
// elements (the neighbour's tile writes its own), so every vector is seen as lying in one row and a tile
// has one channel (weights loaded once) and one sequence state.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_dense_features_kernel(const DenseFeatArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = Ktraits::kHaloAlloc;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kMaxVecs = Ktraits::kMaxVecs;
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
  const int tile_vecs = kWarpSize * a.vecs;

  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * Ktraits::kWarps + warp; tile < a.n_tiles;
       tile += static_cast<int64_t>(gridDim.x) * Ktraits::kWarps) {
    int64_t seg;
    const int64_t row = a.div_tiles.divmod(seg, tile);
    int64_t d;
    const int64_t b = a.div_dim.divmod(d, row);
    const int64_t row_flat = row * L;
    const int64_t vbase = row_flat / kNElts;                          // the vector holding the row start
    const int off0 = static_cast<int>(row_flat - vbase * kNElts);     // the row start inside it
    const int64_t row_vecs = (off0 + L + kNElts - 1) / kNElts;        // vectors overlapping the row
    const int64_t j0 = seg * tile_vecs + lane;                        // this lane's first vector of the row
    // Vector k of this lane: the row's vector j0 + 32 k; its element 0 is at position t_k of the row
    // (negative for the row's first vector when the row starts inside it).
    int32_t t_k[kMaxVecs];
#pragma unroll
    for (int k = 0; k < kMaxVecs; ++k) t_k[k] = static_cast<int32_t>((j0 + k * kWarpSize) * kNElts - off0);

    // Every load of the tile is issued before any compute: x, the halo words before the first vectors,
    // the weights, the initial window of the row's start, the seq ids.
    vec_t xv[kMaxVecs];
#pragma unroll
    for (int k = 0; k < kMaxVecs; ++k) {
      const int64_t e = (vbase + j0 + k * kWarpSize) * kNElts;
      if (k < a.vecs && j0 + k * kWarpSize < row_vecs) {
        if (e + kNElts <= a.n) {
          xv[k].load(x + e);
        } else {
          xv[k].set_zero();
#pragma unroll
          for (int i = 0; i < kNElts; ++i)
            if (e + i < a.n) xv[k].elt[i] = x[e + i];
        }
      } else {
        xv[k].set_zero();
      }
    }
    uint32_t prev_words[kHaloWordsAlloc] = {};
#pragma unroll
    for (int h = 1; h <= kHaloWords; ++h) {
      const int64_t wi = (vbase + j0) * 4 - h;
      if (lane < (h + 3) / 4 && wi >= 0) prev_words[h - 1] = x_words[wi];
    }
    float w[kW];
    float bias;
    load_channel_weights<kW, kW == kWideWidth>(w, bias, a.w, d);
    // The runtime-width kernel skips the first `lead` taps; its window reaches halo = W - 1 positions back. (Written
    // as constant expressions for the other kernels: an inlined 0 left the W = 1 kernel's code changed.)
    const int lead = kW == kWideWidth ? wide_lead<kW>(a.w) : 0;
    const int halo = kW == kWideWidth ? kHalo - lead : kHalo;
    // The sequence of this tile: the row.
    SeqState seq;
    if (kRuns) {
      seq.start = 0;
      seq.end = static_cast<int32_t>(L);
      seq.slot = static_cast<int32_t>(b);
      seq.active = true;
      seq.has_init = a.init != nullptr;
    } else {
      seq.start = 0;
      seq.end = static_cast<int32_t>(L);
      set_slot(a, b, seq);
    }
    // init_win[q]: the input at position q - kHalo of the row (the initial state's last kHalo entries, or
    // zeros): read by the row's first vectors, which only the first tile of a row holds. Entries q < lead lie
    // before the state's W - 1 entries (maybe outside its allocation): not read, their taps are skipped.
    float init_win[kHaloAlloc];
#pragma unroll
    for (int q = 0; q < kHaloAlloc; ++q)
      init_win[q] = (kHalo > 0 && seg == 0 && seq.has_init && wide_tap_runs(q, lead))
                        ? init_at<T>(a, seq.slot, d, a.state_len - kHalo + q) : 0.f;
    // seq_idx: uid[k] = the id of all positions of vector k; prev_uid for the first lanes at k = 0: the id of
    // all halo positions before their vector (kMixedIds if they differ or leave the row).
    int32_t uid[kMaxVecs];
    int32_t prev_uid[kIdHaloAlloc];
    int32_t id0 = 0;
    if (kRuns) {
      id0 = seq_id_at(a, b, 0);
#pragma unroll
      for (int k = 0; k < kMaxVecs; ++k) {
        const int32_t t = t_k[k];
        uid[k] = (k < a.vecs && t >= 0 && t + kNElts <= L) ? vector_seq_id<kNElts>(a, b, t) : kMixedIds;
      }
#pragma unroll
      for (int p = 0; p < kIdHaloAlloc; ++p) prev_uid[p] = kMixedIds;
      if (kIdHaloVecs > 0 && lane < kIdHaloVecs && t_k[0] >= halo && uid[0] != kMixedIds) {
        bool same = true;
        for (int h = 1; h <= kHalo; ++h)  // h > halo: beyond the runtime-width kernel's window
          same = same && (h > halo || seq_id_at(a, b, t_k[0] - h) == uid[0]);
#pragma unroll
        for (int p = 0; p < kIdHaloAlloc; ++p) prev_uid[p] = same ? uid[0] : kMixedIds;
      }
    }

    // Not unrolled, to keep one copy of the code (the masked path included): the vector being processed
    // is always slot 0 of xv, t_k and uid, and the others move down one slot after each step.
#pragma unroll 1
    for (int k = 0; k < a.vecs; ++k) {
      const int64_t j = j0 + k * kWarpSize;
      const int64_t e = (vbase + j) * kNElts;  // flat index of element 0
      const int32_t t = t_k[0];
      const bool valid = j < row_vecs;

      // halo_words[kHaloWords - h] = the h-th 32-bit word before this vector (h = 1: adjacent).
      uint32_t halo_words[kHaloWordsAlloc];
#pragma unroll
      for (int h = 1; h <= kHaloWords; ++h) {
        const int p = (h + 3) / 4;
        const uint32_t s = warp_shfl(xv[0].word(3 - (h - 1) % 4), (lane - p) & (kWarpSize - 1));
        halo_words[kHaloWords - h] = lane >= p ? s : prev_words[h - 1];
        prev_words[h - 1] = s;
      }
      bool clean = valid && t >= halo && t + kNElts <= L;
      if (kRuns) {
        clean = clean && uid[0] != kMixedIds;
#pragma unroll
        for (int p = 1; p <= kIdHaloVecs; ++p) {
          const int32_t s = static_cast<int32_t>(warp_shfl(static_cast<uint32_t>(uid[0]), (lane - p) & (kWarpSize - 1)));
          clean = clean && (lane >= p ? s : prev_uid[p - 1]) == uid[0];
          prev_uid[p - 1] = s;
        }
      }

      if (valid && (kRuns || !clean || seq.active)) {
        float xs[kHalo + kNElts];  // the inputs at positions t - kHalo .. t + kNElts - 1 as fp32
#pragma unroll
        for (int i = 0; i < kHalo; ++i) {
          const int m = kHaloWords * kEltsPerWord - kHalo + i;
          xs[i] = to_float(word_elt<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord));
        }
#pragma unroll
        for (int i = 0; i < kNElts; ++i) xs[kHalo + i] = to_float(xv[0].elt[i]);
        if (clean) {
          const bool padding = kRuns && uid[0] < 0;
          vec_t yv;
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            float acc = bias;
#pragma unroll
            for (int jj = 0; jj < kW; ++jj)
              if (wide_tap_runs(jj, lead)) acc = fmaf(w[jj], xs[i + jj], acc);
            yv.elt[i] = from_float<T>(padding ? 0.f : activate(acc, a.silu));
          }
          yv.store(out + e);
        } else {
          // A row's first vectors (positions before 0 read init_win), its last one, a seq_idx change:
          // every tap masked; only this row's elements are written.
#pragma unroll
          for (int m = 0; m < kHalo + kNElts; ++m) {
            const int pos = t - kHalo + m;
            if (pos < 0) {
              float v = 0.f;
#pragma unroll
              for (int q = 0; q < kHalo; ++q) v = pos == q - kHalo ? init_win[q] : v;
              xs[m] = v;
            }
          }
          int32_t ids[kHalo + kNElts];
          if (kRuns) {
#pragma unroll
            for (int m = 0; m < kHalo + kNElts; ++m) {
              const int pos = t - kHalo + m;
              ids[m] = pos < 0 ? id0 : seq_id_at(a, b, pos < L ? pos : L - 1);
            }
          }
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            const int ti = t + i;
            if (ti < 0 || ti >= L || !seq.active) continue;
            float acc = bias;
#pragma unroll
            for (int jj = 0; jj < kW; ++jj)
              if (wide_tap_runs(jj, lead))
                acc = fmaf(w[jj], (!kRuns || ids[i + jj] == ids[kHalo + i]) ? xs[i + jj] : 0.f, acc);
            const bool padding = kRuns && ids[kHalo + i] < 0;
            out[e + i] = from_float<T>(padding ? 0.f : activate(acc, a.silu));
          }
        }
      }

#pragma unroll
      for (int k2 = 0; k2 + 1 < kMaxVecs; ++k2) {
        xv[k2] = xv[k2 + 1];
        t_k[k2] = t_k[k2 + 1];
        if (kRuns) uid[k2] = uid[k2 + 1];
      }
    }

    // Final states (not aliasing the initial states): written by the tile holding the row's
    // last element, entry kk by lane kk: position L - state_len + kk of cat(initial window or zeros, row);
    // with seq_idx only positions of the row's last run count (the initial window only if it is the first).
    if (a.fuse_final && seg == (row_vecs - 1) / tile_vecs && seq.active) {
      int32_t last_id = 0;
      bool init_ok = seq.has_init;
      if (kRuns) {
        last_id = seq_id_at(a, b, L - 1);
        init_ok = init_ok && id0 == last_id;
      }
      T* __restrict__ fp = static_cast<T*>(a.final_states) + seq.slot * a.final_batch_stride + d * a.final_dim_stride;
      for (int64_t kk = lane; kk < a.state_len; kk += kWarpSize) {
        const int64_t pos = L - a.state_len + kk;
        T v = from_float<T>(0.f);
        if (pos >= 0) {
          if (!kRuns || seq_id_at(a, b, pos) == last_id) v = x[row_flat + pos];
        } else if (pos >= -halo && init_ok) {
          v = static_cast<const T*>(a.init)[seq.slot * a.init_batch_stride + d * a.init_dim_stride +
                                            (a.state_len + pos) * a.init_seq_stride];
        }
        fp[kk * a.final_seq_stride] = v;
      }
    }
  }
}

template <typename T, int kW, DenseMode kMode>
void dense_features_launch(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                           gpuStream_t stream) {
  using Ktraits = FwdDenseFeatTraits<T, kW, kMode>;
  constexpr int kN = Ktraits::kNElts;
  DenseFeatArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.batch = p.batch;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  const int64_t rows = p.batch * p.dim;
  a.n = rows * p.seqlen;
  // The most vectors a row overlaps: L / N when rows start on vector boundaries, else one more.
  const int64_t max_row_vecs = p.seqlen % kN == 0 ? p.seqlen / kN : (p.seqlen + kN - 1) / kN + 1;
  // Vectors per lane: the most (weights and setup shared by more vectors) whose tiles are mostly real work.
  auto efficiency = [&](int v) {
    const int64_t tv = int64_t{kWarpSize} * v;
    return static_cast<double>(max_row_vecs) / static_cast<double>((max_row_vecs + tv - 1) / tv * tv);
  };
  a.vecs = 1;
  for (int v : {4, 2}) {
    if (efficiency(v) >= 0.85 || efficiency(v) >= efficiency(1) - 1e-9) {
      a.vecs = v;
      break;
    }
  }
  const int64_t tile_vecs = int64_t{kWarpSize} * a.vecs;
  const int64_t tiles_per_row = (max_row_vecs + tile_vecs - 1) / tile_vecs;
  a.n_tiles = rows * tiles_per_row;
  a.div_tiles = FastDivmod(tiles_per_row);
  a.div_dim = FastDivmod(p.dim);
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
  a.seq_idx_vec = p.seq_idx != nullptr && (p.seqlen == 1 || p.seq_idx_seq_stride == 1) && is_aligned(p.seq_idx, 16);
  a.seq_idx_vec_exact = a.seq_idx_vec && p.seqlen % kN == 0 && (p.batch == 1 || p.seq_idx_batch_stride % 4 == 0);
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

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards;
// shard s holds the kernels of the widths w with width_shard(wide_shard_width(w), N) == s: widths 1..4 each
// their own, widths 5..8 the kWideWidth kernels, in width 5's shard (AITER_LITE_CONV_WIDE_WIDTH_SWITCH skips
// the others). The plan and fwd_dense_features_run, the entry causal_conv1d_fwd calls, compile in shard 0.
template <int kShard, int kShards>
void fwd_dense_features_shard(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                              gpuStream_t stream);

#define AITER_LITE_DENSE_FEATURES_SHARD_EXTERN(s)                    \
  extern template void fwd_dense_features_shard<s, AITER_LITE_SHARDS>( \
      const CausalConv1dFwdParams&, const FwdDenseFeaturesPlan&, const WeightArgs&, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_DENSE_FEATURES_SHARD_EXTERN)
#undef AITER_LITE_DENSE_FEATURES_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The kernels of this shard's widths (width_shard of wide_shard_width).
template <int kShard, int kShards>
void fwd_dense_features_shard(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                              gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    // Widths 5..8: one runtime-width kernel per dtype and mode (kWideWidth).
    AITER_LITE_CONV_WIDE_WIDTH_SWITCH(p.width, kW, [&] {
      const WeightArgs wk = weight_args_for<kW>(w, p.width);
      if (p.seq_idx != nullptr) dense_features_launch<scalar_t, kW, DenseMode::kRuns>(p, plan, wk, stream);
      else dense_features_launch<scalar_t, kW, DenseMode::kRows>(p, plan, wk, stream);
    });
  });
}

template void fwd_dense_features_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const CausalConv1dFwdParams&, const FwdDenseFeaturesPlan&, const WeightArgs&, gpuStream_t);

#if AITER_LITE_SHARD == 0
FwdDenseFeaturesPlan fwd_dense_features_plan(const CausalConv1dFwdParams& p) {
  FwdDenseFeaturesPlan plan{};
  if (p.width > kMaxTemplateWidth || p.variant == ConvVariant::kNaive || p.variant == ConvVariant::kShared)
    return plan;
  // Varlen calls, and seq_idx calls but the smallest: the plain kernels, then a rewrite of the outputs they got
  // wrong (fwd_states_split). H100, session 18, bf16 with 4 seq_idx runs a row, against the plain forward: this
  // kernel 1.82x at 8x5120x2048 W = 4, 3.69x at 8x5120x2047, 2.06x at 4x512x2048, 1.80x at 2x256x1024; the split
  // 1.26x, 1.27x, 1.88x and 2.48x (its second launch and its blocks' id checks are not hidden there).
  constexpr int64_t kSeqIdxDenseMaxElts = int64_t{1} << 20;
  if (p.cu_seqlens != nullptr) return plan;
  if (p.seq_idx != nullptr && p.batch * p.dim * p.seqlen >= kSeqIdxDenseMaxElts) return plan;
  if (p.seqlen < 1 || p.seqlen >= (int64_t{1} << 30)) return plan;
  // seq_idx comes alone or with initial/final states (the API never pairs it with a pool).
  if (p.seq_idx != nullptr && (p.state_indices != nullptr || p.has_initial_state != nullptr)) return plan;
  const bool dense = dense_rows(p.x_batch_stride, p.x_dim_stride, p.x_seq_stride, p.batch, p.dim, p.seqlen) &&
                     dense_rows(p.out_batch_stride, p.out_dim_stride, p.out_seq_stride, p.batch, p.dim, p.seqlen) &&
                     is_aligned(p.x, 16) && is_aligned(p.out, 16);
  if (!dense) return plan;
  // Initial/final states alone on rows that do not start on 16-byte boundaries: the plain kernels plus a
  // rewrite of each row's head (fwd_states_split) are faster. Here such rows run 1-vector tiles and two
  // masked vectors per row: 2.1x the plain forward at bf16 8x5120x2047 W = 4 against 1.00-1.08x on rows of
  // 16-byte multiples (H100, 2026-11-24). seq_idx calls have no such alternative.
  const bool only_states = p.seq_idx == nullptr && p.state_indices == nullptr &&
                           p.has_initial_state == nullptr;
  if (only_states && p.seqlen % (kVecBytes / dtype_size(p.x_dtype)) != 0) return plan;
  plan.takes = true;
  plan.fuse_final = p.final_states != nullptr && !fwd_final_may_alias_init(p);
  return plan;
}

void fwd_dense_features_run(const CausalConv1dFwdParams& p, const FwdDenseFeaturesPlan& plan, const WeightArgs& w,
                            gpuStream_t stream) {
  with_shard<AITER_LITE_SHARDS>(width_shard(wide_shard_width(p.width), AITER_LITE_SHARDS), [&](auto shard) {
    fwd_dense_features_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, plan, w, stream);
  });
  // The final states this kernel did not write: a second launch, after every read of the initial states.
  if (p.final_states != nullptr && !plan.fuse_final) fwd_features_run(p, w, stream, 0);
}
#endif

}  // namespace conv1d
}  // namespace aiter_lite
