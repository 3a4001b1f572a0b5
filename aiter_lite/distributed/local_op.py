"""The single-device conv every rank runs on its own chunk: forward and backward as plain functions
(the autograd of the context-parallel op is in function.py, which calls these two).

forward(x, weight, bias, activation, *, initial_states=None, seq_idx=None) -> out
backward(x, weight, bias, activation, dout, *, initial_states, seq_idx, need) -> (dx, dweight, dbias, dinitial)
  need: (dx, dweight, dbias, dinitial_states) booleans; a gradient not needed comes back as None.
Both follow csrc/include/causal_conv1d_params.h: initial_states [B, D, W-1] is the window before t = 0 and
continues the row's first segment only; no window reads across a change of seq_idx.
"""
from __future__ import annotations

import torch


_conv = None  # aiter_lite.causal_conv1d, imported on first use (aiter_lite.ops imports this package's users)


def forward(x, weight, bias, activation, *, initial_states=None, seq_idx=None):
    global _conv
    if _conv is None:
        from ..ops.causal_conv1d import causal_conv1d as _conv
    if initial_states is None and seq_idx is None:
        return _conv(x, weight, bias, activation)
    extra = {}  # only what is used: a fixed-length chunk needs neither
    if initial_states is not None:
        extra["initial_states"] = initial_states
    if seq_idx is not None:
        extra["seq_idx"] = seq_idx
    return _conv(x, weight, bias, activation, **extra)


def backward(x, weight, bias, activation, dout, *, initial_states, seq_idx, need):
    need_dx, need_dweight, need_dbias, need_dinit = need
    need_dbias = need_dbias and bias is not None
    need_dinit = need_dinit and initial_states is not None
    dx, dweight, dbias, dinit = torch.ops.aiter_lite.causal_conv1d_bwd(
        x, weight, bias, dout, initial_states, seq_idx, None, activation is not None, need_dx, need_dweight,
        need_dbias, need_dinit, torch.are_deterministic_algorithms_enabled())
    return (dx if need_dx else None, dweight if need_dweight else None, dbias if need_dbias else None,
            dinit if need_dinit else None)
