// Causal depthwise conv1d backward, channel-last kernel: x, dout and dx with dim stride 1 ([B, L, D]
// storage seen as [B, D, L]), any batch and seq strides, optional seq_idx. CUDA and HIP.
//
// A thread owns kV channels (one 4-byte vector, or one channel) over a chunk [t0, t1) of time steps and
// walks t from t0 to t1 + W - 2: at step t it loads x[t] and dout[t], recomputes pre[t] from the last
// W - 1 inputs it keeps in registers, and holds the last W - 1 dpre values; dx[t - (W - 1)] is then
// complete and is written (the first W - 1 steps of a chunk only fill the windows, the last W - 1
// read past the chunk: each chunk re-reads 2(W - 1) steps of x and W - 1 of dout, from L2). The chunk
// at t0 = 0 also writes dinit (dx at negative positions). seq_idx masks taps and gradients that cross
// a sequence boundary; the initial states continue the row's first sequence.
//
// A block is kWarpSize channel groups (the lanes: a warp's loads of one step are one contiguous run)
// times kChunks consecutive chunks (the warps) of one batch row; the warps' dweight/dbias sums are
// added in shared memory in a fixed order and written to the block's partial row.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "causal_conv1d_bwd.h"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "per_device.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

// Bytes of channels per thread: 4 (two 16-bit channels, one fp32). 8-byte groups (4 fp16 channels) held
// about 104 live values at W = 4 and spilled 1 KB per thread at the 80-register bound (ptxas 13.0, sm_90a).
// AITER_LITE_BWD_CL_VEC_BYTES=8 builds the 8-byte form for A/B timing (bench/lab/conv_bwd).
#ifdef AITER_LITE_BWD_CL_VEC_BYTES
constexpr int kBwdChannelLastVecBytes = AITER_LITE_BWD_CL_VEC_BYTES;
#else
constexpr int kBwdChannelLastVecBytes = 4;
#endif

template <typename T_, int kWidth_, int kV_, bool kSeq_>
struct BwdChannelLastTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kV = kV_;
  static constexpr bool kSeq = kSeq_;
  static constexpr int kThreads = 128;
  static constexpr int kChunks = kThreads / kWarpSize;  // chunks per block (one per warp)
  // Blocks per SM, the most at which ptxas 13.0 (sm_90a) keeps the windows, weights and sums of the
  // channels in registers without spilling: 80 registers spilled 8-264 bytes for 2 channels at W = 3, 4.
  // seq_idx mode holds the window's seq ids too: one block fewer at W = 3, 4.
  static constexpr int kMinBlocks =
      kV_ >= 4 ? (kWidth <= 4 ? 4 : 2)
               : (kV_ == 1 ? (kWidth <= 4 ? 6 : 4) : (kWidth <= 2 ? 6 : (kWidth <= 4 ? 5 : 3))) -
                     (kSeq_ && kWidth >= 3 && kWidth <= 4 ? 1 : 0);
  static constexpr int kUnroll = 4;  // time steps loaded together
  using vec_t = Vec<T, kV>;
  static_assert(kV == 1 || sizeof(vec_t) == kBwdChannelLastVecBytes, "a channel group is one element or one vector");
};

