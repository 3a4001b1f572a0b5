"""aiter_lite: JIT-compiled kernels for PyTorch (causal depthwise conv1d, matmul).

Importing builds nothing, starts no subprocess and queries no GPU: a module is built on the first
call of an op that needs it and cached on disk for later calls and processes. The ops (and torch)
are imported on first use of an op name, so `import aiter_lite.jit` stays light.
"""
__version__ = "0.1.0"

from .errors import AiterLiteError, BuildError, RegistryError  # noqa: E402

_OPS = ("causal_conv1d", "causal_conv1d_fn", "causal_conv1d_fwd", "causal_conv1d_update", "causal_conv1d_varlen",
        "causal_conv1d_varlen_states", "matmul")

__all__ = ["__version__", "AiterLiteError", "BuildError", "RegistryError", "ops", *_OPS]


def __getattr__(name):
    if name in _OPS or name == "ops":
        import importlib

        ops = importlib.import_module(".ops", __name__)
        value = ops if name == "ops" else getattr(ops, name)
        globals()[name] = value  # later lookups skip this hook (it costs ~1 us per call)
        return value
    raise AttributeError(f"module 'aiter_lite' has no attribute {name!r}")
