// Causal depthwise conv1d backward (Mamba style), CUDA and HIP: path choice, the workspace, the
// fixed-order reduction of dweight/dbias, and the naive kernels. Notation in causal_conv1d_bwd.h.
//
// Kernels:
//   rows          dense [B, D, L], 16-byte aligned, L >= 2W: warp tiles of 16-byte vectors, halos by warp
//                 shuffle; rows off the vector grid (odd L) as row-relative vectors; seq_idx on rows of whole
//                 vectors, each window cut at its sequence starts (causal_conv1d_bwd_rows.cu; seq_idx that
//                 decreases is recomputed by the reduce kernel, below).
//   channel_last  x, dout and dx with dim stride 1, seq_idx allowed: a thread walks a chunk of time
//                 steps for one 4-byte group of channels, fed through a cp.async shared-memory ring
//                 when the steps are 16-byte aligned (causal_conv1d_bwd_channel_last.cu).
//   tile          anything else with W <= 8 (strided views, seq_idx on odd L, short rows): a block
//                 stages a window of several rows of one channel in shared memory (causal_conv1d_bwd_tile.cu).
//   short_rows    rows shorter than the width that the tile kernel would take, without dweight or dbias (the
//                 heads of a context-parallel rank): one thread a row.
//   naive         W > 8: one thread per dx element and one block per dweight/dbias entry, recomputing
//                 dpre for every tap (W^2 work per element; kept simple, not fast).
// dout in the other of the two fast layouts than x (channel-last x with a contiguous dout, or the
// reverse: a gradient that arrives transposed) would leave only the tile kernel; dout is then first
// copied into x's layout in the workspace by a tiled transpose (dout_stage_*), and rows or channel_last run.
//
// Determinism: the three fast kernels write per-block fp32 partial sums of dweight/dbias to the
// workspace and causal_conv1d_bwd_reduce_kernel adds them in a fixed order; no float atomics
// anywhere, so every call is bitwise reproducible and `deterministic` costs nothing extra.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "causal_conv1d_bwd.h"
#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"

