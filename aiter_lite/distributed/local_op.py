"""The single-device conv every rank runs on its own chunk: forward and backward as plain functions
(the autograd of the context-parallel op is in function.py, which calls these).

forward(x, weight, bias, activation, *, seq_idx=None) -> out
  the public op's checks of x, weight, bias and activation; seq_idx (the context's own ids, known good)
  goes to the launcher unchecked: the op's check of a seq_idx reads it back to the host (a sync per call).
forward_into(out, x, weight, bias, activation, *, initial_states, seq_idx): written into out (any strides:
  a view of a larger output), with no checks: for views of tensors forward() has just checked.
backward(x, weight, bias, activation, dout, *, initial_states, seq_idx, need) -> (dx, dweight, dbias, dinitial)
  need: (dx, dweight, dbias, dinitial_states) booleans; a gradient not needed comes back as None.
All follow csrc/include/causal_conv1d_params.h: initial_states [B, D, W-1] is the window before t = 0 and
continues the row's first segment only; no window reads across a change of seq_idx.
"""
from __future__ import annotations

import torch

_op = _launch = None  # aiter_lite.ops.causal_conv1d and _conv_launch, imported on first use (they import us)


def _modules():
    global _op, _launch
    from importlib import import_module  # (aiter_lite.ops.causal_conv1d is also the name of the function)
    _op, _launch = import_module("..ops.causal_conv1d", __package__), import_module("..ops._conv_launch", __package__)


def forward(x, weight, bias, activation, *, seq_idx=None):
    if _op is None:
        _modules()
    if seq_idx is None:
        return _op.causal_conv1d(x, weight, bias, activation)
    use_silu = _op._silu_flag(activation)
    if not _op._well_formed_fwd(x, x, weight, bias, use_silu, "auto"):
        bias = _op._check_fwd(x, x, weight, bias, use_silu, "auto")
    out = torch.empty_like(x)
    _launch.launch_fwd_states(out, x, weight, bias, use_silu, 0, seq_idx=seq_idx)
    return out


def forward_into(out, x, weight, bias, activation, *, initial_states=None, seq_idx=None) -> None:
    if _op is None:
        _modules()
    _launch.launch_fwd_states(out, x, weight, bias, activation is not None, 0, initial_states=initial_states,
                              seq_idx=seq_idx)


def backward(x, weight, bias, activation, dout, *, initial_states, seq_idx, need):
    if _op is None:
        _modules()
    need_dx, need_dweight, need_dbias, need_dinit = need
    need_dbias = need_dbias and bias is not None
    need_dinit = need_dinit and initial_states is not None
    # the launcher itself (what the registered aiter_lite::causal_conv1d_bwd runs): no dispatcher on the way
    dx, dweight, dbias, dinit = _launch.launch_bwd(
        x, weight, bias, dout, initial_states, seq_idx, None, activation is not None, need_dx, need_dweight,
        need_dbias, need_dinit, torch.are_deterministic_algorithms_enabled())
    return (dx if need_dx else None, dweight if need_dweight else None, dbias if need_dbias else None,
            dinit if need_dinit else None)
