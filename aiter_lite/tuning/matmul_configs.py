"""Tile configs of the CUDA/HIP matmul kernels, as data for the tile planner and the autotuner.

This mirrors the table in csrc/include/matmul_configs.h entry for entry (tests/test_matmul_configs.py
parses the header and checks that both agree). `config=i` in aiter_lite.matmul runs MATMUL_CONFIGS[i];
it must belong to the path the call runs (see path_for), else the kernel raises ValueError.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["MatmulTileConfig", "MATMUL_CONFIGS", "DEFAULT_CONFIG", "PATHS", "SIMT_SMEM_PAD", "configs_for",
           "default_config", "path_for"]

# MatmulPath values of the header, in order:
#   simt             register-blocked FFMA kernel (strict fp32; any dtype with variant="tiled")
#   tensor_core_16   mma.sync m16n8k16, fp16/bf16 inputs
#   tensor_core_tf32 mma.sync m16n8k8 tf32, fp32 inputs with allow_tf32
PATHS = ("simt", "tensor_core_16", "tensor_core_tf32")

# Row padding (floats) of the SIMT kernel's shared tiles (kMatmulSimtSmemPad).
SIMT_SMEM_PAD = 4


class MatmulTileConfig(NamedTuple):
    index: int
    path: str
    bm: int
    bn: int
    bk: int
    warps_m: int
    warps_n: int
    stages: int

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.bm // self.warps_m, self.bn // self.warps_n

    @property
    def thread_tile(self) -> tuple[int, int]:
        """SIMT only: outputs per thread (a warp is a 4 x 8 grid of threads)."""
        wm, wn = self.warp_tile
        return wm // 4, wn // 8

    def smem_bytes(self, elem_bytes: int) -> int:
        """Dynamic shared memory per block (matmul_config_smem_bytes); the SIMT kernel stages fp32."""
        if self.path == "simt":
            return self.stages * self.bk * ((self.bm + SIMT_SMEM_PAD) + (self.bn + SIMT_SMEM_PAD)) * 4
        return self.stages * self.bk * (self.bm + self.bn) * elem_bytes

    def blocks(self, m: int, n: int, batch: int = 1) -> int:
        return -(-m // self.bm) * -(-n // self.bn) * batch

    def as_dict(self) -> dict:
        return self._asdict()


_S, _T16, _TF = PATHS
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
    MatmulTileConfig(10, _TF, 128, 256, 16, 2, 4, 3),  # 8 warps, 64x64
    MatmulTileConfig(11, _TF, 128, 128, 16, 2, 2, 4),  # 4 warps, 64x64, 2 blocks/SM
    MatmulTileConfig(12, _TF, 64, 128, 16, 2, 2, 4),   # 4 warps, 32x64: small grids
)

# Default config per path (kMatmulDefaultConfig): the fastest at 4096^3 and 8192^3 on an H100.
DEFAULT_CONFIG = {_S: 1, _T16: 5, _TF: 10}


def configs_for(path: str) -> tuple[MatmulTileConfig, ...]:
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    return tuple(c for c in MATMUL_CONFIGS if c.path == path)


def path_for(dtype: str, allow_tf32: bool = False, variant: str = "auto") -> str:
    """The config path a call runs on CUDA (dtype: 'float32' | 'float16' | 'bfloat16')."""
    if variant == "naive":
        raise ValueError("the naive variant takes no config")
    if variant == "tiled":
        return _S
    if dtype == "float32":
        if variant == "tensor_core" and not allow_tf32:
            raise ValueError("variant 'tensor_core' with float32 needs allow_tf32=True")
        return _TF if allow_tf32 else _S
    return _T16


def _elem_bytes(path: str) -> int:
    return 2 if path == _T16 else 4


def default_config(path: str, m: int, n: int, batch: int = 1, sm_count: int = 132,
                   max_smem_per_block: int = 227 * 1024) -> int:
    """What config=-1 picks (resolve_config in csrc/kernels/matmul.cu): the path's default; its
    smallest tile when the default would give fewer than sm_count / 2 blocks; its largest tile that
    fits when the default needs more shared memory than the device allows per block (the opt-in
    limit: 227 KB on H100, 163 KB on A100, 99 KB on sm_86/sm_89)."""
    eb = _elem_bytes(path)
    fits = [c for c in configs_for(path) if c.smem_bytes(eb) <= max_smem_per_block]
    if not fits:
        raise ValueError(f"no {path} config fits in {max_smem_per_block} bytes of shared memory")
    default = MATMUL_CONFIGS[DEFAULT_CONFIG[path]]
    if default not in fits:
        default = max(fits, key=lambda c: (c.bm * c.bn, -c.index))
    if default.blocks(m, n, batch) * 2 >= sm_count:
        return default.index
    return min(fits, key=lambda c: (c.bm * c.bn, c.index)).index
