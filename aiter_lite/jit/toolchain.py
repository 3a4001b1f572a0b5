"""Compilers, their versions, target archs and the flags each backend adds.

Queries happen only when a module is built or its key is computed (never at import), and each
result is cached for the life of the process.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import BuildError
from .env import JitEnv


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # first line of `--version`


@functools.lru_cache(maxsize=None)
def _version_line(path: str) -> str:
    """First meaningful line(s) of `path --version`, remembered per binary (path, size, mtime) in a
    small file in the temp dir, so a warm start runs no compiler (nvcc --version takes ~50 ms)."""
    try:
        st = os.stat(path)
        ident = f"{path}|{st.st_size}|{st.st_mtime_ns}" + ("|amd" if Path(path).name.startswith("hipcc") else "")
    except OSError:
        ident = path
    memo_path = Path(tempfile.gettempdir()) / f"aiter_lite-{os.getuid()}" / "compiler_versions.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if ident in memo:
        return memo[ident]
    version = _run_version(path)
    if not version.startswith("unknown"):
        memo[ident] = version
        try:
            memo_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = memo_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(memo))
            os.replace(tmp, memo_path)
        except OSError:
            pass  # only a speed-up
    return version


def compiler_env(backend: str) -> dict:
    """Environment the compilers of a backend run with. Our hip backend is ROCm's (AMD GPUs): hipcc
    packages such as Debian's pick nvcc when HIP_PLATFORM is unset and nvcc is installed."""
    return {"HIP_PLATFORM": "amd"} if backend == "hip" else {}


def _run_version(path: str) -> str:
    env = dict(os.environ, **compiler_env("hip")) if Path(path).name.startswith("hipcc") else None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, env=env).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    lines = [l for l in out.splitlines() if l.strip()]
    if not lines:
        return "unknown"
    # gcc/clang name their version on the first line; nvcc/hipcc put it on a later one.
    extra = [l for l in lines[1:] if re.search(r"\b(release|Build|version)\b", l)]
    return " | ".join(lines[:1] + extra[-1:])


def _canonical(path: Optional[str]) -> Optional[str]:
    return str(Path(path).resolve()) if path else None


def find_cxx(env: JitEnv) -> Optional[Compiler]:
    path = _canonical(shutil.which(env.cxx) if env.cxx else (shutil.which("c++") or shutil.which("g++")))
    return Compiler(path, _version_line(path)) if path else None


def find_nvcc(env: JitEnv) -> Optional[Compiler]:
    candidates = [os.path.join(env.cuda_home, "bin", "nvcc")] if env.cuda_home else []
    candidates += [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]
    path = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    return Compiler(_canonical(path), _version_line(_canonical(path))) if path else None


def find_hipcc(env: JitEnv) -> Optional[Compiler]:
    candidates = [os.path.join(env.rocm_home, "bin", "hipcc")] if env.rocm_home else []
    candidates += [shutil.which("hipcc") or "", "/opt/rocm/bin/hipcc"]
    path = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    return Compiler(_canonical(path), _version_line(_canonical(path))) if path else None


def require(compiler: Optional[Compiler], module: str, what: str, hint: str) -> Compiler:
    if compiler is None:
        raise BuildError(module, f"{what} not found", hints=(hint,))
    return compiler


# ----------------------------------------------------------------------------------------------
# Target archs


def _cuda_arch_from_capability(major: int, minor: int) -> str:
    # Hopper gets the arch-specific target so wgmma/setmaxnreg sources can build for it.
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def parse_cuda_arch_list(text: str) -> tuple[str, ...]:
    """'sm_90a,sm_80' or TORCH_CUDA_ARCH_LIST style '8.0;9.0a+PTX' -> ('sm_80', 'sm_90a')."""
    archs = set()
    for item in re.split(r"[;,\s]+", text.strip()):
        if not item:
            continue
        item = item.replace("+PTX", "")
        sm = re.fullmatch(r"sm_(\d+a?)", item)
        dotted = re.fullmatch(r"(\d+)\.(\d)(a?)", item)
        if sm:
            archs.add(item)
        elif dotted:
            archs.add("sm_" + "".join(dotted.groups()))
        else:
            raise ValueError(f"invalid CUDA arch {item!r} (expected e.g. sm_90a or 9.0)")
    if not archs:
        raise ValueError(f"empty CUDA arch list {text!r}")
    return tuple(sorted(archs))


def parse_rocm_arch_list(text: str) -> tuple[str, ...]:
    archs = set()
    for item in re.split(r"[;,\s]+", text.strip()):
        if item:
            base = item.split(":")[0]  # drop feature suffixes like gfx90a:xnack-
            if not re.fullmatch(r"gfx[0-9a-f]+", base):
                raise ValueError(f"invalid ROCm arch {item!r} (expected e.g. gfx942)")
            archs.add(base)
    if not archs:
        raise ValueError(f"empty ROCm arch list {text!r}")
    return tuple(sorted(archs))


