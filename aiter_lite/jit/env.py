"""Every environment variable and path the JIT (and the matmul autotuner) reads, parsed in one place.

`read_env()` is called when a module is first needed (never at import), so tests and users can set
variables at run time. Booleans are parsed strictly: "0" means off.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def parse_bool(name: str, value: Optional[str]) -> bool:
    if value is None:
        return False
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{name}={value!r}: expected one of 1/0, true/false, yes/no, on/off")


def parse_positive(name: str, value: Optional[str], kind=int):
    if value is None or value.strip() == "":
        return None
    try:
        parsed = kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a positive {kind.__name__}") from None
    if parsed <= 0:
        raise ValueError(f"{name}={value!r}: expected a positive {kind.__name__}")
    return parsed


_LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "critical": 50}


def parse_log_level(name: str, value: Optional[str]) -> Optional[int]:
    if value is None or value.strip() == "":
        return None
    level = _LOG_LEVELS.get(value.strip().lower())
    if level is None:
        raise ValueError(f"{name}={value!r}: expected one of debug, info, warning, error, critical")
    return level


@dataclass(frozen=True)
class JitEnv:
    cache_dir: Path          # AITER_LITE_CACHE_DIR, else ~/.cache/aiter_lite
    lock_dir: Path           # AITER_LITE_LOCK_DIR, else a node-local per-user dir under the temp dir
    lock_timeout: Optional[float]  # AITER_LITE_LOCK_TIMEOUT seconds; None waits forever
    rebuild: bool            # AITER_LITE_REBUILD: rebuild each key once, then reuse
    max_jobs: Optional[int]  # MAX_JOBS: ninja -j; None derives it from cores and memory
    arch: Optional[str]      # AITER_LITE_ARCH, e.g. "sm_90a,sm_80" or "gfx942"
    torch_cuda_arch_list: Optional[str]  # TORCH_CUDA_ARCH_LIST, e.g. "8.0;9.0"
    rocm_arch: Optional[str]  # PYTORCH_ROCM_ARCH
    cuda_home: Optional[str]  # CUDA_HOME / CUDA_PATH
    rocm_home: Optional[str]  # ROCM_HOME / ROCM_PATH
    cxx: Optional[str]        # CXX
    extra_configs: tuple[Path, ...]  # AITER_LITE_JIT_CONFIG: extra registry files (os.pathsep)
    autotune: bool = False   # AITER_LITE_AUTOTUNE: time the planner's top matmul configs on first use
    autotune_top_k: Optional[int] = None  # AITER_LITE_AUTOTUNE_TOP_K: how many (None: the tuner's default)
    log_level: Optional[int] = None  # AITER_LITE_LOG: level of the build messages (None: info, on stderr)


def _default_lock_dir() -> Path:
    # Node-local and per user: flock on network file systems is unreliable, and other users
    # must not be able to block (or be blocked by) our locks.
    return Path(tempfile.gettempdir()) / f"aiter_lite-{os.getuid()}" / "locks"


def read_env(environ: Mapping[str, str] = os.environ) -> JitEnv:
    get = environ.get
    cache = get("AITER_LITE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "aiter_lite")
    extra = tuple(Path(p) for p in (get("AITER_LITE_JIT_CONFIG") or "").split(os.pathsep) if p)
    return JitEnv(
        cache_dir=Path(cache).expanduser().absolute(),
        lock_dir=Path(get("AITER_LITE_LOCK_DIR") or _default_lock_dir()).expanduser().absolute(),
        lock_timeout=parse_positive("AITER_LITE_LOCK_TIMEOUT", get("AITER_LITE_LOCK_TIMEOUT"), float),
        rebuild=parse_bool("AITER_LITE_REBUILD", get("AITER_LITE_REBUILD")),
        max_jobs=parse_positive("MAX_JOBS", get("MAX_JOBS"), int),
        arch=get("AITER_LITE_ARCH") or None,
        torch_cuda_arch_list=get("TORCH_CUDA_ARCH_LIST") or None,
        rocm_arch=get("PYTORCH_ROCM_ARCH") or None,
        cuda_home=get("CUDA_HOME") or get("CUDA_PATH") or None,
        rocm_home=get("ROCM_HOME") or get("ROCM_PATH") or None,
        cxx=get("CXX") or None,
        extra_configs=extra,
        autotune=parse_bool("AITER_LITE_AUTOTUNE", get("AITER_LITE_AUTOTUNE")),
        autotune_top_k=parse_positive("AITER_LITE_AUTOTUNE_TOP_K", get("AITER_LITE_AUTOTUNE_TOP_K"), int),
        log_level=parse_log_level("AITER_LITE_LOG", get("AITER_LITE_LOG")),
    )


def package_root() -> Path:
    """Directory holding jit_config.json and csrc/: the wheel's _data dir, or the source tree."""
    here = Path(__file__).resolve().parent.parent
    shipped = here / "_data"
    return shipped if (shipped / "jit_config.json").is_file() else here.parent
