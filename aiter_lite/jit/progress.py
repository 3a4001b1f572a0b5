"""What a build shows the user: one line when it starts, progress at least every 10 s, one line when done.

A cold build takes tens of seconds, and a silent first call would look like a hang. So a build logs
through the `aiter_lite` logger and, unless the user has set that logger up, a handler that writes to
stderr (never stdout: op_tests print their tables there). The handler is installed when the first
build of the process starts, never at import, and a cache hit logs nothing.

The handler steps aside:
- AITER_LITE_LOG=warning (or error) silences it; AITER_LITE_LOG=info/debug set its level;
- configuring the `aiter_lite` logger yourself (a level or a handler) replaces it altogether;
- with handlers on the root logger (logging.basicConfig), records go there only, in your format.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Optional

from .env import JitEnv

PACKAGE_LOGGER = "aiter_lite"
PROGRESS_EVERY_S = 10.0

logger = logging.getLogger(__name__)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time of the record, unless the root logger has
    handlers: then those print it (propagation), once, in the user's format."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("aiter_lite: %(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ assigns it; the stream is looked up per record
        pass

    def filter(self, record):
        return not logging.getLogger().handlers and super().filter(record)


_handler: Optional[_StderrHandler] = None


def show_builds(env: JitEnv) -> None:
    """Make build messages visible by default (called when a build starts; cheap when repeated)."""
    global _handler
    log = logging.getLogger(PACKAGE_LOGGER)
    if _handler is not None:
        if env.log_level is not None:
            log.setLevel(env.log_level)
        return
    if env.log_level is None and (log.level != logging.NOTSET or log.handlers):
        return  # the user configured it: their level and handlers decide
    _handler = _StderrHandler()
    log.addHandler(_handler)
    log.setLevel(env.log_level if env.log_level is not None else logging.INFO)


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class BuildProgress:
    """Start, progress and end lines of one module build."""

    def __init__(self, module: str, backend: str, archs: Iterable[str], files: Iterable[str]):
        self.module, self.backend, self.archs = module, backend, tuple(archs)
        self.pending = [_short(f) for f in files]
        self.start = time.monotonic()
        self.last = self.start
        self.done_n, self.total = 0, len(self.pending) + 1  # + the link

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def started(self, jobs: int, cached_in) -> None:
        archs = f" ({','.join(self.archs)})" if self.archs else ""
        logger.info("%s: building for %s%s, once: %d file(s), %d job(s); later calls and processes load it "
                    "from %s", self.module, self.backend, archs, self.total - 1, jobs, cached_in)

    def step(self, n: int, total: int, what: str) -> None:
        """ninja finished an edge: '[n/total] CXX path' (or a link)."""
        self.done_n, self.total = n, total
        name = what.split(" ", 1)[-1]
        if _short(name) in self.pending:
            self.pending.remove(_short(name))
        self.last = time.monotonic()
        logger.info("%s: [%d/%d %.0fs] %s", self.module, n, total, self.elapsed(), _shorten(what))

    def due(self) -> float:
        """Seconds until the next 'still building' line is due."""
        return max(0.0, self.last + PROGRESS_EVERY_S - time.monotonic())

    def tick(self) -> None:
        still = ", ".join(self.pending[:4]) + (" ..." if len(self.pending) > 4 else "") if self.pending else "link"
        logger.info("%s: [%d/%d %.0fs] still compiling %s", self.module, self.done_n, self.total,
                    self.elapsed(), still)
        self.last = time.monotonic()

    def finished(self, seconds: float, where) -> None:
        logger.info("%s: built for %s in %.1f s -> %s", self.module, self.backend, seconds, where)


def _shorten(what: str) -> str:
    """'CUDA /long/path/csrc/kernels/x.cu' -> 'CUDA x.cu'; 'LINK m.key.so' stays."""
    head, _, path = what.partition(" ")
    return f"{head} {_short(path)}" if path else what
