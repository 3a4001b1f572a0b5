// Causal depthwise conv1d backward, channel-last kernels: x, dout and dx with dim stride 1 ([B, L, D]
// storage seen as [B, D, L]), any batch and seq strides, optional seq_idx. CUDA and HIP.
//
// A thread owns kV channels (two on the staged path; one on the direct path)
// over a chunk [t0, t1) of time steps and walks t from t0 to t1 + W - 2 (ChannelLastWalk): at step t it
// takes x[t] and dout[t], recomputes pre[t] from the last W - 1 inputs it keeps in registers, and holds
// the last W - 1 dpre values; dx[t - (W - 1)] is then complete and is written (the first W - 1 steps of a
// chunk only fill the windows, the last W - 1 read past the chunk: each chunk re-reads 2(W - 1) steps of
// x and W - 1 of dout, from L2). The chunk at t0 = 0 also writes dinit (dx at negative positions).
// seq_idx masks taps and gradients that cross a sequence boundary; the initial states continue the
// row's first sequence.
//
// A block is kWarpSize channel groups (the lanes) times kChunks consecutive chunks (the warps) of one
// batch row; the warps' dweight/dbias sums are added in shared memory in a fixed order and written to
// the block's partial row. Two ways to feed the walk:
//   staged  (16-byte aligned rows of channels): each warp streams its x and dout rows (kWarpSize lanes x
//           2 channels: 128 bytes a step in 16-bit types, 256 in fp32) through a ring of kStages
//           shared-memory stages of 1 KB per tensor with cp.async, so the bytes in flight live in shared
//           memory, not in registers, and the registers hold only the walk (5 blocks per SM at W <= 4).
//           Stages away from the chunk's ends take a step without any position checks.
//   direct  (anything else: odd D, unaligned strides): the thread loads its own channels with plain
//           loads, kUnroll steps ahead.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

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

constexpr int kClThreads = 128;
constexpr int kClChunks = kClThreads / kWarpSize;  // chunks per block (one per warp)
// Staged path: channels per lane, bytes of one tensor's rows in a stage (per warp), and stages in the ring
// (kStages - 1 in flight while one is read). 2 channels measured best on the H100 (2026-11-24): one fp32
// channel per lane ran 3-7% slower at W = 2, 4 (8 x 5120 x 2048: 395.9 against 384.4 us), four 16-bit
// channels 16-19% slower at W = 4 (168 registers, 3 blocks per SM) though 7% faster at W = 2.
constexpr int kStagedChannels = 2;
constexpr int kStageBytes = 1024;
constexpr int kStages = 3;  // 4 stages ran 1-2% slower in 16-bit types (H100, 2026-11-25)
template <typename T>
constexpr int kStageRowBytes = kWarpSize * kStagedChannels * static_cast<int>(sizeof(T));
template <typename T>
constexpr int kStageRows = kStageBytes / kStageRowBytes<T>;

// ---- async global -> shared copies (CUDA cp.async; HIP: a plain load and store, same interface) -------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
#if defined(AITER_LITE_CUDA)
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  return 0;
#endif
}

// kBytes (16 or 4) from src to dst, or zeros when !valid (src is then not read). 16-byte copies skip L1 (.cg);
// the 4-byte ones (seq ids, shared by every channel block of a row) keep it (.ca).
template <int kBytes>
__device__ __forceinline__ void copy_async(void* dst, const void* src, bool valid) {
  static_assert(kBytes == 16 || kBytes == 4, "cp.async copies 16 or 4 bytes here");
#if defined(AITER_LITE_CUDA)
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
#else
  using word_t = std::conditional_t<kBytes == 16, uint4, uint32_t>;
  *static_cast<word_t*>(dst) = valid ? *static_cast<const word_t*>(src) : word_t{};
#endif
}

