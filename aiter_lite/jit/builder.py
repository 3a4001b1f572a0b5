"""Build one module spec into the cache: lock, double-check, ninja, publish or record the failure."""
from __future__ import annotations

import json
import logging
import re
import time

from ..errors import BuildError
from . import lock as locks
from . import toolchain
from .cache import KEY_INPUTS, Manifest, ModuleCache
from .env import JitEnv
from .key import key_inputs
from .ninja import default_jobs, device_threads, generate_ninja, run_ninja
from .progress import BuildProgress, show_builds
from .spec import ModuleSpec

logger = logging.getLogger(__name__)

# gcc/clang "file:line:col: error: ...", nvcc "file(line): error: ...", "fatal error", ld errors.
_FIRST_ERROR = re.compile(r"^.*?(?:[:(]\d+(?:[:,]\d+)?\)?:?\s*(?:fatal\s+)?error\b.*|\berror:.*)$",
                          re.MULTILINE | re.IGNORECASE)


def first_error_line(log_text: str) -> str:
    for m in _FIRST_ERROR.finditer(log_text):
        line = m.group(0).strip()
        if not line.startswith(("FAILED:", "ninja:")):
            return line
    return ""


def _hints(returncode: int) -> tuple[str, ...]:
    # ninja reports a compiler killed by SIGKILL (the OOM killer) as 137; -9 if ninja itself was.
    if returncode in (137, -9):
        return ("exit 137: a compiler was killed, usually out of memory: lower MAX_JOBS (e.g. MAX_JOBS=1)",)
    return ()


def build(spec: ModuleSpec, key: str, env: JitEnv, *, requested_at: float) -> Manifest:
    """Return a valid manifest for (spec, key), building it unless another process did."""
    cache = ModuleCache(env.cache_dir, spec.name, spec.backend, key)
    if not env.rebuild:
        m = cache.valid_manifest()  # fast path: a complete manifest loads with no lock
        if m is not None:
            return m
    show_builds(env)  # not a cache hit: a build (or a wait for one) may take tens of seconds
    cache.ensure_root()
    with locks.hold(env.lock_dir, spec.name, spec.backend, key, what=f"building {spec.name}",
                    timeout=env.lock_timeout) as wait_start:
        # Existence first: an artifact that appears after this line was published by a process
        # with another lock dir (another node sharing the cache) and must not be discarded below.
        existed = cache.artifact_dir.exists()
        m = cache.valid_manifest()
        # AITER_LITE_REBUILD: rebuild unless someone rebuilt it after we asked (once per key).
        if m is not None and (not env.rebuild or m.created >= requested_at):
            return m
        failure = cache.recent_failure(since=wait_start)
        if failure is not None:  # the build we waited for failed: same error, no second attempt
            raise failure
        if existed:
            cache.discard_artifact()  # truncated/corrupt, or a forced rebuild
        if cache.remove_stale_build_dirs():
            logger.info("%s: removed build dirs left by killed builders", spec.name)
        return _build_locked(spec, cache, env)


def _build_locked(spec: ModuleSpec, cache: ModuleCache, env: JitEnv) -> Manifest:
    build_dir = cache.new_build_dir()
    log_path = build_dir / "build.log"
    jobs = default_jobs(env.max_jobs, spec.backend)
    (build_dir / "build.ninja").write_text(generate_ninja(spec, cache.library_name, cache.import_name,
                                                                env.device_threads or device_threads(spec, jobs)))
    # What the key hashed, beside the library: two artifacts of one module can be diffed to see why a
    # call built again (docs/jit.md, "Cache key").
    (build_dir / KEY_INPUTS).write_text(json.dumps(key_inputs(spec), sort_keys=True, indent=1))
    progress = BuildProgress(spec.name, spec.backend, spec.archs, [u.label for u in spec.units])
    progress.started(jobs, cache.artifact_dir)
    logger.debug("%s: building in %s", spec.name, build_dir)
    start = time.monotonic()
    try:
        returncode = run_ninja(build_dir, jobs, log_path, progress, toolchain.compiler_env(spec.backend))
    except OSError as e:
        raise cache.record_failure(build_dir, BuildError(
            spec.name, f"could not run ninja: {e}", log_path=str(log_path),
            hints=("pip install ninja",))) from e
    seconds = time.monotonic() - start
    if returncode != 0:
        text = log_path.read_text(errors="replace")
        err = BuildError(spec.name, f"ninja exited with {returncode} after {seconds:.1f} s",
                         first_error=first_error_line(text), log_path=str(log_path), hints=_hints(returncode))
        raise cache.record_failure(build_dir, err)
    m = cache.publish(build_dir, seconds)
    progress.finished(seconds, cache.artifact_dir)
    return m