namespace aiter_lite {
namespace conv1d {
namespace {

// ---------------------------------------------------------------------------------------------
// naive: any width, any strides, every feature

struct BwdNaiveArgs {
  CausalConv1dBwdParams p;
  WeightArgs w;
  FastDivmod div_span, div_dim;  // dx positions per row (L, or L + W - 1 with dinit), dim
};

template <typename T>
__device__ __forceinline__ int32_t seq_at(const CausalConv1dBwdParams& p, int64_t b, int64_t t) {
  if (p.seq_idx == nullptr || p.seqlen == 0) return 0;
  const int64_t tc = t < 0 ? 0 : (t < p.seqlen ? t : p.seqlen - 1);
  return p.seq_idx[b * p.seq_idx_batch_stride + tc * p.seq_idx_seq_stride];
}

// x at position t of row (b, d): initial states before 0.
template <typename T>
__device__ __forceinline__ float x_at(const CausalConv1dBwdParams& p, int64_t b, int64_t d, int64_t t) {
  const int64_t H = p.width - 1;
  if (t >= 0) return to_float(static_cast<const T*>(p.x)[b * p.x_batch_stride + d * p.x_dim_stride + t * p.x_seq_stride]);
  if (p.initial_states == nullptr) return 0.f;
  return load_state<T>(p.initial_states, b, d, t + H, p.init_batch_stride, p.init_dim_stride, p.init_seq_stride);
}

template <typename T>
__device__ float dpre_at(const CausalConv1dBwdParams& p, const WeightArgs& w, int64_t b, int64_t d, int64_t t) {
  const int64_t H = p.width - 1;
  const int32_t st = seq_at<T>(p, b, t);
  if (st < 0) return 0.f;  // a padding token: its output is a constant 0
  float pre = w.bias == nullptr ? 0.f : load_as_float(w.bias, w.dtype, d * w.bias_stride);
  for (int64_t j = 0; j < p.width; ++j) {
    const int64_t tt = t - H + j;
    if (tt < -H || seq_at<T>(p, b, tt) != st) continue;
    pre = fmaf(load_as_float(w.weight, w.dtype, d * w.dim_stride + j * w.width_stride), x_at<T>(p, b, d, tt), pre);
  }
  const float g = to_float(static_cast<const T*>(p.dout)[b * p.dout_batch_stride + d * p.dout_dim_stride +
                                                          t * p.dout_seq_stride]);
  return act_grad(pre, g, p.silu);
}

// The gradient v of x at position s of row (b, d) (s < 0: of the initial state, slot s + W - 1), plus dfinal's
// entry where s is one of the row's last W - 1 positions and in its last sequence (in_last: s's id is position L-1's).
template <typename T>
__device__ __forceinline__ void store_dx_element(const CausalConv1dBwdParams& p, int64_t b, int64_t d, int64_t s,
                                                 float v, bool in_last) {
  const int64_t H = p.width - 1, L = p.seqlen;
  if (p.dfinal_states != nullptr && s >= L - H && in_last)
    v += load_state<T>(p.dfinal_states, b, d, s - (L - H), p.dfinal_batch_stride, p.dfinal_dim_stride,
                       p.dfinal_seq_stride);
  if (s >= 0)
    static_cast<T*>(p.dx)[b * p.dx_batch_stride + d * p.dx_dim_stride + s * p.dx_seq_stride] = from_float<T>(v);
  else
    static_cast<T*>(p.dinitial_states)[b * p.dinit_batch_stride + d * p.dinit_dim_stride +
                                       (s + H) * p.dinit_seq_stride] = from_float<T>(v);
}

// One thread per dx element (and dinit element: positions -(W-1) .. -1 when dinit is wanted): elements first,
// first + step, ...
template <typename T>
__device__ void naive_dx_elements(const BwdNaiveArgs& a, int64_t first, int64_t step) {
  const CausalConv1dBwdParams& p = a.p;
  const int64_t H = p.width - 1, L = p.seqlen;
  const int64_t lo = p.dinitial_states != nullptr ? -H : 0;
  const int64_t n = p.batch * p.dim * (L - lo);
  for (int64_t idx = first; idx < n; idx += step) {
    int64_t i, d;
    const int64_t row = a.div_span.divmod(i, idx);
    const int64_t b = a.div_dim.divmod(d, row);
    const int64_t s = i + lo;
    if (s >= 0 && p.dx == nullptr) continue;
    const int32_t ss = seq_at<T>(p, b, s);
    float v = 0.f;
    for (int64_t j = 0; j < p.width; ++j) {
      const int64_t t = s + H - j;
      if (t < 0 || t >= L || seq_at<T>(p, b, t) != ss) continue;
      v = fmaf(load_as_float(a.w.weight, a.w.dtype, d * a.w.dim_stride + j * a.w.width_stride),
               dpre_at<T>(p, a.w, b, d, t), v);
    }
    store_dx_element<T>(p, b, d, s, v, p.dfinal_states != nullptr && ss == seq_at<T>(p, b, L - 1));
  }
}

template <typename T>
__global__ void __launch_bounds__(256) causal_conv1d_bwd_naive_dx_kernel(const BwdNaiveArgs a) {
  naive_dx_elements<T>(a, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                       static_cast<int64_t>(gridDim.x) * blockDim.x);
}

// Entry e = d * (W + 1) + j of dweight (j < W) or dbias (j == W) by the whole block: sums over (b, t) in a fixed
// order, written directly.
template <typename T>
__device__ void naive_dw_entry(const BwdNaiveArgs& a, int64_t e) {
  const CausalConv1dBwdParams& p = a.p;
  const int64_t H = p.width - 1, L = p.seqlen;
  const int64_t d = e / (p.width + 1), j = e - d * (p.width + 1);
  float s = 0.f;
  for (int64_t idx = threadIdx.x; idx < p.batch * L; idx += blockDim.x) {
    const int64_t b = idx / L, t = idx - b * L;
    const float dp = dpre_at<T>(p, a.w, b, d, t);
    if (j == p.width) {
      s += dp;
    } else {
      const int64_t tt = t - H + j;
      if (tt >= -H && seq_at<T>(p, b, tt) == seq_at<T>(p, b, t)) s = fmaf(dp, x_at<T>(p, b, d, tt), s);
    }
  }
  __shared__ float red[1024 / kWarpSize];
  s = warp_sum(s);
  if (lane_id() == 0) red[threadIdx.x / kWarpSize] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int k = 0; k < static_cast<int>(blockDim.x) / kWarpSize; ++k) total += red[k];
    if (j == p.width) {
      if (p.dbias != nullptr) p.dbias[d] = total;
    } else if (p.dweight != nullptr) {
      p.dweight[d * p.width + j] = total;
    }
  }
  __syncthreads();  // red is reused by the block's next entry
}

// One block per entry.
template <typename T>
__global__ void __launch_bounds__(256) causal_conv1d_bwd_naive_dw_kernel(const BwdNaiveArgs a) {
  naive_dw_entry<T>(a, blockIdx.x);
}

// ---------------------------------------------------------------------------------------------
// short rows: L < W and neither dweight nor dbias (the heads a context-parallel rank differentiates for its halo's
// gradient): a thread a row computes its L dpre once, then its dx and dinit by the naive kernels' rule.

template <typename T>
__global__ void __launch_bounds__(256) causal_conv1d_bwd_short_rows_kernel(const BwdNaiveArgs a) {
  const CausalConv1dBwdParams& p = a.p;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.batch * p.dim) return;
  int64_t d;
  const int64_t b = a.div_dim.divmod(d, row);
  const int W = static_cast<int>(p.width), H = W - 1, L = static_cast<int>(p.seqlen);
  float w[kMaxTemplateWidth], dp[kMaxTemplateWidth];  // dp: dpre at t = 0 .. L - 1
  int32_t ids[2 * kMaxTemplateWidth];                  // ids at positions -H .. L - 1
  for (int j = 0; j < W; ++j) w[j] = load_as_float(a.w.weight, a.w.dtype, d * a.w.dim_stride + j * a.w.width_stride);
  for (int s = -H; s < L; ++s) ids[s + H] = seq_at<T>(p, b, s);
  for (int t = 0; t < L; ++t) dp[t] = dpre_at<T>(p, a.w, b, d, t);
  for (int s = -H; s < L; ++s) {
    if (s >= 0 ? p.dx == nullptr : p.dinitial_states == nullptr) continue;
    const int32_t ss = ids[s + H];
    float v = 0.f;
    for (int j = 0; j < W; ++j) {
      const int t = s + H - j;
      if (t >= 0 && t < L && ids[t + H] == ss) v = fmaf(w[j], dp[t], v);
    }
    store_dx_element<T>(p, b, d, s, v, ss == ids[L - 1 + H]);
  }
}

