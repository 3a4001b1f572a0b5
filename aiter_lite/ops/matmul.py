"""Matmul with fp32 accumulation: out = a @ b for [M, K] x [K, N], batched 3-D inputs too.

Strided and transposed inputs are passed to the kernels as they are (element strides), with one
exception: on the GPU an operand with no unit stride in either of its last two dims is copied to a
contiguous tensor first (the fast kernels need one contiguous dimension for 16-byte loads), and
large operands whose rows are not 16-byte (128-byte on Hopper) aligned are copied to padded rows
when the tensor-core kernels gain more than the copy costs (ops/matmul_repack.py).
fp32 is strict by default; TF32 is used only when allowed (argument, or torch's global setting).
"""
from __future__ import annotations

from typing import Optional

import torch

from ..jit import get_module
from ._common import (DTYPE_CODES, backend_of, check_no_alias, check_same_device, check_tensor, on_device,
                      stream_of, use_direct_call)
from .matmul_repack import maybe_repack

MODULE = "module_matmul"
VARIANTS = {"auto": 0, "naive": 1, "tiled": 2, "tensor_core": 3, "wgmma": 4}
# Variants that may run a tensor-core kernel (by code).
_TENSOR_CORE_VARIANTS = {VARIANTS[v] for v in ("auto", "tensor_core", "wgmma")}
# Variants whose config=-1 calls the autotuner may decide (AITER_LITE_AUTOTUNE=1), by code.
_TUNABLE = {VARIANTS[v]: v for v in ("auto", "tiled", "tensor_core", "wgmma") if v in VARIANTS}

__all__ = ["matmul", "matmul_ref", "matmul_plan", "VARIANTS"]


def _tf32_allowed_globally() -> bool:
    precision = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
    if precision is not None:
        return precision == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32)


# A global setting, so a constant for dynamo: it cannot trace the getter (a pybind function). This is
# what @torch.compiler.assume_constant_result does, without the decorator: that imports torch._dynamo
# (about 1 s) when this module is imported, i.e. on the first op call of every process.
# tests/test_first_call.py checks that the decorator still sets this attribute.
_tf32_allowed_globally._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _out_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    check_tensor("a", a, ndim=(2, 3))
    check_tensor("b", b, ndim=(2, 3))
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {b.dtype} but a has {a.dtype}; they must match")
    check_same_device("a", a, b=b)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"a's K dim ({a.shape[-1]}) must equal b's ({b.shape[-2]}): "
                         f"a {tuple(a.shape)} @ b {tuple(b.shape)}")
    m, n = a.shape[-2], b.shape[-1]
    if a.dim() == 2 and b.dim() == 2:
        return (m, n)
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise ValueError(f"a's batch ({ba}) and b's batch ({bb}) must match or be 1")
    return (max(ba, bb), m, n)


