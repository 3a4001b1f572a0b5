"""Turn a registry entry into a frozen build spec for one backend: sources, compilers, final flags.

make_spec() only reads (compiler versions, arch list); it writes no files.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import BuildError
from . import toolchain
from .env import JitEnv
from .registry import ModuleEntry, SourceFile
from .toolchain import Compiler

DEVICE_SUFFIXES = (".cu", ".hip")


@dataclass(frozen=True)
class CompileUnit:
    source: Path
    compiler: str            # "cxx" or "device" (nvcc / hipcc)
    arch_flags: tuple[str, ...]  # -gencode / --offload-arch flags for this source
    shard: int = 0           # which of the source's shards this unit compiles
    shards: int = 1          # 1: the source is not sharded

    @property
    def defines(self) -> tuple[str, ...]:
        """This unit's own -D flags: a shard compiles the items (kernels) of its share only."""
        if self.shards == 1:
            return ()
        return (f"-DAITER_LITE_SHARD={self.shard}", f"-DAITER_LITE_SHARDS={self.shards}")

    @property
    def label(self) -> str:
        """The source path, and which shard: what build progress shows."""
        return str(self.source) + (f" (shard {self.shard + 1} of {self.shards})" if self.shards > 1 else "")


def _sharded(source: SourceFile, compiler: str, arch_flags: tuple[str, ...]) -> list[CompileUnit]:
    return [CompileUnit(source.path, compiler, arch_flags, i, source.shards) for i in range(source.shards)]


def source_macro(source: SourceFile) -> str:
    """The macro suffix of a source: causal_conv1d_update.cu -> CAUSAL_CONV1D_UPDATE."""
    return "".join(c if c.isalnum() else "_" for c in source.path.stem).upper()


@dataclass(frozen=True)
class ModuleSpec:
    name: str
    backend: str
    units: tuple[CompileUnit, ...]
    include_dirs: tuple[Path, ...]
    cxx: Compiler
    device_compiler: Optional[Compiler]
    cxx_flags: tuple[str, ...]
    device_flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    archs: tuple[str, ...]
    entry: ModuleEntry

    @property
    def linker(self) -> Compiler:
        # nvcc links cudart statically by default (no libcudart.so lookup at load time);
        # hipcc brings the HIP runtime.
        return self.device_compiler if self.device_compiler else self.cxx


def _defines(entry: ModuleEntry, backend: str, restricted_included: list[SourceFile],
             sharded_included: list[SourceFile]) -> list[str]:
    defines = [f"-D{d}" for d in entry.defines]
    defines.append(f"-DAITER_LITE_BACKEND_{backend.upper()}=1")
    for s in restricted_included:
        defines.append(f"-DAITER_LITE_HAS_{source_macro(s)}=1")
    # Every file of the module (the dispatch above all) learns how many shards a source has.
    for s in sharded_included:
        defines.append(f"-DAITER_LITE_SHARDS_{source_macro(s)}={s.shards}")
    return defines


def _device_units(entry: ModuleEntry, backend: str, sources, archs, arch_flags_of) -> tuple[list, list]:
    """Per-source arch flags; a source restricted to archs outside the target list is left out."""
    units, restricted_included = [], []
    for s in sources:
        if s.path.suffix not in DEVICE_SUFFIXES:
            units += _sharded(s, "cxx", ())
            continue
        use = tuple(a for a in archs if not s.archs or a in s.archs)
        if not use:
            continue
        if s.archs:
            restricted_included.append(s)
        units += _sharded(s, "device", tuple(arch_flags_of(use)))
    return units, restricted_included


def make_spec(entry: ModuleEntry, backend: str, env: JitEnv, archs: Optional[tuple[str, ...]] = None) -> ModuleSpec:
    if backend not in entry.sources:
        raise BuildError(entry.name, f"no sources for backend {backend!r} (has: {', '.join(entry.backends)})")
    cxx = toolchain.require(toolchain.find_cxx(env), entry.name, "C++ compiler",
                            "install g++ or set CXX to a C++17 compiler")
    if archs is None:
        archs = toolchain.target_archs(backend, env)
    if entry.archs and backend != "cpu":
        # The module declares the archs it supports: build only those of the targets.
        archs = tuple(a for a in archs if a in entry.archs) or archs
    sources = entry.sources[backend]
    includes = [f"-I{d}" for d in entry.include_dirs]
    device_compiler, device_flags = None, []
    if backend == "cpu":
        units, restricted = [u for s in sources for u in _sharded(s, "cxx", ())], []
    elif backend == "cuda":
        device_compiler = toolchain.require(toolchain.find_nvcc(env), entry.name, "nvcc",
                                            "set CUDA_HOME to the CUDA toolkit or put nvcc on PATH")
        units, restricted = _device_units(entry, backend, sources, archs, toolchain.cuda_gencode_flags)
        device_flags = ["-std=c++17", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
                        "--expt-relaxed-constexpr", *entry.flags.get("nvcc", ())]
    elif backend == "hip":
        device_compiler = toolchain.require(toolchain.find_hipcc(env), entry.name, "hipcc",
                                            "set ROCM_PATH to the ROCm install or put hipcc on PATH")
        units, restricted = _device_units(entry, backend, sources, archs, toolchain.hip_offload_flags)
        device_flags = ["-std=c++17", "-fPIC", "-fvisibility=hidden", "-x", "hip",
                        "-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1", *entry.flags.get("hipcc", ())]
    else:
        raise BuildError(entry.name, f"unknown backend {backend!r}")
    built = {u.source for u in units}
    defines = _defines(entry, backend, restricted, [s for s in sources if s.shards > 1 and s.path in built])
    cxx_flags = ["-std=c++17", "-fPIC", "-fvisibility=hidden", *entry.flags.get("cxx", ()),
                 *includes, *(f"-I{d}" for d in toolchain.python_includes()), *defines]
    if backend == "hip":
        cxx_flags.append("-D__HIP_PLATFORM_AMD__=1")
    device_flags = [*device_flags, *includes, *defines] if device_compiler else []
    link_flags = ["-shared", *entry.flags.get("ld", ())]
    if backend == "cuda":  # nvcc links: host-linker flags go through -Xcompiler
        link_flags = ["-shared", *(f if f.startswith(("-l", "-L")) else f"-Xcompiler={f}"
                                   for f in entry.flags.get("ld", ()))]
    elif backend == "hip":
        # hipcc links with clang, whose -fopenmp means LLVM's libomp; the objects g++ compiled with
        # -fopenmp need GCC's libgomp. The archs stop hipcc from probing for a GPU at link time.
        link_flags = ["-shared", *("-fopenmp=libgomp" if f == "-fopenmp" else f for f in entry.flags.get("ld", ())),
                      *toolchain.hip_offload_flags(tuple(archs))]
    return ModuleSpec(entry.name, backend, tuple(units), entry.include_dirs, cxx, device_compiler,
                      tuple(cxx_flags), tuple(device_flags), tuple(link_flags), tuple(archs), entry)