struct BwdChannelLastArgs {
  const void* x;
  const void* dout;
  void* dx;
  WeightArgs w;
  BwdStateArgs st;
  BwdPartials partials;
  const int32_t* seq_idx;
  int64_t seq_batch_stride, seq_seq_stride;
  int64_t seqlen, n_groups, chunk_len;
  int64_t n_chunk_blocks, n_group_blocks, n_blocks;  // n_blocks = batch * n_chunk_blocks * n_group_blocks
  FastDivmod div_group_blocks, div_chunk_blocks;
  int64_t x_batch_stride, x_seq_stride;
  int64_t dout_batch_stride, dout_seq_stride;
  int64_t dx_batch_stride, dx_seq_stride;
  bool silu;
};

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_bwd_channel_last_kernel(const BwdChannelLastArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = Ktraits::kHaloAlloc;
  constexpr int kV = Ktraits::kV;
  constexpr int kU = Ktraits::kUnroll;
  constexpr int kChunks = Ktraits::kChunks;
  constexpr int kSums = kV * (kW + 1);
  __shared__ float sums[kChunks - 1][kWarpSize][kSums];

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;

  for (int64_t blk = blockIdx.x; blk < a.n_blocks; blk += gridDim.x) {
    int64_t gb, cb;
    const int64_t rest = a.div_group_blocks.divmod(gb, blk);
    const int64_t b = a.div_chunk_blocks.divmod(cb, rest);
    const int64_t g = gb * kWarpSize + lane;
    const int64_t d0 = g * kV;
    const int64_t t0 = (cb * kChunks + warp) * a.chunk_len;
    const int64_t t1 = t0 + a.chunk_len < L ? t0 + a.chunk_len : L;
    const bool active = g < a.n_groups && t0 < L;

    float acc[kV][kW + 1];
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j <= kW; ++j) acc[c][j] = 0.f;

    if (active) {
      const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d0;
      const T* __restrict__ gp = static_cast<const T*>(a.dout) + b * a.dout_batch_stride + d0;
      const int32_t* __restrict__ sp = Ktraits::kSeq ? a.seq_idx + b * a.seq_batch_stride : nullptr;
      const int32_t seq_first = Ktraits::kSeq ? sp[0] : 0;
      const int32_t seq_last = Ktraits::kSeq ? sp[(L - 1) * a.seq_seq_stride] : 0;

      // Windows over t - kHalo .. t - 1: x (initial states before 0), its seq ids (seq_first before 0),
      // and dpre (zero before t0: only dx of positions >= t0, or < 0 for dinit, is written).
      float xw[kHaloAlloc][kV], dpw[kHaloAlloc][kV];
      int32_t sw[kHaloAlloc + 1];
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        const int64_t tt = t0 - kHalo + i;
        if (tt >= 0) {
          vec_t v;
          v.load(xp + tt * a.x_seq_stride);
#pragma unroll
          for (int c = 0; c < kV; ++c) xw[i][c] = to_float(v.elt[c]);
        } else {
#pragma unroll
          for (int c = 0; c < kV; ++c)
            xw[i][c] = a.st.init == nullptr
                           ? 0.f
                           : load_state<T>(a.st.init, b, d0 + c, tt + kHalo, a.st.init_batch_stride,
                                           a.st.init_dim_stride, a.st.init_seq_stride);
        }
        if (Ktraits::kSeq) sw[i] = tt >= 0 ? sp[tt * a.seq_seq_stride] : seq_first;
#pragma unroll
        for (int c = 0; c < kV; ++c) dpw[i][c] = 0.f;
      }
      float w[kV][kW];
      float bias[kV];
      load_weight_block<kV, kW>(w, bias, a.w, d0);

      const int64_t t_stop = t1 + kHalo;  // dx of t1 - 1 is complete at step t1 - 1 + kHalo
      const int64_t s_lo = (t0 == 0 && a.st.dinit != nullptr) ? -kHalo : t0;
      T* __restrict__ dxp = a.dx != nullptr ? static_cast<T*>(a.dx) + b * a.dx_batch_stride + d0 : nullptr;

      vec_t xv[kU], gv[kU];
      int32_t sv[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t t = t0 + u;
        if (t < L && t < t_stop) {
          xv[u].load(xp + t * a.x_seq_stride);
          gv[u].load(gp + t * a.dout_seq_stride);
          if (Ktraits::kSeq) sv[u] = sp[t * a.seq_seq_stride];
        } else {
          xv[u].set_zero();
          gv[u].set_zero();
          sv[u] = 0;
        }
      }
      for (int64_t tb = t0; tb < t_stop; tb += kU) {
        // The next kU steps are loaded before this group's compute (two groups of loads in flight).
        vec_t xn[kU], gn[kU];
        int32_t sn[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int64_t t = tb + kU + u;
          if (t < L && t < t_stop) {
            xn[u].load(xp + t * a.x_seq_stride);
            gn[u].load(gp + t * a.dout_seq_stride);
            if (Ktraits::kSeq) sn[u] = sp[t * a.seq_seq_stride];
          } else {
            xn[u].set_zero();
            gn[u].set_zero();
            sn[u] = 0;
          }
        }
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int64_t t = tb + u;
          if (t < t_stop) {
            sw[kHalo] = Ktraits::kSeq ? sv[u] : 0;
            float xc[kV], dp[kV];
#pragma unroll
            for (int c = 0; c < kV; ++c) {
              xc[c] = to_float(xv[u].elt[c]);
              float pre = fmaf(w[c][kHalo], xc[c], bias[c]);
#pragma unroll
              for (int j = 0; j < kHalo; ++j) {
                const bool same = !Ktraits::kSeq || sw[j] == sw[kHalo];
                pre = fmaf(w[c][j], same ? xw[j][c] : 0.f, pre);
              }
              dp[c] = t < L ? act_grad(pre, to_float(gv[u].elt[c]), a.silu) : 0.f;
            }
            if (t < t1) {
#pragma unroll
              for (int c = 0; c < kV; ++c) {
#pragma unroll
                for (int j = 0; j < kHalo; ++j) {
                  const bool same = !Ktraits::kSeq || sw[j] == sw[kHalo];
                  acc[c][j] = fmaf(dp[c], same ? xw[j][c] : 0.f, acc[c][j]);
                }
                acc[c][kHalo] = fmaf(dp[c], xc[c], acc[c][kHalo]);
                acc[c][kW] += dp[c];
              }
            }
            // dx at s = t - kHalo: taps j read dpre[t - j] (dpw[kHalo - j] for j >= 1, dp for j = 0).
            const int64_t s = t - kHalo;
            if (s >= s_lo) {
              const int32_t seq_s = kHalo > 0 ? sw[0] : sw[kHalo];
              vec_t out;
              float gx[kV];
#pragma unroll
              for (int c = 0; c < kV; ++c) {
                float v = (!Ktraits::kSeq || sw[kHalo] == seq_s) ? w[c][0] * dp[c] : 0.f;
#pragma unroll
                for (int j = 1; j <= kHalo; ++j) {
                  const bool same = !Ktraits::kSeq || sw[kHalo - j] == seq_s;
                  v = fmaf(w[c][j], same ? dpw[kHalo - j][c] : 0.f, v);
                }
                gx[c] = v;
              }
              if (a.st.dfinal != nullptr && s >= L - kHalo && (!Ktraits::kSeq || seq_s == seq_last)) {
#pragma unroll
                for (int c = 0; c < kV; ++c)
                  gx[c] += load_state<T>(a.st.dfinal, b, d0 + c, s - (L - kHalo), a.st.dfinal_batch_stride,
                                         a.st.dfinal_dim_stride, a.st.dfinal_seq_stride);
              }
              if (s >= 0) {
                if (dxp != nullptr) {
#pragma unroll
                  for (int c = 0; c < kV; ++c) out.elt[c] = from_float<T>(gx[c]);
                  out.store(dxp + s * a.dx_seq_stride);
                }
              } else {
#pragma unroll
                for (int c = 0; c < kV; ++c)
                  static_cast<T*>(a.st.dinit)[b * a.st.dinit_batch_stride + (d0 + c) * a.st.dinit_dim_stride +
                                              (s + kHalo) * a.st.dinit_seq_stride] = from_float<T>(gx[c]);
              }
            }
            // Slide the windows by one step.
#pragma unroll
            for (int i = 0; i + 1 < kHalo; ++i) {
              sw[i] = sw[i + 1];
#pragma unroll
              for (int c = 0; c < kV; ++c) {
                xw[i][c] = xw[i + 1][c];
                dpw[i][c] = dpw[i + 1][c];
              }
            }
            if (kHalo > 0) {
              sw[kHaloAlloc - 1] = sw[kHalo];
#pragma unroll
              for (int c = 0; c < kV; ++c) {
                xw[kHaloAlloc - 1][c] = xc[c];
                dpw[kHaloAlloc - 1][c] = dp[c];
              }
            }
          }
        }
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          xv[u] = xn[u];
          gv[u] = gn[u];
          sv[u] = sn[u];
        }
      }
    }

    // dweight/dbias: the warps' sums added in warp order, written by warp 0.
    if (a.partials.rows != nullptr) {
      if (warp > 0) {
#pragma unroll
        for (int c = 0; c < kV; ++c)
#pragma unroll
          for (int j = 0; j <= kW; ++j) sums[warp - 1][lane][c * (kW + 1) + j] = acc[c][j];
      }
      __syncthreads();
      if (warp == 0 && g < a.n_groups) {
        float* prow = a.partials.rows + (b * a.n_chunk_blocks + cb) * a.partials.cols + d0 * (kW + 1);
#pragma unroll
        for (int c = 0; c < kV; ++c)
#pragma unroll
          for (int j = 0; j <= kW; ++j) {
            float s = acc[c][j];
#pragma unroll
            for (int k = 0; k + 1 < kChunks; ++k) s += sums[k][lane][c * (kW + 1) + j];
            prow[c * (kW + 1) + j] = s;
          }
      }
      __syncthreads();  // sums is free for the next block item
    }
  }
}

