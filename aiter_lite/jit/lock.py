"""One file lock per (module, backend, key), held across build and publish.

flock-based (filelock.FileLock): the kernel drops the lock when its holder dies, so a killed build
never leaves a lock that hangs the next process. Lock files live in a node-local per-user dir and
are never unlinked (unlinking a lock file another process waits on breaks mutual exclusion).
A sidecar `.holder` file says who holds the lock, for the waiters' log lines.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Iterator, Optional

from ..errors import BuildError, LockTimeout

logger = logging.getLogger(__name__)

LOG_EVERY_S = 10.0
POLL_S = 0.05


def lock_path(lock_dir: Path, module: str, backend: str, key: str) -> Path:
    return lock_dir / f"{module}.{backend}.{key}.lock"


def _ensure_lock_dir(lock_dir: Path, module: str) -> None:
    try:
        lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(module, f"cannot create lock dir {lock_dir}: {e.strerror}",
                         hints=("set AITER_LITE_LOCK_DIR to a writable node-local directory",)) from e


def read_holder(path: Path) -> str:
    try:
        info = json.loads(path.with_suffix(".holder").read_text())
        since = time.strftime("%H:%M:%S", time.localtime(info["since"]))
        return f"pid {info['pid']} on {info['host']} since {since} ({info['what']})"
    except (OSError, ValueError, KeyError):
        return "an unknown process"


def _write_holder(path: Path, what: str) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "what": what}
    tmp = path.with_suffix(f".holder.{os.getpid()}")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path.with_suffix(".holder"))


@contextlib.contextmanager
def hold(lock_dir: Path, module: str, backend: str, key: str, *, what: str,
         timeout: Optional[float]) -> Iterator[float]:
    """Hold the lock of (module, backend, key). Yields the time the wait started (time.time()).

    While waiting, logs the holder every LOG_EVERY_S seconds; after `timeout` seconds raises
    LockTimeout naming the lock file.
    """
    import filelock  # imported here: the fast path (a built module) never takes a lock

    _ensure_lock_dir(lock_dir, module)
    path = lock_path(lock_dir, module, backend, key)
    lock = filelock.FileLock(str(path))
    wait_start, last_log = time.time(), time.monotonic()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            lock.acquire(timeout=LOG_EVERY_S if deadline is None else
                         max(0.0, min(LOG_EVERY_S, deadline - time.monotonic())), poll_interval=POLL_S)
            break
        except filelock.Timeout:
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeout(
                    module, f"timed out after {timeout:g} s waiting for the build lock {path}, held by "
                    f"{read_holder(path)}",
                    hints=("AITER_LITE_LOCK_TIMEOUT sets this limit",
                           f"if no process is building it, delete {path} (a dead holder releases it anyway)"),
                ) from None
            if time.monotonic() - last_log >= LOG_EVERY_S - 0.5:
                logger.info("%s: waiting for %s, held by %s", module, path, read_holder(path))
                last_log = time.monotonic()
    try:
        _write_holder(path, what)
        yield wait_start
    finally:
        lock.release()
