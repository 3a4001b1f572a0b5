"""aiter_lite: JIT-compiled kernels for PyTorch (causal depthwise conv1d, matmul).

Importing builds nothing, starts no subprocess and queries no GPU: a module is built on the first
call of an op that needs it and cached on disk for later calls and processes.
"""
__version__ = "0.1.0"

from .errors import AiterLiteError, BuildError, RegistryError  # noqa: E402

__all__ = ["__version__", "AiterLiteError", "BuildError", "RegistryError"]