// ---------------------------------------------------------------------------------------------
// Reduction of the partial rows: out column c = sum over p of partials[p][c], in the order
// p = y, y + kRowsPerBlock, ... per thread row y, then the kRowsPerBlock thread rows in order.

constexpr int kReduceCols = 32;
constexpr int kReduceRows = 16;

// seq_idx on the rows path (recur.count > 0): if the marks kernel flagged an id recurring across another (seq_idx
// not non-decreasing: the rows kernel's sequence starts cannot express it), the grid recomputes the whole backward
// by the reference's rule instead (the naive kernels' code: slow, and only for input the op refuses where it can
// check it, as under graph capture it cannot).
template <typename T>
__global__ void __launch_bounds__(kReduceCols* kReduceRows)
    causal_conv1d_bwd_reduce_kernel(const float* __restrict__ partials, int64_t n_rows, int64_t cols, int width,
                                    float* __restrict__ dweight, float* __restrict__ dbias, const BwdRecurFlags recur,
                                    const BwdNaiveArgs fallback) {
  if (recur.count > 0) {
    bool any = false;
    for (int i = static_cast<int>(threadIdx.x); i < recur.count; i += static_cast<int>(blockDim.x))
      any = any || recur.words[i] != 0u;
    if (__syncthreads_or(any)) {
      naive_dx_elements<T>(fallback, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                           static_cast<int64_t>(gridDim.x) * blockDim.x);
      if (dweight != nullptr || dbias != nullptr)
        for (int64_t e = blockIdx.x; e < cols; e += gridDim.x) naive_dw_entry<T>(fallback, e);
      return;
    }
  }
  __shared__ float sums[kReduceRows][kReduceCols + 1];
  const int cx = static_cast<int>(threadIdx.x) % kReduceCols;
  const int ry = static_cast<int>(threadIdx.x) / kReduceCols;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kReduceCols + cx;
  float s = 0.f;
  if (c < cols)
    for (int64_t p = ry; p < n_rows; p += kReduceRows) s += partials[p * cols + c];
  sums[ry][cx] = s;
  __syncthreads();
  if (ry == 0 && c < cols) {
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < kReduceRows; ++k) total += sums[k][cx];
    const int64_t d = c / (width + 1);
    const int j = static_cast<int>(c - d * (width + 1));
    if (j < width) {
      if (dweight != nullptr) dweight[d * width + j] = total;
    } else if (dbias != nullptr) {
      dbias[d] = total;
    }
  }
}

