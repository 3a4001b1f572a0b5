"""Cache administration behind the CLI: status of each module, ahead-of-time builds, clearing."""
from __future__ import annotations

import concurrent.futures
import logging
import shutil
import time
from dataclasses import dataclass
from typing import Iterable, Optional

from ..errors import AiterLiteError, BuildError
from . import lock as locks
from . import toolchain
from .builder import build
from .cache import ModuleCache, _remove_tree, list_artifacts
from .env import JitEnv
from .key import compute_key
from .registry import Registry
from .spec import make_spec

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Status:
    module: str
    backend: str
    state: str  # "built", "stale", "not built", or "n/a: <why>"
    key: str = ""


def available_backends(env: JitEnv) -> list[str]:
    """cpu always; cuda/hip when their compiler exists and an arch list can be had."""
    backends = ["cpu"]
    for backend, find in (("cuda", toolchain.find_nvcc), ("hip", toolchain.find_hipcc)):
        if find(env) is None:
            continue
        try:
            toolchain.target_archs(backend, env)
        except (BuildError, ValueError):
            continue
        backends.append(backend)
    return backends


def status(registry: Registry, env: JitEnv) -> list[Status]:
    usable = available_backends(env)
    rows = []
    for entry in registry:
        for backend in entry.backends:
            if backend not in usable:
                rows.append(Status(entry.name, backend, "n/a: no compiler or arch for this backend"))
                continue
            try:
                key = compute_key(make_spec(entry, backend, env))
            except AiterLiteError as e:
                rows.append(Status(entry.name, backend, f"n/a: {str(e).splitlines()[0]}"))
                continue
            if ModuleCache(env.cache_dir, entry.name, backend, key).valid_manifest():
                state = "built"
            elif any(p.name.startswith(backend + "-") for p in list_artifacts(env.cache_dir, entry.name)):
                state = "stale"
            else:
                state = "not built"
            rows.append(Status(entry.name, backend, state, key))
    return rows


def build_many(registry: Registry, env: JitEnv, modules: Iterable[str], backends: Iterable[str]) -> list[str]:
    """Prebuild modules in parallel (threads; each runs its own ninja). Returns error messages."""
    jobs = [(m, b) for m in modules for b in backends if b in registry.get(m).backends]
    errors = []

    def one(job):
        name, backend = job
        spec = make_spec(registry.get(name), backend, env)
        build(spec, compute_key(spec), env, requested_at=time.time())
        return job

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        futures = {pool.submit(one, j): j for j in jobs}
        for f in concurrent.futures.as_completed(futures):
            name, backend = futures[f]
            try:
                f.result()
                logger.info("%s (%s): ready", name, backend)
            except AiterLiteError as e:
                errors.append(str(e))
    return errors


def clear(env: JitEnv, modules: Optional[Iterable[str]] = None) -> int:
    """Remove built artifacts (all, or of the given modules), each under its build lock.

    A process that already loaded a library keeps working: the file is unlinked, not truncated.
    Returns the number of artifact dirs removed.
    """
    root = env.cache_dir
    if not root.is_dir():
        return 0
    names = list(modules) if modules else sorted(p.name for p in root.iterdir() if p.is_dir())
    removed = 0
    for name in names:
        module_dir = root / name
        for art in list_artifacts(root, name):
            backend, _, key = art.name.partition("-")
            with locks.hold(env.lock_dir, name, backend, key, what=f"clearing {name}", timeout=env.lock_timeout):
                _remove_tree(art, module_dir)
            removed += 1
        if module_dir.is_dir():
            for leftover in module_dir.iterdir():  # failed attempts, trash from killed removals
                if leftover.name.startswith(("failed-", ".trash-")):
                    _remove_tree(leftover, module_dir)
            if not any(module_dir.iterdir()):
                shutil.rmtree(module_dir, ignore_errors=True)
    return removed