__device__ __forceinline__ void copy_async_commit() {
#if defined(AITER_LITE_CUDA)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
#if defined(AITER_LITE_CUDA)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// ---- the walk --------------------------------------------------------------------------------------

constexpr int staged_min_blocks(int w, bool seq) {
  return w <= 1 ? (seq ? 7 : 8) : (w <= 2 ? 6 : (w <= 3 ? 5 : (w <= 4 ? (seq ? 4 : 5) : (w <= 6 ? (seq ? 3 : 4) : 3))));
}

template <typename T_, int kWidth_, int kV_, bool kSeq_, bool kStaged_>
struct BwdChannelLastTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kV = kV_;
  static constexpr bool kSeq = kSeq_;
  static constexpr bool kStaged = kStaged_;
  static constexpr int kThreads = kClThreads;
  static constexpr int kChunks = kClChunks;
  // Blocks per SM, the most at which ptxas 13.0 (sm_90a) keeps the walk in registers without spilling.
  // direct: 80 registers spilled 8-264 bytes for 2 channels at W = 3, 4; seq_idx mode holds the window's
  // seq ids too. staged (its bytes in flight are in shared memory, so fewer threads suffice): at 64
  // registers 2 channels spilled 24-152 bytes for W = 2..4.
  static constexpr int kMinBlocks = kStaged_ ? staged_min_blocks(kWidth_, kSeq_)
                                             : (kV_ == 1 ? (kWidth <= 4 ? 6 : 4)
                                                         : (kWidth <= 2 ? 6 : (kWidth <= 4 ? 5 : 3))) -
                                                   (kSeq_ && kWidth >= 3 && kWidth <= 4 ? 1 : 0);
  static constexpr int kUnroll = 4;  // direct: time steps loaded together
  using vec_t = Vec<T, kV>;
  static_assert(!kStaged_ || kV_ == kStagedChannels, "a staged lane owns kStagedChannels channels");
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
  int64_t seqlen, dim, n_groups, chunk_len;
  int64_t n_chunk_blocks, n_group_blocks, n_blocks;  // n_blocks = batch * n_chunk_blocks * n_group_blocks
  FastDivmod div_group_blocks, div_chunk_blocks;
  int64_t x_batch_stride, x_seq_stride;
  int64_t dout_batch_stride, dout_seq_stride;
  int64_t dx_batch_stride, dx_seq_stride;
  bool silu;
};

// Clamps a 64-bit position difference into 32 bits (|v| <= 2^30: the comparisons below stay right, since
// chunk-relative steps are at most a few thousand).
__device__ __forceinline__ int32_t clamp32(int64_t v) {
  constexpr int64_t kLim = int64_t{1} << 30;
  return static_cast<int32_t>(v < -kLim ? -kLim : (v > kLim ? kLim : v));
}

