// Causal depthwise conv1d forward, staged channel-last kernel (CUDA and HIP): x and out with dim stride 1
// ([B, L, D] storage seen as [B, D, L]) whose rows of channels start on 16-byte boundaries.
//
// A warp owns kWarpSize channel groups (kLaneBytes of channels a lane) over a chunk [t0, t1) of time steps.
// It streams the rows t0 - (W - 1) .. t1 - 1 of its channels through a ring of kStages shared-memory stages
// with cp.async (rows before t = 0 arrive as zeros: the causal padding), so the bytes in flight (kStages - 1
// stages, 128 bytes a lane) live in shared memory and the registers hold only the weights and the last W - 1
// inputs. Each lane reads its own group of a stage row, computes it and stores it; the first W - 1 rows only
// fill the window, and stages clear of the chunk's ends take no position checks.
// Why: the register kernel (causal_conv1d_fwd.cu, still used for unaligned channel rows) keeps its next
// steps in registers, so the occupancy its window and weights allow left too few bytes in flight
// (0.90-0.93 of a same-size copy on an H100, 2026-11-22).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_channel_last.h"
#include "causal_conv1d_params.h"
#include "copy_async.cuh"
#include "dtype_traits.cuh"
#include "per_device.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

constexpr int kStagedThreads = 128;
constexpr int kStagedWarps = kStagedThreads / kWarpSize;
constexpr int kStagedStages = 5;      // ring slots per warp: 4 stages in flight while one is read
constexpr int kStageLaneBytes = 32;   // bytes of a stage per lane: two 16-byte copies

// Blocks per SM the register bound asks for (the most at which ptxas 13.0, sm_90a, keeps the weights and
// window in registers): a lane holds kV * (2W) floats of weights, bias and window.
constexpr int staged_min_blocks(int channels, int width) {
  return channels * width <= 8 ? 8 : (channels * width <= 16 ? 6 : (channels * width <= 32 ? 4 : 3));
}

// Whether kV channels of width kW fit a lane's registers without spilling (16-bit 16-byte lanes at W >= 7
// spilled 276-616 bytes at 168 registers).
constexpr bool staged_lane_bytes_fit(int channels, int width) { return channels * width <= 32; }

template <typename T_, int kWidth_, int kLaneBytes_>
struct FwdStagedTraits {
  using T = T_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kLaneBytes = kLaneBytes_;
  static constexpr int kV = kLaneBytes / static_cast<int>(sizeof(T));  // channels per lane
  static constexpr int kThreads = kStagedThreads;
  static constexpr int kWarps = kStagedWarps;
  static constexpr int kStages = kStagedStages;
  static constexpr int kMinBlocks = staged_min_blocks(kV, kWidth);
  static constexpr int kRowBytes = kWarpSize * kLaneBytes;           // one time step of the warp's channels
  static constexpr int kStageRows = kStageLaneBytes / kLaneBytes;    // time steps per stage
  static constexpr int kPieces = kRowBytes / 16;                     // 16-byte copies per row
  static constexpr int kRowStep = kWarpSize / kPieces;               // rows between a lane's copies
  static constexpr int kCopies = kStageRows / kRowStep;              // a lane's copies per stage
  static constexpr int kPieceElts = 16 / static_cast<int>(sizeof(T));
  using vec_t = Vec<T, kV>;
  static_assert(kLaneBytes == 8 || kLaneBytes == 16, "a lane owns 8 or 16 bytes of channels");
  static_assert(kWarpSize % kPieces == 0 && kStageRows % kRowStep == 0, "stage copies split evenly");
};

struct FwdStagedArgs {
  const void* x;
  void* out;
  WeightArgs w;
  int64_t seqlen, dim;
  int64_t n_groups;                         // channel groups of kV
  int64_t n_group_blocks, n_chunks, n_items;  // n_items = batch * n_chunks * n_group_blocks (one per warp)
  FastDivmod div_group_blocks, div_chunks;
  int64_t chunk_len;
  int64_t x_batch_stride, x_seq_stride;
  int64_t out_batch_stride, out_seq_stride;
  bool silu;
};