BwdNaiveArgs naive_args(const CausalConv1dBwdParams& p, const WeightArgs& w) {
  BwdNaiveArgs a{};
  a.p = p;
  a.w = w;
  const int64_t lo = p.dinitial_states != nullptr ? -(p.width - 1) : 0;
  a.div_span = FastDivmod(p.seqlen - lo);
  a.div_dim = FastDivmod(p.dim);
  return a;
}

void reduce_partials(const BwdPartials& partials, int64_t n_rows, const CausalConv1dBwdParams& p, const WeightArgs& w,
                     const BwdRecurFlags& recur, gpuStream_t stream) {
  const int64_t blocks = (partials.cols + kReduceCols - 1) / kReduceCols;
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    causal_conv1d_bwd_reduce_kernel<scalar_t>
        <<<static_cast<unsigned>(std::min(blocks, kMaxGridX)), kReduceCols * kReduceRows, 0, stream>>>(
            partials.rows, n_rows, partials.cols, static_cast<int>(p.width), p.dweight, p.dbias, recur,
            naive_args(p, w));
  });
  AITER_LITE_LAUNCH_CHECK();
}

template <typename T>
void bwd_naive_launch(const CausalConv1dBwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  const BwdNaiveArgs a = naive_args(p, w);
  const int64_t lo = p.dinitial_states != nullptr ? -(p.width - 1) : 0;
  const int64_t n = p.batch * p.dim * (p.seqlen - lo);
  if ((p.dx != nullptr || p.dinitial_states != nullptr) && n > 0) {
    const int64_t blocks = std::min((n + 255) / 256, kMaxGridX);
    causal_conv1d_bwd_naive_dx_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(a);
    AITER_LITE_LAUNCH_CHECK();
  }
  if (p.dweight != nullptr || p.dbias != nullptr) {
    const int64_t blocks = p.dim * (p.width + 1);
    if (blocks > kMaxGridX) throw std::invalid_argument("aiter_lite causal_conv1d_bwd: dim * (width + 1) too large");
    causal_conv1d_bwd_naive_dw_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(a);
    AITER_LITE_LAUNCH_CHECK();
  }
}

