"""The JIT core: registry -> spec -> cache key -> ninja build -> load, with file locks."""
from ..errors import BuildError, LockTimeout, RegistryError
from .env import JitEnv, read_env
from .loader import build_module, default_registry, get_module, jit_op, load_library, reset
from .registry import BACKENDS, Registry, load_registry

__all__ = ["BACKENDS", "BuildError", "JitEnv", "LockTimeout", "Registry", "RegistryError", "build_module",
           "default_registry", "get_module", "jit_op", "load_library", "load_registry", "read_env", "reset"]