// Work item (b, chunk, group block), group block fastest: the warps of a block read neighbouring channels.
template <typename Kt>
__global__ void __launch_bounds__(Kt::kThreads, Kt::kMinBlocks)
    causal_conv1d_fwd_channel_last_staged_kernel(const FwdStagedArgs a) {
  using T = typename Kt::T;
  using vec_t = typename Kt::vec_t;
  constexpr int kW = Kt::kWidth;
  constexpr int kHalo = Kt::kHalo;
  constexpr int kV = Kt::kV;
  constexpr int kStages = Kt::kStages;
  constexpr int kStageRows = Kt::kStageRows;
  // [warp][slot][row][the warp's channels]
  __shared__ __align__(16) unsigned char ring[Kt::kWarps][kStages][kStageRows][Kt::kRowBytes];

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  // This lane's copies: 16-byte piece `part` of rows r0, r0 + kRowStep, ... of each stage.
  const int r0 = lane / Kt::kPieces, part = lane % Kt::kPieces;
  const T* __restrict__ x = static_cast<const T*>(a.x);

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * Kt::kWarps + warp; item < a.n_items;
       item += static_cast<int64_t>(gridDim.x) * Kt::kWarps) {
    int64_t gb, chunk;
    const int64_t rest = a.div_group_blocks.divmod(gb, item);
    const int64_t b = a.div_chunks.divmod(chunk, rest);
    const int64_t t0 = chunk * a.chunk_len;
    const int64_t t1 = t0 + a.chunk_len < a.seqlen ? t0 + a.chunk_len : a.seqlen;
    // Streamed row s holds x at t0 - kHalo + s: rows below s_zero lie before the sequence (zeros), outputs
    // start at row kHalo.
    const int32_t n_rows = static_cast<int32_t>(t1 - t0) + kHalo;
    const int32_t s_zero = t0 >= kHalo ? 0 : static_cast<int32_t>(kHalo - t0);
    const int n_stages = (n_rows + kStageRows - 1) / kStageRows;
    const int64_t dpiece = gb * kWarpSize * kV + part * Kt::kPieceElts;  // first channel of this lane's piece
    const bool piece_ok = dpiece < a.dim;
    const T* __restrict__ xsrc = x + b * a.x_batch_stride + dpiece;
    const int64_t trow = t0 - kHalo + r0;  // time of this lane's first copied row (negative before the start)

    // Copies of stage k (rows k * kStageRows ...) into slot k % kStages; an empty group past the last stage
    // keeps the wait count uniform.
    auto issue = [&](int k) {
      if (k < n_stages) {
        const int slot = k % kStages;
#pragma unroll
        for (int q = 0; q < Kt::kCopies; ++q) {
          const int r = r0 + q * Kt::kRowStep;
          const int32_t s = k * kStageRows + r;
          const bool ok = piece_ok && s >= s_zero && s < n_rows;
          const int64_t t = trow + k * kStageRows + q * Kt::kRowStep;
          copy16_to_shared_async(&ring[warp][slot][r][part * 16], ok ? xsrc + t * a.x_seq_stride : x, ok);
        }
      }
      copy_to_shared_commit();
    };
#pragma unroll
    for (int k = 0; k + 1 < kStages; ++k) issue(k);

    // This lane's channels d0 .. d0 + kV - 1; a lane past the last group computes channel 0 and writes nothing.
    const int64_t g = gb * kWarpSize + lane;
    const bool active = g < a.n_groups;
    const int64_t d0 = active ? g * kV : 0;
    float w[kV][kW];
    float bias[kV];
    load_weight_block<kV, kW>(w, bias, a.w, d0);
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + t0 * a.out_seq_stride + d0;
    float win[Kt::kHaloAlloc][kV];  // x at t - kHalo .. t - 1 for the next row t (filled by rows 0 .. kHalo - 1)
#pragma unroll
    for (int i = 0; i < Kt::kHaloAlloc; ++i)
#pragma unroll
      for (int c = 0; c < kV; ++c) win[i][c] = 0.f;

    for (int k = 0; k < n_stages; ++k) {
      issue(k + kStages - 1);  // into the slot read in step k - 1 (the warp_sync below freed it)
      copy_to_shared_wait<kStages - 1>();
      warp_sync();
      const int slot = k % kStages;
      const int32_t s0 = k * kStageRows;
      auto row = [&](auto checked, int r) {
        vec_t xv;
        xv.load(reinterpret_cast<const T*>(&ring[warp][slot][r][lane * Kt::kLaneBytes]));
        float cur[kV];
#pragma unroll
        for (int c = 0; c < kV; ++c) cur[c] = to_float(xv.elt[c]);
        if (!decltype(checked)::value || s0 + r >= kHalo) {
          vec_t yv;
#pragma unroll
          for (int c = 0; c < kV; ++c) {
            float acc = fmaf(w[c][kHalo], cur[c], bias[c]);
#pragma unroll
            for (int j = 0; j < kHalo; ++j) acc = fmaf(w[c][j], win[j][c], acc);
            yv.elt[c] = from_float<T>(activate(acc, a.silu));
          }
          if (active) yv.store(op);
          op += a.out_seq_stride;
        }
#pragma unroll
        for (int c = 0; c < kV; ++c) {
#pragma unroll
          for (int j = 0; j + 1 < kHalo; ++j) win[j][c] = win[j + 1][c];
          if (kHalo > 0) win[Kt::kHaloAlloc - 1][c] = cur[c];
        }
      };
      if (s0 >= kHalo && s0 + kStageRows <= n_rows) {  // warp-uniform: a stage of outputs only
#pragma unroll
        for (int r = 0; r < kStageRows; ++r) row(std::false_type{}, r);
      } else {
#pragma unroll
        for (int r = 0; r < kStageRows; ++r)
          if (s0 + r < n_rows) row(std::true_type{}, r);
      }
      warp_sync();  // every lane is done with the slot before it is refilled
    }
    copy_to_shared_wait<0>();  // nothing in flight into the ring when the next item starts
  }
}