template <typename T>
void bwd_short_rows_launch(const CausalConv1dBwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  const int64_t rows = p.batch * p.dim;
  if (rows == 0 || (p.dx == nullptr && p.dinitial_states == nullptr)) return;
  const int64_t blocks = (rows + 255) / 256;
  if (blocks > kMaxGridX) throw std::invalid_argument("aiter_lite causal_conv1d_bwd: batch * dim too large");
  causal_conv1d_bwd_short_rows_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(naive_args(p, w));
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// dout staged in x's layout: out = dense [B, R, C] (C contiguous) from in(b, r, c) at b sb + r sr + c sc.
// The source is read along r (sr is 1 where this runs: dout transposed against x), the destination
// written along c, through a 64 x 64 shared tile (tile[c - c0][r - r0]).
// kPairs (16-bit elements where the host found sr == 1, sb, sc and cols even and both pointers 4-byte aligned): a
// thread reads two consecutive r as one 32-bit word and writes two consecutive c as one, half the memory
// instructions of one element at a time (which moved 16-bit dout at about 1 TB/s on an H200, session 24). The tile's
// odd row length (65 elements) keeps both its row writes and its column reads free of bank conflicts.

constexpr int kStageTile = 64, kStageThreads = 256;

template <typename U, bool kPairs>  // U: the element's bits, uint16_t or uint32_t
__global__ void __launch_bounds__(kStageThreads) causal_conv1d_dout_stage_kernel(
    const U* __restrict__ in, U* __restrict__ out, int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr,
    int64_t sc, int64_t tiles_c) {
  static_assert(!kPairs || sizeof(U) == 2, "pairs of 16-bit elements");
  constexpr int kPad = kPairs ? 1 : 4 / static_cast<int>(sizeof(U));
  __shared__ U tile[kStageTile][kStageTile + kPad];
  const int64_t r0 = static_cast<int64_t>(blockIdx.x / tiles_c) * kStageTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x % tiles_c) * kStageTile;
  // Element path: thread (tx, ty) moves r0 + tx (read) and c0 + tx (write); pairs: lane q moves r0 + 2q, r0 + 2q + 1
  // (read) and c0 + 2q, c0 + 2q + 1 (write). The other index steps by kStep from ty.
  constexpr int kLanes = kPairs ? kStageTile / 2 : kStageTile, kStep = kStageThreads / kLanes;
  const int tx = threadIdx.x % kLanes, ty = threadIdx.x / kLanes;
  const int e = kPairs ? 2 * tx : tx;  // the thread's first r (read) and c (write) inside the tile
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const int64_t r = r0 + e;
    const U* src = in + b * sb + r * sr + (c0 + ty) * sc;
#pragma unroll
    for (int i = 0; i < kStageTile; i += kStep, src += kStep * sc) {
      if (c0 + ty + i >= cols) break;
      if constexpr (kPairs) {
        if (r + 1 < rows) {
          const uint32_t word = *reinterpret_cast<const uint32_t*>(src);
          tile[ty + i][e] = static_cast<U>(word & 0xffffu);
          tile[ty + i][e + 1] = static_cast<U>(word >> 16);
        } else if (r < rows) {
          tile[ty + i][e] = src[0];
        }
      } else if (r < rows) {
        tile[ty + i][e] = src[0];
      }
    }
    __syncthreads();
    const int64_t c = c0 + e;
    U* dst = out + b * rows * cols + (r0 + ty) * cols + c;
#pragma unroll
    for (int i = 0; i < kStageTile; i += kStep, dst += kStep * cols) {
      if (r0 + ty + i >= rows) break;
      if constexpr (kPairs) {
        if (c + 1 < cols) {
          *reinterpret_cast<uint32_t*>(dst) =
              static_cast<uint32_t>(tile[e][ty + i]) | (static_cast<uint32_t>(tile[e + 1][ty + i]) << 16);
        } else if (c < cols) {
          dst[0] = tile[e][ty + i];
        }
      } else if (c < cols) {
        dst[0] = tile[e][ty + i];
      }
    }
    __syncthreads();  // the tile is read before the next batch entry overwrites it
  }
}

bool x_channel_last(const CausalConv1dBwdParams& p) {
  return p.dim > 1 && p.x_dim_stride == 1 && p.x_seq_stride == p.dim;
}
bool x_dense(const CausalConv1dBwdParams& p) { return p.seqlen > 1 && p.x_seq_stride == 1 && p.x_dim_stride == p.seqlen; }

// p with dout replaced by `staged`, a dense copy of it in x's layout ([B, L, D] for channel-last x,
// else [B, D, L]).
CausalConv1dBwdParams with_staged_dout(const CausalConv1dBwdParams& p, void* staged) {
  CausalConv1dBwdParams q = p;
  q.dout = staged;
  q.dout_batch_stride = p.dim * p.seqlen;
  q.dout_dim_stride = x_channel_last(p) ? 1 : p.seqlen;
  q.dout_seq_stride = x_channel_last(p) ? p.dim : 1;
  return q;
}

int64_t dout_stage_bytes(const CausalConv1dBwdParams& p) {
  return (p.batch * p.dim * p.seqlen * static_cast<int64_t>(dtype_size(p.x_dtype)) + 255) / 256 * 256;
}

