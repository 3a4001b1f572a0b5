// Causal depthwise conv1d forward (Mamba style), CUDA and HIP.
//
//   out[b, d, t] = act(bias[d] + sum_{j < W} w[d, j] * x[b, d, t - (W - 1) + j]),  x[.., t < 0] = 0
//
// Kernels (all accumulate in fp32; weights and bias are read as fp32 whatever their dtype):
//   rows          [B, D, L] dense x and out with L a multiple of the elements in 16 bytes (and rows
//                 long enough to fill a warp tile): causal_conv1d_fwd_rows.cu.
//   flat          [B, D, L] dense x and out: x is one array of B*D*L elements cut into 16-byte
//                 vectors, so every vector is aligned whatever L is (no slow path for odd lengths).
//                 Each thread holds 4 vectors in flight; the W-1 elements before a vector come from
//                 the neighbouring lane by warp shuffle (one small global read per warp tile).
//   channel_last  x and out with dim stride 1 ([B, L, D] storage seen as [B, D, L]): a thread owns
//                 one 8-byte group of channels (or one channel when D is not vector friendly) over
//                 a chunk of time steps, keeping the last W-1 inputs in registers; 16-step chunks on
//                 problems large enough for two rounds of them. fp32 problems smaller than that (with
//                 16-byte channel rows, W <= 4) take the staged kernel: causal_conv1d_fwd_channel_last.cu.
//   shared        any strides: a block stages one tile of a row plus its halo in shared memory.
//                 Coalesced when rows are contiguous (seq stride 1), e.g. padded or sliced rows.
//   naive         any strides, any width: one thread per output. The reference kernel and the
//                 fallback for everything else (including width > kMaxTemplateWidth).
//
// Variant selection (params.variant):
//   kAuto        rows or flat if dense and 16-byte aligned, else channel_last if dim stride 1 (x and out),
//                else shared if x rows are contiguous and at least 32 long, else naive; width > 8 always runs
//                naive.
//   kVectorized  rows, flat or channel_last as above; a layout neither can take falls back to naive.
//   kShared      shared (any layout); width > 8 falls back to naive.
//   kNaive       naive.
// Widths 1..4 each have their own flat, shared and channel-last kernels; widths 5..8 share one
// runtime-width kernel of each (8 taps, the filter right-aligned: kWideWidth, causal_conv1d_common.cuh).
// Offsets are 64-bit (32-bit only inside a row or a warp tile); grids are 1-D over work items and
// capped at kMaxGridX (kernels loop).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "causal_conv1d_channel_last_walk.cuh"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_channel_last.h"
#include "causal_conv1d_fwd_dense_features.h"
#include "causal_conv1d_fwd_features.h"
#include "causal_conv1d_fwd_rows.h"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "per_device.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

// ---------------------------------------------------------------------------------------------
// flat: dense [B, D, L] x and out

// Blocks of 128 threads per SM that the flat kernel's register bound asks for: the most that
// ptxas 13.0 (sm_90a) fits without spilling, 8 (64 registers) or 7 (72), and 4 (128) for 16-bit
// widths 7 and 8. At fp16 8x5120x2047 W = 4, 8 blocks instead of 6 took 130.8 -> 122.9 us.
constexpr int flat_min_blocks(int elt_bytes, int width) {
  if (width <= 4) return elt_bytes == 2 && width == 2 ? 7 : 8;
  return elt_bytes == 4 || width <= 6 ? 7 : 4;
}

template <typename T_, int kWidth_>
struct FwdFlatTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kThreads = 128;
  static constexpr int kMinBlocks = flat_min_blocks(static_cast<int>(sizeof(T)), kWidth);
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;                     // elements per 16-byte vector
  static constexpr int kVecsPerThread = 4;                       // 16-byte loads in flight per thread
  static constexpr int kTileVecs = kWarpSize * kVecsPerThread;   // vectors per warp tile
  static constexpr int kTileElts = kTileVecs * kNElts;
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  // 32-bit words just before a vector that hold its halo, and how many vectors back they reach.
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloVecs = (kHaloWords + 3) / 4;
  // Per-warp weight table (row mode, dynamic shared memory): the weights and bias of each row a
  // tile spans, a row padded to whole 16-byte groups so a lane reads it with 128-bit shared loads.
  // At most kMaxTableRows rows: with 32-lane warps every L >= 9 (16-bit types) or 5 (fp32) fits.
  static constexpr int kTableStride = (kWidth + 1 + 3) / 4 * 4;
  static constexpr int kMaxTableRows = 128;
  using vec_t = Vec<T, kNElts>;
  static_assert(sizeof(vec_t) == 16, "flat kernel moves 16-byte vectors");
  static_assert(kThreads % kWarpSize == 0, "whole warps");
  static_assert(kHaloVecs < kWarpSize, "halo must come from earlier lanes of the same warp tile");
};

