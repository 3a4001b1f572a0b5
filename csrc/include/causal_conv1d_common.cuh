// Pieces shared by the causal conv1d forward and update kernels: SiLU, loading weights and bias
// into registers as fp32, and the runtime-width -> template-width switch. CUDA and HIP.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "causal_conv1d_params.h"
#include "dtype_traits.cuh"
#include "port.h"
#include "shard.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {

// Widths with a compile-time kernel; wider filters take the runtime-width kernels.
// -DAITER_LITE_CONV1D_DISABLE_WIDE_WIDTHS keeps only 1..4 (about half the build time, for development).
#ifdef AITER_LITE_CONV1D_DISABLE_WIDE_WIDTHS
constexpr int kMaxTemplateWidth = 4;
#else
constexpr int kMaxTemplateWidth = 8;
#endif

// Runtime-width kernels for the rare wide filters: a file that switches with
// AITER_LITE_CONV_WIDE_WIDTH_SWITCH compiles widths 1..kSpecialisedWidths each as its own kernel and
// serves widths kSpecialisedWidths + 1 .. kMaxTemplateWidth with ONE kernel of kWideWidth taps, the
// filter right-aligned in them: it loads weights with lead = kWideWidth - width leading zeros and
// skips those taps (wide_lead; a skipped tap is not multiplied, so an inf or NaN input outside the
// filter's window stays out of the output). The lead is uniform over the launch: a predicated FMA.
constexpr int kSpecialisedWidths = kMaxTemplateWidth < 4 ? kMaxTemplateWidth : 4;
constexpr int kWideWidth = kMaxTemplateWidth;
// In a sharded file, the runtime-width kernel is item kSpecialisedWidths (the shard of width
// kSpecialisedWidths + 1: with 2 shards the one without width 4). The width whose shard holds the kernel
// that serves `width` (the dispatch's item: width_shard(wide_shard_width(width), N)).
constexpr int64_t wide_shard_width(int64_t width) {
  return width > kSpecialisedWidths && width <= kMaxTemplateWidth ? kSpecialisedWidths + 1 : width;
}

// Build-time shards (shard.h, docs/jit.md "Shards"): a conv file the registry compiles in N shards
// compiles compile-time width w (item w - 1) in shard (w - 1) % N, and the runtime-width kernels
// (wider filters) in shard 0. AITER_LITE_CONV_WIDTH_SWITCH applies this by itself; an unsharded file
// is shard 0 of 1 and compiles every width.
// 8: the widths a full build compiles (one per shard at least); with AITER_LITE_CONV1D_DISABLE_WIDE_WIDTHS the shards
// past width 4's are empty, so the shipped shard counts still build.
static_assert(AITER_LITE_SHARDS <= 8, "a conv file has 8 width items at most");
constexpr int width_shard(int64_t width, int shards) {
  return width >= 1 && width <= kMaxTemplateWidth ? shard_of(static_cast<int>(width) - 1, shards) : 0;
}
constexpr bool width_in_this_shard(int64_t width) { return width_shard(width, AITER_LITE_SHARDS) == AITER_LITE_SHARD; }

// Bytes of channels per thread in the channel-last kernels. 16-byte groups held 8 fp16 channels'
// weights and window in 124 registers (21% occupancy, 2.3-2.7 TB/s on the H100); 8-byte groups halve that.
constexpr int kChannelLastVecBytes = 8;

// Every kV-channel group of a dim-stride-1 tensor starts on a kChannelLastVecBytes boundary.
inline bool channel_vectors_aligned(const void* ptr, int64_t bs, int64_t ss, int64_t B, int64_t D, int64_t L, int kV) {
  return is_aligned(ptr, kChannelLastVecBytes) && D % kV == 0 && (B == 1 || bs % kV == 0) && (L == 1 || ss % kV == 0);
}

// Dense [B, D, L]: element (b, d, t) at b*D*L + d*L + t (strides of size-1 dims do not matter).
inline bool dense_rows(int64_t bs, int64_t ds, int64_t ss, int64_t B, int64_t D, int64_t L) {
  return (L == 1 || ss == 1) && (D == 1 || ds == L) && (B == 1 || bs == D * L);
}

