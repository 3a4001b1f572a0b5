// Causal depthwise conv1d forward, "rows" kernel: dense [B, D, L] x and out whose rows start on a
// 16-byte boundary (L a multiple of the elements in 16 bytes). CUDA and HIP.
//
// The flat kernel (causal_conv1d_fwd.cu) takes any L by walking segments where a vector crosses a
// row start; profiling showed that bookkeeping made it issue-bound in 16-bit types (72% of issue
// slots, 43% integer pipe, 2.06 TB/s on 8x5120x2048 fp16). Here no vector crosses a row, so:
//   - a warp tile is kTileVecs consecutive vectors of one row (lane l: vectors l, l + 32, ...);
//     row, channel and weights are fixed per tile, found with one fast division;
//   - the width-1 elements before a vector come from the previous lane by warp shuffle; lane 0
//     takes them from the last lane's previous vector, and for the tile's first vector from global
//     memory, read together with x (zero before the row start, which is the causal padding);
//   - the compute has no masking at all, and indices inside a row are 32-bit;
//   - tile indices are 32-bit too (a tile holds at least 512 bytes, so a tensor that fits in memory
//     has far fewer than 2^31 of them; fwd_rows_plan declines the rest), which makes the row and
//     channel of a tile three instructions each instead of a 64-bit multiply-high sequence.
// kVecs (1 or 4 vectors per lane) trades weight-load amortisation against parallelism for small
// problems; see fwd_rows_plan.
#include <cstdint>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_rows.h"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

template <typename T_, int kWidth_, int kVecs_>
struct FwdRowsTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kThreads = 128;
  // Blocks per SM: 8 (<= 64 registers) keeps enough loads in flight; 16-bit 4-vector tiles of width
  // <= 6 fit 40 registers without spilling, and 12 blocks (48 warps) of them moved 8x5120x2048 fp16
  // from 0.952 to 0.963 of the copy ceiling on an H100 (do_bench A/B, 7 rounds).
  static constexpr int kMinBlocks = (kVecs_ == 4 && sizeof(T_) == 2 && kWidth_ <= 6) ? 12 : 8;
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;
  static constexpr int kVecs = kVecs_;
  static constexpr int kTileVecs = kWarpSize * kVecs;
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  // 32-bit words just before a vector that hold its halo.
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  using vec_t = Vec<T, kNElts>;
  static_assert(sizeof(vec_t) == 16, "rows kernel moves 16-byte vectors");
  static_assert((kHaloWords + 3) / 4 < kWarpSize, "halo must come from earlier lanes");
};

struct FwdRowsArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t seqlen;
  int32_t row_vecs;    // L / kNElts
  uint32_t n_tiles;    // rows * tiles_per_row < 2^31
  FastDivmod32 div_tiles_per_row, div_dim;
  bool silu;
};

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_rows_kernel(const FwdRowsArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kVecs = Ktraits::kVecs;
  constexpr int kHaloWords = Ktraits::kHaloWords;
  constexpr int kHaloWordsAlloc = Ktraits::kHaloWordsAlloc;
  constexpr int kEltsPerWord = Ktraits::kEltsPerWord;

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;

  // tile + stride stays below 2^32: both terms are below 2^31.
  for (uint32_t tile = blockIdx.x * Ktraits::kWarps + warp; tile < a.n_tiles; tile += gridDim.x * Ktraits::kWarps) {
    uint32_t seg;
    const uint32_t row = a.div_tiles_per_row.divmod(seg, tile);
    const uint32_t d = a.div_dim.mod(row);
    const T* __restrict__ xr = static_cast<const T*>(a.x) + static_cast<int64_t>(row) * a.seqlen;
    T* __restrict__ orow = static_cast<T*>(a.out) + static_cast<int64_t>(row) * a.seqlen;
    const uint32_t* __restrict__ xr_words = reinterpret_cast<const uint32_t*>(xr);
    const int v0 = static_cast<int>(seg) * Ktraits::kTileVecs + lane;  // this lane's first vector

    // Every load of the tile is independent of the others: issue them all before any use. x and its
    // halo go first: the weight loads sit behind a branch on the weight dtype and convert to fp32
    // inside it, so x loads issued after them waited for the weights' round trip (ncu, H100,
    // 2x256x1024 fp16 after a cache flush: one more DRAM latency than causal-conv1d's kernel).
    vec_t xv[kVecs];
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int v = v0 + k * kWarpSize;
      if (v < a.row_vecs) xv[k].load(xr + static_cast<int64_t>(v) * kNElts); else xv[k].set_zero();
    }
    // first_halo[h - 1]: the h-th word before vector v0, for the lanes whose halo vector is not in
    // this k's shuffle (lane < p, p = ceil(h / 4) vectors back); zero before the row start.
    uint32_t first_halo[kHaloWordsAlloc];
#pragma unroll
    for (int h = 1; h <= kHaloWords; ++h) {
      const int wi = v0 * 4 - h;
      first_halo[h - 1] = (lane < (h + 3) / 4 && wi >= 0) ? xr_words[wi] : 0u;
    }
    float w[1][kW];
    float bias[1];
    load_weight_block<1, kW, kW == kWideWidth>(w, bias, a.w, d);
    const int lead = wide_lead<kW>(a.w);  // the runtime-width kernel skips the first `lead` taps

    uint32_t prev_shfl[kHaloWordsAlloc] = {};
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      // halo_words[kHaloWords - h] = the h-th 32-bit word before this vector (h = 1: adjacent).
      uint32_t halo_words[kHaloWordsAlloc];
#pragma unroll
      for (int h = 1; h <= kHaloWords; ++h) {
        const int p = (h + 3) / 4;
        const uint32_t s = warp_shfl(xv[k].word(3 - (h - 1) % 4), (lane - p) & (kWarpSize - 1));
        halo_words[kHaloWords - h] = lane >= p ? s : (k == 0 ? first_halo[h - 1] : prev_shfl[h - 1]);
        prev_shfl[h - 1] = s;
      }
      float xs[kHalo + kNElts];  // x[e - kHalo .. e + kNElts) as fp32
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int m = kHaloWords * kEltsPerWord - kHalo + i;
        xs[i] = to_float(word_elt<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord));
      }