struct FwdFlatArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t n;            // B * D * L
  int64_t n_full_vecs;  // vectors entirely inside [0, n)
  int64_t n_vecs;       // vectors holding any of [0, n)
  int64_t n_tiles;      // warp tiles of kTileVecs vectors
  int64_t seqlen;
  FastDivmod div_seqlen, div_dim;
  FastDivmod32 div_seqlen32;  // row mode only
  int table_rows;             // rows of the weight table per warp: the most a tile spans
  bool row_mode;              // L > kNElts, table_rows <= kMaxTableRows and L < 2^30: see the kernel
  bool silu;
};

// Largest L the row mode takes (positions inside a tile stay below 2^31).
constexpr int64_t kFlatRowModeMaxLen = int64_t{1} << 30;

// Work item: a warp tile of kTileVecs consecutive vectors; lane l takes vectors l, l + 32, l + 64,
// l + 96 of it, so each of its 4 loads is one fully coalesced 512-byte warp access. Rows are
// numbered over the whole array (row = b * D + d, channel = row mod D).
//
// Row mode (L >= 9 for 16-bit types, 5 for fp32, below 2^30):
// every global read of a tile (x vectors, the halo words before the tile, the weights and biases of
// the rows it spans, into a per-warp table) is issued before any compute, positions are 32-bit
// and relative to the tile, and a vector takes one of two branch-free forms, chosen per warp so
// lanes do not diverge: a vector inside one row with its halo (most vectors), or one that meets a
// row start (its first outputs in row r, the rest in row r + 1, taps masked to their own row).
// With odd L some lane of nearly every warp step meets a row start; the per-lane segment walk
// this replaces ran at 15 of 32 active lanes at L = 129 (ncu).
// Rows of at most one vector (and L >= 2^30) walk each vector by row segments with 64-bit
// positions and global weight loads.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_fwd_flat_kernel(const FwdFlatArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kVecs = Ktraits::kVecsPerThread;
  constexpr int kHaloWords = Ktraits::kHaloWords;
  constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  constexpr int kEltsPerWord = Ktraits::kEltsPerWord;
  constexpr int kStride = Ktraits::kTableStride;
  constexpr bool kLead = kW == kWideWidth;  // the runtime-width kernel: skips the first `lead` taps
  const int lead = wide_lead<kW>(a.w);

  const T* __restrict__ x = static_cast<const T*>(a.x);
  const uint32_t* __restrict__ x_words = static_cast<const uint32_t*>(a.x);
  T* __restrict__ out = static_cast<T*>(a.out);
  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;

  // Per warp: weights (kW) and bias of rows row0 .. row0 + table_rows - 1 of the current tile.
  extern __shared__ __align__(16) float weight_tables[];
  float(*table)[kStride] = reinterpret_cast<float(*)[kStride]>(weight_tables + warp * a.table_rows * kStride);

  float w[kW];
  float bias = 0.f;
  int64_t w_row = -1;  // segment walk: the row whose channel's weights are in w

  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * Ktraits::kWarps + warp; tile < a.n_tiles;
       tile += static_cast<int64_t>(gridDim.x) * Ktraits::kWarps) {
    const int64_t v0 = tile * Ktraits::kTileVecs + lane;

    vec_t xv[kVecs];
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t v = v0 + k * kWarpSize;
      if (v < a.n_full_vecs) {
        xv[k].load(x + v * kNElts);
      } else {
        xv[k].set_zero();
        const int64_t e = v * kNElts;
#pragma unroll
        for (int i = 0; i < kNElts; ++i)
          if (e + i < a.n) xv[k].elt[i] = x[e + i];
      }
    }
    // prev_shfl[h - 1]: the h-th word before this lane's vector for lanes < p (below) at k = 0 (in
    // the previous tile, so no lane of this warp holds it), then the shuffle results of the step
    // before, which give the same for k > 0.
    uint32_t prev_shfl[kHaloWordsAlloc] = {};
#pragma unroll
    for (int h = 1; h <= kHaloWords; ++h) {
      const int64_t wi = v0 * 4 - h;  // before this vector's first element, so inside x
      if (lane < (h + 3) / 4 && wi >= 0) prev_shfl[h - 1] = x_words[wi];
    }
    // Row mode: the tile starts at position t0 of row row0, and its rows' weights go to the table;
    // this lane's vector k starts at position pos of row row0 (pos may pass L).
    uint32_t pos = 0;
    if (a.row_mode) {
      int64_t t0;
      const int64_t row0 = a.div_seqlen.divmod(t0, tile * Ktraits::kTileElts);
      pos = static_cast<uint32_t>(t0) + lane * kNElts;
      warp_sync();  // every lane is done reading the previous tile's table
      for (int r = lane; r < a.table_rows; r += kWarpSize) {  // rows past the end: never read
        float wl[kW];
        float bl;
        load_channel_weights<kW, kLead>(wl, bl, a.w, a.div_dim.mod(row0 + r));
#pragma unroll
        for (int j = 0; j < kW; ++j) table[r][j] = wl[j];
        table[r][kW] = bl;
      }
      warp_sync();
    }

    // Not unrolled, to keep one copy of the code: the vector being processed is always xv[0] and
    // the others move down one slot after each step.
