"""Context parallelism for causal conv1d over torch.distributed (NCCL on GPUs, gloo on the CPU).

    ctx = aiter_lite.distributed.build_cp_context(width, group, local_len=x_local.shape[-1])
    y_local = aiter_lite.causal_conv1d(x_local, weight, bias, "silu", cp_context=ctx)

Each rank gets exactly its slice of what one process would compute on the unsplit input, forward and
backward. See docs/distributed.md.
"""
from .context import CPContext, build_cp_context
from .function import causal_conv1d_cp

__all__ = ["CPContext", "build_cp_context", "causal_conv1d_cp"]
