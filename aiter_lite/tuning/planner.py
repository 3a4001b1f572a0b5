"""Matmul tile planner: ranks (BM, BN, BK, warps, stages) tile configs for a shape from a hardware
model, without running anything. Pure Python; see docs/planner.md for the model and its constants.

    plan(m, n, k, dtype, device)            -> Plan: ranked and pruned Estimates of the planner's own
                                               candidate space for the dtype's path
    rank_table_configs(m, n, k, dtype, dev) -> Estimates of the kernels' config table
                                               (aiter_lite.tuning.matmul_configs), best first
    table_order(ests)                       -> the launchable ones of those, in dispatch order
    choose_config(m, n, k, dtype, dev)      -> index of the best table config (cached per shape bucket)
    format_plan(m, n, k, dtype, device=..., show_pruned=...) -> the text `python -m aiter_lite plan` prints

dtype: "fp16" | "bf16" (tensor cores, mma.sync m16n8k16), "tf32" (fp32 storage on the tf32 tensor-core
path) or "fp32" (the SIMT FFMA path). torch-style names ("bfloat16", torch.float16) are accepted.
Configs (the planner's own candidates and the table's entries alike) are MatmulTileConfig tuples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, List, Optional, Sequence, Tuple

from .hardware import DTYPES, ELEM_BYTES, DeviceModel, get_device
from .matmul_configs import MATMUL_CONFIGS, SIMT_SMEM_PAD, MatmulTileConfig

__all__ = ["MatmulTileConfig", "CandidateSpace", "PlannerOptions", "Estimate", "Plan", "DEFAULT_SPACES", "PATH_OF_DTYPE",
           "normalize_dtype", "smem_bytes", "estimate_registers", "occupancy", "tile_intensity", "wave_efficiency",
           "s_min", "evaluate", "enumerate_candidates", "plan", "rank_table_configs", "table_configs",
           "table_order", "choose_config", "format_plan", "bucket"]

PATH_OF_DTYPE = {"fp16": "tensor_core_16", "bf16": "tensor_core_16", "tf32": "tensor_core_tf32", "fp32": "simt"}
TC_PATHS = ("tensor_core_16", "tensor_core_tf32")
_DTYPE_ALIASES = {"float16": "fp16", "half": "fp16", "f16": "fp16", "bfloat16": "bf16", "float32": "fp32",
                  "float": "fp32", "f32": "fp32", "tensorfloat32": "tf32"}

# mma.sync tile of the tensor-core paths, and the SIMT warp's thread grid (csrc/kernels/matmul_*.cuh).
MMA_M, MMA_N = 16, 8
SIMT_LANES_M, SIMT_LANES_N = 4, 8


def normalize_dtype(dtype) -> str:
    """'bf16', 'bfloat16', torch.bfloat16 -> 'bf16' (and so on); ValueError for anything else."""
    s = str(dtype).strip().lower()
    if s.startswith("torch."):
        s = s[len("torch."):]
    s = _DTYPE_ALIASES.get(s, s)
    if s not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return s


# ---- configs and options -----------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateSpace:
    """The planner's own candidate space for one path; warps: warps per block (32 threads each)."""

    bm: Tuple[int, ...]
    bn: Tuple[int, ...]
    bk: Tuple[int, ...]
    warps: Tuple[int, ...]
    stages: Tuple[int, ...]


DEFAULT_SPACES = {
    # BK: whole pairs of mma k-steps (the kernels double-buffer fragments within a k-tile), i.e.
    # 64- and 128-byte shared rows for both element sizes.
    "tensor_core_16": CandidateSpace((64, 128, 256), (64, 128, 256), (32, 64), (4, 8), (2, 3, 4, 5, 6)),
    "tensor_core_tf32": CandidateSpace((64, 128, 256), (64, 128, 256), (16, 32), (4, 8), (2, 3, 4, 5, 6)),
    # SIMT: thread tiles of 4x4 sub-tiles; 64/128/256 threads.
    "simt": CandidateSpace((64, 128, 256), (64, 128, 256), (8, 16, 32), (2, 4, 8), (2, 3, 4)),
}