#pragma unroll 1
    for (int k = 0; k < kVecs; ++k) {
      const int64_t v = v0 + k * kWarpSize;
      const int64_t e = v * kNElts;

      // halo_words[kHaloWords - h] = the h-th 32-bit word before this vector (h = 1: adjacent).
      // It sits in the vector p = ceil(h / 4) back: lane - p of this k, or for the first lanes
      // prev_shfl (the last lanes of k - 1, or the previous tile).
      uint32_t halo_words[kHaloWordsAlloc];
      halo_words_from_lanes<kHaloWords>(halo_words, xv[0], prev_shfl, prev_shfl, lane);
      float xs[kHalo + kNElts];  // x[e - kHalo .. e + kNElts) as fp32
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int m = kHaloWords * kEltsPerWord - kHalo + i;
        xs[i] = to_float(word_elt<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord));
      }
#pragma unroll
      for (int i = 0; i < kNElts; ++i) xs[kHalo + i] = to_float(xv[0].elt[i]);

      float y[kNElts];
      if (a.row_mode) {
        // Element 0 is at position t of row row0 + r.
        uint32_t t;
        const uint32_t r = a.div_seqlen32.divmod(t, pos);
        const bool one_row = static_cast<int>(t) >= kHalo && t + kNElts <= static_cast<uint32_t>(L);
        if (warp_all(one_row)) {
          const float* wr = table[r];
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            float acc = wr[kW];
#pragma unroll
            for (int j = 0; j < kW; ++j)
              if (j >= lead) acc = fmaf(wr[j], xs[i + j], acc);
            y[i] = acc;
          }
        } else {
          // Outputs i < b are in row r, the rest in row r + 1 (row mode has L > kNElts). Slot m
          // of xs is x at position t - kHalo + m of row r: row r's outputs take slots >= kHalo - t,
          // row r + 1's slots >= b + kHalo (those of row r + 1). b >= kNElts: no output in row
          // r + 1 (its table row, maybe past the table, is not read).
          const int b = static_cast<int>(min(static_cast<uint32_t>(L) - t, static_cast<uint32_t>(kNElts)));
          const float* wa = table[r];
          const float* wb = table[b < kNElts ? r + 1 : r];
          float xa[kHalo + kNElts], xb[kHalo + kNElts];
#pragma unroll
          for (int m = 0; m < kHalo + kNElts; ++m) {
            xa[m] = m + static_cast<int>(t) >= kHalo ? xs[m] : 0.f;
            xb[m] = m >= b + kHalo ? xs[m] : 0.f;
          }
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            float acc_a = wa[kW], acc_b = wb[kW];
#pragma unroll
            for (int j = 0; j < kW; ++j) {
              if (j >= lead) {
                acc_a = fmaf(wa[j], xa[i + j], acc_a);
                acc_b = fmaf(wb[j], xb[i + j], acc_b);
              }
            }
            y[i] = i < b ? acc_a : acc_b;
          }
        }
      } else if (e < a.n) {
        // Rows no longer than a vector (or L >= 2^30): walk the vector by segments that lie in one
        // row, masking taps before the row start.
        int64_t ts;
        int64_t rs = a.div_seqlen.divmod(ts, e);
        int i0 = 0;
        while (true) {
          if (rs != w_row) {
            load_channel_weights<kW, kLead>(w, bias, a.w, a.div_dim.mod(rs));
            w_row = rs;
          }
          const int64_t room = L - ts;
          const int seg_end = room < kNElts - i0 ? i0 + static_cast<int>(room) : kNElts;
#pragma unroll
          for (int i = 0; i < kNElts; ++i) {
            if (i >= i0 && i < seg_end) {
              const int64_t ti = ts + (i - i0);  // position of element i in its row
              float acc = bias;
#pragma unroll
              for (int j = 0; j < kW; ++j)
                if (j >= lead && kHalo - j <= ti) acc = fmaf(w[j], xs[i + j], acc);
              y[i] = acc;
            }
          }
          if (seg_end >= kNElts) break;
          i0 = seg_end;
          ts = 0;
          rs += 1;
        }
      }

      if (e < a.n) {
        vec_t yv;
#pragma unroll
        for (int i = 0; i < kNElts; ++i) yv.elt[i] = from_float<T>(activate(y[i], a.silu));
        if (v < a.n_full_vecs) {
          yv.store(out + e);
        } else {
#pragma unroll
          for (int i = 0; i < kNElts; ++i)
            if (e + i < a.n) out[e + i] = yv.elt[i];
        }
      }
#pragma unroll
      for (int k2 = 0; k2 + 1 < kVecs; ++k2) xv[k2] = xv[k2 + 1];
      pos += kWarpSize * kNElts;
    }
  }
}