template <class Ktraits>
int64_t bwd_channel_last_resident_threads() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    return resident_blocks_on(dev, causal_conv1d_bwd_channel_last_kernel<Ktraits>, Ktraits::kThreads, 0) *
           Ktraits::kThreads;
  });
}

template <typename T, int kW, int kV, bool kSeq>
void bwd_channel_last_launch(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                             const BwdPartials& partials, gpuStream_t stream) {
  using Ktraits = BwdChannelLastTraits<T, kW, kV, kSeq>;
  BwdChannelLastArgs a{};
  a.x = p.x;
  a.dout = p.dout;
  a.dx = p.dx;
  a.w = w;
  a.st = make_state_args(p);
  a.partials = partials;
  a.seq_idx = p.seq_idx;
  a.seq_batch_stride = p.seq_idx_batch_stride;
  a.seq_seq_stride = p.seq_idx_seq_stride;
  a.seqlen = p.seqlen;
  a.n_groups = p.dim / kV;
  a.chunk_len = plan.chunk_len;
  a.n_chunk_blocks = (plan.n_chunks + Ktraits::kChunks - 1) / Ktraits::kChunks;
  a.n_group_blocks = (a.n_groups + kWarpSize - 1) / kWarpSize;
  a.n_blocks = p.batch * a.n_chunk_blocks * a.n_group_blocks;
  a.div_group_blocks = FastDivmod(a.n_group_blocks);
  a.div_chunk_blocks = FastDivmod(a.n_chunk_blocks);
  a.x_batch_stride = p.x_batch_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.dout_batch_stride = p.dout_batch_stride;
  a.dout_seq_stride = p.dout_seq_stride;
  a.dx_batch_stride = p.dx_batch_stride;
  a.dx_seq_stride = p.dx_seq_stride;
  a.silu = p.silu;
  const int64_t blocks = std::min(a.n_blocks, kMaxGridX);
  causal_conv1d_bwd_channel_last_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

template <typename T, int kV>
int64_t resident_threads_for(int64_t width) {
  // Width 4 stands in for every width: the chunk choice needs only the rough thread count.
  (void)width;
  return bwd_channel_last_resident_threads<BwdChannelLastTraits<T, 4, kV, false>>();
}

bool groups_aligned(const void* ptr, int64_t bs, int64_t ss, int64_t B, int64_t L, int kV) {
  return is_aligned(ptr, kBwdChannelLastVecBytes) && (B == 1 || bs % kV == 0) && (L == 1 || ss % kV == 0);
}

}  // namespace