@dataclass(frozen=True)
class PlannerOptions:
    """Knobs of the model that are properties of the kernels rather than of the GPU."""

    smem_pad_tc: int = 0        # elements of padding per shared row, tensor-core kernels (they swizzle instead)
    smem_pad_simt: int = SIMT_SMEM_PAD  # SIMT kernel: kMatmulSimtSmemPad
    reg_overhead: int = 32      # registers for pointers, strides, offsets, masks and loop state
    frag_buffers: int = 2       # tensor-core fragments are double-buffered in registers
    group_m: int = 8            # tile rows of a raster group (grouped_tile_origin in matmul_common.cuh)
    oversize_factor: float = 2.0  # prune a tile whose padded M (or N) is >= this x the problem's ...
    mma_sync: bool = True       # ... tensor-core peak of mma.sync (this repo's kernels), not wgmma


# ---- the arithmetic -----------------------------------------------------------------------------


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _smem_elem_bytes(path: str, dtype: str) -> int:
    return 4 if path == "simt" else ELEM_BYTES[dtype]  # the SIMT kernel stages fp32 whatever the input


def smem_bytes(cfg: MatmulTileConfig, elem_bytes: int, pad: int = 0) -> int:
    """Shared memory of a block: stages x (A tile + B tile) = stages * BK * ((BM+pad) + (BN+pad)) * bytes.
    `pad` is the padding (elements) each BK-row of a tile carries."""
    return cfg.smem_bytes(elem_bytes, pad)