template <typename T, int kW>
void fwd_flat_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Ktraits = FwdFlatTraits<T, kW>;
  FwdFlatArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.n = p.batch * p.dim * p.seqlen;
  a.n_full_vecs = a.n / Ktraits::kNElts;
  a.n_vecs = (a.n + Ktraits::kNElts - 1) / Ktraits::kNElts;
  a.n_tiles = (a.n_vecs + Ktraits::kTileVecs - 1) / Ktraits::kTileVecs;
  a.seqlen = p.seqlen;
  a.div_seqlen = FastDivmod(p.seqlen);
  a.div_dim = FastDivmod(p.dim);
  // A tile's elements span at most (kTileElts - 1) / L + 2 rows.
  const int64_t table_rows = (Ktraits::kTileElts - 1) / p.seqlen + 2;
  a.row_mode = p.seqlen > Ktraits::kNElts && p.seqlen < kFlatRowModeMaxLen && table_rows <= Ktraits::kMaxTableRows;
  a.table_rows = a.row_mode ? static_cast<int>(table_rows) : 0;
  if (a.row_mode) a.div_seqlen32 = FastDivmod32(p.seqlen);
  const size_t smem = sizeof(float) * Ktraits::kWarps * a.table_rows * Ktraits::kTableStride;
  a.silu = p.silu;
  const int64_t blocks = std::min((a.n_tiles + Ktraits::kWarps - 1) / Ktraits::kWarps, kMaxGridX);
  causal_conv1d_fwd_flat_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, smem, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// channel_last: dim stride 1

template <typename T_, int kWidth_, int kV_>
struct FwdChannelLastTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kV = kV_;        // channels per thread: an 8-byte vector, or 1
  static constexpr int kThreads = 128;
  // W <= 4: <= 80 registers, 37.5% occupancy (16-byte groups of 8 channels needed 124: 21%);
  // wider filters keep 128 so that their weights and window do not spill
  static constexpr int kMinBlocks = kV == 1 ? 4 : (kWidth <= 4 ? 6 : 4);
  static constexpr int kUnroll = 4;     // time steps loaded together
  static constexpr int kMinChunk = 8;   // time steps per work item, at least, when the items fill the GPU
  static constexpr int kMaxChunk = 64;  // time steps per work item, at most, on problems too small for that
  static constexpr int64_t kTargetThreads = int64_t{1} << 17;  // enough to fill an H100 twice over
  using vec_t = Vec<T, kV>;
  static_assert(kV == 1 || sizeof(vec_t) == kChannelLastVecBytes, "a channel group is one element or one vector");
};

struct FwdChannelLastArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t seqlen;
  int64_t n_groups;   // channel groups of kV
  int64_t n_chunks;   // time chunks per sequence
  int64_t n_items;    // batch * n_chunks * n_groups
  FastDivmod div_groups, div_chunks;
  int64_t chunk_len;  // multiple of kUnroll
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;
  bool silu;
};

// Work item (b, chunk, group), group fastest, so a warp reads and writes whole rows of channels.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_fwd_channel_last_kernel(const FwdChannelLastArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  constexpr int kV = Ktraits::kV;
  constexpr int kUnroll = Ktraits::kUnroll;

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; item < a.n_items;
       item += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t g, chunk;
    const int64_t rest = a.div_groups.divmod(g, item);
    const int64_t b = a.div_chunks.divmod(chunk, rest);
    const int64_t d0 = g * kV;
    const int64_t t0 = chunk * a.chunk_len;
    const int64_t t_end = t0 + a.chunk_len < a.seqlen ? t0 + a.chunk_len : a.seqlen;
    const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d0 * a.x_dim_stride;
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + d0 * a.out_dim_stride;

    vec_t halo[kHaloAlloc];
    vec_t xv[kUnroll];
    channel_last_chunk_loads<kHalo, kUnroll>(xp, a.x_seq_stride, t0, t_end, halo, xv);
    float w[kV][kW];
    float bias[kV];
    load_weight_block<kV, kW, kW == kWideWidth>(w, bias, a.w, d0);
    const int lead = wide_lead<kW>(a.w);  // the runtime-width kernel skips the first `lead` taps

    // win[i] = x[t - kHalo + i] for the next output t.
    float win[kHaloAlloc][kV];
#pragma unroll
    for (int i = 0; i < kHalo; ++i)
#pragma unroll
      for (int c = 0; c < kV; ++c) win[i][c] = to_float(halo[i].elt[c]);

    int32_t no_ids[kHaloAlloc];
    channel_last_walk<false, kW, kUnroll>(xp, op, a.x_seq_stride, a.out_seq_stride, t0, t_end, xv, win, no_ids, w, bias,
                                          a.silu, [](int64_t) { return 0; }, lead);
  }
}

// Threads of the channel-last kernel the current device runs at once, read once per device.
template <class Ktraits>
int64_t channel_last_resident_threads() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    return resident_blocks_on(dev, causal_conv1d_fwd_channel_last_kernel<Ktraits>, Ktraits::kThreads, 0) *
           Ktraits::kThreads;
  });
}

// Whether the channel-last kernel's items at kClShortChunk steps make at least two rounds of its resident threads.
constexpr int64_t kClShortChunk = 16;
template <class Ktraits>
bool channel_last_many_rounds(int64_t batch, int64_t seqlen, int64_t n_groups) {
  return batch * n_groups * ((seqlen + kClShortChunk - 1) / kClShortChunk) >= 2 * channel_last_resident_threads<Ktraits>();
}

