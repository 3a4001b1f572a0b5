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
//
// Features (kFeatures; fwd_rows_features_plan): initial states, read by the lanes whose first vector's halo reaches
// before the row start, and seq_idx through the marks (causal_conv1d_seq_marks.cuh, written by a small kernel
// first): a lane reads its vectors' window marks (two 8-byte words, shared by every channel of the batch row) with
// the other loads and cuts each window at its sequence starts by zeroing (walk_cut); padding tokens output 0. A window
// that meets an id again across another (seq_idx that decreases, unchecked under graph capture) is computed by the
// reference's rule, output by output. The lane holding a row's last vector writes its final state, unless the final
// states may alias the initial ones (a pool updated in place: every read of an initial state must come first, which
// only a second launch orders; fwd_features_run).
#include <cstdint>
#include <type_traits>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_features.h"
#include "causal_conv1d_fwd_rows.h"
#include "causal_conv1d_params.h"
#include "causal_conv1d_seq_marks.cuh"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

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

// kFeatures: initial states ([B, D, state_len], any strides; nullptr: zeros), seq_idx and its marks (nullptr: none).
// The plain kernels take FwdRowsArgs alone.
struct FwdRowsFeatureArgs : FwdRowsArgs {
  const void* init;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride, state_len;
  const int32_t* seq_idx;
  int64_t seq_batch_stride, seq_seq_stride;
  const uint2* seq_marks;  // [B, seq_marks_stride(L)]
  int64_t seq_words;
  // Final states written by the lane holding a row's last vector ([B, D, state_len], any strides), or nullptr: a
  // second launch writes them (FwdRowsPlan::fuse_final false).
  void* final_states;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
};

template <typename T_, int kWidth_, int kVecs_, bool kFeatures_ = false>
struct FwdRowsTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kThreads = 128;
  // Blocks per SM: 8 (<= 64 registers) keeps enough loads in flight; 16-bit 4-vector tiles of width
  // <= 6 fit 40 registers without spilling, and 12 blocks (48 warps) of them moved 8x5120x2048 fp16
  // from 0.952 to 0.963 of the copy ceiling on an H100 (do_bench A/B, 7 rounds).
  // Features: 8 blocks at 64 registers, 6 for the wide kernel with 4 vectors (64 spilled 128-152 bytes).
  static constexpr int kMinBlocks = kFeatures_ ? (kVecs_ == 4 && kWidth_ > 4 ? 6 : 8)
                                    : (kVecs_ == 4 && sizeof(T_) == 2 && kWidth_ <= 6) ? 12 : 8;
  static constexpr bool kFeatures = kFeatures_;
  // seq_idx marks of a vector's window: kSeqPad positions before it (at least one: bit 0 never holds a start)
  static constexpr int kSeqPad = kWidth_ > 1 ? kWidth_ - 1 : 1;
  static constexpr int kSeqLen = kVecElts<T_> + kSeqPad;
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kNElts = kVecElts<T>;
  static constexpr int kVecs = kVecs_;
  static constexpr int kTileVecs = kWarpSize * kVecs;
  static constexpr int kEltsPerWord = 4 / static_cast<int>(sizeof(T));
  // 32-bit words just before a vector that hold its halo.
  static constexpr int kHaloWords = (kHalo + kEltsPerWord - 1) / kEltsPerWord;
  static constexpr int kHaloWordsAlloc = kHaloWords > 0 ? kHaloWords : 1;
  using vec_t = Vec<T, kNElts>;
  using Args = std::conditional_t<kFeatures_, FwdRowsFeatureArgs, FwdRowsArgs>;
  static_assert(sizeof(vec_t) == 16, "rows kernel moves 16-byte vectors");
  static_assert((kHaloWords + 3) / 4 < kWarpSize, "halo must come from earlier lanes");
};