// A lane's kV elements as fp32. bf16 pairs unpack with one shift and one mask (the generic conversion
// spends a byte permute and a shift on the high half).
template <typename T, int kV>
__device__ __forceinline__ void unpack(const Vec<T, kV>& v, float (&out)[kV]) {
  if constexpr (std::is_same_v<T, bfloat16_t> && kV % 2 == 0) {
#pragma unroll
    for (int c = 0; c < kV; c += 2) {
      uint32_t u;
      memcpy(&u, &v.elt[c], 4);
      out[c] = __uint_as_float(u << 16);
      out[c + 1] = __uint_as_float(u & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int c = 0; c < kV; ++c) out[c] = to_float(v.elt[c]);
  }
}

// One thread's walk over a chunk: weights, windows, and the dweight/dbias sums of its channels. Steps are
// counted from the chunk start (rel = t - t0) in 32 bits, so the unrolled loops keep few 64-bit values.
template <typename Ktraits>
struct ChannelLastWalk {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  static constexpr int kW = Ktraits::kWidth;
  static constexpr int kHalo = Ktraits::kHalo;
  static constexpr int kHaloAlloc = Ktraits::kHaloAlloc;
  static constexpr int kV = Ktraits::kV;

  // Chunk constants, relative to t0: dpre is zero from n_row (the row end), the sums stop at n_sums (t1),
  // dx is written from s_first (-kHalo with dinit at t0 = 0, else 0), dfinal adds from n_final (L - kHalo),
  // and positions below s_zero (-t0) are dinit.
  int32_t b, d0, n_row, n_sums, s_first, n_final, s_zero;
  int32_t seq_last;
  bool active;  // this lane's channels exist: it writes dx/dinit and reads states
  T* dxp;       // dx of (b, d0) at t0, or nullptr
  float w[kV][kW], bias[kV];
  // Windows over t - kHalo .. t - 1: x (initial states before 0), its seq ids (seq_first before 0), and
  // dpre (zero before t0: only dx of positions >= t0, or < 0 for dinit, is written).
  float xw[kHaloAlloc][kV], dpw[kHaloAlloc][kV];
  int32_t sw[kHaloAlloc + 1];
  float acc[kV][kW + 1];

  __device__ __forceinline__ void start(const BwdChannelLastArgs& a, int64_t b_, int64_t d0_, int64_t t0,
                                        int64_t t1, bool active_) {
    const int64_t L = a.seqlen;
    b = static_cast<int32_t>(b_);
    d0 = static_cast<int32_t>(d0_);
    n_row = clamp32(L - t0);
    n_sums = static_cast<int32_t>(t1 - t0);
    s_first = (t0 == 0 && a.st.dinit != nullptr) ? -kHalo : 0;
    n_final = clamp32(L - kHalo - t0);
    s_zero = clamp32(-t0);
    active = active_;
    dxp = a.dx != nullptr ? static_cast<T*>(a.dx) + b_ * a.dx_batch_stride + t0 * a.dx_seq_stride + d0_ : nullptr;
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j <= kW; ++j) acc[c][j] = 0.f;
    const int32_t* sp = Ktraits::kSeq ? a.seq_idx + b_ * a.seq_batch_stride : nullptr;
    const int32_t seq_first = Ktraits::kSeq ? sp[0] : 0;
    seq_last = Ktraits::kSeq ? sp[(L - 1) * a.seq_seq_stride] : 0;
    const T* xp = static_cast<const T*>(a.x) + b_ * a.x_batch_stride + d0_;
#pragma unroll
    for (int i = 0; i < kHalo; ++i) {
      const int64_t tt = t0 - kHalo + i;
      if (!active) {
#pragma unroll
        for (int c = 0; c < kV; ++c) xw[i][c] = 0.f;
      } else if (tt >= 0) {
        vec_t v;
        v.load(xp + tt * a.x_seq_stride);
#pragma unroll
        for (int c = 0; c < kV; ++c) xw[i][c] = to_float(v.elt[c]);
      } else {
#pragma unroll
        for (int c = 0; c < kV; ++c)
          xw[i][c] = a.st.init == nullptr ? 0.f
                                          : load_state<T>(a.st.init, b_, d0_ + c, tt + kHalo, a.st.init_batch_stride,
                                                          a.st.init_dim_stride, a.st.init_seq_stride);
      }
      if (Ktraits::kSeq) sw[i] = tt >= 0 ? sp[tt * a.seq_seq_stride] : seq_first;
#pragma unroll
      for (int c = 0; c < kV; ++c) dpw[i][c] = 0.f;
    }
    if (active) {
      load_weight_block<kV, kW>(w, bias, a.w, d0_);
    } else {
#pragma unroll
      for (int c = 0; c < kV; ++c) {
        bias[c] = 0.f;
#pragma unroll
        for (int j = 0; j < kW; ++j) w[c][j] = 0.f;
      }
    }
  }

  // Step rel = t - t0 (0 <= rel < n_sums + kHalo): x[t], dout[t] (anything past the row end) and seq_idx[t].
  // kInterior: the caller knows that rel < n_sums, s_first <= s, s_zero <= s, s < n_final, that the lane
  // is active and dx is wanted, and passes dx_at = the address of dx[t0 + s] (no checks, no index math).
  // kAct: 1 SiLU, 0 none, -1 a.silu decides (a branch per channel, which also splits the step's code).
  template <bool kInterior = false, int kAct = -1>
  __device__ __forceinline__ void step(const BwdChannelLastArgs& a, int32_t rel, const vec_t& xv, const vec_t& gv,
                                       int32_t seq, T* dx_at = nullptr) {
    sw[kHalo] = Ktraits::kSeq ? seq : 0;
    float xc[kV], dp[kV], gc[kV];
    unpack(xv, xc);
    unpack(gv, gc);
#pragma unroll
    for (int c = 0; c < kV; ++c) {
      float pre = fmaf(w[c][kHalo], xc[c], bias[c]);
#pragma unroll
      for (int j = 0; j < kHalo; ++j) {
        const bool same = !Ktraits::kSeq || sw[j] == sw[kHalo];
        pre = fmaf(w[c][j], same ? xw[j][c] : 0.f, pre);
      }
      const bool silu = kAct < 0 ? a.silu : kAct == 1;
      // seq_idx < 0: a padding token, whose output is a constant 0 (no gradient flows from it).
      dp[c] = (kInterior || rel < n_row) && !(Ktraits::kSeq && seq < 0) ? act_grad(pre, gc[c], silu) : 0.f;
    }
    if (kInterior || rel < n_sums) {
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
    const int32_t s = rel - kHalo;
    if (kInterior || (s >= s_first && active)) {
      const int32_t seq_s = kHalo > 0 ? sw[0] : sw[kHalo];
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
      if (!kInterior && a.st.dfinal != nullptr && s >= n_final && (!Ktraits::kSeq || seq_s == seq_last)) {
#pragma unroll
        for (int c = 0; c < kV; ++c)
          gx[c] += load_state<T>(a.st.dfinal, b, d0 + c, s - n_final, a.st.dfinal_batch_stride,
                                 a.st.dfinal_dim_stride, a.st.dfinal_seq_stride);
      }
      if (kInterior || s >= s_zero) {
        if (kInterior || dxp != nullptr) {
          vec_t out;
#pragma unroll
          for (int c = 0; c < kV; ++c) out.elt[c] = from_float<T>(gx[c]);
          out.store(kInterior ? dx_at : dxp + static_cast<int64_t>(s) * a.dx_seq_stride);
        }
      } else {  // t0 = 0 here: position s < 0 is dinit entry s + kHalo
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
};

template <typename Ktraits>
using BlockSums = float[Ktraits::kChunks - 1][kWarpSize][Ktraits::kV * (Ktraits::kWidth + 1)];

// dweight/dbias of a block item: the warps' sums added in warp order (through shared `sums`, free on entry
// in every warp), written by warp 0 to partial row (b * n_chunk_blocks + cb).
template <typename Ktraits>
__device__ __forceinline__ void write_block_sums(const BwdChannelLastArgs& a,
                                                 const float (&acc)[Ktraits::kV][Ktraits::kWidth + 1], int64_t b,
                                                 int64_t cb, int64_t g, BlockSums<Ktraits>& sums) {
  constexpr int kV = Ktraits::kV, kW = Ktraits::kWidth, kChunks = Ktraits::kChunks;
  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  if (warp > 0) {
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j <= kW; ++j) sums[warp - 1][lane][c * (kW + 1) + j] = acc[c][j];
  }
  __syncthreads();
  if (warp == 0 && g < a.n_groups) {
    float* prow = a.partials.rows + (b * a.n_chunk_blocks + cb) * a.partials.cols + g * kV * (kW + 1);
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

// Block item blk -> (batch b, chunk block cb, channel group block gb).
__device__ __forceinline__ void block_item(const BwdChannelLastArgs& a, int64_t blk, int64_t& b, int64_t& cb,
                                           int64_t& gb) {
  const int64_t rest = a.div_group_blocks.divmod(gb, blk);
  b = a.div_chunk_blocks.divmod(cb, rest);
}

// ---- direct: plain loads, kUnroll steps ahead ----------------------------------------------------

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_bwd_channel_last_kernel(const BwdChannelLastArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kU = Ktraits::kUnroll;
  constexpr int kChunks = Ktraits::kChunks;
  static_assert(!Ktraits::kStaged, "the direct kernel's traits");

  __shared__ BlockSums<Ktraits> sums;

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;

  for (int64_t blk = blockIdx.x; blk < a.n_blocks; blk += gridDim.x) {
    int64_t b, cb, gb;
    block_item(a, blk, b, cb, gb);
    const int64_t g = gb * kWarpSize + lane;
    const int64_t d0 = g * Ktraits::kV;
    const int64_t t0 = (cb * kChunks + warp) * a.chunk_len;
    const int64_t t1 = t0 + a.chunk_len < L ? t0 + a.chunk_len : L;
    const bool active = g < a.n_groups && t0 < L;

    ChannelLastWalk<Ktraits> walk;
    if (active) {
      walk.start(a, b, d0, t0, t1, true);
      const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + t0 * a.x_seq_stride + d0;
      const T* __restrict__ gp = static_cast<const T*>(a.dout) + b * a.dout_batch_stride + t0 * a.dout_seq_stride + d0;
      const int32_t* __restrict__ sp =
          Ktraits::kSeq ? a.seq_idx + b * a.seq_batch_stride + t0 * a.seq_seq_stride : nullptr;
      // Steps rel = t - t0 < n_steps (dx of t1 - 1 is complete at step t1 - 1 + kHalo); loads below n_load.
      const int32_t n_steps = static_cast<int32_t>(t1 - t0) + kHalo;
      const int32_t n_load = n_steps < walk.n_row ? n_steps : walk.n_row;

      vec_t xv[kU], gv[kU];
      int32_t sv[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (u < n_load) {
          xv[u].load(xp + u * a.x_seq_stride);
          gv[u].load(gp + u * a.dout_seq_stride);
          if (Ktraits::kSeq) sv[u] = sp[u * a.seq_seq_stride];
        } else {
          xv[u].set_zero();
          gv[u].set_zero();
          sv[u] = 0;
        }
      }
      for (int32_t rb = 0; rb < n_steps; rb += kU) {
        // The next kU steps are loaded before this group's compute (two groups of loads in flight).
        vec_t xn[kU], gn[kU];
        int32_t sn[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int32_t r = rb + kU + u;
          if (r < n_load) {
            xn[u].load(xp + static_cast<int64_t>(r) * a.x_seq_stride);
            gn[u].load(gp + static_cast<int64_t>(r) * a.dout_seq_stride);
            if (Ktraits::kSeq) sn[u] = sp[static_cast<int64_t>(r) * a.seq_seq_stride];
          } else {
            xn[u].set_zero();
            gn[u].set_zero();
            sn[u] = 0;
          }
        }
#pragma unroll
        for (int u = 0; u < kU; ++u)
          if (rb + u < n_steps) walk.step(a, rb + u, xv[u], gv[u], sv[u]);
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          xv[u] = xn[u];
          gv[u] = gn[u];
          sv[u] = sn[u];
        }
      }
    } else {
#pragma unroll
      for (int c = 0; c < Ktraits::kV; ++c)
#pragma unroll
        for (int j = 0; j <= Ktraits::kWidth; ++j) walk.acc[c][j] = 0.f;
    }
    if (a.partials.rows != nullptr) write_block_sums<Ktraits>(a, walk.acc, b, cb, g, sums);
  }
}

// ---- staged: each warp streams its rows through shared memory with cp.async ------------------------

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks)
    causal_conv1d_bwd_channel_last_staged_kernel(const BwdChannelLastArgs a) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kChunks = Ktraits::kChunks;
  constexpr int kStageRows = conv1d::kStageRows<T>;
  constexpr int kStageRowBytes = conv1d::kStageRowBytes<T>;
  constexpr int kGroupBytes = kStagedChannels * static_cast<int>(sizeof(T));
  constexpr int kPieces = kStageRowBytes / 16;                  // 16-byte pieces per stage row
  constexpr int kCopies = kStageRows * kPieces / kWarpSize;     // per lane, per tensor, per stage
  static_assert(kWarpSize % kPieces == 0, "a lane copies the same piece of every row it copies");
  constexpr int kPieceElts = 16 / static_cast<int>(sizeof(T));
  static_assert(Ktraits::kStaged, "the staged kernel's traits");
  static_assert(kStageRows * kPieces % kWarpSize == 0 && kStageRows <= kWarpSize, "stage copies split evenly");
  // [warp][stage][x, dout][row][group bytes of the warp's lanes]
  __shared__ __align__(16) unsigned char ring[kChunks][kStages][2][kStageRows][conv1d::kStageRowBytes<T>];
  __shared__ int32_t ring_seq[kChunks][kStages][Ktraits::kSeq ? kStageRows : 1];

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t L = a.seqlen;

  for (int64_t blk = blockIdx.x; blk < a.n_blocks; blk += gridDim.x) {
    int64_t b, cb, gb;
    block_item(a, blk, b, cb, gb);
    const int64_t g = gb * kWarpSize + lane;
    const int64_t d0 = g * Ktraits::kV;
    const int64_t t0 = (cb * kChunks + warp) * a.chunk_len;
    const int64_t t1 = t0 + a.chunk_len < L ? t0 + a.chunk_len : L;

    ChannelLastWalk<Ktraits> walk;
    if (t0 < L) {  // the whole warp: it copies together
      walk.start(a, b, d0, t0, t1, g < a.n_groups);
      // Steps rel = t - t0 < n_steps (dx of t1 - 1 is complete at step t1 - 1 + kHalo); rows below n_load
      // are copied, the rest zero-filled.
      const int32_t n_steps = static_cast<int32_t>(t1 - t0) + kHalo;
      const int32_t n_load = n_steps < walk.n_row ? n_steps : walk.n_row;
      const int n_stages = (n_steps + kStageRows - 1) / kStageRows;
      // Every lane of the warp owns channels and dx is wanted (the interior steps check neither).
      const bool lanes_full = (gb + 1) * kWarpSize <= a.n_groups && a.dx != nullptr;
      // This lane's copies: row r0 + q * kRowStep of a stage, 16-byte piece `part` of the warp's channels.
      constexpr int kRowStep = kWarpSize / kPieces;
      const int r0 = lane / kPieces, part = lane % kPieces;
      const int64_t dblk = gb * kWarpSize * Ktraits::kV + part * kPieceElts;  // the piece's first channel
      const bool part_ok = dblk < a.dim;
      const T* __restrict__ xsrc = static_cast<const T*>(a.x) + b * a.x_batch_stride + (t0 + r0) * a.x_seq_stride + dblk;
      const T* __restrict__ gsrc =
          static_cast<const T*>(a.dout) + b * a.dout_batch_stride + (t0 + r0) * a.dout_seq_stride + dblk;
      const int32_t* __restrict__ ssrc =
          Ktraits::kSeq ? a.seq_idx + b * a.seq_batch_stride + t0 * a.seq_seq_stride : nullptr;

      // Copies of stage k (steps k * kStageRows ...) into ring slot k % kStages; an empty group past the
      // last stage keeps the wait count uniform.
      auto issue = [&](int k) {
        if (k < n_stages) {
          const int slot = k % kStages;
          const int32_t rb = k * kStageRows;
#pragma unroll
          for (int q = 0; q < kCopies; ++q) {
            const int r = r0 + q * kRowStep;
            const bool ok = part_ok && rb + r < n_load;  // else zero-filled, the tensor's start named
            const int64_t off = rb + q * kRowStep;
            copy_async<16>(&ring[warp][slot][0][r][part * 16],
                         ok ? xsrc + off * a.x_seq_stride : static_cast<const T*>(a.x), ok);
            copy_async<16>(&ring[warp][slot][1][r][part * 16],
                         ok ? gsrc + off * a.dout_seq_stride : static_cast<const T*>(a.dout), ok);
          }
          if (Ktraits::kSeq && lane < kStageRows) {
            const bool ok = rb + lane < n_load;
            copy_async<4>(&ring_seq[warp][slot][lane], ssrc + (ok ? static_cast<int64_t>(rb + lane) : 0) * a.seq_seq_stride,
                        ok);
          }
        }
        copy_async_commit();
      };

#pragma unroll
      for (int k = 0; k + 1 < kStages; ++k) issue(k);
      for (int k = 0; k < n_stages; ++k) {
        issue(k + kStages - 1);  // into the slot read in step k - 1 (the warp_sync below freed it)
        copy_async_wait<kStages - 1>();
        warp_sync();
        const int slot = k % kStages;
        const int32_t rb = k * kStageRows;
        auto step_row = [&](auto interior, auto act, int r, T* dx_at) {
          vec_t xv, gv;
          xv.load(reinterpret_cast<const T*>(&ring[warp][slot][0][r][lane * kGroupBytes]));
          gv.load(reinterpret_cast<const T*>(&ring[warp][slot][1][r][lane * kGroupBytes]));
          walk.template step<decltype(interior)::value, decltype(act)::value>(
              a, rb + r, xv, gv, Ktraits::kSeq ? ring_seq[warp][slot][Ktraits::kSeq ? r : 0] : 0, dx_at);
        };
        // Interior rows: dx[t0 + rb + r - kHalo] through a pointer stepped by the row stride.
        auto interior_rows = [&](auto act) {
          T* dst = walk.dxp + static_cast<int64_t>(rb - kHalo) * a.dx_seq_stride;
#pragma unroll
          for (int r = 0; r < kStageRows; ++r) {
            step_row(std::true_type{}, act, r, dst);
            dst += a.dx_seq_stride;
          }
        };
        // A stage clear of the chunk's ends, in a warp of active lanes that writes dx (all warp-uniform):
        // every row is a plain step, straight-line code with the activation known.
        const bool interior = lanes_full && rb - kHalo >= walk.s_first && rb - kHalo >= walk.s_zero &&
                              rb + kStageRows <= walk.n_sums &&
                              (a.st.dfinal == nullptr || rb + kStageRows - 1 - kHalo < walk.n_final);
        if (interior) {
          if (a.silu) interior_rows(std::integral_constant<int, 1>{});
          else interior_rows(std::integral_constant<int, 0>{});
        } else {
#pragma unroll
          for (int r = 0; r < kStageRows; ++r)
            if (rb + r < n_steps) step_row(std::false_type{}, std::integral_constant<int, -1>{}, r, nullptr);
        }
        warp_sync();  // every lane is done with the slot before it is refilled
      }
      copy_async_wait<0>();  // nothing in flight into the ring when the next block item starts
    } else {
#pragma unroll
      for (int c = 0; c < Ktraits::kV; ++c)
#pragma unroll
        for (int j = 0; j <= Ktraits::kWidth; ++j) walk.acc[c][j] = 0.f;
    }
    if (a.partials.rows != nullptr) {
      // The block sums reuse the ring once every warp is done with it.
      static_assert(sizeof(BlockSums<Ktraits>) <= sizeof(ring), "the block sums fit in the ring");
      __syncthreads();
      write_block_sums<Ktraits>(a, walk.acc, b, cb, g, *reinterpret_cast<BlockSums<Ktraits>*>(&ring[0][0][0][0][0]));
    }
  }
}

// ---- host ------------------------------------------------------------------------------------------

template <class Ktraits>
int64_t bwd_channel_last_resident_threads() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    if constexpr (Ktraits::kStaged)
      return resident_blocks_on(dev, causal_conv1d_bwd_channel_last_staged_kernel<Ktraits>, Ktraits::kThreads, 0) *
             Ktraits::kThreads;
    else
      return resident_blocks_on(dev, causal_conv1d_bwd_channel_last_kernel<Ktraits>, Ktraits::kThreads, 0) *
             Ktraits::kThreads;
  });
}