// Vector groups on problems whose 16-step items fill at least two rounds of resident threads take 16-step chunks:
// the resident threads then work on a few consecutive time chunks of one batch row at a time (items in order)
// instead of one long chunk each spread over the whole tensor, which took 8x5120x2048 16-bit from 0.91 to 0.94
// and 8x4096x4096 W = 2 from 0.91 to 0.99 of a same-size copy (H100, 2026-11-25; docs/causal_conv1d.md).
// Smaller problems keep the planned chunks (16 steps were 5-27% slower there: 0.6-1.3 rounds), and so do
// W > 4 (not measured: a 16-step chunk would re-read up to 7 halo steps) and single channels.
template <class Ktraits>
int64_t channel_last_chunk_len(int64_t batch, int64_t seqlen, int64_t n_groups) {
  if (Ktraits::kV > 1 && Ktraits::kWidth <= 4 && channel_last_many_rounds<Ktraits>(batch, seqlen, n_groups))
    return kClShortChunk;
  return plan_time_chunk_len(batch * n_groups, seqlen, channel_last_resident_threads<Ktraits>(), Ktraits::kUnroll,
                             Ktraits::kMinChunk, Ktraits::kMaxChunk, Ktraits::kTargetThreads);
}

template <typename T, int kW, int kV>
void fwd_channel_last_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Ktraits = FwdChannelLastTraits<T, kW, kV>;
  FwdChannelLastArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.seqlen = p.seqlen;
  a.n_groups = p.dim / kV;
  a.chunk_len = channel_last_chunk_len<Ktraits>(p.batch, p.seqlen, a.n_groups);
  a.n_chunks = (p.seqlen + a.chunk_len - 1) / a.chunk_len;
  a.n_items = p.batch * a.n_chunks * a.n_groups;
  a.div_groups = FastDivmod(a.n_groups);
  a.div_chunks = FastDivmod(a.n_chunks);
  a.x_batch_stride = p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = p.out_batch_stride;
  a.out_dim_stride = p.out_dim_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;
  const int64_t blocks = std::min((a.n_items + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_fwd_channel_last_kernel<Ktraits>
      <<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// shared: a tile of one row plus its halo staged in shared memory

template <typename T_, int kWidth_>
struct FwdSharedTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kThreads = 128;
  static constexpr int kMinBlocks = 4;
  static constexpr int kMaxItems = 8;  // outputs per thread per tile, at most
  static constexpr int kMaxTile = kThreads * kMaxItems;
  static constexpr int kSmemElts = kMaxTile + (kHalo > 0 ? kHalo : 1);
  static_assert(kHalo <= kThreads, "the first kHalo threads load the halo");
};

struct FwdSharedArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t dim, seqlen;
  int64_t tiles_per_row;
  int64_t n_work;  // batch * dim * tiles_per_row
  FastDivmod div_tiles, div_dim;
  int items;       // outputs per thread per tile (tile = items * kThreads)
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;
  bool silu;
};

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_fwd_shared_kernel(const FwdSharedArgs a) {
  using T = typename Ktraits::T;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kThreads = Ktraits::kThreads;
  constexpr int kMaxItems = Ktraits::kMaxItems;
  __shared__ T smem_x[Ktraits::kSmemElts];  // smem_x[i] = x[t0 - kHalo + i]

  const int tid = static_cast<int>(threadIdx.x);
  const int64_t tile_len = static_cast<int64_t>(a.items) * kThreads;
  const T zero = from_float<T>(0.f);

  for (int64_t work = blockIdx.x; work < a.n_work; work += gridDim.x) {
    int64_t tile, d;
    const int64_t row = a.div_tiles.divmod(tile, work);
    const int64_t b = a.div_dim.divmod(d, row);
    const int64_t t0 = tile * tile_len;
    const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d * a.x_dim_stride;
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + d * a.out_dim_stride;

    float w[kW];
    float bias;
    load_channel_weights<kW, kW == kWideWidth>(w, bias, a.w, d);  // same address in every thread: broadcast
    const int lead = wide_lead<kW>(a.w);  // the runtime-width kernel skips the first `lead` taps

    // Loads into registers first, so they overlap the previous tile's tail.
    T vals[kMaxItems];
#pragma unroll
    for (int k = 0; k < kMaxItems; ++k) {
      const int64_t tt = t0 + tid + k * kThreads;
      vals[k] = (k < a.items && tt < a.seqlen) ? xp[tt * a.x_seq_stride] : zero;
    }
    T halo = zero;
    if (tid < kHalo) {
      const int64_t tt = t0 - kHalo + tid;
      if (tt >= 0) halo = xp[tt * a.x_seq_stride];
    }
    __syncthreads();  // the previous tile's readers are done with smem_x
#pragma unroll
    for (int k = 0; k < kMaxItems; ++k)
      if (k < a.items) smem_x[kHalo + tid + k * kThreads] = vals[k];
    if (tid < kHalo) smem_x[tid] = halo;
    __syncthreads();

#pragma unroll
    for (int k = 0; k < kMaxItems; ++k) {
      const int local = tid + k * kThreads;
      const int64_t tt = t0 + local;
      if (k < a.items && tt < a.seqlen) {
        float acc = bias;
#pragma unroll
        for (int j = 0; j < kW; ++j)
          if (j >= lead) acc = fmaf(w[j], to_float(smem_x[local + j]), acc);
        op[tt * a.out_seq_stride] = from_float<T>(activate(acc, a.silu));
      }
    }
  }
}