// x at position pos (< 0: the initial state, or 0) as fp32.
template <typename T>
__device__ __forceinline__ float x_or_init(const FwdRowsFeatureArgs& a, const T* xr, uint32_t b, uint32_t d,
                                           int64_t pos) {
  if (pos >= 0) return to_float(xr[pos]);
  if (a.init == nullptr) return 0.f;
  return to_float(static_cast<const T*>(a.init)[b * a.init_batch_stride + d * a.init_dim_stride +
                                                 (a.state_len + pos) * a.init_seq_stride]);
}

// Row (b, d)'s final state: the last state_len positions of cat(initial state or zeros, x); with seq_idx those of the
// row's last sequence (a position counts when its id equals position L-1's; before 0 positions carry id[0]). kLen
// entries (the usual state_len, width - 1) with every load issued before any store; other lengths one at a time.
template <typename T, int kLen>
__device__ __forceinline__ void write_final_state(const FwdRowsFeatureArgs& a, const T* xr, uint32_t b, uint32_t d) {
  const int64_t L = a.seqlen, ss = a.seq_seq_stride;
  const int32_t* ids = a.seq_marks != nullptr ? a.seq_idx + static_cast<int64_t>(b) * a.seq_batch_stride : nullptr;
  const int32_t last = ids != nullptr ? ids[(L - 1) * ss] : 0;
  T* fr = static_cast<T*>(a.final_states) + b * a.final_batch_stride + d * a.final_dim_stride;
  // entry k: x (an initial state before 0: exact), and whether it counts
  auto entry = [&](int64_t k, T& v, bool& counts) {
    const int64_t pos = L - a.state_len + k;
    v = pos >= 0 ? xr[pos] : from_float<T>(x_or_init<T>(a, xr, b, d, pos));
    counts = ids == nullptr || ids[(pos > 0 ? pos : 0) * ss] == last;
  };
  if (a.state_len == kLen) {
    T v[kLen > 0 ? kLen : 1];
    bool counts[kLen > 0 ? kLen : 1];
#pragma unroll
    for (int k = 0; k < kLen; ++k) entry(k, v[k], counts[k]);
#pragma unroll
    for (int k = 0; k < kLen; ++k) fr[k * a.final_seq_stride] = counts[k] ? v[k] : from_float<T>(0.f);
    return;
  }
#pragma unroll 1
  for (int64_t k = 0; k < a.state_len; ++k) {
    T v;
    bool counts;
    entry(k, v, counts);
    fr[k * a.final_seq_stride] = counts ? v : from_float<T>(0.f);
  }
}