// Largest grid.x the launchers use; kernels loop over the rest of their work items.
constexpr int64_t kMaxGridX = 2147483647;

inline bool is_valid_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}
inline int dtype_size(DType t) { return t == DType::kFloat32 ? 4 : 2; }

__device__ __forceinline__ float silu(float v) { return v / (1.0f + __expf(-v)); }
__device__ __forceinline__ float activate(float v, bool use_silu) { return use_silu ? silu(v) : v; }

// Element i (0 = lowest address) of a 32-bit word holding 4 / sizeof(T) elements of T.
template <typename T> __device__ __forceinline__ T word_elt(uint32_t w, int i);
template <> __device__ __forceinline__ float word_elt<float>(uint32_t w, int) { return __uint_as_float(w); }
template <> __device__ __forceinline__ half_t word_elt<half_t>(uint32_t w, int i) {
  return __ushort_as_half(static_cast<unsigned short>(w >> (16 * i)));
}
template <> __device__ __forceinline__ bfloat16_t word_elt<bfloat16_t>(uint32_t w, int i) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(w >> (16 * i)));
}

// Element i of a 32-bit word as fp32. bf16 bits are the high half of their fp32 value, so one shift (i = 0) or
// mask (i = 1) widens it; through word_elt and to_float the compiler extracts the half word, then widens it
// (PRMT and a shift: the rows backward issued about 2 instructions an element fewer this way, sm_90a SASS).
template <typename T> __device__ __forceinline__ float word_float(uint32_t w, int i) {
  return to_float(word_elt<T>(w, i));
}
template <> __device__ __forceinline__ float word_float<bfloat16_t>(uint32_t w, int i) {
  return __uint_as_float(i == 0 ? w << 16 : w & 0xffff0000u);
}
// Element i (a constant) of a 16-byte vector as fp32.
template <typename T, int N> __device__ __forceinline__ float elt_float(const Vec<T, N>& v, int i) {
  static_assert(sizeof(T) * N == kVecBytes, "a 16-byte vector");
  if constexpr (sizeof(T) == 2) return word_float<T>(v.word(i / 2), i % 2);
  else return to_float(v.elt[i]);
}

// The warp-tile kernels' x halo: halo[kHaloWords - h] = the h-th 32-bit word before this lane's 16-byte vector xv.
// It sits in the vector p = ceil(h / 4) lanes back, taken by warp shuffle; the first p lanes take before[h - 1]
// (the words before the warp's vectors: loaded for a tile's first vector step, else the previous step's shuffles).
// shuffled[h - 1] keeps each shuffle for the next step; before may be shuffled itself (each h is read, then written).
template <int kHaloWords, int kAlloc, typename V>
__device__ __forceinline__ void halo_words_from_lanes(uint32_t (&halo)[kAlloc], const V& xv,
                                                      const uint32_t (&before)[kAlloc], uint32_t (&shuffled)[kAlloc],
                                                      int lane) {
#pragma unroll
  for (int h = 1; h <= kHaloWords; ++h) {
    const int p = (h + 3) / 4;
    const uint32_t s = warp_shfl(xv.word(3 - (h - 1) % 4), (lane - p) & (kWarpSize - 1));
    halo[kHaloWords - h] = lane >= p ? s : before[h - 1];
    shuffled[h - 1] = s;
  }
}

// Everything a kernel needs to read weights and bias (dtype w_dtype, stored as given).
// contig: weight[d, :] rows are dense (width_stride 1, dim_stride width) and weight is 16-byte
// aligned, so the weights of kV consecutive channels are one aligned run of kV * width elements.
// bias_contig: bias has stride 1 and is 16-byte aligned.
struct WeightArgs {
  const void* weight;
  const void* bias;  // nullptr: no bias
  int64_t dim_stride, width_stride, bias_stride;
  DType dtype;
  bool contig, bias_contig;
  // Leading taps that a runtime-width kernel skips (kWideWidth - width; see kWideWidth): its filter's
  // taps are right-aligned in kWideWidth slots. 0 for every other kernel.
  int lead;
};