template <typename T, int kW>
void fwd_shared_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Ktraits = FwdSharedTraits<T, kW>;
  FwdSharedArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  a.items = static_cast<int>(
      std::min<int64_t>((p.seqlen + Ktraits::kThreads - 1) / Ktraits::kThreads, Ktraits::kMaxItems));
  const int64_t tile_len = static_cast<int64_t>(a.items) * Ktraits::kThreads;
  a.tiles_per_row = (p.seqlen + tile_len - 1) / tile_len;
  a.n_work = p.batch * p.dim * a.tiles_per_row;
  a.div_tiles = FastDivmod(a.tiles_per_row);
  a.div_dim = FastDivmod(p.dim);
  a.x_batch_stride = p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = p.out_batch_stride;
  a.out_dim_stride = p.out_dim_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;
  const int64_t blocks = std::min(a.n_work, kMaxGridX);
  causal_conv1d_fwd_shared_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// naive: one thread per output, any strides, runtime width

template <typename T_>
struct FwdNaiveTraits {
  using T = T_;
  static constexpr int kThreads = 256;
  static constexpr int kMinBlocks = 2;
};

struct FwdNaiveArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t dim, seqlen, width, n;
  FastDivmod div_seqlen, div_dim;
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;
  bool silu;
};

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_fwd_naive_kernel(const FwdNaiveArgs a) {
  using T = typename Ktraits::T;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; i < a.n;
       i += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t t, d;
    const int64_t row = a.div_seqlen.divmod(t, i);
    const int64_t b = a.div_dim.divmod(d, row);
    const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d * a.x_dim_stride;
    float acc = a.w.bias == nullptr ? 0.f : load_as_float(a.w.bias, a.w.dtype, d * a.w.bias_stride);
    const int64_t j0 = t >= a.width - 1 ? 0 : a.width - 1 - t;  // taps before the row start are 0
    for (int64_t j = j0; j < a.width; ++j) {
      const float wj = load_as_float(a.w.weight, a.w.dtype, d * a.w.dim_stride + j * a.w.width_stride);
      acc = fmaf(wj, to_float(xp[(t - (a.width - 1) + j) * a.x_seq_stride]), acc);
    }
    static_cast<T*>(a.out)[b * a.out_batch_stride + d * a.out_dim_stride + t * a.out_seq_stride] =
        from_float<T>(activate(acc, a.silu));
  }
}

template <typename T>
void fwd_naive_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Ktraits = FwdNaiveTraits<T>;
  FwdNaiveArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  a.width = p.width;
  a.n = p.batch * p.dim * p.seqlen;
  a.div_seqlen = FastDivmod(p.seqlen);
  a.div_dim = FastDivmod(p.dim);
  a.x_batch_stride = p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = p.out_batch_stride;
  a.out_dim_stride = p.out_dim_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;
  const int64_t blocks = std::min((a.n + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_fwd_naive_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Path selection (host)

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards.
// Shard s holds the kernels of the widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDE_WIDTH_SWITCH
// skips the others; widths 5..8 share the kWideWidth kernels, in width 5's shard) and shard 0 the
// runtime-width naive kernel; path selection and causal_conv1d_fwd are
// compiled in shard 0, which calls the shard of the call's width (fwd_plain_run). The path is the
// shards' interface, so it lives outside the anonymous namespace.
enum class FwdPath { kNaive, kShared, kRows, kFlat, kChannelLastStaged, kChannelLastVec, kChannelLastScalar };

template <int kShard, int kShards>
void fwd_plain_shard(const CausalConv1dFwdParams& p, FwdPath path, const WeightArgs& w, gpuStream_t stream);

// Whether the fp32 width-4 vector channel-last kernel's 16-step items make two rounds of its resident threads
// (channel_last_many_rounds), asked of the shard that compiles that kernel (width_shard(4)): querying its
// occupancy elsewhere would compile the kernel a second time there.
template <int kShard, int kShards>
bool fwd_fp32_channel_last_many_rounds(int64_t batch, int64_t seqlen, int64_t n_groups);

#define AITER_LITE_FWD_SHARD_EXTERN(s)                                                                                \
  extern template void fwd_plain_shard<s, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, FwdPath, const WeightArgs&, \
                                                             gpuStream_t);                                            \
  extern template bool fwd_fp32_channel_last_many_rounds<s, AITER_LITE_SHARDS>(int64_t, int64_t, int64_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_FWD_SHARD_EXTERN)
#undef AITER_LITE_FWD_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The launch of a path chosen by fwd_plain_run, for a width of this shard (width_shard; naive: shard 0).
template <int kShard, int kShards>
void fwd_plain_shard(const CausalConv1dFwdParams& p, FwdPath path, const WeightArgs& w, gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    switch (path) {
      case FwdPath::kNaive:
        if constexpr (width_in_this_shard(kMaxTemplateWidth + 1)) return fwd_naive_launch<scalar_t>(p, w, stream);
        break;
      case FwdPath::kShared:
        return AITER_LITE_CONV_WIDE_WIDTH_SWITCH(
            p.width, kW, [&] { fwd_shared_launch<scalar_t, kW>(p, weight_args_for<kW>(w, p.width), stream); });
      case FwdPath::kRows:              // fwd_rows_run, called by fwd_plain_run
      case FwdPath::kChannelLastStaged:  // fwd_channel_last_staged_run, likewise
        break;
      case FwdPath::kFlat:
        return AITER_LITE_CONV_WIDE_WIDTH_SWITCH(
            p.width, kW, [&] { fwd_flat_launch<scalar_t, kW>(p, weight_args_for<kW>(w, p.width), stream); });
      case FwdPath::kChannelLastVec:
        return AITER_LITE_CONV_WIDE_WIDTH_SWITCH(p.width, kW, [&] {
          fwd_channel_last_launch<scalar_t, kW, kChannelLastVecBytes / sizeof(scalar_t)>(
              p, weight_args_for<kW>(w, p.width), stream);
        });
      case FwdPath::kChannelLastScalar:
        return AITER_LITE_CONV_WIDE_WIDTH_SWITCH(
            p.width, kW, [&] { fwd_channel_last_launch<scalar_t, kW, 1>(p, weight_args_for<kW>(w, p.width), stream); });
    }
    throw std::logic_error("aiter_lite causal_conv1d_fwd: kernel path not in this shard");
  });
}