template <typename T, int kW, int kV, bool kSeq, bool kStaged>
void bwd_channel_last_launch(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                             const BwdPartials& partials, gpuStream_t stream) {
  using Ktraits = BwdChannelLastTraits<T, kW, kV, kSeq, kStaged>;
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
  a.dim = p.dim;
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
  if constexpr (kStaged)
    causal_conv1d_bwd_channel_last_staged_kernel<Ktraits>
        <<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  else
    causal_conv1d_bwd_channel_last_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// 16-byte pieces of the staged copies: every row of channels of x, dout (and dx: its 4-byte stores) starts
// on a 16-byte boundary, so a piece never straddles the last channel.
bool rows_of_pieces(const void* ptr, int64_t bs, int64_t ss, int64_t B, int64_t L, int64_t D, int elt) {
  const int64_t piece = 16 / elt;
  return is_aligned(ptr, 16) && D % piece == 0 && (B == 1 || bs % piece == 0) && (L == 1 || ss % piece == 0);
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards;
// shard s holds the kernels of the widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDTH_SWITCH skips
// the others), and answers for their occupancy (the plan sizes its chunks from the kernel the call runs).
// The plan and bwd_channel_last_run, the entries the backward dispatch calls, are compiled in shard 0.
template <int kShard, int kShards>
int64_t bwd_channel_last_resident_shard(const CausalConv1dBwdParams& p, bool staged);
template <int kShard, int kShards>
void bwd_channel_last_shard(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                            const BwdPartials& partials, gpuStream_t stream);

#define AITER_LITE_BWD_CL_SHARD_EXTERN(s)                                                                   \
  extern template int64_t bwd_channel_last_resident_shard<s, AITER_LITE_SHARDS>(                            \
      const CausalConv1dBwdParams&, bool);                                                                  \
  extern template void bwd_channel_last_shard<s, AITER_LITE_SHARDS>(                                        \
      const CausalConv1dBwdParams&, const BwdChannelLastPlan&, const WeightArgs&, const BwdPartials&, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_BWD_CL_SHARD_EXTERN)
#undef AITER_LITE_BWD_CL_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// Threads of the kernel the call runs that fit on the GPU at once (this shard's widths).
template <int kShard, int kShards>
int64_t bwd_channel_last_resident_shard(const CausalConv1dBwdParams& p, bool staged) {
  const bool seq = p.seq_idx != nullptr;
  int64_t resident = 0;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    constexpr int kVec = kStagedChannels;
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if (staged)
        resident = seq ? bwd_channel_last_resident_threads<BwdChannelLastTraits<scalar_t, kW, kVec, true, true>>()
                       : bwd_channel_last_resident_threads<BwdChannelLastTraits<scalar_t, kW, kVec, false, true>>();
      else
        resident = seq ? bwd_channel_last_resident_threads<BwdChannelLastTraits<scalar_t, kW, 1, true, false>>()
                       : bwd_channel_last_resident_threads<BwdChannelLastTraits<scalar_t, kW, 1, false, false>>();
    });
  });
  return resident;
}

