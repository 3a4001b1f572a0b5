// Causal depthwise conv1d decode step (causal-conv1d's causal_conv1d_update semantics), CUDA and HIP.
//
// For each sequence b (state row r = indices ? indices[b] : b) and channel d, with S = state_len,
// W = width and L = seqlen new tokens x[b, d, 0..L):
//   r < 0 (padded slot): out[b, d, :] = 0 and conv_state is not touched.
//   shift register (cache_seqlens == nullptr): e = cat(state[r, d, :], x[b, d, :]) (length S + L);
//     out[t] = act(bias + sum_j w[j] * e[S - (W-1) + t + j]); the new state row is e[L .. L + S).
//   circular buffer (cache_seqlens given, p = cache_seqlens[b] mod S, taken non-negative):
//     the window is state[(p - (W-1) + i) mod S] for i < W-1; out as above with that window in
//     front of x; x[t] is then written to state[(p + t) mod S], later t winning.
// Each (b, d) row of the state is owned by one thread, which reads everything it needs from the
// state before it writes any of it.
//
// Kernels:
//   update (kV = 16 / sizeof(T))  x, out and conv_state all have dim stride 1 (channel-last state,
//       as vLLM and causal-conv1d's tests use) and 16-byte aligned channel groups: a thread owns kV
//       channels, every access is one 16-byte vector, and it walks a few batch rows with its
//       weights kept in registers.
//   update (kV = 1)  any strides: one thread per channel and batch row, consecutive threads on
//       consecutive channels (coalesced whenever the dim stride is small, e.g. [B, D, S] states).
//   step  seqlen 1 whenever the channel-vector kernel does not take the call (other layouts, or too
//       few channel groups to fill the GPU, e.g. batch 1): any strides, 4 (row, channel) items per
//       thread (1 for small calls) with all their loads issued before any compute.
//   generic  width > kMaxTemplateWidth: runtime width, one thread per channel and batch row.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

struct UpdateArgs {
  const void* x;
  void* state;
  void* out;
  const int32_t* cache_seqlens;  // nullptr: shift register
  const int32_t* indices;        // nullptr: row b uses state row b
  WeightArgs w;
  int64_t batch, seqlen, width, state_len;
  int64_t state_rows;     // rows in the state pool; an index at or past it is treated as padding
  int64_t n_groups;       // channel groups of kV
  int64_t rows_per_item;  // batch rows a thread walks with the same weights
  int64_t n_items;        // n_groups * ceil(batch / rows_per_item)
  FastDivmod div_groups, div_state_len;
  int64_t x_batch_stride, x_dim_stride, x_seq_stride;
  int64_t state_batch_stride, state_dim_stride, state_seq_stride;
  int64_t out_batch_stride, out_dim_stride, out_seq_stride;
  bool silu;
};

template <typename T_, int kWidth_, int kV_>
struct UpdateTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kV = kV_;  // channels per thread: one 16-byte vector, or 1
  static constexpr int kThreads = 128;
  // Register bound for ptxas (without one it spills a few loop invariants): 128 for one channel
  // per thread, 255 for a 16-byte group (weights and window of kV channels live in registers).
  static constexpr int kMinBlocks = kV == 1 ? 4 : 1;
  static constexpr int kMaxRowsPerItem = 4;
  static constexpr int64_t kTargetItems = 65536;
  using vec_t = Vec<T, kV>;
  static_assert(kWidth >= 1 && kWidth <= kMaxTemplateWidth, "compile-time widths only");
  static_assert(kV == 1 || sizeof(vec_t) == 16, "a channel group is one element or one 16-byte vector");
};

// State row (or -1 for a padded slot) of sequence b.
__device__ __forceinline__ int64_t state_row_of(const UpdateArgs& a, int64_t b) {
  const int64_t r = a.indices == nullptr ? b : static_cast<int64_t>(a.indices[b]);
  return (r < 0 || r >= a.state_rows) ? -1 : r;
}

