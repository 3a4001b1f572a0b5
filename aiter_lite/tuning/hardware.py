"""Device models for the matmul tile planner (pure Python; torch only in device_from_torch).

A DeviceModel holds what the planner's arithmetic needs: the SM resources that decide occupancy
(shared memory, registers, threads, blocks per SM), the clock (for the shared-memory bandwidth of an
SM), the DRAM bandwidth, the rate at which cp.async can fill shared memory from L2, the peak FLOP/s
of each dtype path, and the global-memory load latency that a cp.async pipeline has to hide.
docs/planner.md says where every constant comes from.

Throughput ceilings are *practical* ones where we have them (measured copy bandwidth, cuBLAS-measured
GEMM rates), not datasheet maxima, because the planner predicts times that a good kernel reaches.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

__all__ = ["DeviceModel", "H100_SXM", "A100_SXM", "DEVICES", "DTYPES", "get_device", "device_from_torch",
           "ELEM_BYTES"]

KB = 1024

# Planner dtypes. "tf32" is fp32 storage on the tf32 tensor-core path; "fp32" is the SIMT FFMA path.
DTYPES = ("fp16", "bf16", "tf32", "fp32")
ELEM_BYTES = {"fp16": 2, "bf16": 2, "tf32": 4, "fp32": 4}


@dataclass(frozen=True)
class DeviceModel:
    """What the planner knows about a GPU. All sizes in bytes, rates per second, times in seconds."""

    name: str
    sm_count: int
    smem_per_sm: int               # shared memory an SM can give to blocks (cudaDevAttrMaxSharedMemoryPerMultiprocessor)
    smem_per_block: int            # largest dynamic shared memory of one block, with opt-in
    smem_reserved_per_block: int   # the driver reserves this much per resident block (1 KB on sm_80+)
    regs_per_sm: int               # 32-bit registers per SM
    max_regs_per_thread: int       # ISA limit; more means spills
    max_threads_per_sm: int        # 64 warps
    max_blocks_per_sm: int
    reg_alloc_unit: int            # registers are allocated per warp in units of this many
    clock_hz: float                # SM clock (boost) used for the shared-memory bandwidth
    smem_bytes_per_clk: int        # shared-memory bandwidth of one SM: 32 banks x 4 B per clock
    mem_bw: float                  # DRAM bandwidth (practical: a measured device-to-device copy)
    peak_fp16: float               # tensor-core fp16 FLOP/s on the best instruction (wgmma on sm_90)
    peak_bf16: float
    peak_tf32: float
    peak_fp32: float               # SIMT FFMA FLOP/s (strict fp32 SGEMM)
    mma_sync_fraction: float       # practical mma.sync peak / peak_fp16|bf16|tf32 (sm_90: wgmma is the peak)
    mem_latency_s: float           # global-memory load latency under load (what the pipeline must hide)
    l2_bytes: int
    # cp.async (16-byte, .cg) L2 -> shared-memory rate of the whole GPU, every SM copying: the roof
    # of the mma.sync kernels' tile fill. None: not measured (the planner then leaves it out).
    l2_fill_bw: Optional[float] = None
    notes: str = ""

    # -- derived -------------------------------------------------------------------------------

    def peak(self, dtype: str, mma_sync: bool = True) -> float:
        """Peak FLOP/s of the dtype's path. For tensor-core dtypes, mma_sync=True (what the kernels
        of this repo issue) scales the table peak by mma_sync_fraction."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        p = getattr(self, f"peak_{dtype}")
        return p * self.mma_sync_fraction if (mma_sync and dtype != "fp32") else p

    def peak_per_sm(self, dtype: str, mma_sync: bool = True) -> float:
        return self.peak(dtype, mma_sync) / self.sm_count

    def smem_bw_per_sm(self) -> float:
        return self.smem_bytes_per_clk * self.clock_hz

    def l2_fill_bw_per_sm(self) -> Optional[float]:
        """One SM's share of l2_fill_bw with every SM copying (with fewer SMs busy an SM may get more;
        not measured, so the planner keeps the equal share). None when l2_fill_bw is not known."""
        return None if self.l2_fill_bw is None else self.l2_fill_bw / self.sm_count

    def ridge(self, dtype: str, mma_sync: bool = True) -> float:
        """Roofline ridge point in FLOP per DRAM byte: peak / bandwidth."""
        return self.peak(dtype, mma_sync) / self.mem_bw

    def with_overrides(self, **kw) -> "DeviceModel":
        """A copy with some fields replaced (e.g. measured peaks on a particular machine)."""
        return replace(self, **kw)


# Occupancy rules that compute capabilities 8.0 and 9.0 share (CUDA programming guide tables).
_SM80_PLUS_RULES = dict(
    smem_reserved_per_block=1 * KB,
    regs_per_sm=64 * KB,
    max_regs_per_thread=255,
    max_threads_per_sm=2048,
    max_blocks_per_sm=32,
    reg_alloc_unit=256,
    smem_bytes_per_clk=128,   # 32 banks x 4 B
)

