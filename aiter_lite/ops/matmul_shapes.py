"""torch.matmul's shape rules for the operands the kernels do not take directly: 1-D operands and more
than one batch dim. The kernels take a [M, K] or [B, M, K], b [K, N] or [B, K, N] (a batch of 1 or a
2-D operand broadcasts); here every other shape is brought to that form with views where it can
(reshape copies only an operand whose batch dims broadcast inside), multiplied there, and the
result put back in torch.matmul's shape:
  - a 1-D a is a row [1, K], a 1-D b a column [K, 1]; the added dim leaves the result again (both
    1-D: a 0-dim dot product);
  - the batch dims (all but the last two) broadcast against each other and are folded into one;
    a 2-D operand stays 2-D (the kernels broadcast it without a copy).
Gradients flow through these views like through any torch op. out= keeps the 2-D / 3-D form."""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch


def needs_reshape(a, b) -> bool:
    """a and b are tensors whose shapes the kernels do not take as they are."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and (a.dim() not in (2, 3) or b.dim() not in (2, 3))


def matmul_any_shape(a: torch.Tensor, b: torch.Tensor, residual: Optional[torch.Tensor],
                     call: Callable[[torch.Tensor, torch.Tensor, Optional[torch.Tensor]], torch.Tensor]) -> torch.Tensor:
    """call(a3, b3, residual3) on the 2-D / 3-D form of a and b (and of the residual, given in the
    result's shape); returns its result in torch.matmul's shape."""
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError(f"a and b must have at least 1 dim, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    (m, k), (k_b, n) = a2.shape[-2:], b2.shape[-2:]
    if k != k_b:
        raise ValueError(f"a's last dim ({k}) must equal b's K dim ({k_b}): shapes {tuple(a.shape)} and {tuple(b.shape)}")
    try:
        batch = tuple(torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    except RuntimeError:
        raise ValueError(f"the batch dims of a {tuple(a.shape[:-2])} and b {tuple(b.shape[:-2])} do not broadcast") from None
    folded = math.prod(batch)
    a3 = a2 if a2.dim() == 2 else a2.expand(*batch, m, k).reshape(folded, m, k)
    b3 = b2 if b2.dim() == 2 else b2.expand(*batch, k, n).reshape(folded, k, n)
    shape3 = (m, n) if a3.dim() == 2 and b3.dim() == 2 else (folded, m, n)
    # torch.matmul's result: the batch dims, then M unless a is 1-D and N unless b is 1-D.
    shape = (*batch, *((m,) if a.dim() > 1 else ()), *((n,) if b.dim() > 1 else ()))
    if residual is not None:
        if not isinstance(residual, torch.Tensor) or tuple(residual.shape) != shape:
            got = tuple(residual.shape) if isinstance(residual, torch.Tensor) else type(residual).__name__
            raise ValueError(f"residual must have the result's shape {shape}, got {got}")
        residual = residual.reshape(shape3)
    return call(a3, b3, residual).reshape(shape)