template int64_t bwd_channel_last_resident_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dBwdParams&,
                                                                                       bool);

#if AITER_LITE_SHARD == 0
BwdChannelLastPlan bwd_channel_last_plan(const CausalConv1dBwdParams& p, bool want_vec) {
  BwdChannelLastPlan plan{};
  const int64_t B = p.batch, D = p.dim, L = p.seqlen;
  const int elt = dtype_size(p.x_dtype);
  const bool staged = want_vec && rows_of_pieces(p.x, p.x_batch_stride, p.x_seq_stride, B, L, D, elt) &&
                      rows_of_pieces(p.dout, p.dout_batch_stride, p.dout_seq_stride, B, L, D, elt) &&
                      (p.dx == nullptr || rows_of_pieces(p.dx, p.dx_batch_stride, p.dx_seq_stride, B, L, D, elt));
  plan.vec = staged ? kStagedChannels : 1;
  plan.staged = staged;
  const int64_t n_groups = D / plan.vec;
  const int64_t resident = with_shard<AITER_LITE_SHARDS>(  // threads of the kernel this call runs
      width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
        return bwd_channel_last_resident_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, staged);
      });
  // Chunks long enough to amortise their 2(W - 1)-step halo (and the staged ring's fill), short enough
  // that the threads fill the GPU about twice (two rounds hide the tail of the first); a multiple of the
  // kChunks warps of a block, so no warp of a block idles past the row end (the kernels take any length).
  // The staged kernel's 32-step floor (two ring stages' worth of steps per chunk) left 2 x 256 x 1024 bf16
  // with 64 blocks on 132 SMs (16.0 us against causal-conv1d's 11.7, H100 2026-11-24), so problems whose
  // 32-step chunks would occupy under a quarter of the GPU take the direct kernel's floor of 8.
  const int64_t steps = B * n_groups * L;
  int64_t len = (steps + 2 * resident - 1) / (2 * resident);
  const int64_t min_len = staged && steps / 32 >= resident / 4 ? 32 : 8;
  len = std::max<int64_t>(min_len, std::min<int64_t>(len, 512));
  int64_t n_chunks = (L + len - 1) / len;
  if (n_chunks > 1) n_chunks = (n_chunks + kClChunks - 1) / kClChunks * kClChunks;