H100_SXM = DeviceModel(
    name="H100 SXM",
    sm_count=132,
    smem_per_sm=228 * KB,
    smem_per_block=227 * KB,
    clock_hz=1.98e9,
    mem_bw=3.0e12,        # measured copy bandwidth (datasheet: 3.35 TB/s)
    peak_fp16=740e12,     # cuBLAS measured dense (datasheet: 989)
    peak_bf16=740e12,
    peak_tf32=370e12,     # practical ceiling, half the 16-bit rate (datasheet: 494)
    peak_fp32=52e12,      # cuBLAS strict SGEMM measured (datasheet FP32: 67)
    mma_sync_fraction=0.65,
    mem_latency_s=700e-9,  # middle of the 600-800 ns loaded-latency range
    l2_bytes=50 * 1024 * KB,
    l2_fill_bw=5.0e12,    # bench/lab/mma_sync_ceiling.cu on an H100: 4.84-4.99 TB/s (the 4096^3 kernel: 4.9-5.2)
    notes="measured ceilings; mma.sync reaches ~0.65x the wgmma peak",
    **_SM80_PLUS_RULES,
)

A100_SXM = DeviceModel(
    name="A100 SXM",
    sm_count=108,
    smem_per_sm=164 * KB,
    smem_per_block=163 * KB,
    clock_hz=1.41e9,
    mem_bw=2.0e12,
    peak_fp16=312e12,
    peak_bf16=312e12,
    peak_tf32=156e12,
    peak_fp32=19.5e12,
    mma_sync_fraction=1.0,  # mma.sync is Ampere's native tensor-core instruction
    mem_latency_s=700e-9,   # H100 figure reused; not measured on A100
    l2_bytes=40 * 1024 * KB,
    notes="datasheet peaks (not measured); mma.sync is the native tensor-core path",
    **_SM80_PLUS_RULES,
)

DEVICES = {"h100": H100_SXM, "a100": A100_SXM}
_ALIASES = {
    "h100": "h100", "h100-sxm": "h100", "h100_sxm": "h100", "h100sxm": "h100", "h100 sxm": "h100", "sm90": "h100",
    "sm_90": "h100", "a100": "a100", "a100-sxm": "a100", "a100_sxm": "a100", "a100sxm": "a100", "a100 sxm": "a100",
    "sm80": "a100", "sm_80": "a100",
}


def get_device(device="h100") -> DeviceModel:
    """A DeviceModel from a name ('h100', 'a100', or a torch device name such as
    'NVIDIA H100 80GB HBM3'), a DeviceModel (returned as is), or 'auto'/'cuda' (device_from_torch)."""
    if isinstance(device, DeviceModel):
        return device
    if device is None:
        device = "h100"
    if not isinstance(device, str):
        raise ValueError(f"device must be a name or a DeviceModel, got {type(device).__name__}")
    key = device.strip().lower()
    if key in ("auto", "cuda", "gpu", "torch"):
        return device_from_torch()
    if key in _ALIASES:
        return DEVICES[_ALIASES[key]]
    for short in DEVICES:  # torch names: "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ...
        if short in key:
            return DEVICES[short]
    raise ValueError(f"unknown device model {device!r}; known: {', '.join(sorted(DEVICES))} (or 'auto')")


def device_from_torch(index: Optional[int] = None) -> DeviceModel:
    """A DeviceModel for a visible CUDA GPU: occupancy fields from torch.cuda.get_device_properties,
    throughput ceilings from the matching named model (by name, else by compute capability), scaled
    by SM count when the GPU has a different number of SMs. torch is imported here, lazily."""
    import torch  # noqa: PLC0415 -- planning from a named model must not need torch

    if not torch.cuda.is_available():
        raise ValueError("device_from_torch: no CUDA device is visible; name a model instead (h100, a100)")
    if index is None:
        index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    name = str(getattr(props, "name", "cuda"))
    try:
        base = get_device(name)
    except ValueError:
        base = H100_SXM if getattr(props, "major", 9) >= 9 else A100_SXM
    sms = int(getattr(props, "multi_processor_count", base.sm_count))
    scale = sms / base.sm_count
    clock_khz = getattr(props, "clock_rate", None)  # not in every torch version
    clock = float(clock_khz) * 1e3 if clock_khz else base.clock_hz
    fields = dict(
        name=f"{name} (from torch, ceilings of {base.name}" + (f" x {scale:.2f} SMs)" if sms != base.sm_count else ")"),
        sm_count=sms,
        smem_per_sm=int(getattr(props, "shared_memory_per_multiprocessor", 0) or base.smem_per_sm),
        smem_per_block=int(getattr(props, "shared_memory_per_block_optin", 0) or base.smem_per_block),
        regs_per_sm=int(getattr(props, "regs_per_multiprocessor", 0) or base.regs_per_sm),
        max_threads_per_sm=int(getattr(props, "max_threads_per_multi_processor", 0) or base.max_threads_per_sm),
        clock_hz=clock,
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or base.l2_bytes),
    )
    if not math.isclose(scale, 1.0):
        for f in ("peak_fp16", "peak_bf16", "peak_tf32", "peak_fp32"):
            fields[f] = getattr(base, f) * scale
    return replace(base, **fields)