void dout_stage_launch(const CausalConv1dBwdParams& p, void* staged, gpuStream_t stream) {
  const bool cl = x_channel_last(p);
  // Destination [B, R, C]: channel-last x: R = L, C = D; dense x: R = D, C = L.
  const int64_t rows = cl ? p.seqlen : p.dim, cols = cl ? p.dim : p.seqlen;
  const int64_t sr = cl ? p.dout_seq_stride : p.dout_dim_stride, sc = cl ? p.dout_dim_stride : p.dout_seq_stride;
  const int64_t tiles_c = (cols + kStageTile - 1) / kStageTile, tiles = (rows + kStageTile - 1) / kStageTile * tiles_c;
  if (tiles > kMaxGridX) throw std::invalid_argument("aiter_lite causal_conv1d_bwd: dout too large to stage");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  auto go = [&](auto bits, auto pairs) {
    using U = decltype(bits);
    causal_conv1d_dout_stage_kernel<U, decltype(pairs)::value><<<grid, kStageThreads, 0, stream>>>(
        static_cast<const U*>(p.dout), static_cast<U*>(staged), p.batch, rows, cols, p.dout_batch_stride, sr, sc,
        tiles_c);
  };
  const bool pairs = sr == 1 && p.dout_batch_stride % 2 == 0 && sc % 2 == 0 && cols % 2 == 0 &&
                     reinterpret_cast<uintptr_t>(p.dout) % 4 == 0 && reinterpret_cast<uintptr_t>(staged) % 4 == 0;
  if (dtype_size(p.x_dtype) != 2) go(uint32_t{}, std::false_type{});
  else if (pairs) go(uint16_t{}, std::true_type{});
  else go(uint16_t{}, std::false_type{});
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Path selection (host): the same plan sizes the workspace and runs the kernels.

enum class BwdPath { kNaive, kRows, kChannelLast, kTile, kShortRows };

struct BwdPlan {
  BwdPath path = BwdPath::kNaive;
  BwdRowsPlan rows;
  BwdChannelLastPlan channel_last;
  BwdTilePlan tile;
  int64_t partial_rows = 0;  // 0: no partial sums (naive, or neither dweight nor dbias wanted)
  int64_t seq_start_words = 0;  // rows with seq_idx: sequence-start bits, after the partials
  int64_t dout_stage_bytes = 0;  // > 0: dout is staged in x's layout at the workspace's start (dout_stage_launch)
};

BwdPlan plan_kernels(const CausalConv1dBwdParams& p) {
  BwdPlan plan{};
  const bool want_dw = p.dweight != nullptr || p.dbias != nullptr;
  if (p.width > kMaxTemplateWidth) return plan;
  plan.rows = bwd_rows_plan(p);
  if (plan.rows.vecs_per_lane > 0) {
    plan.path = BwdPath::kRows;
    plan.partial_rows = plan.rows.partial_rows;
    plan.seq_start_words = plan.rows.seq_start_words;
  } else if ((p.dim == 1 || (p.x_dim_stride == 1 && p.dout_dim_stride == 1 &&
                             (p.dx == nullptr || p.dx_dim_stride == 1))) &&
             p.dim > 1) {
    plan.path = BwdPath::kChannelLast;
    plan.channel_last = bwd_channel_last_plan(p, true);
    plan.partial_rows = plan.channel_last.partial_rows;
  } else if (p.seqlen < p.width && !want_dw) {
    // The heads a context-parallel rank differentiates for its halo's gradient: the tile kernel's block a channel
    // took 14.8 us on 8 x 4096 x 3 (H200), the naive kernels' thread an element 16.8.
    plan.path = BwdPath::kShortRows;
  } else {
    plan.path = BwdPath::kTile;
    plan.tile = bwd_tile_plan(p);
    plan.partial_rows = plan.tile.partial_rows;
  }
  if (!want_dw) plan.partial_rows = 0;
  return plan;
}

// plan_kernels, or, where that leaves only the tile kernel for dense or channel-last x and a staged dout
// would not, the plan on the staged copy (the copy at a 256-byte aligned offset, as the workspace places it).
// A dx in another layout than x keeps the staged plan on the tile kernel too (the rows and channel-last plans
// check dx), so it stays unstaged.
BwdPlan plan_bwd(const CausalConv1dBwdParams& p) {
  const BwdPlan plan = plan_kernels(p);
  if (plan.path != BwdPath::kTile || !(x_channel_last(p) || x_dense(p))) return plan;
  BwdPlan staged = plan_kernels(with_staged_dout(p, reinterpret_cast<void*>(uintptr_t{256})));
  if (staged.path == BwdPath::kTile) return plan;
  staged.dout_stage_bytes = dout_stage_bytes(p);
  return staged;
}

void check_bwd_params(const CausalConv1dBwdParams& p) {
  if (p.width < 1) throw std::invalid_argument("aiter_lite causal_conv1d_bwd: width must be >= 1");
  if (p.batch < 0 || p.dim < 0 || p.seqlen < 0)
    throw std::invalid_argument("aiter_lite causal_conv1d_bwd: negative size");
  if (!is_valid_dtype(p.x_dtype) || !is_valid_dtype(p.w_dtype))
    throw std::invalid_argument("aiter_lite causal_conv1d_bwd: unsupported dtype");
}

// The workspace: the partial sums (fp32 [partial_rows, D * (W + 1)]), then, 16-byte aligned, the
// sequence-start bits of the rows kernel with seq_idx.
int64_t partials_bytes_of(const BwdPlan& plan, const CausalConv1dBwdParams& p) {
  return (plan.partial_rows * p.dim * (p.width + 1) * static_cast<int64_t>(sizeof(float)) + 15) / 16 * 16;
}

// The staged dout (if any) first, then the partial sums and the sequence-start bits.
int64_t workspace_bytes_of(const BwdPlan& plan, const CausalConv1dBwdParams& p) {
  return plan.dout_stage_bytes + partials_bytes_of(plan, p) +
         plan.seq_start_words * static_cast<int64_t>(sizeof(uint32_t));
}

}  // namespace
}  // namespace conv1d

