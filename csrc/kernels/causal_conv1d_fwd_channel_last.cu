// Causal depthwise conv1d forward, staged channel-last kernel (CUDA and HIP): x and out with dim stride 1
// ([B, L, D] storage seen as [B, D, L]) whose rows of channels start on 16-byte boundaries.
//
// A warp owns kWarpSize channel groups (kLaneBytes of channels a lane) over a chunk [t0, t1) of time steps.
// It streams the rows t0 - (W - 1) .. t1 - 1 of its channels through a ring of kStages shared-memory stages
// with cp.async (rows before t = 0 arrive as zeros: the causal padding), so the bytes in flight (kStages - 1
// stages, 128 bytes a lane) live in shared memory and the registers hold only the weights and the last W - 1
// inputs. Each lane reads its own group of a stage row, computes it and stores it; the first W - 1 rows only
// fill the window, and stages clear of the chunk's ends take no position checks.
//
// Where it runs (H100 A/B against the register kernel of causal_conv1d_fwd.cu, 2026-11-25, docs/causal_conv1d.md):
//   - the calls with initial states and/or seq_idx (kFeat; causal_conv1d_fwd_features.cu sends them) that its
//     chunks kernel does not take: W > 4, 16-byte rows that are not 8-byte groups' multiples... (see there), and
//     fp32 calls too small for 16-step chunks, where the features cost this kernel nothing (4x512x2048 W = 2:
//     +seq_idx 16.1 us, plain 16.2). When the walk reaches the start of a sequence it resets the window to that
//     sequence's initial state (or zeros); seq_idx of each row arrives through the ring beside x, and a tap reads
//     a window position only when it carries the output's index; padded slots write nothing. The item holding a
//     row's end writes its final state first when it cannot alias the initial states (write_final_state), else
//     the feature file's second launch does. The varlen mode (cu_seqlens, one packed row) is written but not
//     routed here yet: it has not run on a GPU.
//   - plain fp32 calls too small for the register kernel's 16-step chunks (5-7% faster there). On the large
//     shapes the register kernel with short chunks beat it (8x5120x2048 fp16: 121.2 against 128.4 us).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "causal_conv1d_common.cuh"
#include "causal_conv1d_fwd_channel_last.h"
#include "causal_conv1d_fwd_sequences.cuh"
#include "causal_conv1d_params.h"
#include "copy_async.cuh"
#include "dtype_traits.cuh"
#include "per_device.h"
#include "port.h"
#include "vec.cuh"

