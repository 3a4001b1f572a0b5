"""Matmul with fp32 accumulation and a fused epilogue, differentiable:

    out = act(alpha * (a @ b) + bias) + beta * residual

for [M, K] x [K, N], batched 3-D inputs too, computed in fp32 and rounded once to out's dtype.

Strided and transposed inputs are passed to the kernels as they are (element strides), with one
exception: on the GPU an operand with no unit stride in either of its last two dims is copied to a
contiguous tensor first (the fast kernels need one contiguous dimension for 16-byte loads), and
large operands whose rows are not 16-byte (128-byte on Hopper) aligned are copied to padded rows
when the tensor-core kernels gain more than the copy costs (ops/matmul_repack.py).
fp32 is strict by default; TF32 is used only when allowed (argument, or torch's global setting).

Eager calls whose inputs need no gradient go straight to the kernel (_launch_fast caches each
shape's launch arguments); calls that need a gradient, and calls under torch.compile or the
profiler, go through the registered op aiter_lite::matmul, whose backward (ops/matmul_autograd.py)
runs on these kernels too.
"""
from __future__ import annotations

from typing import Optional

import torch

from ..jit import get_module
from ._common import (_GPU_BACKEND, DTYPE_CODES, _current_device, _is_compiling, _profiler_enabled, _raw_stream,
                      backend_of, check_no_alias, check_same_device, check_tensor, on_device, stream_of,
                      use_direct_call)
from .matmul_repack import maybe_repack_pair
from .matmul_shapes import matmul_any_shape, needs_reshape

MODULE = "module_matmul"
# "skinny": the memory-bound kernel for A with at most 16 rows (csrc/kernels/matmul_skinny.cuh), else as "auto".
VARIANTS = {"auto": 0, "naive": 1, "tiled": 2, "tensor_core": 3, "wgmma": 4, "skinny": 5}
# Activation codes of csrc/include/matmul_params.h (MatmulActivation). "gelu" is the exact (erf) form,
# as in torch.nn.functional.gelu and nn.GELU(); "gelu_tanh" is F.gelu(approximate="tanh").
ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3, "silu": 4}
# Variants that may run a tensor-core kernel (by code).
_TENSOR_CORE_VARIANTS = {VARIANTS[v] for v in ("auto", "tensor_core", "wgmma")}
# Variants whose config=-1 calls the autotuner may decide (AITER_LITE_AUTOTUNE=1), by code.
_TUNABLE = {VARIANTS[v]: v for v in ("auto", "tiled", "tensor_core", "wgmma") if v in VARIANTS}

__all__ = ["matmul", "matmul_ref", "matmul_plan", "VARIANTS", "ACTIVATIONS"]


def tf32_allowed_globally() -> bool:
    """torch's global setting for fp32 CUDA matmuls, read at launch (never traced: the ops take
    allow_tf32=None and read it when they run, as cuBLAS does)."""
    precision = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
    if precision is not None:
        return precision == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32)


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
    return (bb if ba == 1 else ba, m, n)  # a batch of 1 broadcasts, to 0 too (max() gave 1 there: out of bounds)