template void fwd_plain_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, FwdPath,
                                                                   const WeightArgs&, gpuStream_t);

template <int kShard, int kShards>
bool fwd_fp32_channel_last_many_rounds(int64_t batch, int64_t seqlen, int64_t n_groups) {
  if constexpr (width_shard(4, kShards) == kShard)
    return channel_last_many_rounds<FwdChannelLastTraits<float, 4, kChannelLastVecBytes / 4>>(batch, seqlen, n_groups);
  throw std::logic_error("aiter_lite causal_conv1d_fwd: width 4 is not in this shard");
}

template bool fwd_fp32_channel_last_many_rounds<AITER_LITE_SHARD, AITER_LITE_SHARDS>(int64_t, int64_t, int64_t);

#if AITER_LITE_SHARD == 0
namespace {

constexpr int64_t kTinyElts = 32768;  // B * D * L at most: the naive kernel's regime (auto only)
constexpr int64_t kShortRow = 32;     // strided rows shorter than this: the naive kernel (auto only)

// rows: filled in when the rows kernel takes the call (FwdPath::kRows), so the launch does not plan again.
FwdPath choose_fwd_path(const CausalConv1dFwdParams& p, FwdRowsPlan& rows) {
  if (p.width > kMaxTemplateWidth || p.variant == ConvVariant::kNaive) return FwdPath::kNaive;
  if (p.variant == ConvVariant::kShared) return FwdPath::kShared;
  const int64_t B = p.batch, D = p.dim, L = p.seqlen;
  const bool dense = dense_rows(p.x_batch_stride, p.x_dim_stride, p.x_seq_stride, B, D, L) &&
                     dense_rows(p.out_batch_stride, p.out_dim_stride, p.out_seq_stride, B, D, L) &&
                     is_aligned(p.x, 16) && is_aligned(p.out, 16);
  // Tiny problems are latency, not bandwidth: one thread per output issues all its loads at once,
  // where the vector kernels walk a lane's vectors (and their channels' weights) one after another.
  // On an H100, 1x64x16 fp16 back to back: 3.3 us per kernel naive, 6.4 us flat (torch.add 2.1).
  const bool tiny = p.variant == ConvVariant::kAuto && B * D * L <= kTinyElts;
  if (dense) {
    rows = fwd_rows_plan(p);
    if (rows.vecs_per_lane > 0) return FwdPath::kRows;
    return tiny ? FwdPath::kNaive : FwdPath::kFlat;
  }
  if (tiny) return FwdPath::kNaive;
  const bool channel_last = (D == 1 || (p.x_dim_stride == 1 && p.out_dim_stride == 1));
  if (channel_last) {
    const int kV = kChannelLastVecBytes / static_cast<int>(dtype_size(p.x_dtype));
    const bool vec = D > 1 &&
                     channel_vectors_aligned(p.x, p.x_batch_stride, p.x_seq_stride, B, D, L, kV) &&
                     channel_vectors_aligned(p.out, p.out_batch_stride, p.out_seq_stride, B, D, L, kV);
    // fp32 at W <= 4 on problems too small for two rounds of 16-step items: the staged kernel, 5-7% faster
    // there (16x2048x129, 4x512x2048 on an H100, 2026-11-25). 16-bit small shapes ran faster on the register
    // kernel but for 3x1536x777 (3%), and large ones with its 16-step chunks.
    if (vec && fwd_channel_last_staged_takes(p) &&
        !with_shard<AITER_LITE_SHARDS>(width_shard(4, AITER_LITE_SHARDS), [&](auto s) {
          return fwd_fp32_channel_last_many_rounds<decltype(s)::value, AITER_LITE_SHARDS>(B, L, D / (kChannelLastVecBytes / 4));
        }))
      return FwdPath::kChannelLastStaged;
    return vec ? FwdPath::kChannelLastVec : FwdPath::kChannelLastScalar;
  }
  if (p.variant == ConvVariant::kVectorized) return FwdPath::kNaive;  // no vectorized kernel for this layout
  // Short strided rows: the shared kernel's block of 256 threads a row would leave most of them idle.
  if (p.variant == ConvVariant::kAuto && L < kShortRow) return FwdPath::kNaive;
  return (L == 1 || p.x_seq_stride == 1) ? FwdPath::kShared : FwdPath::kNaive;
}

// The forward without features (every feature pointer of p null): the fastest kernel for its layout.
void fwd_plain_run(const CausalConv1dFwdParams& p, gpuStream_t stream) {
  if (p.batch == 0 || p.dim == 0 || p.seqlen == 0) return;
  if (p.x == nullptr || p.out == nullptr || p.weight == nullptr)
    throw std::invalid_argument("aiter_lite causal_conv1d_fwd: null tensor pointer");

  const WeightArgs w = make_weight_args(p.weight, p.bias, p.width, p.w_dim_stride, p.w_width_stride,
                                        p.bias_stride, p.w_dtype);
  FwdRowsPlan rows{};
  const FwdPath path = choose_fwd_path(p, rows);
  if (path == FwdPath::kRows) return fwd_rows_run(p, rows, w, stream);
  if (path == FwdPath::kChannelLastStaged) return fwd_channel_last_staged_run(p, w, stream);
  const int shard = path == FwdPath::kNaive ? 0 : width_shard(wide_shard_width(p.width), AITER_LITE_SHARDS);
  with_shard<AITER_LITE_SHARDS>(shard, [&](auto s) {
    fwd_plain_shard<decltype(s)::value, AITER_LITE_SHARDS>(p, path, w, stream);
  });
}

}  // namespace
#endif  // AITER_LITE_SHARD == 0
}  // namespace conv1d

