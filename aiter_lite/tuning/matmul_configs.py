"""Tile configs of the CUDA/HIP matmul kernels, as data for the tile planner and the autotuner.

This mirrors the table in csrc/include/matmul_configs.h entry for entry (tests/test_matmul_configs.py
parses the header and checks that both agree). `config=i` in aiter_lite.matmul runs MATMUL_CONFIGS[i];
it must belong to the path the call runs (see path_for), else the kernel raises ValueError.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

__all__ = ["MatmulTileConfig", "MATMUL_CONFIGS", "DEFAULT_CONFIG", "PATHS", "WGMMA_PATHS", "SIMT_SMEM_PAD", "WGMMA_SMEM_EXTRA",
           "WGMMA_EPILOGUE_BYTES_PER_WARP", "b_rows_off_sector", "configs_for", "default_config", "path_for",
           "wgmma_has_kernel"]

# MatmulPath values of the header, in order:
#   simt             register-blocked FFMA kernel (strict fp32; any dtype with variant="tiled")
#   tensor_core_16   mma.sync m16n8k16, fp16/bf16 inputs
#   tensor_core_tf32 mma.sync m16n8k8 tf32, fp32 inputs with allow_tf32
#   wgmma_16         Hopper (sm_90a) wgmma + TMA, fp16/bf16 inputs: warps_m / 4 consumer warpgroups
#                    (warps_n = 1) plus a producer warpgroup, cluster_m CTAs per cluster along M
#                    (TMA multicast of B), or split_k CTAs per cluster along K (split-K, one tile per
#                    cluster, the partials added through distributed shared memory)
#   wgmma_tf32       Hopper (sm_90a) wgmma m64nNk8 tf32 + TMA, fp32 inputs with allow_tf32: computes
#                    out^T = b^T a^T (tf32 wgmma reads shared memory K-major only); warps_m / 4 consumer
#                    warpgroups of 64 output columns each (bn = 64 * consumers), wgmma N = bm, bk = 32,
#                    plus a producer warpgroup; no clusters
PATHS = ("simt", "tensor_core_16", "tensor_core_tf32", "wgmma_16", "wgmma_tf32")
WGMMA_PATHS = ("wgmma_16", "wgmma_tf32")

# Row padding (floats) of the SIMT kernel's shared tiles (kMatmulSimtSmemPad).
SIMT_SMEM_PAD = 4
# Shared memory of the wgmma kernel beyond its stages: an epilogue buffer per consumer warp
# (kMatmulWgmmaEpilogueBytesPerWarp) plus mbarriers and alignment (kMatmulWgmmaSmemExtra), and under
# split-K a BM x BN fp32 partial tile; with epilogue_overlap > 1, that many epilogue buffers per warp.
WGMMA_EPILOGUE_BYTES_PER_WARP = 2048
WGMMA_SMEM_EXTRA = 2048


class MatmulTileConfig(NamedTuple):
    """One block tile: BM x BN outputs, K in steps of BK through `stages` shared-memory stages,
    warps_m x warps_n warps. The kernels' table holds these (index = position in MATMUL_CONFIGS);
    the planner's own candidates are the same type with index None (see `candidate`)."""

    index: Optional[int]
    path: str
    bm: int
    bn: int
    bk: int
    warps_m: int
    warps_n: int
    stages: int
    cluster_m: int = 1  # wgmma_16 only: CTAs per cluster along M (TMA multicast of B)
    split_k: int = 1    # wgmma_16 only: CTAs per cluster along K (split-K over one tile)
    epilogue_overlap: int = 0  # wgmma_16 only: 64-column pieces per warp whose stores wait for the next tile
    cluster_n: int = 1  # wgmma_16 only: CTAs per cluster along N (TMA multicast of A)
    a_rows: int = 0     # wgmma_16 only: rows of A a k-tile loads (0: bm); such a config serves A of at most a_rows rows

    @classmethod
    def candidate(cls, path: str, bm: int, bn: int, bk: int, warps_m: int, warps_n: int,
                  stages: int) -> "MatmulTileConfig":
        """A config that is not (necessarily) in the table: index None."""
        return cls(None, path, bm, bn, bk, warps_m, warps_n, stages)

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        """Threads of a block; the wgmma kernels add their producer warpgroup to the warp grid."""
        return 32 * self.warps + (128 if self.path in WGMMA_PATHS else 0)

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.bm // self.warps_m, self.bn // self.warps_n

    @property
    def thread_tile(self) -> tuple[int, int]:
        """SIMT only: outputs per thread (a warp is a 4 x 8 grid of threads)."""
        wm, wn = self.warp_tile
        return wm // 4, wn // 8

    def smem_bytes(self, elem_bytes: int, pad: Optional[int] = None) -> int:
        """Dynamic shared memory per block: stages x (A tile + B tile), each BK-row of a tile padded
        by `pad` elements. By default the kernels' rule (matmul_config_smem_bytes): the SIMT kernel
        stages fp32 (4 bytes whatever elem_bytes) with SIMT_SMEM_PAD; the tensor-core kernels swizzle
        (no padding). An explicit `pad` uses elem_bytes and pad as given (the planner's model)."""
        if pad is None:
            pad, elem_bytes = (SIMT_SMEM_PAD, 4) if self.path == "simt" else (0, elem_bytes)
        extra = 0
        if self.path == "wgmma_16":
            extra = self.warps * WGMMA_EPILOGUE_BYTES_PER_WARP * max(1, self.epilogue_overlap) + WGMMA_SMEM_EXTRA
            extra += self.bm * self.bn * 4 if self.split_k > 1 else 0
        elif self.path == "wgmma_tf32":  # outputs go straight from registers: no epilogue buffers
            extra = WGMMA_SMEM_EXTRA
        a_rows = self.a_rows if self.a_rows > 0 else self.bm
        return self.stages * self.bk * ((a_rows + pad) + (self.bn + pad)) * elem_bytes + extra

    def blocks(self, m: int, n: int, batch: int = 1) -> int:
        return -(-m // self.bm) * -(-n // self.bn) * batch

    def as_dict(self) -> dict:
        return self._asdict()

    def label(self) -> str:
        s = f"{self.bm}x{self.bn}x{self.bk} w{self.warps_m}x{self.warps_n} s{self.stages}"
        return s if self.index is None else f"#{self.index} {s}"


_S, _T16, _TF, _W, _WTF = PATHS
MATMUL_CONFIGS: tuple[MatmulTileConfig, ...] = (
    MatmulTileConfig(0, _S, 128, 128, 8, 4, 2, 2),     # 256 thr, 8x8 per thread, 2 blocks/SM
    MatmulTileConfig(1, _S, 128, 256, 16, 4, 2, 2),    # 256 thr, 8x16 per thread
    MatmulTileConfig(2, _S, 128, 256, 8, 4, 2, 2),     # 256 thr, 8x16 per thread
    MatmulTileConfig(3, _S, 256, 128, 8, 4, 2, 2),     # 256 thr, 16x8 per thread
    MatmulTileConfig(4, _S, 64, 128, 16, 4, 2, 2),     # 256 thr, 4x8 per thread: small grids
    MatmulTileConfig(5, _T16, 128, 256, 64, 2, 4, 3),  # 8 warps, 64x64 warp tile, 144 KB
    MatmulTileConfig(6, _T16, 128, 256, 32, 2, 4, 4),  # 8 warps, 64x64
    MatmulTileConfig(7, _T16, 256, 128, 32, 4, 2, 3),  # 8 warps, 64x64
    MatmulTileConfig(8, _T16, 128, 128, 32, 2, 2, 4),  # 4 warps, 64x64, 2 blocks/SM
    MatmulTileConfig(9, _T16, 64, 128, 32, 2, 2, 4),   # 4 warps, 32x64: small grids
    MatmulTileConfig(10, _TF, 128, 256, 32, 2, 4, 3),  # 8 warps, 64x64, 144 KB
    MatmulTileConfig(11, _TF, 128, 128, 32, 2, 2, 3),  # 4 warps, 64x64, 96 KB: 2 blocks/SM (H100)
    MatmulTileConfig(12, _TF, 64, 128, 32, 2, 2, 4),   # 4 warps, 32x64, 96 KB: small grids
    MatmulTileConfig(13, _W, 128, 256, 64, 8, 1, 4, 2),  # 2 consumers x 64x256, 210 KB, 2-CTA cluster
    MatmulTileConfig(14, _W, 128, 256, 64, 8, 1, 4),   # as 13 without the cluster
    MatmulTileConfig(15, _W, 128, 128, 64, 8, 1, 6),   # 2 consumers x 64x128, 210 KB: medium grids
    MatmulTileConfig(16, _W, 64, 64, 64, 4, 1, 12),    # 1 consumer 64x64, 202 KB: small M / grids
    MatmulTileConfig(17, _W, 128, 192, 64, 8, 1, 5),   # 2 consumers x 64x192, 218 KB: waves (3000^3)
    MatmulTileConfig(18, _W, 128, 64, 64, 8, 1, 8),    # 2 consumers x 64x64, 210 KB: M <= 128, wide N
    MatmulTileConfig(19, _W, 64, 64, 64, 4, 1, 12, 1, 2),    # as 16, split-K 2, 218 KB: tiny M
    MatmulTileConfig(20, _W, 128, 128, 64, 8, 1, 4, 1, 2),   # 2 x 64x128, split-K 2, 210 KB: few tiles
    MatmulTileConfig(21, _W, 128, 256, 64, 8, 1, 4, 1, 1, 2),  # as 14, 2 of 4 pieces' stores deferred, 226 KB
    MatmulTileConfig(22, _W, 128, 192, 64, 8, 1, 5, 1, 1, 1),  # as 17, 1 of 3 pieces' stores deferred
    MatmulTileConfig(23, _WTF, 256, 128, 32, 8, 1, 4),  # 2 consumers x 64 cols x 256 rows, 194 KB: large problems
    MatmulTileConfig(24, _WTF, 128, 128, 32, 8, 1, 6),  # 2 consumers x 64 x 128, 194 KB: medium grids
    MatmulTileConfig(25, _WTF, 192, 128, 32, 8, 1, 5),  # 2 consumers x 64 x 192, 202 KB: waves (3000^3)
    MatmulTileConfig(26, _WTF, 128, 64, 32, 4, 1, 8),   # 1 consumer 64 x 128, 194 KB: small grids
    MatmulTileConfig(27, _W, 128, 256, 64, 8, 1, 4, 2, 1, 0, 2),  # as 14 in 2 x 2 clusters (both operands multicast)
    MatmulTileConfig(28, _W, 128, 192, 64, 8, 1, 5, 2, 1, 0, 2),  # as 17 in 2 x 2 clusters
    MatmulTileConfig(29, _W, 128, 256, 64, 8, 1, 4, 2, 1, 2, 2),  # as 21 in 2 x 2 clusters
    MatmulTileConfig(30, _W, 128, 128, 64, 8, 1, 6, 2, 1, 0, 2),  # as 15 in 2 x 2 clusters
    MatmulTileConfig(31, _W, 64, 64, 64, 4, 1, 17, 1, 1, 0, 1, 32),  # as 16, 32 rows of A: 17 stages, 214 KB
    MatmulTileConfig(32, _W, 64, 128, 64, 4, 1, 10, 1, 1, 0, 1, 32),  # 64x128, 32 rows of A: 10 stages, 210 KB
)

# Default config per path (kMatmulDefaultConfig): the fastest at 4096^3 and 8192^3 on an H100
# (wgmma_16, wgmma_tf32: the config for large problems; config=-1 chooses by predicted waves, see
# default_config).
DEFAULT_CONFIG = {_S: 1, _T16: 5, _TF: 10, _W: 14, _WTF: 23}


def tc_config_on_sm90(index: int) -> bool:
    """Whether the sm_90a image holds tensor-core config `index` (tc_config_on_sm90 in
    csrc/include/matmul_configs.h): there mma.sync is wgmma's fallback, run with the path's default
    config or, on small grids, its smallest tile; only those are compiled for sm_90a. An sm_90 device
    of a build with sm_90a (the default on an H100) refuses the others; other archs build them all."""
    path = MATMUL_CONFIGS[index].path
    if path not in (_T16, _TF):
        return True
    smallest = min(configs_for(path), key=lambda c: c.bm * c.bn)  # the first of the smallest
    return index in (DEFAULT_CONFIG[path], smallest.index)


def configs_for(path: str) -> tuple[MatmulTileConfig, ...]:
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    return tuple(c for c in MATMUL_CONFIGS if c.path == path)


def path_for(dtype: str, allow_tf32: bool = False, variant: str = "auto", sm90: bool = False) -> str:
    """The config path a call runs on CUDA (dtype: 'float32' | 'float16' | 'bfloat16'). sm90: the
    device is compute capability 9.0 and the module has the wgmma kernels; "auto" then runs fp16/bf16
    on wgmma_16 and fp32 with allow_tf32 on wgmma_tf32, as long as the layout qualifies (matmul.cu falls
    back to tensor_core_16 / tensor_core_tf32 otherwise). variant "tensor_core" stays on mma.sync."""
    if variant == "naive":
        raise ValueError("the naive variant takes no config")
    if variant == "tiled":
        return _S
    if variant == "wgmma":
        if dtype == "float32":
            if not allow_tf32:
                raise ValueError("variant 'wgmma' takes float16, bfloat16, or float32 with allow_tf32=True")
            return _WTF
        return _W
    if dtype == "float32":
        if variant == "tensor_core" and not allow_tf32:
            raise ValueError("variant 'tensor_core' with float32 needs allow_tf32=True")
        if not allow_tf32:
            return _S
        return _WTF if (sm90 and variant == "auto") else _TF
    return _W if (sm90 and variant == "auto") else _T16


def _elem_bytes(path: str) -> int:
    return 2 if path in (_T16, _W) else 4


def _wgmma_tf32_rate(c: MatmulTileConfig) -> float:
    """wgmma_tf32_config_rate in matmul.cu: relative per-SM throughput of a tf32 wgmma config (initial
    estimates: 256x128 1.0, 192x128 0.97, 128x128 0.9, 128x64 0.55)."""
    area = c.bm * c.bn
    return 1.0 if area >= 256 * 128 else 0.97 if area >= 192 * 128 else 0.9 if area >= 128 * 128 else 0.55


def _wgmma_tf32_default(fits, m: int, n: int, k: int, batch: int, sm_count: int) -> int:
    """wgmma_tf32_choose_config in matmul.cu, operation for operation: ceil(tiles / SMs) waves x
    BM * BN * k_tiles / rate; ties go to the lower index."""
    def cost(c):
        units = -(-m // c.bm) * -(-n // c.bn) * batch
        per_unit = float(c.bm * c.bn * -(-k // c.bk)) / _wgmma_tf32_rate(c)
        return float(-(-units // sm_count)) * per_unit
    return min(fits, key=lambda c: (cost(c), c.index)).index


def _wgmma_rate(c: MatmulTileConfig, b_rows_off_sector: bool) -> float:
    """wgmma_config_rate in matmul.cu: relative per-SM throughput of a wgmma config, from the H100
    per-config sweep (128x256 with 2 deferred pieces 1.06, 128x256 1.0 with or without the cluster,
    128x192 0.98 (0.93 with a deferred piece), 128x128 0.89, 128x64 0.58, 64x64 0.39; split-K x 0.6).
    With B rows off the 32-byte sector grid only 2 x 2 clusters keep it; 2-CTA clusters x 0.88,
    single CTAs x 0.53."""
    area = c.bm * c.bn
    if area >= 128 * 256:
        rate = 1.06 if c.epilogue_overlap >= 2 else 1.0
    elif area >= 128 * 192:
        rate = 0.93 if c.epilogue_overlap >= 1 else 0.98
    else:
        rate = 0.89 if area >= 128 * 128 else 0.58 if area >= 128 * 64 else 0.39
    if c.split_k > 1:
        rate *= 0.6
    if b_rows_off_sector:
        multicast = c.cluster_m * c.cluster_n
        rate *= 1.0 if multicast >= 4 else 0.88 if multicast == 2 else 0.53
    return rate


# kWgmmaSplitKOverhead in matmul.cu: a split-K cluster's fixed cost per wave, in output elements x k-tiles.
WGMMA_SPLIT_K_OVERHEAD = 2.0 * 128 * 256


def b_rows_off_sector(m: int, lines: int, line_stride: int) -> bool:
    """wgmma_b_rows_off_sector in matmul.cu: B's lines (rows of an N-major B: lines = K; columns of a
    K-major B: lines = N) start at odd multiples of 16 bytes (16-bit elements; line stride = 8 mod
    16), which single CTAs load at about half speed on an H100; only for M > 256."""
    return m > 256 and lines > 1 and line_stride % 16 == 8


def wgmma_has_kernel(c: MatmulTileConfig, a_k_major: bool = True, b_k_major: bool = False,
                     epilogue: bool = False) -> bool:
    """wgmma_has_kernel in csrc/kernels/matmul_launch.h: every wgmma_16 config has kernels for a
    K-major A; an M-major A (a.t()) only with an N-major B, in the configs without clusters; the fused
    epilogue a K-major A, either B, in the configs the planner can pick: single CTAs and 2 x 2 clusters,
    less those another config always beats (128 x 256 without deferred stores, 128 x 192 with them)."""
    single = c.cluster_m == 1 and c.cluster_n == 1
    if 0 < c.a_rows < c.bm and not a_k_major:  # a_rows: K-major A only
        return False
    if epilogue:
        area = c.bm * c.bn
        beaten = (area == 128 * 256 and c.epilogue_overlap == 0) or (area == 128 * 192 and c.epilogue_overlap > 0)
        return a_k_major and c.cluster_m == c.cluster_n and not beaten
    return a_k_major or (not b_k_major and single)


def _wgmma_few_rows(fits, m: int, n: int, batch: int, sm_count: int, a_k_major: bool,
                    epilogue: bool) -> Optional[int]:
    """wgmma_choose_few_rows in matmul.cu: among the configs that load only a_rows >= m rows of A, the one whose
    tiles take the fewest waves of CTAs, then the most CTAs; None where none qualifies or where the one with the
    most tiles would give fewer than a quarter of the SMs a tile (split-K streams more of B at once there)."""
    rows = [c for c in fits if c.a_rows and m <= c.a_rows and wgmma_has_kernel(c, a_k_major, False, epilogue)]
    if not rows:
        return None
    units = {c.index: -(-n // c.bn) * batch for c in rows}
    if max(units.values()) * 4 < sm_count:
        return None
    return min(rows, key=lambda c: (-(-units[c.index] // sm_count), -units[c.index], c.index)).index


def _wgmma_default(fits, m: int, n: int, k: int, batch: int, sm_count: int, off_sector: bool,
                   cluster_slots: Optional[Mapping[int, int]], a_k_major: bool = True,
                   epilogue: bool = False) -> int:
    """wgmma_choose_config in matmul.cu, operation for operation: the config whose waves of work units
    finish first. units: tiles (a multicast cluster's tiles count as one unit); slots: clusters of
    cluster_m * cluster_n * split_k CTAs that fit at once (cluster_slots[size]; by default
    sm_count // size); a unit costs BM * BN * ceil(k_tiles / split_k) / rate (+ WGMMA_SPLIT_K_OVERHEAD
    under split-K); cost = ceil(units / slots) * that; ties go to the lower index. The 2 x 2 clusters
    (cluster_n > 1) compete only when B's rows are off the sector grid; an M-major A (a_k_major False)
    takes only the configs that have its kernel (wgmma_has_kernel), and so does a call with an epilogue.
    With at most 64 rows of A only the 64-row configs compete (all of them where none qualifies); with at most 32,
    first the configs that load only that many rows of A (_wgmma_few_rows)."""
    def slots_of(size):
        if size == 1:
            return sm_count
        return cluster_slots[size] if cluster_slots and size in cluster_slots else sm_count // size

    def cost(c):
        units = -(-(-(-m // c.bm)) // c.cluster_m) * -(-(-(-n // c.bn)) // c.cluster_n) * batch
        slots = max(1, slots_of(c.cluster_m * c.cluster_n * c.split_k))
        k_unit = -(-(-(-k // c.bk)) // c.split_k)
        per_unit = (float(c.bm * c.bn * k_unit) / _wgmma_rate(c, off_sector)
                    + (WGMMA_SPLIT_K_OVERHEAD if c.split_k > 1 else 0.0))
        return float(-(-units // slots)) * per_unit
    few = _wgmma_few_rows(fits, m, n, batch, sm_count, a_k_major, epilogue)
    if few is not None:
        return few
    candidates = [c for c in fits
                  if (off_sector or c.cluster_n == 1) and wgmma_has_kernel(c, a_k_major, False, epilogue)
                  and not c.a_rows]
    # At most 64 rows of A: only the 64-row configs compete, where one can run (a 128-row tile would
    # load the same B and run twice the MMA on padding).
    rows64 = [c for c in candidates if c.bm <= 64] if m <= 64 else []
    return min(rows64 or candidates, key=lambda c: (cost(c), c.index)).index


def default_config(path: str, m: int, n: int, batch: int = 1, sm_count: int = 132,
                   max_smem_per_block: int = 227 * 1024, k: int = 4096, b_rows_off_sector: bool = False,
                   cluster_slots: Optional[Mapping[int, int]] = None, a_k_major: bool = True,
                   epilogue: bool = False) -> int:
    """What config=-1 picks (resolve_config in csrc/kernels/matmul.cu): the path's default; its
    smallest tile when the default would give fewer than sm_count / 2 blocks; its largest tile that
    fits when the default needs more shared memory than the device allows per block (the opt-in
    limit: 227 KB on H100, 163 KB on A100, 99 KB on sm_86/sm_89). wgmma_16 chooses by predicted
    waves instead (wgmma_choose_config), which also weighs K (its split-K configs), and so does
    wgmma_tf32 (wgmma_tf32_choose_config); the other paths ignore k. wgmma_16 also takes whether B's
    lines are off the sector grid (b_rows_off_sector(...)) and how many clusters of 2 and 4 CTAs the
    GPU holds at once ({size: clusters}, as the module's cluster_slots reports; an H100 holds 66 and
    30; by default sm_count // size), whether A is K-major (False: a.t(), with an N-major B) and whether
    the call has a fused epilogue."""
    eb = _elem_bytes(path)
    fits = [c for c in configs_for(path) if c.smem_bytes(eb) <= max_smem_per_block]
    if not fits:
        raise ValueError(f"no {path} config fits in {max_smem_per_block} bytes of shared memory")
    if path == _W:
        return _wgmma_default(fits, m, n, k, batch, sm_count, b_rows_off_sector, cluster_slots, a_k_major, epilogue)
    if path == _WTF:
        return _wgmma_tf32_default(fits, m, n, k, batch, sm_count)
    default = MATMUL_CONFIGS[DEFAULT_CONFIG[path]]
    if default not in fits:
        default = max(fits, key=lambda c: (c.bm * c.bn, -c.index))
    if default.blocks(m, n, batch) * 2 >= sm_count:
        return default.index
    return min(fits, key=lambda c: (c.bm * c.bn, c.index)).index
