// Causal depthwise conv1d backward, "tile" kernel: any strides, any L (odd lengths), optional seq_idx.
// CUDA and HIP.
//
// A block takes `rows` batch rows of one channel d over a window of `tile_len` time steps [t0, t0 + T),
// staged in shared memory as fp32:
//   x     at t0 - (W-1) .. t0 + T + W - 2 (initial states before 0, zeros past L),
//   dout  at t0 .. t0 + T + W - 2, overwritten in place by dpre (recomputed with SiLU),
//   seq_idx over the same range as x (seq_idx mode only).
// then writes dx for [t0, t0 + T) (and dinit for the block at t0 = 0). Loads walk the flat (row, step)
// index with consecutive threads on consecutive steps, so rows with seq stride 1 are read coalesced,
// and short rows (L = 129) are packed several to a block instead of leaving most of a tile idle.
// dweight/dbias: per-thread sums over the block's positions [t0, t0 + T), reduced over the block in a
// fixed order and written to the block's partial row.
#include <algorithm>
#include <cstdint>

#include "causal_conv1d_bwd.h"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"

namespace aiter_lite {
namespace conv1d {
namespace {

constexpr int kTileThreads = 128;
constexpr int64_t kTileElts = 2048;     // rows * tile_len at most (plus halos)
constexpr int64_t kTileMaxRows = 64;
// Loads in flight per thread while staging (x, then dout). One round over both streams with 16 loads per
// thread and 8 blocks per SM measured slower on the H100 (2026-11-24, bf16 16x2048x129 65.6 -> 73.1 us,
// 3x1536x777 57.4 -> 65.0, fp32 16x2048x129 53.3 -> 59.3; separate runs).
constexpr int kTileLoadUnroll = 8;

template <typename T_, int kWidth_, bool kSeq_>
struct BwdTileTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr bool kSeq = kSeq_;
  static constexpr int kThreads = kTileThreads;
  static constexpr int kMinBlocks = 6;
  static constexpr int kWarps = kThreads / kWarpSize;
};

struct BwdTileArgs {
  const void* x;
  const void* dout;
  void* dx;
  WeightArgs w;
  BwdStateArgs st;
  BwdPartials partials;
  const int32_t* seq_idx;
  int64_t seq_batch_stride, seq_seq_stride;
  int64_t batch, dim, seqlen;
  int64_t tile_len, rows, n_tiles, n_row_groups, n_blocks;  // n_blocks = dim * n_row_groups * n_tiles
  FastDivmod div_tiles, div_row_groups;
  // Positions per row: of x (T + 2(W-1)), of dout (T + W - 1), of dx (T, or T + W - 1 with dinit).
  FastDivmod32 div_x_span, div_g_span, div_dx_span, div_dx_dinit_span;
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t dout_batch_stride, dout_dim_stride, dout_seq_stride;
  int64_t dx_batch_stride, dx_dim_stride, dx_seq_stride;
  bool silu;
};

// Shared memory of one block: x and seq ids over T + 2(W-1) steps per row, dout/dpre over T + W - 1.
inline size_t tile_smem_bytes(int64_t rows, int64_t tile_len, int width, bool seq) {
  const int64_t halo = width - 1;
  const int64_t x_span = tile_len + 2 * halo, g_span = tile_len + halo;
  return static_cast<size_t>(rows) * (x_span + g_span + (seq ? x_span : 0)) * 4;
}

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_bwd_tile_kernel(const BwdTileArgs a) {
  using T = typename Ktraits::T;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kThreads = Ktraits::kThreads;
  extern __shared__ __align__(16) float tile_smem[];

  const int tid = static_cast<int>(threadIdx.x);
  const int64_t L = a.seqlen;
  const int x_span = static_cast<int>(a.tile_len) + 2 * kHalo;
  const int g_span = static_cast<int>(a.tile_len) + kHalo;
  const int rows = static_cast<int>(a.rows);
  float* xs = tile_smem;                        // [rows][x_span]
  float* gs = xs + rows * x_span;               // [rows][g_span]
  int32_t* ss = reinterpret_cast<int32_t*>(gs + rows * g_span);  // [rows][x_span], seq mode
  const FastDivmod32 div_x_span = a.div_x_span, div_g_span = a.div_g_span;
  __shared__ float red[Ktraits::kWarps][kW + 1];

  for (int64_t blk = blockIdx.x; blk < a.n_blocks; blk += gridDim.x) {
    int64_t tile, rg;
    const int64_t rest = a.div_tiles.divmod(tile, blk);
    const int64_t d = a.div_row_groups.divmod(rg, rest);
    const int64_t b0 = rg * a.rows;
    const int64_t t0 = tile * a.tile_len;
    const int rows_here = static_cast<int>(a.rows < a.batch - b0 ? a.rows : a.batch - b0);
    const T* __restrict__ xd = static_cast<const T*>(a.x) + d * a.x_dim_stride;
    const T* __restrict__ gd = static_cast<const T*>(a.dout) + d * a.dout_dim_stride;

    float w[kW], bias;
    load_channel_weights<kW>(w, bias, a.w, d);

    // Stage x (and seq ids) over [t0 - kHalo, t0 + T + kHalo) and dout over [t0, t0 + T + kHalo). All of
    // a thread's loads of one round are issued before its shared-memory stores.
    const int nx = rows_here * x_span;
    for (int f0 = 0; f0 < nx; f0 += kThreads * kTileLoadUnroll) {
      float v[kTileLoadUnroll];
      int32_t sv[kTileLoadUnroll];
#pragma unroll
      for (int u = 0; u < kTileLoadUnroll; ++u) {
        const int f = f0 + u * kThreads + tid;
        v[u] = 0.f;
        sv[u] = 0;
        if (f < nx) {
          uint32_t i;
          const int64_t r = div_x_span.divmod(i, static_cast<uint32_t>(f));
          const int64_t b = b0 + r;
          const int64_t t = t0 - kHalo + static_cast<int64_t>(i);
          if (t >= 0 && t < L) {
            v[u] = to_float(xd[b * a.x_batch_stride + t * a.x_seq_stride]);
          } else if (t < 0 && a.st.init != nullptr) {
            v[u] = load_state<T>(a.st.init, b, d, t + kHalo, a.st.init_batch_stride, a.st.init_dim_stride,
                                 a.st.init_seq_stride);
          }
          if (Ktraits::kSeq)
            sv[u] = a.seq_idx[b * a.seq_batch_stride + (t < 0 ? 0 : (t < L ? t : L - 1)) * a.seq_seq_stride];
        }
      }
#pragma unroll
      for (int u = 0; u < kTileLoadUnroll; ++u) {
        const int f = f0 + u * kThreads + tid;
        if (f < nx) {
          xs[f] = v[u];
          if (Ktraits::kSeq) ss[f] = sv[u];
        }
      }
    }
    const int ng = rows_here * g_span;
    for (int f0 = 0; f0 < ng; f0 += kThreads * kTileLoadUnroll) {
      float v[kTileLoadUnroll];
#pragma unroll
      for (int u = 0; u < kTileLoadUnroll; ++u) {
        const int f = f0 + u * kThreads + tid;
        v[u] = 0.f;
        if (f < ng) {
          uint32_t i;
          const int64_t r = div_g_span.divmod(i, static_cast<uint32_t>(f));
          const int64_t t = t0 + static_cast<int64_t>(i);
          if (t < L) v[u] = to_float(gd[(b0 + r) * a.dout_batch_stride + t * a.dout_seq_stride]);
        }
      }
#pragma unroll
      for (int u = 0; u < kTileLoadUnroll; ++u) {
        const int f = f0 + u * kThreads + tid;
        if (f < ng) gs[f] = v[u];
      }
    }
    __syncthreads();

    // dpre over [t0, t0 + T + kHalo), in place; dweight/dbias sums over [t0, t0 + T).
    float acc[kW + 1];
#pragma unroll
    for (int j = 0; j <= kW; ++j) acc[j] = 0.f;
    for (int f = tid; f < ng; f += kThreads) {
      uint32_t i;
      const int r = static_cast<int>(div_g_span.divmod(i, static_cast<uint32_t>(f)));
      const int64_t t = t0 + static_cast<int64_t>(i);
      const float* xr = xs + r * x_span + i;  // xr[m] = x at t - kHalo + m
      const int32_t* sr = ss + r * x_span + i;
      float xm[kW];
#pragma unroll
      for (int j = 0; j < kW; ++j) xm[j] = (!Ktraits::kSeq || sr[j] == sr[kHalo]) ? xr[j] : 0.f;
      float pre = bias;
#pragma unroll
      for (int j = 0; j < kW; ++j) pre = fmaf(w[j], xm[j], pre);
      // seq_idx < 0: a padding token, whose output is a constant 0 (no gradient flows from it).
      const float dp = t < L && !(Ktraits::kSeq && sr[kHalo] < 0) ? act_grad(pre, gs[f], a.silu) : 0.f;
      gs[f] = dp;
      if (static_cast<int64_t>(i) < a.tile_len) {
#pragma unroll
        for (int j = 0; j < kW; ++j) acc[j] = fmaf(dp, xm[j], acc[j]);
        acc[kW] += dp;
      }
    }
    __syncthreads();

    // dx over [t0, t0 + T) (from -kHalo for dinit in the block at t0 = 0): dx[s] = sum_j w[j] dpre[s + kHalo - j].
    const int lo = (t0 == 0 && a.st.dinit != nullptr) ? -kHalo : 0;
    const int span = static_cast<int>(a.tile_len) - lo;
    const FastDivmod32 div_span = lo < 0 ? a.div_dx_dinit_span : a.div_dx_span;
    const int nd = rows_here * span;
    for (int f = tid; f < nd; f += kThreads) {
      uint32_t i0;
      const int r = static_cast<int>(div_span.divmod(i0, static_cast<uint32_t>(f)));
      const int i = static_cast<int>(i0) + lo;  // s = t0 + i
      const int64_t s = t0 + i;
      if (s >= L) continue;
      const int64_t b = b0 + r;
      const float* gr = gs + r * g_span;  // gr[m] = dpre at t0 + m
      const int32_t* sr = ss + r * x_span + kHalo;  // sr[m] = seq id at t0 + m
      const int32_t seq_s = Ktraits::kSeq ? sr[i] : 0;
      float v = 0.f;
#pragma unroll
      for (int j = 0; j < kW; ++j) {
        const int m = i + kHalo - j;
        if (m >= 0 && (!Ktraits::kSeq || sr[m] == seq_s)) v = fmaf(w[j], gr[m], v);
      }
      if (a.st.dfinal != nullptr && s >= L - kHalo) {
        const bool last_seq =
            !Ktraits::kSeq || seq_s == a.seq_idx[b * a.seq_batch_stride + (L - 1) * a.seq_seq_stride];
        if (last_seq)
          v += load_state<T>(a.st.dfinal, b, d, s - (L - kHalo), a.st.dfinal_batch_stride, a.st.dfinal_dim_stride,
                             a.st.dfinal_seq_stride);
      }
      if (s >= 0) {
        if (a.dx != nullptr)
          static_cast<T*>(a.dx)[b * a.dx_batch_stride + d * a.dx_dim_stride + s * a.dx_seq_stride] = from_float<T>(v);
      } else {
        static_cast<T*>(a.st.dinit)[b * a.st.dinit_batch_stride + d * a.st.dinit_dim_stride +
                                    (s + kHalo) * a.st.dinit_seq_stride] = from_float<T>(v);
      }
    }

    if (a.partials.rows != nullptr) {
      const int lane = lane_id(), warp = tid / kWarpSize;
#pragma unroll
      for (int j = 0; j <= kW; ++j) {
        const float s = warp_sum(acc[j]);
        if (lane == 0) red[warp][j] = s;
      }
      __syncthreads();
      if (tid <= kW) {
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < Ktraits::kWarps; ++k) s += red[k][tid];
        a.partials.rows[(rg * a.n_tiles + tile) * a.partials.cols + d * (kW + 1) + tid] = s;
      }
    }
    __syncthreads();  // shared memory is free for the next block item
  }
}

template <typename T, int kW, bool kSeq>
void bwd_tile_launch(const CausalConv1dBwdParams& p, const BwdTilePlan& plan, const WeightArgs& w,
                     const BwdPartials& partials, gpuStream_t stream) {
  using Ktraits = BwdTileTraits<T, kW, kSeq>;
  BwdTileArgs a{};
  a.x = p.x;
  a.dout = p.dout;
  a.dx = p.dx;
  a.w = w;
  a.st = make_state_args(p);
  a.partials = partials;
  a.seq_idx = p.seq_idx;
  a.seq_batch_stride = p.seq_idx_batch_stride;
  a.seq_seq_stride = p.seq_idx_seq_stride;
  a.batch = p.batch;
  a.dim = p.dim;
  a.seqlen = p.seqlen;
  a.tile_len = plan.tile_len;
  a.rows = plan.rows_per_block;
  a.n_tiles = plan.n_tiles;
  a.n_row_groups = plan.n_row_groups;
  a.n_blocks = p.dim * plan.n_row_groups * plan.n_tiles;
  a.div_tiles = FastDivmod(plan.n_tiles);
  a.div_row_groups = FastDivmod(plan.n_row_groups);
  a.div_x_span = FastDivmod32(plan.tile_len + 2 * (kW - 1));
  a.div_g_span = FastDivmod32(plan.tile_len + kW - 1);
  a.div_dx_span = FastDivmod32(plan.tile_len);
  a.div_dx_dinit_span = FastDivmod32(plan.tile_len + kW - 1);
  a.x_batch_stride = p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.dout_batch_stride = p.dout_batch_stride;
  a.dout_dim_stride = p.dout_dim_stride;
  a.dout_seq_stride = p.dout_seq_stride;
  a.dx_batch_stride = p.dx_batch_stride;
  a.dx_dim_stride = p.dx_dim_stride;
  a.dx_seq_stride = p.dx_seq_stride;
  a.silu = p.silu;
  const size_t smem = tile_smem_bytes(plan.rows_per_block, plan.tile_len, kW, kSeq);
  const int64_t blocks = std::min(a.n_blocks, kMaxGridX);
  causal_conv1d_bwd_tile_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, smem, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards;
// shard s holds the kernels of the widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDTH_SWITCH skips
// the others). The plan and bwd_tile_run, the entry the backward dispatch calls, are compiled in shard 0.
template <int kShard, int kShards>
void bwd_tile_shard(const CausalConv1dBwdParams& p, const BwdTilePlan& plan, const WeightArgs& w,
                    const BwdPartials& partials, gpuStream_t stream);

#define AITER_LITE_BWD_TILE_SHARD_EXTERN(s) \
  extern template void bwd_tile_shard<s, AITER_LITE_SHARDS>( \
      const CausalConv1dBwdParams&, const BwdTilePlan&, const WeightArgs&, const BwdPartials&, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_BWD_TILE_SHARD_EXTERN)
#undef AITER_LITE_BWD_TILE_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The kernels of this shard's widths (width_shard).
template <int kShard, int kShards>
void bwd_tile_shard(const CausalConv1dBwdParams& p, const BwdTilePlan& plan, const WeightArgs& w,
                    const BwdPartials& partials, gpuStream_t stream) {
  const bool seq = p.seq_idx != nullptr;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if (seq) bwd_tile_launch<scalar_t, kW, true>(p, plan, w, partials, stream);
      else bwd_tile_launch<scalar_t, kW, false>(p, plan, w, partials, stream);
    });
  });
}

