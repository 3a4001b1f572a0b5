"""build.ninja generation (a pure function) and the one subprocess call that runs ninja."""
from __future__ import annotations

import ctypes
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .spec import ModuleSpec

if TYPE_CHECKING:
    from .progress import BuildProgress

_STATUS = re.compile(r"^\[(\d+)/(\d+) ([\d.]+)s\] (.*)$")


def _q(items) -> str:
    return " ".join(shlex.quote(str(i)) for i in items)


def _esc(path) -> str:
    """Escape a path for a ninja build line ($, space and colon are special there)."""
    return str(path).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def object_name(index: int, source: Path, shard: int = 0, shards: int = 1) -> str:
    return f"obj/{index:02d}_{source.name}" + (f".shard{shard}" if shards > 1 else "") + ".o"


def _var(value: str) -> str:
    """Escape a ninja variable value ($ is special there)."""
    return value.replace("$", "$$")


def device_threads(spec: ModuleSpec, jobs: int) -> int:
    """Threads each device compile may use (nvcc --split-compile and --threads).

    A module's cold build is bound by its longest file, while its short files finish early and leave
    their cores idle; so each file gets about twice its share of the jobs (at most 8 threads). A
    sharded source counts once per shard: on 16 cores, 3 threads for each of causal conv's 13 units,
    2 for each of matmul's 24 (sm_90a)."""
    units = sum(1 for u in spec.units if u.compiler == "device")
    if not units or jobs <= 1:
        return 1
    return min(8, -(-2 * jobs // units))


def parallel_flags(spec: ModuleSpec, threads: int) -> list[str]:
    """Flags that spread one device compile over `threads` threads. They change how the compiler
    works, not what it produces, so they are not part of the cache key (which must not depend on
    the number of cores: a prebuild on a login node serves the workers)."""
    if threads <= 1 or spec.device_compiler is None:
        return []
    if spec.backend == "cuda":
        flags = [f"--split-compile={threads}"]
        if len(spec.archs) > 1:
            flags.append(f"--threads={min(threads, len(spec.archs))}")
        return flags
    return []  # hipcc: ROCm 5.2's clang has no -parallel-jobs; its archs compile one after another


def generate_ninja(spec: ModuleSpec, library_name: str, import_name: str, threads_per_device_job: int = 1) -> str:
    """import_name: the artifact's Python name (cache.import_name); it derives from the key, so it is
    passed here rather than being one of the flags the key hashes."""
    name_define = [f"-DAITER_LITE_MODULE_NAME={import_name}"]
    lines = [
        "ninja_required_version = 1.3",
        f"cxx = {_q([spec.cxx.path])}",
        f"cxx_flags = {_q([*spec.cxx_flags, *name_define])}",
        f"link = {_q([spec.linker.path])}",
        f"link_flags = {_q(spec.link_flags)}",
        "",
        "rule cxx",
        "  command = $cxx -MMD -MF $out.d $cxx_flags $unit_defines -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = CXX $label",
    ]
    if spec.device_compiler is not None:
        dep = ("--generate-dependencies-with-compile --dependency-output $out.d" if spec.backend == "cuda"
               else "-MMD -MF $out.d")
        lines += [
            f"device_cc = {_q([spec.device_compiler.path])}",
            f"device_flags = {_q([*spec.device_flags, *name_define])}",
            f"parallel_flags = {_q(parallel_flags(spec, threads_per_device_job))}",
            "",
            "rule device",
            f"  command = $device_cc {dep} $device_flags $parallel_flags $arch_flags $unit_defines -c $in -o $out",
            "  depfile = $out.d",
            "  deps = gcc",
            f"  description = {spec.backend.upper()} $label",
        ]
    lines += ["", "rule link", "  command = $link $in $link_flags -o $out", "  description = LINK $out", ""]
    objects = [object_name(i, u.source, u.shard, u.shards) for i, u in enumerate(spec.units)]
    # With more units than jobs, ninja starts a cold build's edges in file order: the shards come first,
    # since the registry shards the heaviest files (a late-starting heavy unit would end the build alone).
    for i in sorted(range(len(spec.units)), key=lambda i: (spec.units[i].shards == 1, i)):
        unit, obj = spec.units[i], objects[i]
        lines.append(f"build {_esc(obj)}: {unit.compiler} {_esc(unit.source)}")
        lines.append(f"  label = {_var(unit.label)}")
        if unit.arch_flags:
            lines.append(f"  arch_flags = {_q(unit.arch_flags)}")
        if unit.defines:
            lines.append(f"  unit_defines = {_q(unit.defines)}")
    lines += [f"build {_esc(library_name)}: link {' '.join(map(_esc, objects))}", f"default {_esc(library_name)}", ""]
    return "\n".join(lines)


def default_jobs(max_jobs: Optional[int], backend: str) -> int:
    """MAX_JOBS, else min(cores, free memory / per-job need): nvcc/hipcc jobs need ~2 GB each."""
    if max_jobs:
        return max_jobs
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_job_gb = 2.0 if backend in ("cuda", "hip") else 1.0
    try:
        with open("/proc/meminfo") as f:
            avail_kb = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:"))
        by_memory = int(avail_kb / (per_job_gb * 1024 * 1024))
    except (OSError, StopIteration, ValueError):
        by_memory = cores
    return max(1, min(cores, by_memory))


def _die_with_parent():
    # If the Python process that started ninja is killed, ninja gets SIGTERM and stops its
    # compilers, instead of running on and writing into a directory nobody owns.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_ninja(build_dir: Path, jobs: int, log_path: Path, progress: "BuildProgress",
              compiler_env: Optional[dict] = None) -> int:
    """Run ninja in build_dir; returns its exit code. The full output goes to log_path; each finished
    file goes to progress, and while a long compile runs, progress ticks at least every 10 s."""
    env = dict(os.environ, **(compiler_env or {}), NINJA_STATUS="[%f/%t %es] ")
    cmd = [_ninja_binary(), "-C", str(build_dir), "-j", str(jobs)]
    with open(log_path, "w") as log:
        log.write(f"$ {_q(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        assert proc.stdout is not None
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
        reader.start()
        while True:
            try:
                line = lines.get(timeout=max(0.05, progress.due()))
            except queue.Empty:
                progress.tick()
                continue
            if line is None:  # ninja closed its output
                break
            log.write(line)
            m = _STATUS.match(line.rstrip())
            if m:
                progress.step(int(m.group(1)), int(m.group(2)), m.group(4))
        reader.join()
        return proc.wait()


def _pump(stream, lines: "queue.Queue[Optional[str]]") -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _ninja_binary() -> str:
    try:
        import ninja  # the PyPI package ships a binary

        return os.path.join(ninja.BIN_DIR, "ninja")
    except (ImportError, AttributeError):
        return "ninja"