template <typename Ktraits>
__device__ __forceinline__ void update_row(const UpdateArgs& a, const float (&w)[Ktraits::kV][Ktraits::kWidth],
                                           const float (&bias)[Ktraits::kV], int64_t b, int64_t d0) {
  using T = typename Ktraits::T;
  using vec_t = typename Ktraits::vec_t;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kHaloAlloc = Ktraits::kHaloAlloc;
  constexpr int kV = Ktraits::kV;
  const int64_t L = a.seqlen;
  const int64_t S = a.state_len;
  const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d0 * a.x_dim_stride;
  T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + d0 * a.out_dim_stride;

  const int64_t row = state_row_of(a, b);
  if (row < 0) {
    vec_t z;
    z.set_zero();
#pragma unroll 1
    for (int64_t t = 0; t < L; ++t) z.store(op + t * a.out_seq_stride);
    return;
  }
  T* __restrict__ sp = static_cast<T*>(a.state) + row * a.state_batch_stride + d0 * a.state_dim_stride;
  const int64_t ss = a.state_seq_stride;

  // 1. Read the window (the W-1 state entries before the new tokens).
  const bool circular = a.cache_seqlens != nullptr && S > 0;
  int64_t pos = 0;
  vec_t win[kHaloAlloc];
  if (circular) {
    pos = a.div_state_len.floor_mod(a.cache_seqlens[b]);
    int64_t q = pos - kHalo;  // S >= kHalo, so one wrap suffices
    if (q < 0) q += S;
#pragma unroll
    for (int i = 0; i < kHalo; ++i) {
      win[i].load(sp + q * ss);
      q = q + 1 == S ? 0 : q + 1;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kHalo; ++i) win[i].load(sp + (S - kHalo + i) * ss);
  }

  // 2. Outputs, sliding the window over the new tokens.
  float f[kHaloAlloc][kV];
#pragma unroll
  for (int i = 0; i < kHalo; ++i)
#pragma unroll
    for (int c = 0; c < kV; ++c) f[i][c] = to_float(win[i].elt[c]);
#pragma unroll 1
  for (int64_t t = 0; t < L; ++t) {
    vec_t xv;
    xv.load(xp + t * a.x_seq_stride);
    vec_t yv;
#pragma unroll
    for (int c = 0; c < kV; ++c) {
      const float cur = to_float(xv.elt[c]);
      float acc = fmaf(w[c][kHalo], cur, bias[c]);
#pragma unroll
      for (int j = 0; j < kHalo; ++j) acc = fmaf(w[c][j], f[j][c], acc);
      yv.elt[c] = from_float<T>(activate(acc, a.silu));
#pragma unroll
      for (int j = 0; j + 1 < kHalo; ++j) f[j][c] = f[j + 1][c];
      if (kHalo > 0) f[kHaloAlloc - 1][c] = cur;
    }
    yv.store(op + t * a.out_seq_stride);
  }

  // 3. Write the state (raw values, never rounded through fp32).
  if (circular) {
    // Only the last min(L, S) tokens survive; writing just those keeps "later t wins".
    const int64_t t_begin = L > S ? L - S : 0;
    int64_t q = a.div_state_len.mod(pos + t_begin);
#pragma unroll 1
    for (int64_t t = t_begin; t < L; ++t) {
      vec_t v;
      v.load(xp + t * a.x_seq_stride);
      v.store(sp + q * ss);
      q = q + 1 == S ? 0 : q + 1;
    }
  } else {
    // new[j] = e[L + j]: old state for j < keep, x[j - keep] after.
    const int64_t keep = S - L;
    // Old entries below the window: a forward copy (reads at j + L run ahead of writes at j).
#pragma unroll 1
    for (int64_t j = 0; j < keep - kHalo; ++j) {
      vec_t v;
      v.load(sp + (j + L) * ss);
      v.store(sp + j * ss);
    }
    // Old entries in the window, from registers: entry S - kHalo + i goes to j = S - kHalo + i - L.
#pragma unroll
    for (int i = 0; i < kHalo; ++i) {
      const int64_t j = S - kHalo + i - L;
      if (j >= 0) win[i].store(sp + j * ss);
    }
#pragma unroll 1
    for (int64_t j = keep > 0 ? keep : 0; j < S; ++j) {
      vec_t v;
      v.load(xp + (j - keep) * a.x_seq_stride);
      v.store(sp + j * ss);
    }
  }
}