template void bwd_tile_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const CausalConv1dBwdParams&, const BwdTilePlan&, const WeightArgs&, const BwdPartials&, gpuStream_t);

#if AITER_LITE_SHARD == 0
BwdTilePlan bwd_tile_plan(const CausalConv1dBwdParams& p) {
  BwdTilePlan plan{};
  const int64_t B = p.batch, L = p.seqlen;
  plan.tile_len = std::min(L, kTileElts);
  plan.n_tiles = (L + plan.tile_len - 1) / plan.tile_len;
  // Rows per block: as many as fit kTileElts, spread evenly over the row groups.
  const int64_t fit = std::max<int64_t>(1, std::min(kTileMaxRows, kTileElts / plan.tile_len));
  plan.n_row_groups = (B + fit - 1) / fit;
  plan.rows_per_block = (B + plan.n_row_groups - 1) / plan.n_row_groups;
  plan.partial_rows = plan.n_row_groups * plan.n_tiles;
  return plan;
}

void bwd_tile_run(const CausalConv1dBwdParams& p, const BwdTilePlan& plan, const WeightArgs& w,
                  const BwdPartials& partials, gpuStream_t stream) {
  with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
    bwd_tile_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, plan, w, partials, stream);
  });
}
#endif

}  // namespace conv1d
}  // namespace aiter_lite
