"""Public ops. Importing registers the torch.library ops; nothing is built until the first call."""
from . import _library  # noqa: F401  (registers aiter_lite::* with torch.library)
from . import _conv_autograd  # noqa: F401  (the conv's state/varlen ops and the autograd of the conv ops)
from .causal_conv1d import (ActivationError, causal_conv1d, causal_conv1d_fn, causal_conv1d_fwd, causal_conv1d_ref,
                            causal_conv1d_update, causal_conv1d_update_ref, causal_conv1d_varlen,
                            causal_conv1d_varlen_ref, causal_conv1d_varlen_states, causal_conv1d_varlen_states_ref)
from .matmul import matmul, matmul_ref

__all__ = ["causal_conv1d", "causal_conv1d_fn", "causal_conv1d_fwd", "causal_conv1d_update", "causal_conv1d_varlen",
           "causal_conv1d_varlen_states", "causal_conv1d_ref", "causal_conv1d_update_ref", "causal_conv1d_varlen_ref",
           "causal_conv1d_varlen_states_ref", "ActivationError", "matmul", "matmul_ref"]