def estimate_registers(cfg: MatmulTileConfig, dtype: str, overhead: int = 32, frag_buffers: int = 2) -> int:
    """Registers per thread, rounded up to the allocation step of 8.
    Tensor cores: fp32 accumulators BM*BN/threads + fragments (A: 4 regs per 16-row mma tile, B: 2 per
    8-column tile of the warp tile, times frag_buffers) + overhead.
    SIMT: TM*TN accumulators + TM + TN operand registers + the global->shared staging registers
    ((BM+BN)*BK/threads elements) + overhead.
    wgmma: BM*BN / consumer threads accumulators + overhead (operands come from shared memory; the
    producer warpgroup gives its registers to the consumers with setmaxnreg); the tf32 kernel adds its
    two buffers of b^T register fragments (2 x 16 per thread) and is reported as the block's mean per
    thread after setmaxnreg (consumers that, the producer warpgroup 40), which is what occupancy sees."""
    wm, wn = cfg.warp_tile
    if cfg.path == "wgmma_16":
        regs = cfg.bm * cfg.bn // (32 * cfg.warps) + overhead
    elif cfg.path == "wgmma_tf32":
        consumer = cfg.bm * cfg.bn // (32 * cfg.warps) + 32 + overhead
        regs = (32 * cfg.warps * consumer + 128 * 40) // cfg.threads
    elif cfg.path == "simt":
        tm, tn = cfg.thread_tile
        staging = _cdiv((cfg.bm + cfg.bn) * cfg.bk * ELEM_BYTES[dtype], cfg.threads * 4)
        regs = tm * tn + tm + tn + staging + overhead
    else:
        acc = cfg.bm * cfg.bn // cfg.threads
        frags = frag_buffers * ((wm // MMA_M) * 4 + (wn // MMA_N) * 2)
        regs = acc + frags + overhead
    return _cdiv(regs, 8) * 8


def occupancy(dev: DeviceModel, threads: int, regs: int, smem: int) -> Tuple[int, str]:
    """Resident blocks per SM and what limits them: min over registers (allocated per warp in
    reg_alloc_unit steps), shared memory (plus the per-block reservation), threads and the block cap."""
    warps = _cdiv(threads, 32)
    if regs > dev.max_regs_per_thread:
        by_regs = 0
    else:
        per_warp = _cdiv(regs * 32, dev.reg_alloc_unit) * dev.reg_alloc_unit
        by_regs = (dev.regs_per_sm // per_warp) // warps
    by_smem = 0 if smem > dev.smem_per_block else dev.smem_per_sm // (smem + dev.smem_reserved_per_block)
    by_threads = dev.max_threads_per_sm // threads
    limits = [("registers", by_regs), ("shared memory", by_smem), ("threads", by_threads),
              ("blocks", dev.max_blocks_per_sm)]
    name, value = min(limits, key=lambda kv: kv[1])
    return value, name


def tile_intensity(bm: int, bn: int, elem_bytes: int) -> float:
    """FLOP per byte a block loads: 2*BM*BN*BK / ((BM+BN)*BK*bytes) = 2*BM*BN / ((BM+BN)*bytes)."""
    return 2.0 * bm * bn / ((bm + bn) * elem_bytes)


def wave_efficiency(tiles: int, sms: int, blocks_per_sm: int) -> float:
    """tiles / (ceil(waves) * SMs * blocks_per_SM), waves = tiles / (SMs * blocks_per_SM)."""
    slots = sms * blocks_per_sm
    return tiles / (_cdiv(tiles, slots) * slots)


def s_min(latency_s: float, t_tile_s: float) -> int:
    """Pipeline stages needed to hide the load latency: ceil(latency / T_tile) + 1."""
    return math.ceil(latency_s / t_tile_s - 1e-9) + 1


# Tensor-core paths: (dtypes they take, how the error says so, dtype of the peak (None: the call's),
# whether they issue mma.sync). The Hopper kernels issue wgmma: the full tensor peak, whatever the
# caller's mma_sync says.
_TENSOR_PATHS = {
    "tensor_core_16": (("fp16", "bf16"), "fp16/bf16", None, True),
    "tensor_core_tf32": (("tf32", "fp32"), "fp32 storage (tf32)", "tf32", True),
    "wgmma_16": (("fp16", "bf16"), "fp16/bf16", None, False),
    "wgmma_tf32": (("tf32", "fp32"), "fp32 storage (tf32)", "tf32", False),
}


def _path_peak(dev: DeviceModel, path: str, dtype: str, mma_sync: bool) -> float:
    if path == "simt":
        return dev.peak("fp32")
    if path not in _TENSOR_PATHS:
        raise ValueError(f"unknown path {path!r}")
    dtypes, takes, peak_dtype, issues_mma_sync = _TENSOR_PATHS[path]
    if dtype not in dtypes:
        raise ValueError(f"path {path} takes {takes}, not {dtype}")
    return dev.peak(peak_dtype or dtype, mma_sync and issues_mma_sync)


@dataclass
class Estimate:
    """Everything the planner computed for one config on one problem (times in seconds)."""

    config: MatmulTileConfig
    smem_bytes: int
    regs: int
    blocks_per_sm: int          # resident blocks the resources allow
    limiter: str                # which resource sets blocks_per_sm
    resident: int               # blocks that actually share an SM: min(blocks_per_sm, ceil(tiles / SMs))
    tile_ai: float              # FLOP/B of one block's loads
    wave_ai: float              # FLOP/B of the DRAM traffic of a wave of concurrent blocks
    ridge: float
    t_tile: float               # time of one k-tile with `resident` blocks sharing the SM (math, smem or DRAM share)
    s_min: int
    tiles: int
    k_tiles: int
    waves: float
    wave_eff: float
    tail_eff: float
    t_compute: float
    t_mem: float
    t_fill: float
    predicted_s: float
    tflops: float
    reasons: List[str] = field(default_factory=list)
    hard: bool = False          # True: cannot launch at all (not just predicted to be slow)

    @property
    def pruned(self) -> bool:
        return bool(self.reasons)

    @property
    def predicted_us(self) -> float:
        return self.predicted_s * 1e6

    def sort_key(self):
        c = self.config
        # Times within 0.01% tie; then less global traffic (higher tile intensity, then less DRAM
        # traffic), then less shared memory, fewer stages, the larger tile, and the shape itself.
        def r4(x):
            return float(f"{x:.4g}") if math.isfinite(x) else math.inf
        return (self.hard, r4(self.predicted_s), -round(self.tile_ai, 6), r4(self.t_mem), self.smem_bytes, c.stages, -c.bm * c.bn, c.bm, c.bn, c.bk, c.warps,
                c.warps_m, -1 if c.index is None else c.index)


def evaluate(cfg: MatmulTileConfig, m: int, n: int, k: int, dtype, device="h100", *, batch: int = 1,
             options: Optional[PlannerOptions] = None, min_tile: Optional[Tuple[int, int]] = None) -> Estimate:
    """Model one config on an M x N x K (x batch) problem. min_tile: the smallest BM and BN of the
    space the config is ranked in (a larger tile may be pruned as oversized only if a smaller exists)."""
    dtype, dev, opt = _prepare(m, n, k, batch, dtype, device, options)
    path = cfg.path
    peak = _path_peak(dev, path, dtype, opt.mma_sync)
    e = ELEM_BYTES[dtype]
    es = _smem_elem_bytes(path, dtype)
    pad = opt.smem_pad_simt if path == "simt" else opt.smem_pad_tc
    lat = dev.mem_latency_s

    smem = smem_bytes(cfg, es, pad)
    regs = estimate_registers(cfg, dtype, opt.reg_overhead, opt.frag_buffers)
    bps, limiter = occupancy(dev, cfg.threads, regs, smem)

    tiles_m, tiles_n = _cdiv(m, cfg.bm), _cdiv(n, cfg.bn)
    tiles = tiles_m * tiles_n * batch
    k_tiles = _cdiv(k, cfg.bk)
    mp, np_, kp = tiles_m * cfg.bm, tiles_n * cfg.bn, k_tiles * cfg.bk
    tail_eff = (m * n * k) / (mp * np_ * kp)
    if cfg.split_k > 1:  # wgmma split-K: split_k blocks (a cluster) per tile, each over its share of K
        tiles *= cfg.split_k
        k_tiles = _cdiv(k_tiles, cfg.split_k)
    flops = 2.0 * m * n * k * batch
    ridge = peak / dev.mem_bw
    t_ai = tile_intensity(cfg.bm, cfg.bn, e)

    reasons: List[str] = []
    hard = False
    if smem > dev.smem_per_block:
        reasons.append(f"shared memory {smem / 1024:.1f} KB > per-block limit {dev.smem_per_block / 1024:.0f} KB")
        hard = True
    if regs > dev.max_regs_per_thread:
        reasons.append(f"~{regs} registers/thread > {dev.max_regs_per_thread} (accumulators would spill)")
        hard = True
    if bps == 0 and not hard:
        reasons.append(f"zero occupancy (limited by {limiter})")
        hard = True
    if hard:
        inf = math.inf
        return Estimate(cfg, smem, regs, bps, limiter, 0, t_ai, 0.0, ridge, inf, 0, tiles, k_tiles, inf, 0.0,
                        tail_eff, inf, inf, inf, inf, 0.0, reasons, True)

    sms = dev.sm_count
    resident = max(1, min(bps, _cdiv(tiles, sms)))
    # One k-tile of one block, with `resident` blocks sharing the SM: tensor/FFMA time, and shared-memory
    # time (fragment reads of every warp + the tile fill), whichever is longer.
    t_math = 2.0 * cfg.bm * cfg.bn * cfg.bk * resident / (peak / sms)
    wm, wn = cfg.warp_tile
    if path == "wgmma_16":  # each consumer warpgroup's wgmma reads its A rows and all of B, plus the fill
        smem_traffic = (cfg.bm + cfg.warps // 4 * cfg.bn + (cfg.bm + cfg.bn)) * cfg.bk * es
    elif path == "wgmma_tf32":  # each consumer's wgmma reads all of A, its loads its 64 columns of B, + fill
        smem_traffic = (cfg.warps // 4 * cfg.bm + cfg.bn + (cfg.bm + cfg.bn)) * cfg.bk * es
    else:
        smem_traffic = (cfg.warps * (wm + wn) + (cfg.bm + cfg.bn)) * cfg.bk * es
    t_smem = smem_traffic * resident / dev.smem_bw_per_sm()
    # The mma.sync kernels fill their tiles with cp.async from L2, whose rate the whole GPU shares
    # (bench/lab/mma_sync_ceiling.cu: on an H100 it, not the tensor pipe, bounds a 128 x 256 tile).
    fill_bw = dev.l2_fill_bw_per_sm() if path in TC_PATHS else None
    t_l2 = (cfg.bm + cfg.bn) * cfg.bk * e * resident / fill_bw if fill_bw else 0.0
    slots = sms * resident
    waves = tiles / slots
    n_waves = _cdiv(tiles, slots)
    w_eff = tiles / (n_waves * slots)

    # DRAM traffic: a wave of `slots` concurrent blocks, rastered in groups of group_m tile rows,
    # reads its rows of A and columns of B once (the rest of its loads hit L2).
    g = min(opt.group_m, tiles_m)
    rows_w = min(g, slots)
    cols_w = min(tiles_n, _cdiv(slots, g))
    mw, nw = min(rows_w * cfg.bm, m), min(cols_w * cfg.bn, n)
    w_ai = 2.0 * mw * nw / ((mw + nw) * e)
    compulsory_ab = (m * k + k * n) * e * batch
    bytes_ab = max(compulsory_ab, n_waves * (mw + nw) * k * e)
    dram = bytes_ab + m * n * e * batch
    t_mem = dram / dev.mem_bw

    # A k-tile step can't be faster than DRAM delivers its share (memory-bound problems), so the
    # pipeline depth S_min is taken on the slower of the two.
    t_tile = max(t_math, t_smem, t_l2, t_mem / (n_waves * k_tiles))
    need = s_min(lat, t_tile)
    t_tile_eff = max(t_math, t_smem, t_l2, lat / (cfg.stages - 1))  # too few stages: the latency shows
    t_compute = n_waves * k_tiles * t_tile_eff  # = flops / rate / (wave_eff * tail_eff)
    t_fill = n_waves * lat                      # each wave waits one latency for its first k-tile
    predicted = max(t_compute, t_mem) + t_fill

    problem_ai = _problem_ai(m, n, k, e)
    if cfg.stages < need:
        reasons.append(f"{cfg.stages} stages < S_min={need} (latency {lat * 1e9:.0f} ns / k-tile "
                       f"{t_tile * 1e9:.0f} ns with {resident} block(s)/SM)")
    if w_ai < ridge <= problem_ai:
        reasons.append(f"memory bound: wave intensity {w_ai:.0f} FLOP/B < ridge {ridge:.0f} "
                       f"(tile {t_ai:.0f}; the problem reaches {problem_ai:.0f})")
    if min_tile is not None:
        for dim, size, tile, smallest in (("M", m, cfg.bm, min_tile[0]), ("N", n, cfg.bn, min_tile[1])):
            padded = _cdiv(size, tile) * tile
            if tile > smallest and padded >= opt.oversize_factor * size:
                reasons.append(f"tile {dim} {tile} too large for {dim}={size} ({size / padded:.0%} of it used; "
                               f"{smallest} exists)")
    return Estimate(cfg, smem, regs, bps, limiter, resident, t_ai, w_ai, ridge, t_tile, need, tiles, k_tiles, waves,
                    w_eff, tail_eff, t_compute, t_mem, t_fill, predicted, flops / predicted / 1e12, reasons, False)


def _problem_ai(m: int, n: int, k: int, e: int) -> float:
    return 2.0 * m * n * k / ((m * k + k * n + m * n) * e)


def _prepare(m: int, n: int, k: int, batch: int, dtype, device, options: Optional[PlannerOptions]):
    """Checked inputs of a planner entry point: (dtype name, DeviceModel, PlannerOptions)."""
    for name, v in (("m", m), ("n", n), ("k", k), ("batch", batch)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return normalize_dtype(dtype), get_device(device), options or PlannerOptions()


# ---- candidate spaces ---------------------------------------------------------------------------


def _warp_layout(path: str, bm: int, bn: int, bk: int, warps: int, dtype: str) -> Optional[Tuple[int, int]]:
    """The warp grid (warps_m, warps_n) the planner uses for a block tile, or None if no valid one.
    Tensor cores: warp tiles of whole 16x16 mma pairs, the one with the least shared-memory traffic
    (smallest WM + WN), then the most balanced grid. SIMT: thread tiles of 4x4 sub-tiles with at most
    128 accumulators, smallest TM + TN (fewest shared loads per FMA), then smallest WM + WN."""
    best, best_key = None, None
    for wm_ in range(1, warps + 1):
        if warps % wm_:
            continue
        wn_ = warps // wm_
        if bm % wm_ or bn % wn_:
            continue
        wm, wn = bm // wm_, bn // wn_
        if path == "simt":
            if wm % (4 * SIMT_LANES_M) or wn % (4 * SIMT_LANES_N):
                continue
            tm, tn = wm // SIMT_LANES_M, wn // SIMT_LANES_N
            if tm * tn > 128:
                continue
            key = (tm + tn, wm + wn, abs(wm_ - wn_), -wm_)
        else:
            if wm % MMA_M or wn % (2 * MMA_N):
                continue
            key = (wm + wn, abs(wm_ - wn_), -wm_)
        if best_key is None or key < best_key:
            best, best_key = (wm_, wn_), key
    return best


def _loader_ok(path: str, bm: int, bn: int, bk: int, threads: int, dtype: str) -> bool:
    """Every thread moves whole 16-byte chunks (tensor cores) or 4-element packs (SIMT)."""
    if path == "simt":
        for mn in (bm, bn):
            if (mn * bk) % (4 * threads) or threads % (bk // 4 or 1) or threads % (mn // 4):
                return False
        return bk % 4 == 0
    e = ELEM_BYTES[dtype]
    return all((mn * bk * e // 16) % threads == 0 and (mn * bk * e) % 16 == 0 for mn in (bm, bn))


def enumerate_candidates(path: str, dtype: str, space: Optional[CandidateSpace] = None) -> List[MatmulTileConfig]:
    """Every realizable (BM, BN, BK, warps, stages) of the space, with the planner's warp grid."""
    space = space or DEFAULT_SPACES[path]
    out = []
    for bm in space.bm:
        for bn in space.bn:
            for bk in space.bk:
                for warps in space.warps:
                    layout = _warp_layout(path, bm, bn, bk, warps, dtype)
                    if layout is None or not _loader_ok(path, bm, bn, bk, 32 * warps, dtype):
                        continue
                    for stages in space.stages:
                        if stages >= 2:
                            out.append(MatmulTileConfig.candidate(path, bm, bn, bk, layout[0], layout[1], stages))
    return out


# ---- plans --------------------------------------------------------------------------------------


@dataclass
class Plan:
    m: int
    n: int
    k: int
    dtype: str
    path: str
    device: DeviceModel
    batch: int
    peak: float
    ridge: float
    problem_ai: float
    ranked: List[Estimate]   # survivors, best first
    pruned: List[Estimate]   # with reasons; runnable ones by predicted time, then the unlaunchable

    @property
    def best(self) -> Optional[Estimate]:
        return self.ranked[0] if self.ranked else None


def _rank(cfgs: Sequence[MatmulTileConfig], m: int, n: int, k: int, dtype: str, dev: DeviceModel, batch: int,
          opt: PlannerOptions) -> Tuple[List[Estimate], List[Estimate]]:
    """Evaluate configs and sort them: (survivors, pruned), each best first. A config may be pruned as
    oversized only when the set holds a smaller tile in that dimension."""
    min_tile = (min(c.bm for c in cfgs), min(c.bn for c in cfgs))
    ests = sorted((evaluate(c, m, n, k, dtype, dev, batch=batch, options=opt, min_tile=min_tile) for c in cfgs),
                  key=Estimate.sort_key)
    return [e for e in ests if not e.pruned], [e for e in ests if e.pruned]


def plan(m: int, n: int, k: int, dtype="bf16", device="h100", *, batch: int = 1,
         space: Optional[CandidateSpace] = None, options: Optional[PlannerOptions] = None) -> Plan:
    """Evaluate the planner's own candidate space for the dtype's path and rank it."""
    dtype, dev, opt = _prepare(m, n, k, batch, dtype, device, options)
    path = PATH_OF_DTYPE[dtype]
    cands = enumerate_candidates(path, dtype, space)
    if not cands:
        raise ValueError(f"the candidate space of path {path} is empty")
    ranked, pruned = _rank(cands, m, n, k, dtype, dev, batch, opt)
    peak = _path_peak(dev, path, dtype, opt.mma_sync)
    return Plan(m, n, k, dtype, path, dev, batch, peak, peak / dev.mem_bw, _problem_ai(m, n, k, ELEM_BYTES[dtype]),
                ranked, pruned)


def table_configs(path: Optional[str] = None) -> List[MatmulTileConfig]:
    """The entries of the kernels' table (aiter_lite.tuning.matmul_configs.MATMUL_CONFIGS) of one path
    (all of them for None)."""
    return [c for c in MATMUL_CONFIGS if path is None or c.path == path]


def rank_table_configs(m: int, n: int, k: int, dtype="bf16", device="h100", *, path: Optional[str] = None,
                       batch: int = 1, options: Optional[PlannerOptions] = None) -> List[Estimate]:
    """Score exactly the configs of the kernels' table that the dtype's path runs (or `path`, e.g.
    'simt' for a 16-bit matmul with variant='tiled'): survivors first, best first, then the pruned
    ones (each with its reasons). [] when the table has no config of that path."""
    dtype, dev, opt = _prepare(m, n, k, batch, dtype, device, options)
    cfgs = table_configs(path or PATH_OF_DTYPE[dtype])
    if not cfgs:
        return []
    ranked, pruned = _rank(cfgs, m, n, k, dtype, dev, batch, opt)
    return ranked + pruned


def table_order(estimates: Iterable[Estimate]) -> List[Estimate]:
    """The launchable table configs in the order dispatch prefers them: the table is fixed, so by
    predicted time alone (a soft prune -- S_min, memory bound, oversized -- already costs its time in
    the prediction); equal times (to 4 digits): survivors first, then the planner's sort key.
    choose_config takes the first; the autotuner times the first few."""
    runnable = [e for e in estimates if not e.hard]
    return sorted(runnable, key=lambda e: (float(f"{e.predicted_s:.4g}"), e.pruned, e.sort_key()))


def bucket(x: int) -> int:
    """Round up to a power of two (the shape bucket choose_config caches on)."""
    x = int(x)
    if x < 1:
        raise ValueError(f"sizes must be positive, got {x}")
    return 1 << (x - 1).bit_length()


@lru_cache(maxsize=None)
def _resolve_device(name: str) -> DeviceModel:
    return get_device(name)


@lru_cache(maxsize=4096)
def _choose_cached(mb: int, nb: int, kb: int, dtype: str, dev: DeviceModel, path: Optional[str]) -> int:
    order = table_order(rank_table_configs(mb, nb, kb, dtype, dev, path=path))
    return order[0].config.index if order else -1


def choose_config(m: int, n: int, k: int, dtype="bf16", device="h100", *, path: Optional[str] = None) -> int:
    """Index into MATMUL_CONFIGS of the table config with the best predicted time for the path of
    `dtype` (or `path`), for dispatch (`config=` of aiter_lite.matmul). M, N, K are rounded up to
    powers of two and the answer cached per bucket (lru_cache). -1 (the kernel's own default) when
    no table config of the path can launch."""
    dev = _resolve_device(device) if isinstance(device, str) else get_device(device)
    return _choose_cached(bucket(m), bucket(n), bucket(k), normalize_dtype(dtype), dev, path)


# ---- text ---------------------------------------------------------------------------------------

_COLS = ("rank", "BM", "BN", "BK", "warps", "stages", "smem KB", "regs/thr", "blocks/SM", "AI tile/wave vs ridge",
         "S_min", "waves", "wave eff", "pred us", "pred TFLOP/s")


def _fmt_time_us(s: float) -> str:
    return "inf" if math.isinf(s) else f"{s * 1e6:.1f}"


def _row(rank: str, e: Estimate) -> List[str]:
    c = e.config
    bps = str(e.blocks_per_sm) if e.resident in (0, e.blocks_per_sm) else f"{e.blocks_per_sm} ({e.resident} used)"
    ai = f"{e.tile_ai:.0f}/{e.wave_ai:.0f} vs {e.ridge:.0f}" if not e.hard else f"{e.tile_ai:.0f}/- vs {e.ridge:.0f}"
    return [rank, str(c.bm), str(c.bn), str(c.bk), f"{c.warps} ({c.warps_m}x{c.warps_n})", str(c.stages),
            f"{e.smem_bytes / 1024:.1f}", str(e.regs), bps, ai, str(e.s_min) if e.s_min else "-",
            f"{e.waves:.2f}" if not e.hard else "-", f"{e.wave_eff:.2f}" if not e.hard else "-",
            _fmt_time_us(e.predicted_s), f"{e.tflops:.1f}"]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], text_last: bool = False) -> List[str]:
    """Markdown table, numbers right-aligned; text_last: the last column is left-aligned text."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    last = len(widths) - 1

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) if text_last and i == last else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join(("-" * (w + 2)) if text_last and i == last else ("-" * (w + 1) + ":")
                         for i, w in enumerate(widths)) + "|"
    return [line(header), sep] + [line(r) for r in rows]


def format_plan(m: int, n: int, k: int, dtype="bf16", device="h100", show_pruned: bool = False,
                top: Optional[int] = 20) -> str:
    """The plan as text: a header with the model's numbers, the ranked configs (first `top`), the
    kernels' table configs ranked the same way, and with show_pruned the pruned configs and why."""
    p = plan(m, n, k, dtype, device)
    dev = p.device
    e_bytes = ELEM_BYTES[p.dtype]
    mma = " (mma.sync: %.2f x %.0f)" % (dev.mma_sync_fraction, dev.peak(p.dtype, False) / 1e12) \
        if p.path in TC_PATHS and dev.mma_sync_fraction != 1.0 else ""
    bound = "compute bound" if p.problem_ai >= p.ridge else "memory bound"
    n_all = len(p.ranked) + len(p.pruned)
    out = [
        f"matmul plan: M={m} N={n} K={k} dtype={p.dtype} ({e_bytes} B) path={p.path} device={dev.name}",
        f"peak {p.peak / 1e12:.0f} TFLOP/s{mma}, DRAM {dev.mem_bw / 1e12:.2f} TB/s, ridge {p.ridge:.0f} FLOP/B; "
        f"problem AI {p.problem_ai:.0f} FLOP/B ({bound}); latency {dev.mem_latency_s * 1e9:.0f} ns; "
        f"smem {dev.smem_bw_per_sm() / 1e9:.0f} GB/s/SM"
        + (f"; L2 fill (cp.async) {dev.l2_fill_bw / 1e12:.2f} TB/s" if p.path in TC_PATHS and dev.l2_fill_bw else ""),
        f"{n_all} candidates: {len(p.ranked)} ranked, {len(p.pruned)} pruned",
        "",
    ]
    if p.ranked:
        shown = p.ranked if top is None else p.ranked[:top]
        out += _table(_COLS, [_row(str(i + 1), e) for i, e in enumerate(shown)])
        if len(shown) < len(p.ranked):
            out.append(f"... {len(p.ranked) - len(shown)} more ranked configs")
    else:
        out.append("no config survives pruning; the fastest pruned ones (predicted, with their reasons):")
        soft = [e for e in p.pruned if not e.hard][:5]
        out += _table(_COLS + ("why",), [_row("-", e) + ["; ".join(e.reasons)] for e in soft], text_last=True)
    out.append("blocks/SM: what the resources allow (and how many the grid fills when fewer); AI in FLOP/B; "
               "times from the model, not measured")

    table = rank_table_configs(m, n, k, p.dtype, dev)
    if table:
        out += ["", f"kernel table configs (aiter_lite.tuning.matmul_configs, path {p.path}), best first:"]
        cols = ("config",) + _COLS[1:] + ("verdict",)
        out += _table(cols, [_row(str(e.config.index), e) + ["ok" if not e.pruned else "pruned: " +
                                                            "; ".join(e.reasons)] for e in table], text_last=True)

    if show_pruned and p.pruned:
        out += ["", f"pruned ({len(p.pruned)}):"]
        cols = ("BM", "BN", "BK", "warps", "stages", "smem KB", "regs/thr", "blocks/SM", "S_min", "pred us", "why")
        rows = []
        for e in p.pruned:
            r = _row("-", e)
            rows.append(r[1:9] + [r[10], r[13], "; ".join(e.reasons)])
        out += _table(cols, rows, text_last=True)
    return "\n".join(out)
