"""Public ops. Importing registers the torch.library ops; nothing is built until the first call."""
from . import _library  # noqa: F401  (registers aiter_lite::* with torch.library)
from .causal_conv1d import (causal_conv1d, causal_conv1d_fwd, causal_conv1d_ref, causal_conv1d_update,
                            causal_conv1d_update_ref)
from .matmul import matmul, matmul_ref

__all__ = ["causal_conv1d", "causal_conv1d_fwd", "causal_conv1d_update", "causal_conv1d_ref",
           "causal_conv1d_update_ref", "matmul", "matmul_ref"]