BwdChannelLastPlan bwd_channel_last_plan(const CausalConv1dBwdParams& p, bool want_vec) {
  BwdChannelLastPlan plan{};
  const int64_t B = p.batch, D = p.dim, L = p.seqlen;
  const int kVec = kBwdChannelLastVecBytes / dtype_size(p.x_dtype);
  const bool vec = want_vec && D % kVec == 0 && groups_aligned(p.x, p.x_batch_stride, p.x_seq_stride, B, L, kVec) &&
                   groups_aligned(p.dout, p.dout_batch_stride, p.dout_seq_stride, B, L, kVec) &&
                   (p.dx == nullptr || groups_aligned(p.dx, p.dx_batch_stride, p.dx_seq_stride, B, L, kVec));
  plan.vec = vec ? kVec : 1;
  const int64_t n_groups = D / plan.vec;
  int64_t resident = 0;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    resident = plan.vec == 1 ? resident_threads_for<scalar_t, 1>(p.width)
                             : resident_threads_for<scalar_t, kBwdChannelLastVecBytes / sizeof(scalar_t)>(p.width);
  });
  // Chunks long enough to amortise their 2(W - 1)-step halo, short enough that the threads fill the
  // GPU about twice (two rounds hide the tail of the first); a multiple of the kChunks warps of a
  // block, so no warp of a block idles past the row end (the kernel takes any chunk length).
  constexpr int kChunks = 128 / kWarpSize;
  const int64_t steps = B * n_groups * L;
  int64_t len = (steps + 2 * resident - 1) / (2 * resident);
  len = std::max<int64_t>(8, std::min<int64_t>(len, 512));
  int64_t n_chunks = (L + len - 1) / len;
  if (n_chunks > 1) n_chunks = (n_chunks + kChunks - 1) / kChunks * kChunks;
  plan.chunk_len = (L + n_chunks - 1) / n_chunks;
  plan.n_chunks = (L + plan.chunk_len - 1) / plan.chunk_len;
  plan.partial_rows = B * ((plan.n_chunks + kChunks - 1) / kChunks);
  return plan;
}

void bwd_channel_last_run(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                          const BwdPartials& partials, gpuStream_t stream) {
  const bool seq = p.seq_idx != nullptr;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    constexpr int kVec = kBwdChannelLastVecBytes / sizeof(scalar_t);
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if (plan.vec == 1) {
        if (seq) bwd_channel_last_launch<scalar_t, kW, 1, true>(p, plan, w, partials, stream);
        else bwd_channel_last_launch<scalar_t, kW, 1, false>(p, plan, w, partials, stream);
      } else {
        if (seq) bwd_channel_last_launch<scalar_t, kW, kVec, true>(p, plan, w, partials, stream);
        else bwd_channel_last_launch<scalar_t, kW, kVec, false>(p, plan, w, partials, stream);
      }
    });
  });
}

}  // namespace conv1d
}  // namespace aiter_lite