// The outputs at positions e .. e + kNElts - 1 by the reference's rule (a tap reads a position when its id equals
// its output's; before 0 positions carry id[0]), stored straight to orow: windows the cut cannot express. Rare: rolled
// over the outputs, and called after a tile's vectors (as a call inside their loop, or not inlined, it made ptxas
// spill 100-300 bytes of the fast path at 64 registers).
template <typename Ktraits>
__device__ __forceinline__ void outputs_by_rule(const FwdRowsFeatureArgs& a, const typename Ktraits::T* xr,
                                                typename Ktraits::T* orow, const int32_t* ids, uint32_t b, uint32_t d,
                                                int64_t e, const float (&w)[Ktraits::kWidth], float bias, int lead) {
  using T = typename Ktraits::T;
  constexpr int kHalo = Ktraits::kHalo;
  const int64_t ss = a.seq_seq_stride;
#pragma unroll 1
  for (int i = 0; i < Ktraits::kNElts; ++i) {
    const int64_t t = e + i;
    const int32_t id = ids[t * ss];
    float acc = bias;
#pragma unroll
    for (int j = 0; j < Ktraits::kWidth; ++j) {
      const int64_t pos = t - kHalo + j;
      if (j >= lead && ids[(pos > 0 ? pos : 0) * ss] == id) acc = fmaf(w[j], x_or_init<T>(a, xr, b, d, pos), acc);
    }
    orow[t] = from_float<T>(id < 0 ? 0.f : activate(acc, a.silu));
  }
}

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_fwd_rows_kernel(const typename Ktraits::Args a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kNElts = Ktraits::kNElts;
  constexpr int kVecs = Ktraits::kVecs;
  constexpr int kHaloWords = Ktraits::kHaloWords;
  constexpr int kHaloWordsAlloc = Ktraits::kHaloWordsAlloc;
  constexpr int kEltsPerWord = Ktraits::kEltsPerWord;

  constexpr bool kFeatures = Ktraits::kFeatures;
  constexpr int kSeqPad = Ktraits::kSeqPad;
  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  bool seq = false;  // uniform
  if constexpr (kFeatures) seq = a.seq_marks != nullptr;

  // tile + stride stays below 2^32: both terms are below 2^31.
  for (uint32_t tile = blockIdx.x * Ktraits::kWarps + warp; tile < a.n_tiles; tile += gridDim.x * Ktraits::kWarps) {
    uint32_t seg;
    const uint32_t row = a.div_tiles_per_row.divmod(seg, tile);
    uint32_t d, b = 0;
    if constexpr (kFeatures) b = a.div_dim.divmod(d, row);
    else d = a.div_dim.mod(row);
    const T* __restrict__ xr = static_cast<const T*>(a.x) + static_cast<int64_t>(row) * a.seqlen;
    T* __restrict__ orow = static_cast<T*>(a.out) + static_cast<int64_t>(row) * a.seqlen;
    const uint32_t* __restrict__ xr_words = reinterpret_cast<const uint32_t*>(xr);
    const int v0 = static_cast<int>(seg) * Ktraits::kTileVecs + lane;  // this lane's first vector
    if constexpr (kFeatures) {
      // The final state, by the lane that holds the row's last vector, before the tile's loads (where little is live).
      const int last = a.row_vecs - 1 - v0;
      if (a.final_states != nullptr && last >= 0 && last % kWarpSize == 0 && last / kWarpSize < kVecs)
        write_final_state<T, kHalo>(a, xr, b, d);
    }

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
    // Features: the initial state under the first vector's halo where it reaches before the row start (lane 0;
    // lane 1 too for fp32 at W >= 6), and the window marks of every vector.
    const int64_t e0 = static_cast<int64_t>(v0) * kNElts;
    const int lead = wide_lead<kW>(a.w);  // the runtime-width kernel skips the first `lead` taps
    float init_x[kHalo > 0 ? kHalo : 1];
    const bool near_start = kFeatures && e0 < kHalo;
    if constexpr (kFeatures) {
      // Slots i < lead (skipped taps: no output reads them) are not loaded: the runtime-width kernel's halo reaches
      // further back than its state's width - 1 entries.
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int64_t pos = e0 - kHalo + i;
        init_x[i] = near_start && pos < 0 && wide_tap_runs(i, lead) ? x_or_init<T>(a, xr, b, d, pos) : 0.f;
      }
    }
    WindowMarks marks[kVecs];
    // Bit k (uniform): some window of the warp's k-th vectors meets a sequence start or padding (recur sets both
    // bits). The others take the plain taps: the cut's masking on every vector made the seq_idx forward 1.46x the
    // plain one on an H200 (1x4096x32768 bf16, 32 sequences).
    uint32_t cut = 0u;
    if constexpr (kFeatures) {
      if (seq) {
        wait_for_marks();  // x is loading; the marks kernel may still run (programmatic launch)
        const uint2* __restrict__ row_marks = seq_marks_row(a.seq_marks, b, a.seq_words);
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          marks[k] = window_marks<kSeqPad, Ktraits::kSeqLen>(row_marks, a.seq_words,
                                                              e0 + int64_t{k} * kWarpSize * kNElts);
          if (!warp_all((marks[k].starts | marks[k].pads) == 0u)) cut |= 1u << k;
        }
      }
    }
    float w[1][kW];
    float bias[1];
    load_weight_block<1, kW, kW == kWideWidth>(w, bias, a.w, d);

    uint32_t prev_shfl[kHaloWordsAlloc] = {};
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      // halo_words[kHaloWords - h] = the h-th 32-bit word before this vector (h = 1: adjacent).
      uint32_t halo_words[kHaloWordsAlloc];
      halo_words_from_lanes<kHaloWords>(halo_words, xv[k], k == 0 ? first_halo : prev_shfl, prev_shfl, lane);
      float xs[kHalo + kNElts];  // x[e - kHalo .. e + kNElts) as fp32
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int m = kHaloWords * kEltsPerWord - kHalo + i;
        xs[i] = to_float(word_elt<T>(halo_words[m / kEltsPerWord], m % kEltsPerWord));
      }