def _check(a, b, out, allow_tf32, variant, config) -> tuple[int, ...]:
    shape = _out_shape(a, b)
    if out is not None:
        check_tensor("out", out)
        if tuple(out.shape) != shape:
            raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
        if out.dtype != a.dtype:
            raise TypeError(f"out has dtype {out.dtype} but a has {a.dtype}; they must match")
        check_same_device("a", a, out=out)
    if allow_tf32 is not None and not isinstance(allow_tf32, bool):
        raise TypeError(f"allow_tf32 must be None or a bool, got {type(allow_tf32).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if not isinstance(config, int) or isinstance(config, bool) or config < -1:
        raise ValueError(f"config must be an int >= -1 (-1 = default), got {config!r}")
    backend_of(a)
    return shape


def _as_3d(t: torch.Tensor, batch: int) -> torch.Tensor:
    t = t.unsqueeze(0) if t.dim() == 2 else t
    return t.expand(batch, *t.shape[1:]) if t.shape[0] != batch else t  # batch stride 0 broadcasts


def _needs_copy(t: torch.Tensor) -> bool:
    return t.is_cuda and t.stride(-1) != 1 and t.stride(-2) != 1 and min(t.shape[-2:]) > 1


def _may_use_tensor_cores(a: torch.Tensor, allow_tf32: bool, variant: int) -> bool:
    return variant in _TENSOR_CORE_VARIANTS and (a.dtype != torch.float32 or allow_tf32)


def _launch(a, b, out, allow_tf32: bool, variant: int, config: int) -> None:
    if out.numel() == 0:
        return
    if not torch.compiler.is_compiling():
        check_no_alias("out", out, (("a", a), ("b", b)))
    if a.shape[-1] == 0:
        out.zero_()
        return
    a3, b3, o3 = _kernel_operands(a, b, out, _may_use_tensor_cores(a, allow_tf32, variant))
    mod = get_module(MODULE, backend_of(a))
    with on_device(a):
        if config == -1 and variant in _TUNABLE and a.is_cuda and _autotune().enabled():
            config = _autotune().select_config(a3, b3, o3, allow_tf32, _TUNABLE[variant],
                                             lambda x, y, z, c: _run(mod, x, y, z, allow_tf32, variant, c))
        _run(mod, a3, b3, o3, allow_tf32, variant, config)


_tuner = None


def _autotune():
    """aiter_lite.tuning.autotune, imported on the first GPU call that may use it (its planner imports
    cost tens of ms, which a CPU process never needs)."""
    global _tuner
    if _tuner is None:
        from ..tuning import autotune

        _tuner = autotune
    return _tuner


def _kernel_operands(a, b, out, tensor_core: bool = False):
    """a, b and out as the 3-D [batch, rows, cols] views the kernels take (operands with no unit
    stride copied, 2-D ones given a broadcast batch dim). tensor_core: the call may run a tensor-core
    kernel, so large operands with badly aligned rows are repacked (ops/matmul_repack.py)."""
    a = a.contiguous() if _needs_copy(a) else a
    b = b.contiguous() if _needs_copy(b) else b
    if tensor_core and a.is_cuda:
        flops = 2.0 * out.numel() * a.shape[-1]
        a, b = maybe_repack(a, flops), maybe_repack(b, flops)
    batch = out.shape[0] if out.dim() == 3 else 1
    return _as_3d(a, batch), _as_3d(b, batch), (out.unsqueeze(0) if out.dim() == 2 else out)


def _run(mod, a3, b3, o3, allow_tf32: bool, variant: int, config: int) -> None:
    mod.matmul(a3.data_ptr(), b3.data_ptr(), o3.data_ptr(), o3.shape[0], a3.shape[1], b3.shape[2], a3.shape[2],
               *a3.stride(), *b3.stride(), *o3.stride(), DTYPE_CODES[a3.dtype], allow_tf32, variant, config,
               stream_of(a3))


def matmul(a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor] = None, *,
           allow_tf32: Optional[bool] = None, variant: str = "auto", config: int = -1) -> torch.Tensor:
    """out = a @ b with fp32 accumulation; fp16/bf16/fp32; any M, N, K >= 0.

    allow_tf32: None follows torch.backends.cuda.matmul (fp32_precision / allow_tf32); ignored on the CPU.
    variant/config select a kernel and tile config (op_tests and the autotuner use them). With
    AITER_LITE_AUTOTUNE=1, config=-1 on a GPU takes the tuned config of the call's shape bucket
    (aiter_lite.tuning.autotune; docs/matmul.md).
    """
    shape = _check(a, b, out, allow_tf32, variant, config)
    tf32 = a.dtype == torch.float32 and a.is_cuda and (
        _tf32_allowed_globally() if allow_tf32 is None else allow_tf32)
    if use_direct_call():
        if out is None:
            out = torch.empty(shape, dtype=a.dtype, device=a.device)
        _launch(a, b, out, tf32, VARIANTS[variant], config)
        return out
    if out is None:
        return torch.ops.aiter_lite.matmul(a, b, tf32, VARIANTS[variant], config)
    torch.ops.aiter_lite.matmul_out(a, b, out, tf32, VARIANTS[variant], config)
    return out


def matmul_plan(a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor] = None, *,
                allow_tf32: Optional[bool] = None, variant: str = "auto", config: int = -1) -> str:
    """The kernel and tile config that matmul(a, b, out, ...) would run, as "<kernel> <config>":
    kernel naive | simt | tensor_core | wgmma | wgmma_tf32 on the GPU (config a MATMUL_CONFIGS index),
    "cpu -1" on the CPU, "none -1" when there is nothing to compute. Checks the arguments like matmul and runs
    nothing (config=-1 is the kernel's own choice; the autotuner is not consulted). For tests and
    benchmarks: variant="wgmma" falls back to tensor_core on layouts TMA cannot describe."""
    shape = _check(a, b, out, allow_tf32, variant, config)
    tf32 = a.dtype == torch.float32 and a.is_cuda and (
        _tf32_allowed_globally() if allow_tf32 is None else allow_tf32)
    if out is None:
        out = torch.empty(shape, dtype=a.dtype, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return "none -1"
    a3, b3, o3 = _kernel_operands(a, b, out, _may_use_tensor_cores(a, tf32, VARIANTS[variant]))
    mod = get_module(MODULE, backend_of(a))
    with on_device(a):
        return mod.plan(a3.data_ptr(), b3.data_ptr(), o3.data_ptr(), o3.shape[0], a3.shape[1], b3.shape[2],
                        a3.shape[2], *a3.stride(), *b3.stride(), *o3.stride(), DTYPE_CODES[a3.dtype], tf32,
                        VARIANTS[variant], config)


def matmul_cluster_slots(size: int, device: Optional[torch.device] = None) -> int:
    """How many clusters of `size` CTAs (1, 2, 4 or 8), each with an SM's worth of shared memory, the
    GPU keeps resident at once: the slots the Hopper planner counts waves in (an H100: 132, 66, 30,
    15). 0 where there are no clusters (no CUDA GPU, or one before Hopper). For the planner's Python
    mirror and its tests."""
    if size not in (1, 2, 4, 8):
        raise ValueError(f"size must be 1, 2, 4 or 8, got {size!r}")
    if device is None:
        if not torch.cuda.is_available():
            return 0
        device = torch.device("cuda", torch.cuda.current_device())
    device = torch.device(device)
    if device.type != "cuda":
        return 0
    probe = torch.empty(0, device=device)
    with on_device(probe):
        return int(get_module(MODULE, backend_of(probe)).cluster_slots(size))


def matmul_ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Reference in float64 (returns float64)."""
    return torch.matmul(a.double(), b.double())
