"""Build-on-first-use loading: get_module() and the @jit_op accessor.

After the first call, get_module() is one dict lookup: no file-system access on the hot path.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional

from ..errors import BuildError
from .cache import ModuleCache, import_name
from .env import JitEnv, package_root, read_env
from .key import compute_key
from .registry import Registry, load_registry
from .spec import make_spec

_loaded: dict[tuple[str, str], ModuleType] = {}
_lock = threading.Lock()
_registry: Optional[Registry] = None


def default_registry(env: Optional[JitEnv] = None) -> Registry:
    """The package's jit_config.json plus any files named in AITER_LITE_JIT_CONFIG (loaded once)."""
    global _registry
    if _registry is None:
        env = env or read_env()
        root = package_root()
        _registry = load_registry((root / "jit_config.json", *env.extra_configs), root / "csrc")
    return _registry


def reset() -> None:
    """Forget loaded modules and the registry (tests; a new registry file)."""
    global _registry
    with _lock:
        _loaded.clear()
        _registry = None


def load_library(module: str, path: Path) -> ModuleType:
    """Load a built library of `module` (path: <cache>/<module>/<backend>-<key>/<library>)."""
    name = import_name(module, path.parent)
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    try:
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except ImportError as e:
        raise BuildError(module, f"built library failed to load: {e}", log_path=str(path.parent / "build.log"),
                         hints=("run `python -m aiter_lite clear " + module + "` to rebuild it",)) from e
    return mod


def build_module(name: str, backend: str, *, registry: Optional[Registry] = None,
                 env: Optional[JitEnv] = None, archs: Optional[tuple[str, ...]] = None) -> Path:
    """Build (or find) the module for a backend; return the library path. Does not load it."""
    env = env or read_env()
    registry = registry or default_registry(env)
    requested_at = time.time()
    spec = make_spec(registry.get(name), backend, env, archs)
    key = compute_key(spec)
    cache = ModuleCache(env.cache_dir, name, backend, key)
    manifest = None if env.rebuild else cache.valid_manifest()
    if manifest is None:
        # Only a build (or a wait for one) needs the builder, ninja and the locks: a warm load
        # does not import them.
        from .builder import build

        manifest = build(spec, key, env, requested_at=requested_at)
    return cache.artifact_dir / manifest.library


def get_module(name: str, backend: str = "cpu", *, registry: Optional[Registry] = None) -> ModuleType:
    """The loaded extension module `name` for `backend` ("cpu", "cuda" or "hip"), built on first use."""
    mod = _loaded.get((name, backend))
    if mod is not None and registry is None:
        return mod
    with _lock:  # one build per module and backend within a process
        mod = _loaded.get((name, backend))
        if mod is None or registry is not None:
            mod = load_library(name, build_module(name, backend, registry=registry))
            if registry is None:
                _loaded[(name, backend)] = mod
    return mod


def jit_op(module: str, function: Optional[str] = None) -> Callable:
    """AIter-style accessor: `@jit_op("module_x") def f(*args, backend): ...` calls module_x.f.

    The decorated Python function is a signature stub; calls go to the compiled function of the
    same name (or `function`) in the module for the given backend (keyword, default "cpu").
    """
    def decorate(stub: Callable) -> Callable:
        fname = function or stub.__name__

        @functools.wraps(stub)
        def call(*args, backend: str = "cpu", **kwargs):
            return getattr(get_module(module, backend), fname)(*args, **kwargs)
        return call
    return decorate