// Work item (channel group g, chunk of rows_per_item batch rows), g fastest so that a warp covers
// consecutive channels of the same batch rows.
template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_update_kernel(const UpdateArgs a) {
  constexpr int kW = Ktraits::kWidth;
  constexpr int kV = Ktraits::kV;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; item < a.n_items;
       item += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t g;
    const int64_t chunk = a.div_groups.divmod(g, item);
    const int64_t d0 = g * kV;
    const int64_t b_begin = chunk * a.rows_per_item;
    const int64_t b_end = b_begin + a.rows_per_item < a.batch ? b_begin + a.rows_per_item : a.batch;
    float w[kV][kW];
    float bias[kV];
    load_weight_block<kV, kW>(w, bias, a.w, d0);
#pragma unroll 1
    for (int64_t b = b_begin; b < b_end; ++b) update_row<Ktraits>(a, w, bias, b, d0);
  }
}

template <typename T, int kW, int kV>
void update_launch(const UpdateArgs& base, gpuStream_t stream) {
  using Ktraits = UpdateTraits<T, kW, kV>;
  UpdateArgs a = base;
  const int64_t rows = kV == 1 ? 1
                                : std::min<int64_t>(std::max<int64_t>(a.batch * a.n_groups / Ktraits::kTargetItems, 1),
                                                    Ktraits::kMaxRowsPerItem);
  a.rows_per_item = rows;
  a.n_items = a.n_groups * ((a.batch + rows - 1) / rows);
  a.div_groups = FastDivmod(a.n_groups);
  const int64_t blocks = std::min((a.n_items + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_update_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// step: one new token (seqlen 1), one channel per item, any strides. Decode is latency bound: a
// thread takes kItems (row, channel) items and issues every load of all of them (state row index,
// circular position, window, x, weights, bias) before computing any, so each thread keeps several
// independent requests in flight instead of one chain per item.

template <typename T_, int kWidth_, int kItems_>
struct UpdateStepTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kItems = kItems_;  // 4 for large batches; 1 spreads small ones over more SMs
  static constexpr int kThreads = kItems == 1 ? 64 : 128;  // small calls: as many blocks (SMs) as possible
  static constexpr int kMinBlocks = 512 / kThreads;
};

// Items at which 4 per thread still leave every SM of a large GPU a few blocks.
constexpr int64_t kStepManyItems = int64_t{1} << 18;

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_update_step_kernel(const UpdateArgs a) {
  using T = typename Ktraits::T;
  constexpr int kW = Ktraits::kWidth;
  constexpr int kHalo = Ktraits::kHalo;
  constexpr int kItems = Ktraits::kItems;
  const int64_t S = a.state_len;
  const int64_t ss = a.state_seq_stride;
  const bool circular = a.cache_seqlens != nullptr && S > 0;
  // Items base + k * stride, k < kItems: consecutive threads on consecutive channels.
  const int64_t stride = static_cast<int64_t>(gridDim.x) * Ktraits::kThreads;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; base < a.n_items;
       base += stride * kItems) {
    int64_t b[kItems], d[kItems], row[kItems], pos[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int64_t item = base + k * stride;
      b[k] = a.div_groups.divmod(d[k], item < a.n_items ? item : 0);
      row[k] = item < a.n_items ? state_row_of(a, b[k]) : -1;
      pos[k] = circular && row[k] >= 0 ? a.div_state_len.floor_mod(a.cache_seqlens[b[k]]) : S;
    }
    T win[kItems][Ktraits::kHaloAlloc];
    T xv[kItems];
    float w[kItems][kW];
    float bias[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (row[k] < 0) continue;
      const T* __restrict__ sp = static_cast<const T*>(a.state) + row[k] * a.state_batch_stride + d[k] * a.state_dim_stride;
      int64_t q = pos[k] - kHalo;  // S >= kHalo, so one wrap suffices; shift register: pos = S
      if (q < 0) q += S;
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        win[k][i] = sp[q * ss];
        q = q + 1 == S ? 0 : q + 1;
      }
      xv[k] = static_cast<const T*>(a.x)[b[k] * a.x_batch_stride + d[k] * a.x_dim_stride];
      float wb[1][kW];
      float bb[1];
      load_weight_block<1, kW>(wb, bb, a.w, d[k]);
#pragma unroll
      for (int j = 0; j < kW; ++j) w[k][j] = wb[0][j];
      bias[k] = bb[0];
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int64_t item = base + k * stride;
      if (item >= a.n_items) continue;
      T* __restrict__ op = static_cast<T*>(a.out) + b[k] * a.out_batch_stride + d[k] * a.out_dim_stride;
      if (row[k] < 0) {  // padded slot
        *op = from_float<T>(0.f);
        continue;
      }
      float acc = fmaf(w[k][kHalo], to_float(xv[k]), bias[k]);
#pragma unroll
      for (int j = 0; j < kHalo; ++j) acc = fmaf(w[k][j], to_float(win[k][j]), acc);
      *op = from_float<T>(activate(acc, a.silu));
      T* __restrict__ sp = static_cast<T*>(a.state) + row[k] * a.state_batch_stride + d[k] * a.state_dim_stride;
      if (circular) {
        sp[pos[k] * ss] = xv[k];
      } else if (S > 0) {
        // Shift left by one: entries below the window move from memory (state_len > width - 1
        // only; a forward copy reads j + 1 before writing it), the window's from registers, x last.
#pragma unroll 1
        for (int64_t j = 0; j + 1 < S - kHalo; ++j) sp[j * ss] = sp[(j + 1) * ss];
#pragma unroll
        for (int i = 0; i < kHalo; ++i)
          if (S - kHalo + i - 1 >= 0) sp[(S - kHalo + i - 1) * ss] = win[k][i];
        sp[(S - 1) * ss] = xv[k];
      }
    }
  }
}