#pragma unroll
      for (int i = 0; i < kNElts; ++i) xs[kHalo + i] = to_float(xv[k].elt[i]);
      if (k == 0 && near_start) {
#pragma unroll
        for (int i = 0; i < kHalo; ++i)
          if (e0 - kHalo + i < 0) xs[i] = init_x[i];
      }
      vec_t yv;
      // output i, its bits ANDed with keep (all ones, or 0 for a padding token)
      auto output_at = [&](int i, uint32_t keep) {
        float acc = bias[0];
#pragma unroll
        for (int j = 0; j < kW; ++j)
          if (j >= lead) acc = fmaf(w[0][j], xs[i + j], acc);
        yv.elt[i] = from_float<T>(masked(activate(acc, a.silu), keep));
      };
      const int v = v0 + k * kWarpSize;
      bool store = v < a.row_vecs;
      if (((cut >> k) & 1u) != 0u && store) {  // kFeatures only
        const WindowMarks& m = marks[k];
        if (m.recur != 0u) {
          store = false;  // outputs_by_rule after the loop, where little is live
        } else {
          walk_cut<kHalo, kHalo + kNElts, kSeqPad - kHalo, kNElts>(
              xs, m.starts, m.pads, [&](int i) { output_at(i, keep_mask(m.pads, i + kSeqPad)); });
        }
      } else {
#pragma unroll
        for (int i = 0; i < kNElts; ++i) output_at(i, ~0u);
      }
      if (store) yv.store(orow + static_cast<int64_t>(v) * kNElts);
    }
    if constexpr (kFeatures) {
      if (cut != 0u) {
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          const int v = v0 + k * kWarpSize;
          if (marks[k].recur != 0u && v < a.row_vecs)
            outputs_by_rule<Ktraits>(a, xr, orow, a.seq_idx + static_cast<int64_t>(b) * a.seq_batch_stride, b, d,
                                     static_cast<int64_t>(v) * kNElts, w[0], bias[0], lead);
        }
      }
    }
  }
}

template <typename T, int kW, int kVecs, bool kFeatures>
void fwd_rows_launch(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w,
                     gpuStream_t stream) {
  using Ktraits = FwdRowsTraits<T, kW, kVecs, kFeatures>;
  typename Ktraits::Args a{};
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
  if constexpr (kFeatures) {
    a.init = p.initial_states;
    a.init_batch_stride = p.init_batch_stride;
    a.init_dim_stride = p.init_dim_stride;
    a.init_seq_stride = p.init_seq_stride;
    a.state_len = p.state_len;
    if (p.seq_idx != nullptr) {
      a.seq_idx = p.seq_idx;
      a.seq_batch_stride = p.seq_idx_batch_stride;
      a.seq_seq_stride = p.seq_idx_seq_stride;
      a.seq_marks = static_cast<const uint2*>(p.workspace);
      a.seq_words = seq_marks_words(p.seqlen);
    }
    if (plan.fuse_final) {
      a.final_states = p.final_states;
      a.final_batch_stride = p.final_batch_stride;
      a.final_dim_stride = p.final_dim_stride;
      a.final_seq_stride = p.final_seq_stride;
    }
  }
  const int64_t blocks = (n_tiles + Ktraits::kWarps - 1) / Ktraits::kWarps;
#if !defined(AITER_LITE_HIP)
  if constexpr (kFeatures) {
    // After the marks kernel: launched programmatically where the GPU allows it, so its blocks start (and load x)
    // while the marks kernel runs (wait_for_marks).
    if (p.seq_idx != nullptr && programmatic_launch_supported()) {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.gridDim = dim3(static_cast<unsigned>(blocks), 1, 1);
      cfg.blockDim = dim3(Ktraits::kThreads, 1, 1);
      cfg.stream = stream;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      AITER_LITE_GPU_CHECK(cudaLaunchKernelEx(&cfg, causal_conv1d_fwd_rows_kernel<Ktraits>, a));
      return;
    }
  }
#endif
  causal_conv1d_fwd_rows_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards; shard s holds the
// kernels of the widths w with width_shard(wide_shard_width(w), N) == s (AITER_LITE_CONV_WIDE_WIDTH_SWITCH skips the
// others). The plans and the entry points the forward calls are compiled in shard 0.
template <int kShard, int kShards>
void fwd_rows_shard(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w, bool features,
                    gpuStream_t stream);

#define AITER_LITE_FWD_ROWS_SHARD_EXTERN(s) \
  extern template void fwd_rows_shard<s, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const FwdRowsPlan&, \
                                                            const WeightArgs&, bool, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_FWD_ROWS_SHARD_EXTERN)
