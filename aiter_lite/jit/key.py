"""Content-addressed cache key of a module build.

sha256 over canonical JSON of: the expanded registry entry, the final flags, the bytes of every
source and of every project header it includes (found by scanning #include lines against the
source's directory and the declared include dirs), the arch list, compiler paths and versions,
torch version, Python ABI and the package version. Never Python's hash() (salted per process) and
never mtimes (reinstalls keep old ones).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .. import __version__
from . import toolchain
from .spec import ModuleSpec

_INCLUDE = re.compile(rb'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)
KEY_LENGTH = 32  # hex chars kept (128 bits)


def _resolve_include(name: str, quoted: bool, current_dir: Path, include_dirs) -> Path | None:
    # Sources and include dirs are absolute and resolved (registry): normalizing the joined path is
    # enough, and costs no readlink per path component (Path.resolve took ~15 ms of a first call).
    search = ([current_dir] if quoted else []) + list(include_dirs)
    for d in search:
        candidate = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(candidate):
            return Path(candidate)
    return None  # a system or third-party header: covered by the compiler/package versions


def scan_headers(sources, include_dirs) -> list[Path]:
    """Every project header reachable through #include from the sources (sorted, no duplicates)."""
    seen: set[Path] = set()
    stack = [Path(s) for s in sources]
    while stack:
        path = stack.pop()
        for m in _INCLUDE.finditer(path.read_bytes()):
            header = _resolve_include(m.group(2).decode(), m.group(1) == b'"', path.parent, include_dirs)
            if header is not None and header not in seen:
                seen.add(header)
                stack.append(header)
    return sorted(seen - {Path(s).resolve() for s in sources})


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def key_inputs(spec: ModuleSpec) -> dict:
    sources = [u.source for u in spec.units]
    headers = scan_headers(sources, spec.include_dirs)
    flags = {"cxx": list(spec.cxx_flags), "device": list(spec.device_flags), "link": list(spec.link_flags),
             "units": [[u.source.name, u.compiler, list(u.arch_flags)] + ([list(u.defines)] if u.defines else [])
                       for u in spec.units]}
    inputs = {
        "module": spec.name,
        "backend": spec.backend,
        "entry": spec.entry.canonical(),
        "flags": flags,
        "archs": list(spec.archs),
        "sources": {p.name: _digest(p) for p in sources},
        "headers": {str(p): _digest(p) for p in headers},
        "compilers": {c: [comp.path, comp.version] for c, comp in
                      (("cxx", spec.cxx), ("device", spec.device_compiler)) if comp is not None},
        "torch": toolchain.torch_version(),
        "python": toolchain.python_abi(),
        "package": __version__,
    }
    if any("-march=native" in f for f in (*spec.cxx_flags, *spec.device_flags)):
        inputs["host_cpu"] = toolchain.host_cpu_fingerprint()
    return inputs


def compute_key(spec: ModuleSpec) -> str:
    canonical = json.dumps(key_inputs(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_LENGTH]