namespace aiter_lite {
namespace conv1d {
namespace {

constexpr int kMaxPlainWidth = 4;  // plain calls: fp32 at these widths (the only ones measured against the register kernel)
constexpr int kStagedThreads = 128;
constexpr int kStagedWarps = kStagedThreads / kWarpSize;
constexpr int kStagedStages = 5;      // ring slots per warp: 4 stages in flight while one is read
constexpr int kStageLaneBytes = 32;   // bytes of a stage per lane: two 16-byte copies

// Blocks per SM the register bound asks for (the most at which ptxas 13.0, sm_90a, keeps the weights and
// window in registers): a lane holds kV * (2W) floats of weights, bias and window.
// With features (kFeat) the sequence record, the window's seq ids and 64-bit positions take ~25 more: at the
// plain bounds they spilled 8-148 bytes.
constexpr int staged_min_blocks(int channels, int width, bool feat) {
  const int cw = channels * width;
  if (feat) return cw <= 4 ? 8 : (cw <= 8 ? 6 : (cw <= 20 ? 4 : 3));
  return cw <= 8 ? 8 : (cw <= 16 ? 6 : (cw <= 32 ? 4 : 3));
}

// Bytes of channels a lane owns with features: 16 where 16 bytes of channels times the width is at most 16
// (16-bit W <= 2, fp32 W <= 4), else 8 (16-bit W = 4 with 16-byte lanes spilled 88 bytes at 128 registers).
template <typename T, int kW>
constexpr int feature_lane_bytes() {
  return 16 / static_cast<int>(sizeof(T)) * kW <= 16 ? 16 : 8;
}

template <typename T_, int kWidth_, int kLaneBytes_, bool kFeat_>
struct FwdStagedTraits {
  using T = T_;
  static constexpr bool kFeat = kFeat_;  // states and packed sequences (the fields after `silu` in the args)
  static constexpr int kWidth = kWidth_;
  static constexpr int kHalo = kWidth - 1;
  static constexpr int kHaloAlloc = kHalo > 0 ? kHalo : 1;
  static constexpr int kLaneBytes = kLaneBytes_;
  static constexpr int kV = kLaneBytes / static_cast<int>(sizeof(T));  // channels per lane
  static constexpr int kThreads = kStagedThreads;
  static constexpr int kWarps = kStagedWarps;
  static constexpr int kStages = kStagedStages;
  static constexpr int kMinBlocks = staged_min_blocks(kV, kWidth, kFeat);
  static constexpr int kRowBytes = kWarpSize * kLaneBytes;           // one time step of the warp's channels
  static constexpr int kStageRows = kStageLaneBytes / kLaneBytes;    // time steps per stage
  static constexpr int kPieces = kRowBytes / 16;                     // 16-byte copies per row
  static constexpr int kRowStep = kWarpSize / kPieces;               // rows between a lane's copies
  static constexpr int kCopies = kStageRows / kRowStep;              // a lane's copies per stage
  static constexpr int kPieceElts = 16 / static_cast<int>(sizeof(T));
  using vec_t = Vec<T, kV>;
  static_assert(kLaneBytes == 8 || kLaneBytes == 16, "a lane owns 8 or 16 bytes of channels");
  static_assert(kStageRows <= kWarpSize, "a stage's seq ids are copied by one lane each");
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
  // kFeat only (names as in causal_conv1d_fwd_sequences.cuh). Varlen: x and out are one row (rows = 1) and
  // sequence b is positions cu_seqlens[b] .. cu_seqlens[b + 1] - 1 of it.
  const void* init;
  int64_t init_batch_stride, init_dim_stride, init_seq_stride;
  int64_t state_len, state_rows;
  const int32_t* seq_idx;
  int64_t seq_idx_batch_stride, seq_idx_seq_stride;
  const int32_t* cu_seqlens;
  int64_t batch;  // varlen: sequences
  const int32_t* state_indices;
  const bool* has_initial_state;
  int32_t pad_slot_id;
  // fuse_final (kFeat, not varlen): the item holding a row's end writes its final state (write_final_state).
  void* final_states;
  int64_t final_batch_stride, final_dim_stride, final_seq_stride;
  bool fuse_final;
};

// The sequence the walk is in (kFeat): its slot, whether its outputs are written and whether it has an
// initial state, and the position where the walk next resets its window.
struct StagedSequence {
  int64_t b;           // row, or varlen sequence (-1: before the first)
  int64_t next_start;  // INT64_MAX: no reset ahead
  int32_t slot;
  bool active, has_init;
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
  // [warp][slot][row][the warp's channels], and (kFeat) each row's seq_idx
  __shared__ __align__(16) unsigned char ring[Kt::kWarps][kStages][kStageRows][Kt::kRowBytes];
  __shared__ int32_t ring_ids[Kt::kWarps][kStages][Kt::kFeat ? kStageRows : 1];

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
    const bool varlen = Kt::kFeat && a.cu_seqlens != nullptr;
    const bool use_ids = Kt::kFeat && a.seq_idx != nullptr;
    if (varlen && t0 >= a.cu_seqlens[a.batch]) continue;  // after the last sequence: nothing is written
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
        if (use_ids && lane < kStageRows) {
          const int32_t s = k * kStageRows + lane;
          const bool ok = s >= s_zero && s < n_rows;
          const int64_t t = t0 - kHalo + s;
          copy4_to_shared_async(&ring_ids[warp][slot][Kt::kFeat ? lane : 0],
                                ok ? a.seq_idx + b * a.seq_idx_batch_stride + t * a.seq_idx_seq_stride : a.seq_idx, ok);
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
    if (Kt::kFeat && !varlen && a.fuse_final && t1 == a.seqlen && active) {
      StagedSequence row{b, INT64_MAX, 0, true, false};
      set_slot(a, b, row);
      if (row.active) write_final_state<T, kV, kHalo>(a, b, row.slot, row.has_init, d0);
    }
    T* __restrict__ op = static_cast<T*>(a.out) + b * a.out_batch_stride + t0 * a.out_seq_stride + d0;
    float win[Kt::kHaloAlloc][kV];  // x at t - kHalo .. t - 1 for the next row t (filled by rows 0 .. kHalo - 1)
    int32_t win_id[Kt::kHaloAlloc];  // kFeat: their seq_idx (0 without seq_idx)
#pragma unroll
    for (int i = 0; i < Kt::kHaloAlloc; ++i) {
      win_id[i] = 0;
#pragma unroll
      for (int c = 0; c < kV; ++c) win[i][c] = 0.f;
    }
    // kFeat: the sequence of the first streamed row; a row that starts a sequence resets the window first.
    StagedSequence seq{b, INT64_MAX, 0, true, false};
    int32_t first_id = 0;  // the row's first seq_idx: the initial window carries it
    if (Kt::kFeat) {
      const int64_t tf = t0 - kHalo > 0 ? t0 - kHalo : 0;
      if (varlen) {
        const int32_t* __restrict__ cu = a.cu_seqlens;
        if (tf < cu[0]) {
          seq.b = -1;
          seq.active = false;
          seq.next_start = cu[0];
        } else {
          seq.b = last_sequence_starting_by(cu, 0, a.batch, tf);
          set_slot(a, seq.b, seq);
          seq.next_start = cu[seq.b] == tf ? tf : cu[seq.b + 1];
        }
      } else {
        set_slot(a, b, seq);
        seq.next_start = t0 == 0 ? 0 : INT64_MAX;
        if (use_ids) first_id = seq_id_at(a, b, 0);
      }
    }
    // Row t starts a sequence (warp-uniform): find it, and reset the window to its initial state or zeros.
    auto start_sequence = [&](int64_t t) {
      if (varlen) {
        const int32_t* __restrict__ cu = a.cu_seqlens;
        if (t >= cu[a.batch]) {
          seq.active = false;
          seq.next_start = INT64_MAX;
          return;
        }
        seq.b = last_sequence_starting_by(cu, seq.b > 0 ? seq.b : 0, a.batch, t);
        set_slot(a, seq.b, seq);
        seq.next_start = cu[seq.b + 1];
      } else {
        seq.next_start = INT64_MAX;
      }
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        win_id[i] = first_id;
#pragma unroll
        for (int c = 0; c < kV; ++c)
          win[i][c] = seq.has_init ? init_at<T>(a, seq.slot, d0 + c, a.state_len - kHalo + i) : 0.f;
      }
    };

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
        int32_t id = 0;
        if (Kt::kFeat) {
          const int64_t t = t0 - kHalo + s0 + r;
          if (t == seq.next_start) start_sequence(t);
          if (use_ids) id = ring_ids[warp][slot][Kt::kFeat ? r : 0];
        }
        if (!decltype(checked)::value || s0 + r >= kHalo) {
          vec_t yv;
#pragma unroll
          for (int c = 0; c < kV; ++c) {
            float acc = fmaf(w[c][kHalo], cur[c], bias[c]);
#pragma unroll
            for (int j = 0; j < kHalo; ++j) acc = fmaf(w[c][j], !Kt::kFeat || win_id[j] == id ? win[j][c] : 0.f, acc);
            // padding tokens (seq_idx < 0) output 0
            yv.elt[c] = from_float<T>(Kt::kFeat && id < 0 ? 0.f : activate(acc, a.silu));
          }
          if (active && (!Kt::kFeat || seq.active)) yv.store(op);
          op += a.out_seq_stride;
        }
#pragma unroll
        for (int c = 0; c < kV; ++c) {
#pragma unroll
          for (int j = 0; j + 1 < kHalo; ++j) win[j][c] = win[j + 1][c];
          if (kHalo > 0) win[Kt::kHaloAlloc - 1][c] = cur[c];
        }
        if (Kt::kFeat) {
#pragma unroll
          for (int j = 0; j + 1 < kHalo; ++j) win_id[j] = win_id[j + 1];
          if (kHalo > 0) win_id[Kt::kHaloAlloc - 1] = id;
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

template <typename T, int kW, int kLaneBytes, bool kFeat>
void fwd_staged_launch(const CausalConv1dFwdParams& p, const WeightArgs& w, bool fuse_final, gpuStream_t stream) {
  using Kt = FwdStagedTraits<T, kW, kLaneBytes, kFeat>;
  const bool varlen = kFeat && p.cu_seqlens != nullptr;
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
  const int64_t rows = (varlen ? 1 : p.batch) * a.n_group_blocks;
  a.chunk_len = std::max<int64_t>(
      kMinChunk, plan_time_chunk_len(rows, p.seqlen, resident, Kt::kStageRows, kMinChunk, kMaxChunk, 2 * resident));
  a.chunk_len = std::min<int64_t>(a.chunk_len, int64_t{1} << 30);  // rows of a chunk are counted in 32 bits
  a.n_chunks = (p.seqlen + a.chunk_len - 1) / a.chunk_len;
  a.n_items = rows * a.n_chunks;
  a.div_group_blocks = FastDivmod(a.n_group_blocks);
  a.div_chunks = FastDivmod(a.n_chunks);
  a.x_batch_stride = varlen ? 0 : p.x_batch_stride;
  a.x_seq_stride = p.x_seq_stride;
  a.out_batch_stride = varlen ? 0 : p.out_batch_stride;
  a.out_seq_stride = p.out_seq_stride;
  a.silu = p.silu;
  if (kFeat) {
    a.init = p.initial_states;
    a.init_batch_stride = p.init_batch_stride;
    a.init_dim_stride = p.init_dim_stride;
    a.init_seq_stride = p.init_seq_stride;
    a.state_len = p.state_len;
    a.state_rows = p.state_rows;
    a.seq_idx = varlen ? nullptr : p.seq_idx;  // never set together (causal_conv1d_params.h)
    a.seq_idx_batch_stride = p.seq_idx_batch_stride;
    a.seq_idx_seq_stride = p.seq_idx_seq_stride;
    a.cu_seqlens = p.cu_seqlens;
    a.batch = p.batch;
    a.state_indices = p.state_indices;
    a.has_initial_state = p.has_initial_state;
    a.pad_slot_id = p.pad_slot_id;
    a.final_states = p.final_states;
    a.final_batch_stride = p.final_batch_stride;
    a.final_dim_stride = p.final_dim_stride;
    a.final_seq_stride = p.final_seq_stride;
    a.fuse_final = fuse_final && !varlen;
  }
  const int64_t blocks = std::min((a.n_items + Kt::kWarps - 1) / Kt::kWarps, kMaxGridX);
  causal_conv1d_fwd_channel_last_staged_kernel<Kt><<<static_cast<unsigned>(blocks), Kt::kThreads, 0, stream>>>(a);
  AITER_LITE_LAUNCH_CHECK();
}

}  // namespace

// Build-time shards (shard.h, docs/jit.md "Shards"): the registry may compile this file in N shards; shard s
// holds the kernels of the widths w with (w - 1) % N == s (AITER_LITE_CONV_WIDTH_SWITCH skips the others).
// The entries below (fwd_channel_last_staged_*), which pick the shard, are compiled in shard 0.
template <int kShard, int kShards>
void fwd_staged_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, bool features, bool fuse_final,
                      gpuStream_t stream);

#define AITER_LITE_FWD_STAGED_SHARD_EXTERN(s)                                                                 \
  extern template void fwd_staged_shard<s, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const WeightArgs&, \
                                                              bool, bool, gpuStream_t);
AITER_LITE_FOR_EACH_SHARD(AITER_LITE_FWD_STAGED_SHARD_EXTERN)
#undef AITER_LITE_FWD_STAGED_SHARD_EXTERN
static_assert(AITER_LITE_SHARDS <= kMaxFileShards, "see AITER_LITE_FOR_EACH_SHARD");

// The kernels of this shard's widths (width_shard): the plain fp32 kernel, or the features kernel of x's dtype.
template <int kShard, int kShards>
void fwd_staged_shard(const CausalConv1dFwdParams& p, const WeightArgs& w, bool features, bool fuse_final,
                      gpuStream_t stream) {
  if (!features) {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      if constexpr (kW <= kMaxPlainWidth) fwd_staged_launch<float, kW, 16, false>(p, w, false, stream);
    });
    return;
  }
  AITER_LITE_DISPATCH_DTYPE(p.x_dtype, [&] {
    AITER_LITE_CONV_WIDTH_SWITCH(p.width, kW, [&] {
      fwd_staged_launch<scalar_t, kW, feature_lane_bytes<scalar_t, kW>(), true>(p, w, fuse_final, stream);
    });
  });
}