inline WeightArgs make_weight_args(const void* weight, const void* bias, int64_t width, int64_t w_dim_stride,
                                   int64_t w_width_stride, int64_t bias_stride, DType w_dtype) {
  WeightArgs a{};
  a.weight = weight;
  a.bias = bias;
  a.dim_stride = w_dim_stride;
  a.width_stride = w_width_stride;
  a.bias_stride = bias_stride;
  a.dtype = w_dtype;
  a.contig = (width == 1 || w_width_stride == 1) && w_dim_stride == width && is_aligned(weight, 16);
  a.bias_contig = bias != nullptr && bias_stride == 1 && is_aligned(bias, 16);
  return a;
}

// w for the kW-tap kernel that serves a call of `width`: the runtime-width kernel (kW == kWideWidth,
// above kSpecialisedWidths) skips kW - width leading taps.
template <int kW>
inline WeightArgs weight_args_for(WeightArgs w, int64_t width) {
  w.lead = kW == kWideWidth && kWideWidth > kSpecialisedWidths ? static_cast<int>(kW - width) : 0;
  return w;
}

// Taps a kW-tap kernel skips at the start: a.lead in the runtime-width kernel, 0 (a constant) elsewhere.
template <int kW>
__host__ __device__ __forceinline__ int wide_lead(const WeightArgs& a) {
  return kW == kWideWidth && kWideWidth > kSpecialisedWidths ? a.lead : 0;
}

// The runtime-width kernel skips at most kMaxWideLead leading taps (width kSpecialisedWidths + 1), so its later taps
// need no test: fewer predicates stay live over the FMAs (testing every tap, the dense seq_idx kernel spilled 24
// bytes at its 128-register bound). wide_tap_runs(j, lead): whether tap j runs; kernels of their own width pass
// lead = 0, always true.
constexpr int kMaxWideLead = kWideWidth > kSpecialisedWidths ? kWideWidth - kSpecialisedWidths - 1 : 0;
__host__ __device__ __forceinline__ constexpr bool wide_tap_runs(int j, int lead) {
  return j >= kMaxWideLead || j >= lead;
}

// dst[i] = p[i] for i < kN, read with the widest vectors that divide kN. p must be aligned to
// 16 bytes or to kN * sizeof(WT), whichever is smaller.
// Largest power of two <= kMax that divides n.
__host__ __device__ constexpr int largest_pow2_divisor(int n, int max_chunk) {
  int c = max_chunk;
  while (c > 1 && n % c != 0) c /= 2;
  return c;
}

// dst[i] = p[i] for i < kN, read with the widest vectors (up to 16 bytes) that divide kN. p must be
// aligned to the byte size of those vectors (a 16-byte aligned base plus a multiple of kN elements is).
template <typename WT, int kN>
__device__ __forceinline__ void load_contig_as_float(float (&dst)[kN], const WT* p) {
  constexpr int kChunk = largest_pow2_divisor(kN, kVecElts<WT>);
#pragma unroll
  for (int c = 0; c < kN / kChunk; ++c) {
    Vec<WT, kChunk> v;
    v.load(p + c * kChunk);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) dst[c * kChunk + i] = to_float(v.elt[i]);
  }
}