int64_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdParams& p) {
  using namespace conv1d;
  check_bwd_params(p);
  if (p.batch == 0 || p.dim == 0 || p.seqlen == 0) return 0;
  return workspace_bytes_of(plan_bwd(p), p);
}

void causal_conv1d_bwd(const CausalConv1dBwdParams& params, void* stream_ptr) {
  using namespace conv1d;
  check_bwd_params(params);
  if (params.dim == 0) return;
  CausalConv1dBwdParams p = params;
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  // B = 0 or L = 0 takes the naive kernels: dweight/dbias are empty sums (0) and dinit gets dfinal.
  const bool empty = p.batch == 0 || p.seqlen == 0;
  if (!empty && (p.x == nullptr || p.weight == nullptr || p.dout == nullptr))
    throw std::invalid_argument("aiter_lite causal_conv1d_bwd: null tensor pointer");
  const WeightArgs w = make_weight_args(p.weight, p.bias, p.width, p.w_dim_stride, p.w_width_stride, p.bias_stride,
                                        p.w_dtype);
  const BwdPlan plan = empty ? BwdPlan{} : plan_bwd(p);
  BwdPartials partials{nullptr, p.dim * (p.width + 1)};
  if (workspace_bytes_of(plan, p) > 0 && p.workspace == nullptr)
    throw std::invalid_argument("aiter_lite causal_conv1d_bwd: workspace is null");
  char* free_space = static_cast<char*>(p.workspace);
  if (plan.dout_stage_bytes > 0) {
    if (reinterpret_cast<uintptr_t>(p.workspace) % 256 != 0)
      throw std::invalid_argument("aiter_lite causal_conv1d_bwd: workspace must be 256-byte aligned");
    dout_stage_launch(p, p.workspace, stream);
    p = with_staged_dout(p, p.workspace);
    free_space += plan.dout_stage_bytes;
  }
  if (plan.partial_rows > 0) partials.rows = reinterpret_cast<float*>(free_space);
  uint32_t* seq_starts = plan.seq_start_words > 0
                             ? reinterpret_cast<uint32_t*>(free_space + partials_bytes_of(plan, p))
                             : nullptr;
  switch (plan.path) {
    case BwdPath::kNaive:
      AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { bwd_naive_launch<scalar_t>(p, w, stream); });
      return;
    case BwdPath::kShortRows:
      AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] { bwd_short_rows_launch<scalar_t>(p, w, stream); });
      return;
    case BwdPath::kRows: bwd_rows_run(p, plan.rows, w, partials, seq_starts, stream); break;
    case BwdPath::kChannelLast: bwd_channel_last_run(p, plan.channel_last, w, partials, stream); break;
    case BwdPath::kTile: bwd_tile_run(p, plan.tile, w, partials, stream); break;
    default: throw std::logic_error("aiter_lite causal_conv1d_bwd: unhandled kernel path");
  }
  const BwdRecurFlags recur =
      plan.path == BwdPath::kRows ? bwd_rows_recur_flags(p, plan.rows, seq_starts) : BwdRecurFlags{};
  if (plan.partial_rows > 0 || recur.count > 0) reduce_partials(partials, plan.partial_rows, p, w, recur, stream);
}

}  // namespace aiter_lite
