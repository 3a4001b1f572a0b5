"""On-disk layout of built modules and the manifest that marks one complete.

    <root>/<module>/<backend>-<key>/            published artifact dir (atomic rename)
        <module>.<key>.so                       the library (key in the name: a rebuilt module
                                                loads in a process that already has the old one)
        build.ninja, build.log, manifest.json   manifest.json is written last
    <root>/<module>/failed-<backend>-<key>/     the last failed attempt: build.log, error.json
    <root>/<module>/.tmp-<backend>-<key>-<host>-<pid>-<rand>/   a build in progress; its builder
                                                holds an flock on .builder.lock inside it
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import BuildError

MANIFEST = "manifest.json"
KEY_INPUTS = "key_inputs.json"  # what the artifact's key hashed (written by the builder, for diffing)
BUILDER_LOCK = ".builder.lock"  # held (flock) by the process building in a .tmp-* dir
ERROR_RECORD = "error.json"
# A .new-* staging dir lives microseconds in a live builder (new_build_dir); older than this it is a
# dead builder's.
STAGING_GRACE_S = 300.0
_CACHE_HINT = "set AITER_LITE_CACHE_DIR to a writable directory"


def cache_error(module: str, root: Path, e: OSError, doing: str) -> BuildError:
    return BuildError(module, f"cannot {doing} in the cache dir {root}: {e.strerror or e}",
                      hints=(_CACHE_HINT + " (now: " + str(root) + ")",))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Manifest:
    module: str
    backend: str
    key: str
    library: str
    size: int
    sha256: str
    created: float
    build_seconds: float

    @classmethod
    def read(cls, path: Path) -> Optional["Manifest"]:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


def import_name(module: str, artifact_dir: Path) -> str:
    """The Python name an artifact is built and loaded under (its PyInit_ symbol): module, backend and key.
    Unique per artifact because CPython keeps one single-phase extension module per name: a second library
    loaded under a name already loaded (the CPU and CUDA builds of one module, two keys of one backend)
    would silently be the first one again."""
    return f"{module}_{artifact_dir.name.replace('-', '_')}"


class ModuleCache:
    def __init__(self, root: Path, module: str, backend: str, key: str):
        self.root, self.module, self.backend, self.key = root, module, backend, key
        self.module_dir = root / module
        self.artifact_dir = self.module_dir / f"{backend}-{key}"
        self.failed_dir = self.module_dir / f"failed-{backend}-{key}"
        self.library_name = f"{module}.{key}.so"
        self.import_name = import_name(module, self.artifact_dir)
        self._builder_fd: Optional[int] = None

    # -- reading (no lock needed) ------------------------------------------------------------
    def valid_manifest(self) -> Optional[Manifest]:
        """The manifest if the artifact is complete and its checksum matches; else None."""
        m = Manifest.read(self.artifact_dir / MANIFEST)
        if m is None or m.key != self.key:
            return None
        lib = self.artifact_dir / m.library
        try:
            st = lib.stat()
            if st.st_size != m.size:
                return None
            # The library is linked before its manifest is written, and neither changes after
            # that: a library still strictly older than its manifest is the one the manifest
            # describes, so the checksum (tens of ms for a large CUDA library) is skipped. Any
            # write to the library makes it newer and brings the full check back.
            if st.st_mtime_ns >= (self.artifact_dir / MANIFEST).stat().st_mtime_ns and sha256_file(lib) != m.sha256:
                return None
        except OSError:
            return None
        return m

    def recent_failure(self, since: float) -> Optional[BuildError]:
        """The error of a failed build recorded after `since` (by a process we waited on)."""
        try:
            record = json.loads((self.failed_dir / ERROR_RECORD).read_text())
        except (OSError, ValueError):
            return None
        if record.get("time", 0) < since:
            return None
        return BuildError.from_dict(record["error"])

    # -- writing (under the lock) --------------------------------------------------------------
    def ensure_root(self) -> None:
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.module_dir.mkdir(mode=0o700, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.module_dir, prefix=".probe-", delete=True)
            probe.close()
        except OSError as e:
            raise cache_error(self.module, self.root, e, "write") from e

    def new_build_dir(self) -> Path:
        """A private build dir whose builder lock this process holds until publish or failure.

        It is made as .new-*, locked, then renamed to .tmp-*: a .tmp-* dir whose lock nobody holds
        is always a dead builder's."""
        tail = f"{self.backend}-{self.key}-{socket.gethostname()}-{os.getpid()}-"
        fd = None
        try:
            staging = Path(tempfile.mkdtemp(prefix=".new-" + tail, dir=self.module_dir))
            fd = os.open(staging / BUILDER_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            build_dir = staging.with_name(".tmp-" + staging.name[len(".new-"):])
            os.rename(staging, build_dir)
        except OSError as e:
            if fd is not None:
                os.close(fd)
            raise cache_error(self.module, self.root, e, "create a build dir") from e
        self._builder_fd = fd
        return build_dir

    def _release_builder_lock(self) -> None:
        if self._builder_fd is not None:
            os.close(self._builder_fd)
            self._builder_fd = None

    def remove_stale_build_dirs(self) -> int:
        """Remove this host's leftover build dirs for this key whose builders died.

        Holding the (module, backend, key) lock is not enough to know a build dir is dead: processes
        with other lock dirs (simulated nodes, containers with the host's name) may share the cache
        dir. A live builder holds the flock on the dir's .builder.lock; the kernel drops it when the
        builder dies, even on SIGKILL."""
        removed = 0
        tail = f"{self.backend}-{self.key}-{socket.gethostname()}-"
        for d in [*self.module_dir.glob(".tmp-" + tail + "*"), *self.module_dir.glob(".new-" + tail + "*")]:
            # A .new-* dir has no locked lock file yet for a moment of a live builder's new_build_dir
            # (seen in CI: a builder of another node removed one there, and that build failed); only
            # one left behind long ago is a dead builder's.
            if d.name.startswith(".new-") and not _older_than(d, STAGING_GRACE_S):
                continue
            if _builder_alive(d):
                continue
            _remove_tree(d, self.module_dir)
            removed += 1
        return removed

    def discard_artifact(self) -> None:
        if self.artifact_dir.exists():
            _remove_tree(self.artifact_dir, self.module_dir)

    def publish(self, build_dir: Path, build_seconds: float) -> Manifest:
        """Write the manifest (last), then rename the build dir into place atomically."""
        shutil.rmtree(build_dir / "obj", ignore_errors=True)  # objects are never reused
        lib = build_dir / self.library_name
        m = Manifest(self.module, self.backend, self.key, self.library_name, lib.stat().st_size,
                     sha256_file(lib), time.time(), round(build_seconds, 3))
        tmp = build_dir / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(m.__dict__, indent=1))
        os.replace(tmp, build_dir / MANIFEST)
        try:
            os.rename(build_dir, self.artifact_dir)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                self._release_builder_lock()
                raise cache_error(self.module, self.root, e, "publish the build") from e
            # Another node sharing this cache published first: keep theirs if it is sound.
            _remove_tree(build_dir, self.module_dir)
            self._release_builder_lock()
            theirs = self.valid_manifest()
            if theirs is None:
                raise BuildError(self.module, f"a concurrent build left an invalid artifact in {self.artifact_dir}",
                                 hints=("run `python -m aiter_lite clear " + self.module + "` and retry",))
            return theirs
        try:  # no longer a build dir: the lock file has done its job
            os.unlink(self.artifact_dir / BUILDER_LOCK)
        except OSError:
            pass
        self._release_builder_lock()
        shutil.rmtree(self.failed_dir, ignore_errors=True)
        return m

    def record_failure(self, build_dir: Path, error: BuildError) -> BuildError:
        """Keep the failed attempt's log as failed-<backend>-<key>/ and record its error for waiters."""
        _remove_tree(self.failed_dir, self.module_dir)
        shutil.rmtree(build_dir / "obj", ignore_errors=True)
        try:
            os.rename(build_dir, self.failed_dir)
        finally:
            self._release_builder_lock()
        error = BuildError(error.module, error.message, first_error=error.first_error,
                           log_path=str(self.failed_dir / "build.log") if error.log_path else "",
                           hints=error.hints)
        record = {"time": time.time(), "pid": os.getpid(), "error": error.to_dict()}
        (self.failed_dir / ERROR_RECORD).write_text(json.dumps(record, indent=1))
        return error


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False  # gone already


def _builder_alive(build_dir: Path) -> bool:
    """True if a process holds the flock on build_dir's builder lock (a build in progress)."""
    try:
        fd = os.open(build_dir / BUILDER_LOCK, os.O_RDWR)
    except OSError:
        return False  # no lock file: a dir from before builder locks, or already removed
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:  # EWOULDBLOCK: held
        return True
    finally:
        os.close(fd)


def _remove_tree(path: Path, parent: Path) -> None:
    """Rename out of the way first (so no half-deleted dir is ever visible), then delete."""
    if not path.exists():
        return
    trash = parent / f".trash-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        os.rename(path, trash)
    except OSError:
        trash = path
    shutil.rmtree(trash, ignore_errors=True)


def list_artifacts(root: Path, module: str) -> list[Path]:
    d = root / module
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith((".", "failed-"))) \
        if d.is_dir() else []