#ifndef AITER_LITE_BWD_CL_PLAN_TWICE
  // The last round of blocks (all of equal work): under half full it leaves most of the GPU idle for a
  // whole block's time (4 x 4096 x 4096 bf16: 2.33 rounds of 660 resident blocks ran 181.7 us, 1.94 rounds
  // 171.9), at least half full it costs about its share, since half the blocks already draw the bandwidth
  // (8 x 4096 x 4096 W = 2: 2.59 rounds 315.8 us against 1.94 rounds 324.1; H100, 2026-11-25). So one chunk
  // block more or fewer per row is taken when it cuts (rounds, a short last one counted as half) x chunk
  // length by 3%.
  if (n_chunks > 1) {
    const int64_t slots = std::max<int64_t>(1, resident / kClThreads);
    const int64_t blocks_per_cb = B * ((n_groups + kWarpSize - 1) / kWarpSize);  // blocks per chunk block
    auto chunk_of = [&](int64_t n_cb) { return (L + n_cb * kClChunks - 1) / (n_cb * kClChunks); };
    auto cost = [&](int64_t n_cb) {
      const double rounds = static_cast<double>(blocks_per_cb * n_cb) / static_cast<double>(slots);
      const double tail = rounds - static_cast<double>(static_cast<int64_t>(rounds));
      return (rounds - tail + (tail > 0 ? std::max(tail, 0.5) : 0.0)) * static_cast<double>(chunk_of(n_cb));
    };
    const int64_t n_cb0 = n_chunks / kClChunks;
    int64_t best = n_cb0;
    double best_cost = cost(n_cb0);
    for (const int64_t n_cb : {n_cb0 - 1, n_cb0 + 1}) {
      if (n_cb < 1 || chunk_of(n_cb) < min_len || chunk_of(n_cb) > 512) continue;
      if (cost(n_cb) < 0.97 * best_cost) {
        best = n_cb;
        best_cost = cost(n_cb);
      }
    }
    n_chunks = best * kClChunks;
  }