namespace detail {

template <typename WT, int kW, bool kLead>
__device__ __forceinline__ void load_channel_weights_typed(float (&w)[kW], const WeightArgs& a, int64_t d) {
  const WT* wp = static_cast<const WT*>(a.weight) + d * a.dim_stride;
  const int lead = kLead ? a.lead : 0;
#pragma unroll
  for (int j = 0; j < kW; ++j) w[j] = j < lead ? 0.f : to_float(wp[(j - lead) * a.width_stride]);
}

template <typename WT, int kV, int kW, bool kLead>
__device__ __forceinline__ void load_weight_block_typed(float (&w)[kV][kW], float (&b)[kV], const WeightArgs& a,
                                                        int64_t d0) {
  const WT* wp = static_cast<const WT*>(a.weight);
  const int lead = kLead ? a.lead : 0;
  if (lead > 0) {
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j < kW; ++j)
        w[c][j] = j < lead ? 0.f : to_float(wp[(d0 + c) * a.dim_stride + (j - lead) * a.width_stride]);
  } else if (a.contig) {
    float flat[kV * kW];
    load_contig_as_float<WT, kV * kW>(flat, wp + d0 * kW);
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j < kW; ++j) w[c][j] = flat[c * kW + j];
  } else {
#pragma unroll
    for (int c = 0; c < kV; ++c)
#pragma unroll
      for (int j = 0; j < kW; ++j) w[c][j] = to_float(wp[(d0 + c) * a.dim_stride + j * a.width_stride]);
  }
  const WT* bp = static_cast<const WT*>(a.bias);
  if (bp == nullptr) {
#pragma unroll
    for (int c = 0; c < kV; ++c) b[c] = 0.f;
  } else if (a.bias_contig) {
    load_contig_as_float<WT, kV>(b, bp + d0);
  } else {
#pragma unroll
    for (int c = 0; c < kV; ++c) b[c] = to_float(bp[(d0 + c) * a.bias_stride]);
  }
}

}  // namespace detail

// Weights of channel d as fp32 (w[j] multiplies x[t - (kW - 1) + j]) and its bias (0 without bias).
// kLead: a runtime-width kernel's load (a.lead leading zeros, then the filter's taps).
template <int kW, bool kLead = false>
__device__ __forceinline__ void load_channel_weights(float (&w)[kW], float& b, const WeightArgs& a, int64_t d) {
  switch (a.dtype) {
    case DType::kFloat16: detail::load_channel_weights_typed<half_t, kW, kLead>(w, a, d); break;
    case DType::kBFloat16: detail::load_channel_weights_typed<bfloat16_t, kW, kLead>(w, a, d); break;
    default: detail::load_channel_weights_typed<float, kW, kLead>(w, a, d); break;
  }
  b = a.bias == nullptr ? 0.f : load_as_float(a.bias, a.dtype, d * a.bias_stride);
}

// Weights and biases of channels d0 .. d0 + kV - 1 (d0 a multiple of kV), with vector loads when
// the rows are dense.
template <int kV, int kW, bool kLead = false>
__device__ __forceinline__ void load_weight_block(float (&w)[kV][kW], float (&b)[kV], const WeightArgs& a,
                                                  int64_t d0) {
  switch (a.dtype) {
    case DType::kFloat16: detail::load_weight_block_typed<half_t, kV, kW, kLead>(w, b, a, d0); break;
    case DType::kBFloat16: detail::load_weight_block_typed<bfloat16_t, kV, kW, kLead>(w, b, a, d0); break;
    default: detail::load_weight_block_typed<float, kV, kW, kLead>(w, b, a, d0); break;
  }
}

// Time steps per work item of a kernel whose threads each walk a chunk of time steps (the channel-last
// kernels; `rows` items per time chunk, `resident` threads at once). Each item is one thread's walk, so
// the items should fill whole rounds of resident threads: with a fixed chunk length, 8x5120x2048 fp16
// made 3.2 rounds on an H100 and the last fifth of a round ran on a fifth of the GPU. So: the fewest
// rounds whose slots the items fill to >= 80%, with chunks of at least min_chunk steps (each re-reads
// a halo). Problems too small for that take chunks of up to max_chunk steps sized to make about
// target_threads items. The result is a multiple of unroll.
inline int64_t plan_time_chunk_len(int64_t rows, int64_t seqlen, int64_t resident, int64_t unroll, int64_t min_chunk,
                                   int64_t max_chunk, int64_t target_threads) {
  for (int64_t rounds = 1; rounds <= 8; ++rounds) {
    const int64_t chunks = rounds * resident / rows;  // per sequence, to fit in `rounds` rounds
    if (chunks < 1) continue;
    const int64_t len = ((seqlen + chunks - 1) / chunks + unroll - 1) / unroll * unroll;
    if (len < min_chunk) break;  // more rounds only make the chunks shorter
    const int64_t items = rows * ((seqlen + len - 1) / len);
    if (items * 5 >= rounds * resident * 4) return len;
  }
  const int64_t steps = rows * seqlen;
  const int64_t per_thread = (steps + target_threads - 1) / target_threads;
  const int64_t unrolls = std::min<int64_t>((per_thread + unroll - 1) / unroll, max_chunk / unroll);
  return std::max<int64_t>(unrolls, 1) * unroll;
}