template void fwd_staged_shard<AITER_LITE_SHARD, AITER_LITE_SHARDS>(const CausalConv1dFwdParams&, const WeightArgs&,
                                                                     bool, bool, gpuStream_t);

#if AITER_LITE_SHARD == 0
namespace {

// Every row of channels of a dim-stride-1 tensor starts on a 16-byte boundary, and D fills whole 16-byte pieces.
bool rows_of_16_bytes(const void* ptr, int64_t bs, int64_t ss, int64_t B, int64_t L, int64_t D, int elt) {
  const int64_t piece = 16 / elt;
  return is_aligned(ptr, 16) && D % piece == 0 && (B == 1 || bs % piece == 0) && (L == 1 || ss % piece == 0);
}

// x and out with dim stride 1, every row of channels on a 16-byte boundary, and a compile-time width.
bool staged_layout_fits(const CausalConv1dFwdParams& p) {
  if (p.width > kMaxTemplateWidth || p.dim < 2 || p.x_dim_stride != 1 || p.out_dim_stride != 1) return false;
  const int elt = dtype_size(p.x_dtype);
  return rows_of_16_bytes(p.x, p.x_batch_stride, p.x_seq_stride, p.batch, p.seqlen, p.dim, elt) &&
         rows_of_16_bytes(p.out, p.out_batch_stride, p.out_seq_stride, p.batch, p.seqlen, p.dim, elt);
}

void run_staged(const CausalConv1dFwdParams& p, const WeightArgs& w, bool features, bool fuse_final,
                gpuStream_t stream) {
  with_shard<AITER_LITE_SHARDS>(width_shard(p.width, AITER_LITE_SHARDS), [&](auto shard) {
    fwd_staged_shard<decltype(shard)::value, AITER_LITE_SHARDS>(p, w, features, fuse_final, stream);
  });
}

}  // namespace

bool fwd_channel_last_staged_takes(const CausalConv1dFwdParams& p) {
  return p.x_dtype == DType::kFloat32 && p.width <= kMaxPlainWidth && staged_layout_fits(p);
}

void fwd_channel_last_staged_run(const CausalConv1dFwdParams& p, const WeightArgs& w, gpuStream_t stream) {
  if (!fwd_channel_last_staged_takes(p)) throw std::logic_error("aiter_lite causal_conv1d_fwd: not a staged call");
  run_staged(p, w, false, false, stream);
}

bool fwd_channel_last_staged_features_run(const CausalConv1dFwdParams& p, const WeightArgs& w, bool fuse_final,
                                          gpuStream_t stream) {
  if (p.cu_seqlens != nullptr || !staged_layout_fits(p)) return false;
  run_staged(p, w, true, fuse_final, stream);
  return true;
}
#endif  // AITER_LITE_SHARD == 0

}  // namespace conv1d
}  // namespace aiter_lite