template <typename T, int kW, int kItems>
void update_step_launch(const UpdateArgs& base, gpuStream_t stream) {
  using Ktraits = UpdateStepTraits<T, kW, kItems>;
  UpdateArgs a = base;
  a.rows_per_item = 1;
  a.n_items = a.batch * a.n_groups;
  a.div_groups = FastDivmod(a.n_groups);
  const int64_t per_block = int64_t{Ktraits::kThreads} * Ktraits::kItems;
  const int64_t blocks = std::min((a.n_items + per_block - 1) / per_block, kMaxGridX);
  causal_conv1d_update_step_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// generic: runtime width, one thread per (batch row, channel)

template <typename T_>
struct UpdateGenericTraits {
  using T = T_;
  static constexpr int kThreads = 128;
  static constexpr int kMinBlocks = 4;
};

template <typename Ktraits>
__global__ void __launch_bounds__(Ktraits::kThreads, Ktraits::kMinBlocks) causal_conv1d_update_generic_kernel(const UpdateArgs a) {
  using T = typename Ktraits::T;
  const int64_t L = a.seqlen;
  const int64_t S = a.state_len;
  const int64_t W = a.width;
  const int64_t ss = a.state_seq_stride;
#pragma unroll 1
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Ktraits::kThreads + threadIdx.x; item < a.n_items;
       item += static_cast<int64_t>(gridDim.x) * Ktraits::kThreads) {
    int64_t d;
    const int64_t b = a.div_groups.divmod(d, item);
    const T* __restrict__ xp = static_cast<const T*>(a.x) + b * a.x_batch_stride + d * a.x_dim_stride;
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + d * a.out_dim_stride;
    const int64_t row = state_row_of(a, b);
    if (row < 0) {
#pragma unroll 1
      for (int64_t t = 0; t < L; ++t) op[t * a.out_seq_stride] = from_float<T>(0.f);
      continue;
    }
    T* __restrict__ sp = static_cast<T*>(a.state) + row * a.state_batch_stride + d * a.state_dim_stride;
    const bool circular = a.cache_seqlens != nullptr && S > 0;
    const int64_t pos = circular ? a.div_state_len.floor_mod(a.cache_seqlens[b]) : 0;
    const float bias = a.w.bias == nullptr ? 0.f : load_as_float(a.w.bias, a.w.dtype, d * a.w.bias_stride);

    // Outputs first: every state read happens before any state write.
#pragma unroll 1
    for (int64_t t = 0; t < L; ++t) {
      float acc = bias;
#pragma unroll 1
      for (int64_t j = 0; j < W; ++j) {
        const int64_t m = t + j;  // index into cat(window of W-1, x)
        T v;
        if (m >= W - 1) {
          v = xp[(m - (W - 1)) * a.x_seq_stride];
        } else if (circular) {
          int64_t q = pos - (W - 1) + m;
          if (q < 0) q += S;
          v = sp[q * ss];
        } else {
          v = sp[(S - (W - 1) + m) * ss];
        }
        acc = fmaf(load_as_float(a.w.weight, a.w.dtype, d * a.w.dim_stride + j * a.w.width_stride), to_float(v), acc);
      }
      op[t * a.out_seq_stride] = from_float<T>(activate(acc, a.silu));
    }

    if (circular) {
      const int64_t t_begin = L > S ? L - S : 0;
      int64_t q = a.div_state_len.mod(pos + t_begin);
#pragma unroll 1
      for (int64_t t = t_begin; t < L; ++t) {
        sp[q * ss] = xp[t * a.x_seq_stride];
        q = q + 1 == S ? 0 : q + 1;
      }
    } else {
      const int64_t keep = S - L;
#pragma unroll 1
      for (int64_t j = 0; j < keep; ++j) sp[j * ss] = sp[(j + L) * ss];  // forward copy
#pragma unroll 1
      for (int64_t j = keep > 0 ? keep : 0; j < S; ++j) sp[j * ss] = xp[(j - keep) * a.x_seq_stride];
    }
  }
}