// Division by a runtime-invariant 64-bit divisor with a multiply-high, shift and add instead of
// the 64-bit division subroutine (which costs ~70 instructions and a call that makes ptxas spill).
// Granlund & Montgomery, "Division by invariant integers using multiplication" (PLDI 1994),
// figure 4.1: exact for every numerator n < 2^64 and divisor 1 <= d <= 2^63.
struct FastDivmod {
  uint64_t divisor;
  uint64_t multiplier;
  uint32_t shift1, shift2;

  FastDivmod() = default;
  explicit FastDivmod(int64_t d_in) {
    const uint64_t d = d_in < 1 ? 1 : static_cast<uint64_t>(d_in);
    int l = 0;  // ceil(log2(d))
    while (l < 63 && (uint64_t{1} << l) < d) ++l;
    if ((uint64_t{1} << l) < d) l = 64;  // only for d > 2^63, which callers never pass
    using u128 = unsigned __int128;
    const u128 two_l = l == 64 ? (u128{1} << 64) : (u128{1} << l);
    divisor = d;
    multiplier = static_cast<uint64_t>(((u128{1} << 64) * (two_l - d)) / d + 1);
    shift1 = l > 0 ? 1 : 0;
    shift2 = l > 0 ? static_cast<uint32_t>(l - 1) : 0;
  }

  __device__ __forceinline__ uint64_t div(uint64_t n) const {
    const uint64_t t = __umul64hi(multiplier, n);
    return (t + ((n - t) >> shift1)) >> shift2;
  }
  // quotient and remainder of a non-negative n
  __device__ __forceinline__ int64_t divmod(int64_t& rem, int64_t n) const {
    const uint64_t q = div(static_cast<uint64_t>(n));
    rem = static_cast<int64_t>(static_cast<uint64_t>(n) - q * divisor);
    return static_cast<int64_t>(q);
  }
  __device__ __forceinline__ int64_t mod(int64_t n) const {
    return static_cast<int64_t>(static_cast<uint64_t>(n) - div(static_cast<uint64_t>(n)) * divisor);
  }
  // n mod divisor in [0, divisor) for any sign of n (|n| < 2^63)
  __device__ __forceinline__ int64_t floor_mod(int64_t n) const {
    if (n >= 0) return mod(n);
    const int64_t r = mod(-(n + 1));  // -n - 1 >= 0
    return static_cast<int64_t>(divisor) - 1 - r;
  }
};

// The same for 32-bit numerators below 2^31 (tile indices): one multiply-high, an add and a shift,
// where the 64-bit form above takes about 15 instructions per division. n + t cannot overflow
// because t <= n < 2^31.
struct FastDivmod32 {
  uint32_t divisor;
  uint32_t multiplier;
  uint32_t shift;

  FastDivmod32() = default;
  explicit FastDivmod32(int64_t d_in) {
    const uint64_t d = d_in < 1 ? 1 : static_cast<uint64_t>(d_in);  // callers pass d < 2^31
    uint32_t l = 0;  // ceil(log2(d))
    while ((uint64_t{1} << l) < d) ++l;
    divisor = static_cast<uint32_t>(d);
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << l) - d)) / d + 1);
    shift = l;
  }

  __host__ __device__ __forceinline__ uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    const uint32_t t = __umulhi(multiplier, n);
#else
    const uint32_t t = static_cast<uint32_t>((uint64_t{multiplier} * n) >> 32);
#endif
    return (t + n) >> shift;
  }
  __host__ __device__ __forceinline__ uint32_t divmod(uint32_t& rem, uint32_t n) const {
    const uint32_t q = div(n);
    rem = n - q * divisor;
    return q;
  }
  __host__ __device__ __forceinline__ uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }
};

}  // namespace conv1d
}  // namespace aiter_lite