#if AITER_LITE_SHARD == 0
void causal_conv1d_fwd(const CausalConv1dFwdParams& p, void* stream_ptr) {
  using namespace conv1d;
  if (p.width < 1) throw std::invalid_argument("aiter_lite causal_conv1d_fwd: width must be >= 1");
  if (p.batch < 0 || p.dim < 0 || p.seqlen < 0)
    throw std::invalid_argument("aiter_lite causal_conv1d_fwd: negative size");
  if (!is_valid_dtype(p.x_dtype) || !is_valid_dtype(p.w_dtype))
    throw std::invalid_argument("aiter_lite causal_conv1d_fwd: unsupported dtype");
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  if (fwd_has_features(p)) {  // states or packed sequences: their own kernels (a final state needs no x)
    if (p.batch == 0 || p.dim == 0) return;
    if (p.weight == nullptr || (p.seqlen > 0 && (p.x == nullptr || p.out == nullptr)))
      throw std::invalid_argument("aiter_lite causal_conv1d_fwd: null tensor pointer");
    if ((p.initial_states != nullptr || p.final_states != nullptr) && p.state_len < p.width - 1)
      throw std::invalid_argument("aiter_lite causal_conv1d_fwd: state_len must be >= width - 1");
    const WeightArgs w = make_weight_args(p.weight, p.bias, p.width, p.w_dim_stride, p.w_width_stride,
                                          p.bias_stride, p.w_dtype);
    // Dense rows (initial and final states, seq_idx): the rows kernel with its features.
    const FwdRowsPlan rows = fwd_rows_features_plan(p);
    if (rows.vecs_per_lane > 0) {
      fwd_rows_features_run(p, rows, w, stream);
      if (p.final_states != nullptr && !rows.fuse_final) fwd_features_run(p, w, stream, 0);
      return;
    }
    const FwdDenseFeaturesPlan dense = fwd_dense_features_plan(p);
    if (dense.takes) return fwd_dense_features_run(p, dense, w, stream);
    if (!fwd_states_split(p)) return fwd_features_run(p, w, stream);
    // Initial/final states, packed sequences or seq_idx on a layout that is not channel-last: the plain kernels
    // write every output (varlen: one row of `tokens` positions per channel), exact where the window lies in
    // one sequence past the row's start; then, in stream order, the per-output kernel rewrites the first
    // width-1 outputs of each row or sequence from the initial states (or zeros), or the seq_idx fix-up the
    // outputs under a change of seq_idx and the padding tokens, and the final states follow.
    CausalConv1dFwdParams plain = p;
    plain.initial_states = nullptr;
    plain.final_states = nullptr;
    plain.state_indices = nullptr;
    plain.has_initial_state = nullptr;
    plain.seq_idx = nullptr;
    if (p.cu_seqlens != nullptr) {
      plain.cu_seqlens = nullptr;
      plain.batch = 1;
      plain.x_batch_stride = plain.out_batch_stride = 0;
    }
    fwd_plain_run(plain, stream);
    return fwd_features_run(p, w, stream, fwd_states_split_out_len(p));
  }
  fwd_plain_run(p, stream);
}
#endif  // AITER_LITE_SHARD == 0

}  // namespace aiter_lite