def target_archs(backend: str, env: JitEnv) -> tuple[str, ...]:
    """Archs to build for: AITER_LITE_ARCH, else TORCH_CUDA_ARCH_LIST / PYTORCH_ROCM_ARCH, else the
    visible GPUs (the only GPU query of the JIT, done lazily)."""
    if backend == "cpu":
        return ()
    parse = parse_cuda_arch_list if backend == "cuda" else parse_rocm_arch_list
    source = env.arch or (env.torch_cuda_arch_list if backend == "cuda" else env.rocm_arch)
    if source:
        return parse(source)
    return _visible_archs(backend)


def _cuda_driver_capabilities() -> Optional[list[tuple[int, int]]]:
    """Compute capabilities of the visible CUDA devices from the driver (libcuda, through ctypes), or
    None if the driver cannot say. A prebuild (`python -m aiter_lite build`) has not imported torch,
    and importing it only to read the GPUs' archs took 4 s on the H100 machine."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return None
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return None
        caps = []
        for i in range(count.value):
            dev, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
            if (lib.cuDeviceGet(ctypes.byref(dev), i) != 0
                    or lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) != 0  # ..._COMPUTE_CAPABILITY_MAJOR
                    or lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) != 0):  # ..._COMPUTE_CAPABILITY_MINOR
                return None
            caps.append((major.value, minor.value))
        return caps
    except (OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=None)
def _visible_archs(backend: str) -> tuple[str, ...]:
    if backend == "cuda" and "torch" not in sys.modules:
        caps = _cuda_driver_capabilities()
        if caps:
            return tuple(sorted({_cuda_arch_from_capability(*c) for c in caps}))
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        raise BuildError("(arch detection)", f"no visible GPU to take the {backend} arch list from",
                         hints=("set AITER_LITE_ARCH (e.g. sm_90a or gfx942) to build without a GPU",))
    archs = set()
    for i in range(torch.cuda.device_count()):
        if backend == "hip":
            archs.add(torch.cuda.get_device_properties(i).gcnArchName.split(":")[0])
        else:
            archs.add(_cuda_arch_from_capability(*torch.cuda.get_device_capability(i)))
    return tuple(sorted(archs))


def cuda_gencode_flags(archs: tuple[str, ...]) -> list[str]:
    flags = []
    for a in archs:
        num = a[3:]
        flags.append(f"-gencode=arch=compute_{num},code={a}")
    return flags


def hip_offload_flags(archs: tuple[str, ...]) -> list[str]:
    return [f"--offload-arch={a}" for a in archs]


# ----------------------------------------------------------------------------------------------
# Host facts that go into the cache key


# sysconfig fills its config vars lazily, and on CPython 3.11 a thread that reads them while another fills them can
# see them half filled (EXT_SUFFIX None): the CLI's parallel prebuild once keyed a module with "cpython-311 None"
# and the next process's op call built it again. Filled here, at import (under the import lock, before any of our
# threads; 0.6 ms), they are only read afterwards.
sysconfig.get_config_vars()


def python_includes() -> list[str]:
    import pybind11

    dirs = [sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"], pybind11.get_include()]
    return list(dict.fromkeys(dirs))


def python_abi() -> str:
    return f"{sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}"


_TORCH_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def torch_version() -> str:
    """torch's version string exactly as `torch.__version__` has it, whether torch is imported or not.

    The string with its local tag (+cpu, +cu130, +rocm...) identifies the build and so its C++ ABI; our
    modules do not link torch at all (bindings are torch-free). It is read from torch/version.py of the
    torch that `import torch` finds (or found), never from package metadata: metadata can say "2.11.0"
    where torch.__version__ says "2.11.0+cu130" (a CLI prebuild would then use another key than the op
    call). Reading the file does not import torch, which keeps warm loads fast."""
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        package_dir = Path(torch.__file__).parent
    else:
        import importlib.util

        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or ()) if spec is not None else []
        if not locations:
            return "none"
        package_dir = Path(locations[0])
    try:
        m = _TORCH_VERSION_LINE.search((package_dir / "version.py").read_text())
    except OSError:
        m = None
    if m is not None:
        return m.group(1)
    # No readable version.py (an unusual install): import torch rather than guess, so both paths agree.
    import torch

    return str(torch.__version__)


@functools.lru_cache(maxsize=None)
def host_cpu_fingerprint() -> str:
    """Identifies the host CPU's ISA: part of the key when flags contain -march=native."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "model name", "Features")):
                    text += line
                if line.strip() == "":
                    break
    except OSError:
        pass
    return hashlib.sha256(text.encode()).hexdigest()[:16]