// One case of the width switch: a sharded file (shard.h) compiles only the widths of its shard.
#define AITER_LITE_CONV_WIDTH_CASE(w, kWidthName, ...)                                               \
  case w: {                                                                                        \
    constexpr int kWidthName = w;                                                                  \
    if constexpr (::aiter_lite::conv1d::width_in_this_shard(w)) return __VA_ARGS__();              \
    break;                                                                                         \
  }

#ifdef AITER_LITE_CONV1D_DISABLE_WIDE_WIDTHS
#define AITER_LITE_CONV_WIDE_CASES(kWidthName, ...)
#else
#define AITER_LITE_CONV_WIDE_CASES(kWidthName, ...)                                                \
  AITER_LITE_CONV_WIDTH_CASE(5, kWidthName, __VA_ARGS__)                                           \
  AITER_LITE_CONV_WIDTH_CASE(6, kWidthName, __VA_ARGS__)                                           \
  AITER_LITE_CONV_WIDTH_CASE(7, kWidthName, __VA_ARGS__)                                           \
  AITER_LITE_CONV_WIDTH_CASE(8, kWidthName, __VA_ARGS__)
#endif

// As AITER_LITE_CONV_WIDTH_SWITCH, for a file whose wide filters share one runtime-width kernel
// (kWideWidth): widths kSpecialisedWidths + 1 .. kMaxTemplateWidth all give kWidthName = kWideWidth,
// in the shard of width kSpecialisedWidths + 1 (wide_shard_width). The body passes
// weight_args_for<kWidthName>(w, width) to the kernel.
#ifdef AITER_LITE_CONV1D_DISABLE_WIDE_WIDTHS
#define AITER_LITE_CONV_WIDE_KERNEL_CASES(kWidthName, ...)
#else
#define AITER_LITE_CONV_WIDE_KERNEL_CASES(kWidthName, ...)                                         \
  case 5:                                                                                          \
  case 6:                                                                                          \
  case 7:                                                                                          \
  case 8: {                                                                                        \
    constexpr int kWidthName = ::aiter_lite::conv1d::kWideWidth;                                   \
    if constexpr (::aiter_lite::conv1d::width_in_this_shard(::aiter_lite::conv1d::wide_shard_width(kWidthName))) \
      return __VA_ARGS__();                                                                        \
    break;                                                                                         \
  }
#endif
#define AITER_LITE_CONV_WIDE_WIDTH_SWITCH(width, kWidthName, ...)                                   \
  [&] {                                                                                           \
    static_assert(::aiter_lite::conv1d::kSpecialisedWidths == 4 &&                                \
                      (::aiter_lite::conv1d::kWideWidth == 8 || ::aiter_lite::conv1d::kWideWidth == 4), \
                  "the cases below");                                                             \
    switch (width) {                                                                              \
      AITER_LITE_CONV_WIDTH_CASE(1, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(2, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(3, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(4, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDE_KERNEL_CASES(kWidthName, __VA_ARGS__)                                  \
      default: break;                                                                             \
    }                                                                                             \
    throw std::invalid_argument("aiter_lite causal_conv1d: no compile-time kernel for width " +    \
                                std::to_string(static_cast<long long>(width)));                   \
  }()

// Runtime width -> `constexpr int kWidthName` in 1..kMaxTemplateWidth, then calls the lambda body.
// Callers route wider filters elsewhere first; anything else reaching the switch throws (so does a
// width of another shard, which the shard dispatch never sends: width_shard).
#define AITER_LITE_CONV_WIDTH_SWITCH(width, kWidthName, ...)                                        \
  [&] {                                                                                           \
    switch (width) {                                                                              \
      AITER_LITE_CONV_WIDTH_CASE(1, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(2, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(3, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDTH_CASE(4, kWidthName, __VA_ARGS__)                                      \
      AITER_LITE_CONV_WIDE_CASES(kWidthName, __VA_ARGS__)                                         \
      default: break;                                                                             \
    }                                                                                             \
    throw std::invalid_argument("aiter_lite causal_conv1d: no compile-time kernel for width " +    \
                                std::to_string(static_cast<long long>(width)));                   \
  }()