def _check_scalar(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a real number (int or float), got {type(v).__name__}")
    return float(v)


def _result_dtype(a: torch.Tensor, out_dtype) -> torch.dtype:
    if out_dtype is None or out_dtype == a.dtype:
        return a.dtype
    if out_dtype == torch.float32:  # fp16/bf16 inputs, fp32 output
        return torch.float32
    raise TypeError(f"out_dtype must be None, a's dtype ({a.dtype}) or torch.float32, got {out_dtype!r}")


def _check_epilogue(a, shape, out_dt, bias, activation, residual, alpha, beta) -> int:
    """Checks the epilogue arguments; returns the activation code."""
    if bias is not None:
        check_tensor("bias", bias)
        if bias.dim() != 1 or bias.shape[0] != shape[-1]:
            raise ValueError(f"bias must have shape ({shape[-1]},) (one value per output column), "
                             f"got {tuple(bias.shape)}")
        check_same_device("a", a, bias=bias)
    if residual is not None:
        check_tensor("residual", residual)
        if tuple(residual.shape) != shape:
            raise ValueError(f"residual must have the output's shape {shape}, got {tuple(residual.shape)}")
        if residual.dtype != out_dt:
            raise TypeError(f"residual has dtype {residual.dtype} but the output has {out_dt}; they must match")
        check_same_device("a", a, residual=residual)
    try:
        code = ACTIVATIONS[activation]
    except (KeyError, TypeError):
        raise ValueError(f"activation must be one of {[k for k in ACTIVATIONS]}, got {activation!r}") from None
    _check_scalar("alpha", alpha)
    _check_scalar("beta", beta)
    return code


def _check(a, b, out, allow_tf32, variant, config, bias=None, activation=None, residual=None, alpha=1.0,
           beta=1.0, out_dtype=None) -> tuple[tuple[int, ...], torch.dtype, int]:
    """Checks every argument; returns (output shape, output dtype, activation code)."""
    shape = _out_shape(a, b)
    out_dt = _result_dtype(a, out_dtype)
    if out is not None:
        check_tensor("out", out)
        if tuple(out.shape) != shape:
            raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
        if out.dtype != out_dt:
            raise TypeError(f"out has dtype {out.dtype} but the result has {out_dt} (a's dtype or out_dtype); "
                            "they must match")
        check_same_device("a", a, out=out)
    act = _check_epilogue(a, shape, out_dt, bias, activation, residual, alpha, beta)
    if allow_tf32 is not None and not isinstance(allow_tf32, bool):
        raise TypeError(f"allow_tf32 must be None or a bool, got {type(allow_tf32).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if not isinstance(config, int) or isinstance(config, bool) or config < -1:
        raise ValueError(f"config must be an int >= -1 (-1 = default), got {config!r}")
    backend_of(a)
    return shape, out_dt, act


def _as_3d(t: torch.Tensor, batch: int) -> torch.Tensor:
    t = t.unsqueeze(0) if t.dim() == 2 else t
    return t.expand(batch, *t.shape[1:]) if t.shape[0] != batch else t  # batch stride 0 broadcasts


def _needs_copy(t: torch.Tensor) -> bool:
    return t.is_cuda and t.stride(-1) != 1 and t.stride(-2) != 1 and min(t.shape[-2:]) > 1


# Auto with at most this many rows of A runs the skinny kernel or the tensor cores on the operands as
# they are (csrc/kernels/matmul.cu): nothing to repack.
_SKINNY_MAX_M = 16


def _may_use_tensor_cores(a: torch.Tensor, allow_tf32: bool, variant: int) -> bool:
    """The call may run a tensor-core kernel whose speed depends on repacking (ops/matmul_repack.py)."""
    if variant == 0 and a.shape[-2] <= _SKINNY_MAX_M:
        return False
    return variant in _TENSOR_CORE_VARIANTS and (a.dtype != torch.float32 or allow_tf32)


def _tf32_flag(a: torch.Tensor, allow_tf32: Optional[bool]) -> bool:
    if a.dtype is not torch.float32 or not a.is_cuda:
        return False
    return tf32_allowed_globally() if allow_tf32 is None else allow_tf32


def _check_residual_alias(out: torch.Tensor, residual: Optional[torch.Tensor]) -> None:
    """residual may be out itself (each output is read, then written, by one thread) or apart from it."""
    if residual is None or residual.numel() == 0:
        return
    if (residual.data_ptr() == out.data_ptr() and residual.stride() == out.stride()
            and residual.shape == out.shape):
        if out.dim() == 3 and out.shape[0] > 1 and out.stride(0) == 0:
            raise ValueError("out has internally overlapping memory (an expanded batch)")
        return
    check_no_alias("out", out, (("residual", residual),))


def _launch(a, b, out, allow_tf32, variant: int, config: int, bias=None, act: int = 0, residual=None,
            alpha: float = 1.0, beta: float = 1.0, fresh_out: bool = False) -> None:
    """Runs the kernel into out (checked arguments). allow_tf32: a bool, or None for torch's setting.
    fresh_out: out was just allocated, so it overlaps no input (the alias checks are skipped)."""
    if allow_tf32 is None:
        allow_tf32 = _tf32_flag(a, None)
    if out.numel() == 0:
        return
    if not fresh_out and not _is_compiling():
        check_no_alias("out", out, (("a", a), ("b", b), ("bias", bias)))
        _check_residual_alias(out, residual)
    if a.shape[-1] == 0:  # a @ b is zero: the epilogue alone
        zero = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
        out.copy_(apply_epilogue(zero, bias, act, residual, alpha, beta))
        return
    a3, b3, o3 = _kernel_operands(a, b, out, _may_use_tensor_cores(a, allow_tf32, variant))
    r3 = None if residual is None else (residual.unsqueeze(0) if residual.dim() == 2 else residual)
    mod = get_module(MODULE, backend_of(a))
    epilogue = bias is not None or act != 0 or residual is not None or alpha != 1.0 or out.dtype != a.dtype
    with on_device(a):
        if (config == -1 and not epilogue and variant in _TUNABLE and a.is_cuda and a.shape[-1] > 0
                and _autotune().enabled()):
            config = _autotune().select_config(a3, b3, o3, allow_tf32, _TUNABLE[variant],
                                             lambda x, y, z, c: _run(mod, x, y, z, allow_tf32, variant, c))
        _run(mod, a3, b3, o3, allow_tf32, variant, config, bias, act, r3, alpha, beta)


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
        a, b = maybe_repack_pair(a, b, flops)
    batch = out.shape[0] if out.dim() == 3 else 1
    return _as_3d(a, batch), _as_3d(b, batch), (out.unsqueeze(0) if out.dim() == 2 else out)


def _run(mod, a3, b3, o3, allow_tf32: bool, variant: int, config: int, bias=None, act: int = 0, r3=None,
         alpha: float = 1.0, beta: float = 1.0) -> None:
    if r3 is None:
        r_args = (0, 0, 0, 0)
    else:
        r_args = (r3.data_ptr(), *r3.stride())
    mod.matmul(a3.data_ptr(), b3.data_ptr(), o3.data_ptr(), o3.shape[0], a3.shape[1], b3.shape[2], a3.shape[2],
               *a3.stride(), *b3.stride(), *o3.stride(), DTYPE_CODES[a3.dtype], DTYPE_CODES[o3.dtype], allow_tf32,
               variant, config, 0 if bias is None else bias.data_ptr(), 0 if bias is None else bias.stride(0),
               DTYPE_CODES[bias.dtype] if bias is not None else 0, *r_args, act, alpha, beta, stream_of(a3))


# ---- the eager fast path ----------------------------------------------------------------------------

# Per-shape launch decisions of _launch_fast: key -> (output shape, the call's constant integer arguments).
_FAST_CACHE: dict = {}
_FAST_CACHE_LIMIT = 4096
_grad_enabled = torch.is_grad_enabled
_Tensor = torch.Tensor
_float32 = torch.float32


def _fast_entry(a, b, bias, act, residual, out_dtype):
    """The cached launch arguments of a dense call (or None: the general path takes it). Checks what
    the general path would (shapes, dtypes, devices), once per key."""
    ashape, bshape = a.shape, b.shape
    if (len(ashape) not in (2, 3) or len(bshape) not in (2, 3) or a.dtype is not b.dtype
            or a.dtype not in DTYPE_CODES or ashape[-1] != bshape[-2] or ashape[-1] == 0):
        return None
    try:
        shape, out_dt, act_code = _check(a, b, None, None, "auto", -1, bias, act, residual, 1.0, 1.0, out_dtype)
    except (TypeError, ValueError):
        return None
    if residual is not None and not residual.is_contiguous():
        return None
    if bias is not None and bias.stride(0) != 1:
        return None
    if 0 in shape:
        return None
    batch = shape[0] if len(shape) == 3 else 1
    m, k, n = ashape[-2], ashape[-1], bshape[-1]
    # Operands dense: 2-D operands broadcast over the batch (stride 0); a batch of 1 likewise.
    a_bs = m * k if len(ashape) == 3 and ashape[0] == batch else 0
    b_bs = k * n if len(bshape) == 3 and bshape[0] == batch else 0
    if batch == 1:
        a_bs = b_bs = 0
    if a.is_cuda and _may_use_tensor_cores(a, True, 0):
        # Rows a tensor-core path would repack (ops/matmul_repack.py) go the general way.
        flops = 2.0 * batch * m * n * k
        ra, rb = maybe_repack_pair(a, b, flops)
        if ra is not a or rb is not b:
            return None
    ints = (batch, m, n, k, a_bs, b_bs, DTYPE_CODES[a.dtype], DTYPE_CODES[out_dt],
            0 if bias is None else DTYPE_CODES[bias.dtype], act_code)
    return shape, out_dt, ints


def _launch_fast(a, b, bias, activation, residual, alpha, beta, out_dtype):
    """The common call, checked and launched in one pass: eager, no gradient wanted, contiguous
    operands on the current device (or the CPU), a new output. Everything that depends only on the
    shapes, dtypes and devices is decided once per key (_fast_entry); a call reads each attribute once.
    Returns the output, or None: the caller takes the general path (full checks that name a bad
    argument, strided and other-device tensors, autograd, torch.compile and the profiler)."""
    if _is_compiling():  # dynamo traces the op, never this cache
        return None
    try:
        if a.__class__ is not _Tensor or b.__class__ is not _Tensor or not (a.is_contiguous() and b.is_contiguous()):
            return None
        dev = a.get_device()
        if bias is None and residual is None:
            if (a.requires_grad or b.requires_grad) and _grad_enabled():
                return None
            key = (a.shape, b.shape, a.dtype, b.dtype, dev, b.get_device(), activation, out_dtype)
        else:
            if ((a.requires_grad or b.requires_grad or (bias is not None and bias.requires_grad)
                 or (residual is not None and residual.requires_grad)) and _grad_enabled()):
                return None
            if residual is not None and not residual.is_contiguous():
                return None
            key = (a.shape, b.shape, a.dtype, b.dtype, dev, b.get_device(), activation, out_dtype,
                   None if bias is None else (bias.shape, bias.dtype, bias.get_device(), bias.stride()),
                   None if residual is None else (residual.shape, residual.dtype, residual.get_device()))
        entry = _FAST_CACHE.get(key)
        if entry is None:
            if not ((a.is_cpu or a.is_cuda) and (b.is_cpu or b.is_cuda)):  # only CPU and CUDA calls are cached
                return None
            entry = _fast_entry(a, b, bias, activation, residual, out_dtype)
            if entry is None:
                return None
            if len(_FAST_CACHE) >= _FAST_CACHE_LIMIT:
                _FAST_CACHE.clear()
            _FAST_CACHE[key] = entry
        if (alpha.__class__ is not float and alpha.__class__ is not int) or (
                beta.__class__ is not float and beta.__class__ is not int) or _profiler_enabled():
            return None
    except (AttributeError, TypeError):  # not tensors, or unhashable arguments: the full checks say which
        return None
    shape, out_dt, ints = entry
    # get_device() is an index that CPU and meta tensors share (-1), as CUDA and other accelerators
    # share 0, 1, ...: the key's indices matched, so one device-type test per tensor makes it exact.
    if dev >= 0:
        if not (a.is_cuda and b.is_cuda and (bias is None or bias.is_cuda)
                and (residual is None or residual.is_cuda)) or dev != _current_device():
            return None
        mod, stream = get_module(MODULE, _GPU_BACKEND), _raw_stream(dev)
        tf32 = a.dtype is _float32 and tf32_allowed_globally()
    else:
        if not (a.is_cpu and b.is_cpu and (bias is None or bias.is_cpu) and (residual is None or residual.is_cpu)):
            return None
        mod, stream, tf32 = get_module(MODULE, "cpu"), 0, False
    out = a.new_empty(shape, dtype=out_dt)
    mod.matmul_dense(a.data_ptr(), b.data_ptr(), out.data_ptr(), *ints, tf32,
                     0 if bias is None else bias.data_ptr(), 0 if residual is None else residual.data_ptr(),
                     alpha, beta, stream)
    return out


# ---- public API -------------------------------------------------------------------------------------


def matmul(a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor] = None, *,
           bias: Optional[torch.Tensor] = None, activation: Optional[str] = None,
           residual: Optional[torch.Tensor] = None, alpha: float = 1.0, beta: float = 1.0,
           out_dtype: Optional[torch.dtype] = None, allow_tf32: Optional[bool] = None, variant: str = "auto",
           config: int = -1) -> torch.Tensor:
    """act(alpha * (a @ b) + bias) + beta * residual, in fp32, rounded once to the output dtype.

    a: [M, K] or [B, M, K]; b: [K, N] or [B, K, N] (a batch of 1, or a 2-D operand, broadcasts);
    fp16/bf16/fp32, one dtype for both; any M, N, K >= 0 and any strides. With out=None, also
    torch.matmul's other shapes: 1-D operands and several broadcasting batch dims (ops/matmul_shapes.py).
    bias: [N] (one value per output column), any float dtype. activation: None, "relu", "gelu" (exact,
    erf; "gelu_erf" is the same), "gelu_tanh" (tanh approximation), "silu". residual: the output's shape
    and dtype; may be `out` itself (an in-place residual add). out_dtype: None (a's dtype) or
    torch.float32 (for fp16/bf16 inputs). out: written in place (no autograd through it).
    Differentiable in a, b, bias and residual (torch.autograd and torch.compile).

    allow_tf32: None follows torch.backends.cuda.matmul (fp32_precision / allow_tf32); ignored on the CPU.
    variant/config select a kernel and tile config (op_tests and the autotuner use them). With
    AITER_LITE_AUTOTUNE=1, config=-1 on a GPU takes the tuned config of the call's shape bucket
    (aiter_lite.tuning.autotune; docs/matmul.md); calls with an epilogue keep the default.
    """
    if out is None and allow_tf32 is None and variant == "auto" and config == -1:
        c = _launch_fast(a, b, bias, activation, residual, alpha, beta, out_dtype)
        if c is not None:
            return c
    if out is None and needs_reshape(a, b):  # 1-D operands, several batch dims: torch.matmul's rules
        return matmul_any_shape(a, b, residual, lambda a3, b3, r3: matmul(
            a3, b3, bias=bias, activation=activation, residual=r3, alpha=alpha, beta=beta, out_dtype=out_dtype,
            allow_tf32=allow_tf32, variant=variant, config=config))
    _, _, act = _check(a, b, out, allow_tf32, variant, config, bias, activation, residual, alpha, beta, out_dtype)
    alpha, beta = float(alpha), float(beta)
    v = VARIANTS[variant]
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (a, b, bias, residual))
    if out is not None:
        if needs_grad:
            raise ValueError("out= does not support autograd (an input requires grad); call matmul without out")
        if use_direct_call():
            _launch(a, b, out, allow_tf32, v, config, bias, act, residual, alpha, beta)
        else:
            torch.ops.aiter_lite.matmul_out(a, b, out, bias, residual, act, alpha, beta, allow_tf32, v, config)
        return out
    if use_direct_call():  # eager: without the dispatcher's host time (~0.1 ms a call)
        if needs_grad:
            return _autograd().MatmulFunction.apply(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32,
                                                    v, config)
        return _autograd().forward_no_grad(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, v, config)
    return torch.ops.aiter_lite.matmul(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, v, config)