#pragma unroll
      for (int i = 0; i < kNElts; ++i) xs[kHalo + i] = to_float(xv[k].elt[i]);
      vec_t yv;
#pragma unroll
      for (int i = 0; i < kNElts; ++i) {
        float acc = bias[0];
#pragma unroll
        for (int j = 0; j < kW; ++j)
          if (j >= lead) acc = fmaf(w[0][j], xs[i + j], acc);
        yv.elt[i] = from_float<T>(activate(acc, a.silu));
      }
      const int v = v0 + k * kWarpSize;
      if (v < a.row_vecs) yv.store(orow + static_cast<int64_t>(v) * kNElts);
    }
  }
}

template <typename T, int kW, int kVecs>
void fwd_rows_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Ktraits = FwdRowsTraits<T, kW, kVecs>;
  FwdRowsArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.seqlen = p.seqlen;
  a.row_vecs = static_cast<int32_t>(p.seqlen / Ktraits::kNElts);
  const int64_t tiles_per_row = (a.row_vecs + Ktraits::kTileVecs - 1) / Ktraits::kTileVecs;
  const int64_t n_tiles = p.batch * p.dim * tiles_per_row;  // < 2^31: fwd_rows_plan checked
  a.n_tiles = static_cast<uint32_t>(n_tiles);
  a.div_tiles_per_row = FastDivmod32(tiles_per_row);
  a.div_dim = FastDivmod32(p.dim);
  a.silu = p.silu;
  const int64_t blocks = (n_tiles + Ktraits::kWarps - 1) / Ktraits::kWarps;
  causal_conv1d_fwd_rows_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace

FwdRowsPlan fwd_rows_plan(const CausalConv1dFwdParams& p) {
  const int64_t n_elts = kVecBytes / dtype_size(p.x_dtype);
  FwdRowsPlan plan{};
  if (p.width > kMaxTemplateWidth || p.seqlen % n_elts != 0 || p.seqlen / n_elts > INT32_MAX / 4) return plan;
  const int64_t row_vecs = p.seqlen / n_elts;
  if (p.batch * p.dim * ((row_vecs + kWarpSize - 1) / kWarpSize) > INT32_MAX) return plan;  // 32-bit tile indices
  // Share of a row's tiles that is real work (the rest are lanes past the row end).
  auto efficiency = [&](int64_t tile_vecs) {
    return static_cast<double>(row_vecs) / static_cast<double>(((row_vecs + tile_vecs - 1) / tile_vecs) * tile_vecs);
  };
  // One vector per lane while those warps all fit on a large GPU at once (132 SMs x 48 warps at <= 40
  // registers): the compute then spreads over as many warps as possible. Past that, one-vector warps
  // run in several rounds, each paying a block launch and a DRAM round trip, and 4 vectors per lane
  // (all loads issued together, weights loaded once) are faster. H100, do_bench A/B: 2x2048x1024
  // fp16 12.45 -> 11.01 us with 4 vectors; 1x512x2048 bf16 6.56 -> 7.40 us (one round: fewer warps
  // serialise the compute).
  constexpr int64_t kLargeVecs = int64_t{132} * 48 * kWarpSize;
  const int64_t total_vecs = p.batch * p.dim * row_vecs;
  if (total_vecs >= kLargeVecs && efficiency(4 * kWarpSize) >= 0.75) plan.vecs_per_lane = 4;
  else if (efficiency(kWarpSize) >= 0.75) plan.vecs_per_lane = 1;
  return plan;
}

void fwd_rows_run(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w, gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    // Widths 5..8: one runtime-width kernel per dtype and vector count (kWideWidth).
    AITER_LITE_CONV_WIDE_WIDTH_SWITCH(p.width, kW, [&] {
      const WeightArgs wk = weight_args_for<kW>(w, p.width);
      if (plan.vecs_per_lane == 4) fwd_rows_launch<scalar_t, kW, 4>(p, wk, stream);
      else fwd_rows_launch<scalar_t, kW, 1>(p, wk, stream);
    });
  });
}

}  // namespace conv1d
}  // namespace aiter_lite