template <class Kt>
int64_t staged_resident_warps() {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};
  return per_device(cache, [](int dev) {
    return resident_blocks_on(dev, causal_conv1d_fwd_channel_last_staged_kernel<Kt>, Kt::kThreads, 0) * Kt::kWarps;
  });
}

template <typename T, int kW, int kLaneBytes>
void fwd_staged_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  using Kt = FwdStagedTraits<T, kW, kLaneBytes>;
  FwdStagedArgs a{};
  a.x = p.x;
  a.out = p.out;
  a.w = w;
  a.seqlen = p.seqlen;
  a.dim = p.dim;
  a.n_groups = p.dim / Kt::kV;
  a.n_group_blocks = (a.n_groups + kWarpSize - 1) / kWarpSize;
  // Chunks that make the warp items fill whole rounds of resident warps (plan_time_chunk_len), at least
  // kMinChunk steps so the W - 1 re-read rows and the ring's fill stay small beside a chunk.
  constexpr int64_t kMinChunk = 16, kMaxChunk = 256;
  const int64_t resident = staged_resident_warps<Kt>();
  const int64_t rows = p.batch * a.n_group_blocks;
  a.chunk_len = std::max<int64_t>(
      kMinChunk, plan_time_chunk_len(rows, p.seqlen, resident, Kt::kStageRows, kMinChunk, kMaxChunk, 2 * resident));
  if (channel_last_forced_chunk_len() > 0) a.chunk_len = channel_last_forced_chunk_len();
  a.chunk_len = std::min<int64_t>(a.chunk_len, int64_t{1} << 30);  // rows of a chunk are counted in 32 bits
  a.n_chunks = (p.seqlen + a.chunk_len - 1) / a.chunk_len;
  a.n_items = rows * a.n_chunks;
  a.div_group_blocks = FastDivmod(a.n_group_blocks);
  a.div_chunks = FastDivmod(a.n_chunks);
  a.x_batch_stride = p.x_batch_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = p.out_batch_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;
  const int64_t blocks = std::min((a.n_items + Kt::kWarps - 1) / Kt::kWarps, kMaxGridX);
  causal_conv1d_fwd_channel_last_staged_kernel<Kt><<<static_cast<unsigned>(blocks), Kt::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

// Every row of channels of a dim-stride-1 tensor starts on a 16-byte boundary, and D fills whole 16-byte pieces.
bool rows_of_16_bytes(const void* ptr, int64_t bs, int64_t ss, int64_t B, int64_t L, int64_t D, int elt) {
  const int64_t piece = 16 / elt;
  return is_aligned(ptr, 16) && D % piece == 0 && (B == 1 || bs % piece == 0) && (L == 1 || ss % piece == 0);
}

}  // namespace

int64_t channel_last_forced_chunk_len() {
  static const int64_t forced = [] {
    const char* v = std::getenv("AITER_LITE_CONV_CL_CHUNK");
    return v == nullptr ? int64_t{0} : std::max<int64_t>(0, std::atoll(v)) / 4 * 4;
  }();
  return forced;
}

int fwd_channel_last_staged_lane_bytes(const CausalConv1dFwdParams& p) {
  if (p.width > kMaxTemplateWidth || p.dim < 2 || p.x_dim_stride != 1 || p.out_dim_stride != 1) return 0;
  const int elt = dtype_size(p.x_dtype);
  if (!rows_of_16_bytes(p.x, p.x_batch_stride, p.x_seq_stride, p.batch, p.seqlen, p.dim, elt) ||
      !rows_of_16_bytes(p.out, p.out_batch_stride, p.out_seq_stride, p.batch, p.seqlen, p.dim, elt))
    return 0;
  // Experiment switch (read once): AITER_LITE_CONV_CL_FWD = regs (the register kernel), 8 or 16.
  static const int forced = [] {
    const char* v = std::getenv("AITER_LITE_CONV_CL_FWD");
    if (v == nullptr) return -1;
    if (std::strcmp(v, "regs") == 0) return 0;
    return std::atoi(v) == 8 ? 8 : 16;
  }();
  const bool fits16 = staged_lane_bytes_fit(16 / elt, static_cast<int>(p.width));
  if (forced >= 0) return forced == 16 && !fits16 ? 8 : forced;
  return fits16 ? 16 : 8;
}

void fwd_channel_last_staged_run(const CausalConv1dFwdParams& p, int lane_bytes, const WeightArgs& w,
                                 gpuStream_t stream) {
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if constexpr (staged_lane_bytes_fit(16 / static_cast<int>(sizeof(scalar_t)), kW)) {
        if (lane_bytes == 16) return fwd_staged_launch<scalar_t, kW, 16>(p, w, stream);
      }
      fwd_staged_launch<scalar_t, kW, 8>(p, w, stream);
    });
  });
}

}  // namespace conv1d
}  // namespace aiter_lite