template <typename T>
void update_generic_launch(const UpdateArgs& base, gpuStream_t stream) {
  using Ktraits = UpdateGenericTraits<T>;
  UpdateArgs a = base;
  a.rows_per_item = 1;
  a.n_items = a.batch * a.n_groups;
  a.div_groups = FastDivmod(a.n_groups);
  const int64_t blocks = std::min((a.n_items + Ktraits::kThreads - 1) / Ktraits::kThreads, kMaxGridX);
  causal_conv1d_update_generic_kernel<Ktraits><<<static_cast<unsigned>(blocks), Ktraits::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Path selection (host)

// x, out and the state can all be read as 16-byte groups of kV channels.
bool channel_vectors_ok(const CausalConv1dUpdateParams& p, int kV) {
  const int64_t B = p.batch, D = p.dim, L = p.seqlen, S = p.state_len;
  if (D % kV != 0 || p.x_dim_stride != 1 || p.out_dim_stride != 1 || p.state_dim_stride != 1) return false;
  if (!is_aligned(p.x, 16) || !is_aligned(p.out, 16) || !is_aligned(p.conv_state, 16)) return false;
  const bool x_ok = (B == 1 || p.x_batch_stride % kV == 0) && (L == 1 || p.x_seq_stride % kV == 0);
  const bool out_ok = (B == 1 || p.out_batch_stride % kV == 0) && (L == 1 || p.out_seq_stride % kV == 0);
  // State rows are picked by index, so the batch stride matters even for one sequence.
  const bool state_ok = p.state_batch_stride % kV == 0 && (S <= 1 || p.state_seq_stride % kV == 0);
  return x_ok && out_ok && state_ok;
}

}  // namespace
}  // namespace conv1d

// ---------------------------------------------------------------------------------------------
// Build-time shards (shard.h): the registry compiles this file in N shards; shard s compiles the
// widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDTH_SWITCH skips the others) and shard 0 the
// runtime-width kernels. The checks and the choice of shard are in causal_conv1d_update below
// (shard 0's copy of the file); each shard's copy of update_shard launches its own kernels.

namespace conv1d {

template <int kShard, int kShards>
void update_shard(const CausalConv1dUpdateParams& p, void* stream_ptr);

#define AITER_LITE_UPDATE_SHARD_EXTERN(s) \
  extern template void update_shard<s, AITER_LITE_SHARDS>(const CausalConv1dUpdateParams&, void*);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_UPDATE_SHARD_EXTERN)