def _autograd():
    """ops/matmul_autograd.py (it imports this module)."""
    from . import matmul_autograd

    return matmul_autograd


def matmul_plan(a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor] = None, *,
                allow_tf32: Optional[bool] = None, variant: str = "auto", config: int = -1,
                bias: Optional[torch.Tensor] = None, activation: Optional[str] = None,
                residual: Optional[torch.Tensor] = None, alpha: float = 1.0, beta: float = 1.0,
                out_dtype: Optional[torch.dtype] = None) -> str:
    """The kernel and tile config that matmul(a, b, out, ...) would run, as "<kernel> <config>":
    kernel naive | simt | tensor_core | wgmma | wgmma_tf32 on the GPU (config a MATMUL_CONFIGS index),
    "cpu -1" on the CPU, "none -1" when there is nothing to compute. Checks the arguments like matmul and runs
    nothing (config=-1 is the kernel's own choice; the autotuner is not consulted). For tests and
    benchmarks: variant="wgmma" falls back to tensor_core on layouts TMA cannot describe. bias ... beta:
    the call's epilogue and out_dtype (a call with one may run another kernel than one without)."""
    shape, out_dt, act = _check(a, b, out, allow_tf32, variant, config, bias, activation, residual, alpha, beta,
                                out_dtype)
    epilogue = bias is not None or act != 0 or residual is not None or float(alpha) != 1.0
    tf32 = _tf32_flag(a, allow_tf32)
    if out is None:
        out = torch.empty(shape, dtype=out_dt, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return "none -1"
    a3, b3, o3 = _kernel_operands(a, b, out, _may_use_tensor_cores(a, tf32, VARIANTS[variant]))
    mod = get_module(MODULE, backend_of(a))
    with on_device(a):
        return mod.plan(a3.data_ptr(), b3.data_ptr(), o3.data_ptr(), o3.shape[0], a3.shape[1], b3.shape[2],
                        a3.shape[2], *a3.stride(), *b3.stride(), *o3.stride(), DTYPE_CODES[a3.dtype],
                        DTYPE_CODES[o3.dtype], tf32, VARIANTS[variant], config, epilogue)


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


def apply_epilogue(acc: torch.Tensor, bias, act: int, residual, alpha: float, beta: float) -> torch.Tensor:
    """act(alpha * acc + bias) + beta * residual with torch ops, in acc's dtype (the references and K == 0)."""
    x = acc * alpha if alpha != 1.0 else acc
    if bias is not None:
        x = x + bias.to(x.dtype)
    if act == ACTIVATIONS["relu"]:
        x = torch.relu(x)
    elif act == ACTIVATIONS["gelu"]:
        x = torch.nn.functional.gelu(x)
    elif act == ACTIVATIONS["gelu_tanh"]:
        x = torch.nn.functional.gelu(x, approximate="tanh")
    elif act == ACTIVATIONS["silu"]:
        x = torch.nn.functional.silu(x)
    if residual is not None:
        x = x + beta * residual.to(x.dtype)
    return x


def matmul_ref(a: torch.Tensor, b: torch.Tensor, *, bias=None, activation=None, residual=None, alpha=1.0,
               beta=1.0) -> torch.Tensor:
    """Reference in float64 (returns float64), epilogue included."""
    acc = torch.matmul(a.double(), b.double())
    return apply_epilogue(acc, None if bias is None else bias.double(), ACTIVATIONS[activation],
                          None if residual is None else residual.double(), alpha, beta)
