"""torch.library registration: the ops run under torch.compile(fullgraph=True) and show up by name
(aiter_lite::...) in torch.profiler. Each op has a fake (meta) implementation for tracing."""
from __future__ import annotations

import torch

from . import causal_conv1d as conv
from . import matmul as mm
from . import matmul_autograd as mm_autograd

_lib = torch.library.Library("aiter_lite", "DEF")
_lib.define("causal_conv1d_fwd(Tensor(a!) out, Tensor x, Tensor weight, Tensor? bias, bool use_silu, "
            "int variant) -> ()")
_lib.define("causal_conv1d(Tensor x, Tensor weight, Tensor? bias, bool use_silu, int variant) -> Tensor")
_lib.define("causal_conv1d_update(Tensor x, Tensor(a!) conv_state, Tensor weight, Tensor? bias, bool use_silu, "
            "Tensor? cache_seqlens, Tensor? conv_state_indices) -> Tensor")
# matmul: act(alpha * (a @ b) + bias) + beta * residual; activation codes of matmul.ACTIVATIONS;
# allow_tf32 None reads torch's setting when the op runs; differentiable (ops/matmul_autograd.py).
_lib.define("matmul(Tensor a, Tensor b, Tensor? bias, Tensor? residual, int activation, float alpha, float beta, "
            "ScalarType? out_dtype, bool? allow_tf32, int variant, int config) -> Tensor")
_lib.define("matmul_out(Tensor a, Tensor b, Tensor(a!) out, Tensor? bias, Tensor? residual, int activation, "
            "float alpha, float beta, bool? allow_tf32, int variant, int config) -> ()")


def _conv(x, weight, bias, use_silu, variant):
    out = torch.empty_like(x)
    conv._launch_fwd(out, x, weight, bias, use_silu, variant, fresh_out=True)
    return out


def _update(x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices):
    out = torch.empty_like(x)
    conv._launch_update(out, x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices)
    return out


def _matmul(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config):
    out = torch.empty(mm._out_shape(a, b), dtype=out_dtype or a.dtype, device=a.device)
    mm._launch(a, b, out, allow_tf32, variant, config, bias, act, residual, alpha, beta)
    return out


def _matmul_out(a, b, out, bias, residual, act, alpha, beta, allow_tf32, variant, config):
    mm._launch(a, b, out, allow_tf32, variant, config, bias, act, residual, alpha, beta)


_IMPLS = {"causal_conv1d_fwd": conv._launch_fwd, "causal_conv1d": _conv, "causal_conv1d_update": _update,
          "matmul": _matmul, "matmul_out": _matmul_out}
for _name, _fn in _IMPLS.items():
    for _key in ("CPU", "CUDA"):
        _lib.impl(_name, _fn, _key)


@torch.library.register_fake("aiter_lite::causal_conv1d_fwd", lib=_lib)
def _(out, x, weight, bias, use_silu, variant):
    return None


@torch.library.register_fake("aiter_lite::causal_conv1d", lib=_lib)
def _(x, weight, bias, use_silu, variant):
    return torch.empty_like(x)


@torch.library.register_fake("aiter_lite::causal_conv1d_update", lib=_lib)
def _(x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices):
    return torch.empty_like(x)


@torch.library.register_fake("aiter_lite::matmul", lib=_lib)
def _(a, b, bias, residual, act, alpha, beta, out_dtype, allow_tf32, variant, config):
    return a.new_empty(mm._out_shape(a, b), dtype=out_dtype or a.dtype)


@torch.library.register_fake("aiter_lite::matmul_out", lib=_lib)
def _(a, b, out, bias, residual, act, alpha, beta, allow_tf32, variant, config):
    return None


torch.library.register_autograd("aiter_lite::matmul", mm_autograd.backward, setup_context=mm_autograd.setup_context,
                                lib=_lib)