#undef AITER_LITE_UPDATE_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// Path selection and launch for a call whose width this shard compiles (width_shard).
template <int kShard, int kShards>
void update_shard(const CausalConv1dUpdateParams& p, void* stream_ptr) {
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_ptr);
  UpdateArgs a{};
  a.x = p.x;
  a.state = p.conv_state;
  a.out = p.out;
  a.cache_seqlens = p.cache_seqlens;
  a.indices = p.conv_state_indices;
  a.w = make_weight_args(p.weight, p.bias, p.width, p.w_dim_stride, p.w_width_stride, p.bias_stride, p.w_dtype);
  a.batch = p.batch;
  a.seqlen = p.seqlen;
  a.width = p.width;
  a.state_len = p.state_len;
  a.div_state_len = FastDivmod(p.state_len);
  a.state_rows = p.state_batch;
  a.x_batch_stride = p.x_batch_stride;
  a.x_dim_stride = p.x_dim_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.state_batch_stride = p.state_batch_stride;
  a.state_dim_stride = p.state_dim_stride;
  a.state_seq_stride = p.state_seq_stride;
  a.out_batch_stride = p.out_batch_stride;
  a.out_dim_stride = p.out_dim_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;

  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    if (p.width > kMaxTemplateWidth) {
      a.n_groups = p.dim;
      if constexpr (width_in_this_shard(kMaxTemplateWidth + 1)) return update_generic_launch<scalar_t>(a, stream);
      throw std::logic_error("aiter_lite causal_conv1d_update: runtime-width kernels are in shard 0");
    }
    constexpr int kVecV = kVecElts<scalar_t>;
    // Channel vectors pay off once there are enough of them to fill the GPU; below that (e.g. one
    // sequence) one channel per thread spreads the work over more SMs.
    constexpr int64_t kMinVecItems = 16384;
    const bool vec_ok = channel_vectors_ok(p, kVecV) && p.batch * (p.dim / kVecV) >= kMinVecItems;
    if (p.seqlen == 1 && !vec_ok) {
      a.n_groups = p.dim;
      return AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
        if (p.batch * p.dim >= kStepManyItems) update_step_launch<scalar_t, kW, 4>(a, stream);
        else update_step_launch<scalar_t, kW, 1>(a, stream);
      });
    }
    if (channel_vectors_ok(p, kVecV)) {
      a.n_groups = p.dim / kVecV;
      return AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] { update_launch<scalar_t, kW, kVecV>(a, stream); });
    }
    a.n_groups = p.dim;
    return AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] { update_launch<scalar_t, kW, 1>(a, stream); });
  });
}

template void update_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dUpdateParams&, void*);

}  // namespace conv1d

#if AITER_LITE_SHARD == 0
void causal_conv1d_update(const CausalConv1dUpdateParams& p, void* stream_ptr) {
  using namespace conv1d;
  if (p.width < 1) throw std::invalid_argument("aiter_lite causal_conv1d_update: width must be >= 1");
  if (p.batch < 0 || p.dim < 0 || p.seqlen < 0)
    throw std::invalid_argument("aiter_lite causal_conv1d_update: negative size");
  if (p.state_len < p.width - 1)
    throw std::invalid_argument("aiter_lite causal_conv1d_update: state_len must be >= width - 1");
  if (!is_valid_dtype(p.x_dtype) || !is_valid_dtype(p.w_dtype))
    throw std::invalid_argument("aiter_lite causal_conv1d_update: unsupported dtype");
  if (p.batch == 0 || p.dim == 0 || p.seqlen == 0) return;
  if (p.x == nullptr || p.out == nullptr || p.weight == nullptr || (p.conv_state == nullptr && p.state_len > 0))
    throw std::invalid_argument("aiter_lite causal_conv1d_update: null tensor pointer");

  with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
    conv1d::update_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, stream_ptr);
  });
}
#endif  // AITER_LITE_SHARD == 0

}  // namespace aiter_lite
