"""The backward of aiter_lite::matmul, registered with torch.library.register_autograd.

Forward: C = act(alpha * (A @ B) + bias) + beta * R. With dC the incoming gradient and
Z = alpha * (A @ B) + bias the pre-activation:
    dZ = dC * act'(Z)        dbias = sum of dZ over rows (and batch)      dR = beta * dC
    dA = alpha * dZ @ B^T    dB = alpha * A^T @ dZ
dA and dB run on aiter_lite's own kernels (the op itself, so a double backward works too), with the
transposes passed as strided views: every kernel reads both operand orientations (docs/matmul.md says
which path takes which without a copy). Z is recomputed, not saved: one more matmul in the backward
(with bias, in the output's dtype, as the forward computed it), instead of keeping an activation-sized
tensor alive from forward to backward. Without an activation nothing is recomputed.
Broadcast operands (a 2-D operand, or a batch of 1, against a batch) get their gradient summed over
the batch; a 3-D A against a 2-D B gets dB = A^T @ dZ over all batch rows at once (one matmul).
Each gradient comes out in its operand's layout: for b = w.t() (nn.Linear), dB is computed as
(dZ^T @ A)^T, so w.grad is contiguous and autograd copies nothing.

Eager calls (not traced, not profiled) take MatmulFunction, a torch.autograd.Function with the same
forward and backward, and the backward's products launch the kernels directly when no graph of the
backward is wanted: the torch.library autograd path costs about 1 ms of host time per
forward + backward on this repo's CPU machine (against 0.19 for F.linear), enough to leave an H100
idle on 4096^3 layers. torch.compile and the profiler keep the registered op.
"""
from __future__ import annotations

import torch

from . import matmul as _mm
from ._common import use_direct_call
from .matmul import ACTIVATIONS

_RELU, _GELU, _GELU_TANH, _SILU = (ACTIVATIONS[k] for k in ("relu", "gelu", "gelu_tanh", "silu"))


def forward_no_grad(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config):
    """The op's computation, launched directly (checked arguments; no graph recorded)."""
    out = torch.empty(_mm._out_shape(a, b), dtype=out_dtype or a.dtype, device=a.device)
    _mm._launch(a, b, out, allow_tf32, variant, config, bias, act, residual, alpha, beta, fresh_out=True)
    return out


def _op(a, b, alpha=1.0, allow_tf32=None, variant=0, config=-1, bias=None):
    args = (a, b, bias, None, 0, alpha, 1.0, None, allow_tf32, variant, config)
    if use_direct_call():
        if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):  # a double backward
            return MatmulFunction.apply(*args)
        return forward_no_grad(*args)
    return torch.ops.aiter_lite.matmul(*args)


def _k_major(t) -> bool:
    """t's last two dims are a transposed dense matrix (t.mT is row-major), e.g. w.t()."""
    return t.dim() >= 2 and t.stride(-2) == 1 and t.stride(-1) != 1 and t.shape[-2] > 1 and t.shape[-1] > 1


def _product_like(x, y, like, alpha, tf32, variant):
    """alpha * x @ y, laid out like `like` (row-major, or transposed where like is: (y^T x^T)^T)."""
    if _k_major(like):
        return _op(y.mT, x.mT, alpha, tf32, variant).mT
    return _op(x, y, alpha, tf32, variant)


def setup_context(ctx, inputs, output):
    a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config = inputs
    ctx.act, ctx.alpha, ctx.beta, ctx.out_dtype = act, alpha, beta, out_dtype
    ctx.allow_tf32, ctx.variant = allow_tf32, variant
    ctx.a_shape, ctx.b_shape = a.shape, b.shape
    ctx.has_bias, ctx.has_residual = bias is not None, residual is not None
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.residual_dtype = None if residual is None else residual.dtype
    ctx.save_for_backward(a, b, bias if act != 0 else None)


def _activation_grad(grad, z, act):
    if act == _RELU:
        return torch.ops.aten.threshold_backward(grad, z, 0)
    if act == _GELU:
        return torch.ops.aten.gelu_backward(grad, z, approximate="none")
    if act == _GELU_TANH:
        return torch.ops.aten.gelu_backward(grad, z, approximate="tanh")
    if act == _SILU:
        return torch.ops.aten.silu_backward(grad, z)
    raise ValueError(f"unknown activation code {act}")


def _reduce_to(g, shape):
    """g ([batch, rows, cols]) summed over the batch where the operand of `shape` broadcast."""
    if g.dim() == len(shape) and g.shape[0] == shape[0]:
        return g
    if len(shape) == 2:
        return g.sum(0)
    return g.sum(0, keepdim=True)


def backward(ctx, grad):
    a, b, bias = ctx.saved_tensors
    need_a, need_b, need_bias, need_res = ctx.needs_input_grad[:4]
    tf32, variant = ctx.allow_tf32, ctx.variant
    g_res = None
    if need_res and ctx.has_residual:
        g_res = (grad * ctx.beta if ctx.beta != 1.0 else grad).to(ctx.residual_dtype)
    if not (need_a or need_b or need_bias):
        return None, None, None, g_res, None, None, None, None, None, None, None
    dz = grad
    if ctx.act != 0:
        z = torch.ops.aiter_lite.matmul(a, b, bias, None, 0, ctx.alpha, 1.0, ctx.out_dtype, tf32, variant, -1)
        dz = _activation_grad(grad, z, ctx.act)
    g_bias = None
    if need_bias and ctx.has_bias:
        g_bias = dz.sum(dim=tuple(range(dz.dim() - 1)), dtype=torch.float32).to(ctx.bias_dtype)
    dz = dz.to(a.dtype)  # out_dtype=float32 with 16-bit inputs: the kernels take one dtype
    if not dz.is_contiguous():  # e.g. the stride-0 grad of a sum: the tensor-core paths need 16-byte rows
        dz = dz.contiguous()
    g_a = g_b = None
    if need_a:
        like = a if len(ctx.a_shape) == dz.dim() else None
        g_a = _product_like(dz, b.mT, like if like is not None else dz, ctx.alpha, tf32, variant)
        g_a = _reduce_to(g_a, ctx.a_shape)
    if need_b:
        if len(ctx.b_shape) == 2 and dz.dim() == 3:  # B shared by every batch entry: one matmul over all rows
            g_b = _product_like(a.expand(dz.shape[0], *a.shape[-2:]).reshape(-1, a.shape[-1]).mT,
                                dz.reshape(-1, dz.shape[-1]), b, ctx.alpha, tf32, variant)
        else:
            g_b = _reduce_to(_product_like(a.mT, dz, b, ctx.alpha, tf32, variant), ctx.b_shape)
    return g_a, g_b, g_bias, g_res, None, None, None, None, None, None, None


class MatmulFunction(torch.autograd.Function):
    """The eager form of the registered op's autograd (see the top of this file); same arguments."""

    @staticmethod
    def forward(ctx, a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config):
        out = forward_no_grad(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config)
        setup_context(ctx, (a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config), out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return backward(ctx, grad)