#endif
  plan.chunk_len = (L + n_chunks - 1) / n_chunks;
  plan.n_chunks = (L + plan.chunk_len - 1) / plan.chunk_len;
  plan.partial_rows = B * ((plan.n_chunks + kClChunks - 1) / kClChunks);
  return plan;
}
#endif

// The kernels of this shard's widths (width_shard).
template <int kShard, int kShards>
void bwd_channel_last_shard(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                            const BwdPartials& partials, gpuStream_t stream) {
  const bool seq = p.seq_idx != nullptr;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    constexpr int kVec = kStagedChannels;
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if (!plan.staged) {
        if (seq) bwd_channel_last_launch<scalar_t, kW, 1, true, false>(p, plan, w, partials, stream);
        else bwd_channel_last_launch<scalar_t, kW, 1, false, false>(p, plan, w, partials, stream);
      } else {
        if (seq) bwd_channel_last_launch<scalar_t, kW, kVec, true, true>(p, plan, w, partials, stream);
        else bwd_channel_last_launch<scalar_t, kW, kVec, false, true>(p, plan, w, partials, stream);
      }
    });
  });
}

template void bwd_channel_last_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(
    const CausalConv1dBwdParams&, const BwdChannelLastPlan&, const WeightArgs&, const BwdPartials&, gpuStream_t);

#if AITER_LITE_SHARD == 0
void bwd_channel_last_run(const CausalConv1dBwdParams& p, const BwdChannelLastPlan& plan, const WeightArgs& w,
                          const BwdPartials& partials, gpuStream_t stream) {
  with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
    bwd_channel_last_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, plan, w, partials, stream);
  });
}
#endif

}  // namespace conv1d
}  // namespace aiter_lite