#undef AITER_LITE_FWD_ROWS_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The kernels of this shard's widths: plain, or with features.
template <int kShard, int kShards>
void fwd_rows_shard(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w, bool features,
                    gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    // Widths 5..8: one runtime-width kernel per dtype and vector count (kWideWidth).
    AITER_LITE_CONV_WIDE_WIDTH_SWITCH(p.width, kW, [&] {
      const WeightArgs wk = weight_args_for<kW>(w, p.width);
      auto launch = [&](auto with_features) {
        constexpr bool kFeatures = decltype(with_features)::value;
        if (plan.vecs_per_lane == 4) fwd_rows_launch<scalar_t, kW, 4, kFeatures>(p, plan, wk, stream);
        else fwd_rows_launch<scalar_t, kW, 1, kFeatures>(p, plan, wk, stream);
      };
      if (features) launch(std::true_type{});
      else launch(std::false_type{});
    });
  });
}

template void fwd_rows_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const FwdRowsPlan&,
                                                                  const WeightArgs&, bool, gpuStream_t);

#if AITER_LITE_SHARD == 0
namespace {

void fwd_rows_dispatch(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w, bool features,
                       gpuStream_t stream) {
  with_shard<AITER_LITE_SHARDS>(width_shard(wide_shard_width(p.width), AITER_LITE_SHARDS), [&](auto shard) {
    fwd_rows_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, plan, w, features, stream);
  });
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
  fwd_rows_dispatch(p, plan, w, false, stream);
}

FwdRowsPlan fwd_rows_features_plan(const CausalConv1dFwdParams& p) {
  const int64_t B = p.batch, D = p.dim, L = p.seqlen;
  const bool takes = p.cu_seqlens == nullptr && p.state_indices == nullptr && p.has_initial_state == nullptr &&
                     (p.seq_idx == nullptr || p.workspace != nullptr) && p.width <= kMaxTemplateWidth &&
                     dense_rows(p.x_batch_stride, p.x_dim_stride, p.x_seq_stride, B, D, L) &&
                     dense_rows(p.out_batch_stride, p.out_dim_stride, p.out_seq_stride, B, D, L) &&
                     is_aligned(p.x, 16) && is_aligned(p.out, 16);
  if (!takes) return FwdRowsPlan{};
  FwdRowsPlan plan = fwd_rows_plan(p);
  plan.fuse_final = p.final_states != nullptr && !fwd_final_may_alias_init(p);
  return plan;
}

void fwd_rows_features_run(const CausalConv1dFwdParams& p, const FwdRowsPlan& plan, const WeightArgs& w,
                           gpuStream_t stream) {
  if (p.seq_idx != nullptr)
    seq_marks_run(p.seq_idx, p.seq_idx_batch_stride, p.seq_idx_seq_stride, p.batch, p.seqlen,
                  static_cast<int>(p.width - 1), static_cast<uint2*>(p.workspace), nullptr, stream);
  fwd_rows_dispatch(p, plan, w, true, stream);
}
#endif  // AITER_LITE_SHARD == 0

}  // namespace conv1d
}  // namespace aiter_lite
