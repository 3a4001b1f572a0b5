"""Load and validate jit_config.json: the registry of kernel modules.

The registry is data. Strings are never evaluated; the only substitution is `{csrc}` (the package's
csrc/ directory), from a fixed whitelist. Every problem raises RegistryError naming the file, the
module and the key.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import RegistryError

BACKENDS = ("cuda", "hip", "cpu")
COMPILERS = ("cxx", "nvcc", "hipcc", "ld")
_TOP_KEYS = {"schema_version", "modules"}
_ENTRY_KEYS = {"description", "sources", "include_dirs", "defines", "flags", "archs"}
_SOURCE_KEYS = {"path", "archs", "shards"}
MAX_SHARDS = 64
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ARCH = re.compile(r"^(sm_\d+a?|gfx[0-9a-f]+)$")
_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$")


@dataclass(frozen=True)
class SourceFile:
    path: Path
    archs: tuple[str, ...] = ()  # empty: every target arch; else only these (e.g. ("sm_90a",))
    shards: int = 1              # compile the file this many times, each with -DAITER_LITE_SHARD=i


@dataclass(frozen=True)
class ModuleEntry:
    name: str
    description: str
    sources: Mapping[str, tuple[SourceFile, ...]]  # backend -> sources
    include_dirs: tuple[Path, ...]
    defines: tuple[str, ...]
    flags: Mapping[str, tuple[str, ...]]  # compiler -> flags
    archs: tuple[str, ...]                # archs the CUDA/HIP sources are meant for ("" = any)
    registry_path: Path

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(b for b in BACKENDS if b in self.sources)

    def canonical(self) -> dict:
        """JSON-able form of the expanded entry (part of the cache key)."""
        return {
            "name": self.name,
            "sources": {b: [[s.path.name, list(s.archs)] + ([s.shards] if s.shards > 1 else []) for s in srcs]
                        for b, srcs in self.sources.items()},
            "include_dirs": [p.name for p in self.include_dirs],
            "defines": list(self.defines),
            "flags": {c: list(f) for c, f in self.flags.items()},
            "archs": list(self.archs),
        }


class Registry:
    def __init__(self, modules: Mapping[str, ModuleEntry], paths: tuple[Path, ...]):
        self.modules = dict(modules)
        self.paths = paths

    def __contains__(self, name: str) -> bool:
        return name in self.modules

    def __iter__(self):
        return iter(self.modules.values())

    def get(self, name: str) -> ModuleEntry:
        try:
            return self.modules[name]
        except KeyError:
            known = ", ".join(sorted(self.modules)) or "none"
            raise RegistryError(f"unknown module {name!r} (registered: {known})",
                                path=", ".join(map(str, self.paths))) from None


class _Checker:
    """Validation context: knows the file and module so each message can name them."""

    def __init__(self, path: Path, csrc: Path):
        self.path, self.csrc, self.module = path, csrc, ""

    def fail(self, key: str, message: str):
        raise RegistryError(message, path=str(self.path), module=self.module, key=key)

    def expect(self, key: str, value, kind, what: str):
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            self.fail(key, f"expected {what}, got {type(value).__name__} {value!r}")
        return value

    def str_list(self, key: str, value) -> tuple[str, ...]:
        self.expect(key, value, list, "a list of strings")
        for i, item in enumerate(value):
            self.expect(f"{key}[{i}]", item, str, "a string")
        return tuple(value)

    def expand(self, key: str, text: str) -> str:
        def sub(m):
            if m.group(1) != "csrc":
                self.fail(key, f"unknown placeholder {{{m.group(1)}}} in {text!r} (allowed: {{csrc}})")
            return str(self.csrc)
        return _PLACEHOLDER.sub(sub, text)

    def existing_path(self, key: str, text: str, *, is_dir: bool) -> Path:
        p = Path(self.expand(key, text))
        if not p.is_absolute():
            p = self.path.parent / p
        p = p.resolve()
        if is_dir and not p.is_dir():
            self.fail(key, f"include dir not found: {p}")
        if not is_dir and not p.is_file():
            self.fail(key, f"source file not found: {p}")
        return p

    def archs(self, key: str, value) -> tuple[str, ...]:
        archs = self.str_list(key, value)
        for i, a in enumerate(archs):
            if not _ARCH.match(a):
                self.fail(f"{key}[{i}]", f"invalid arch {a!r} (expected e.g. sm_80, sm_90a, gfx942)")
        return tuple(sorted(set(archs)))


def _parse_entry(c: _Checker, name: str, raw) -> ModuleEntry:
    c.module = name
    if not (name.isidentifier() and name.isascii()):
        c.fail("modules", f"module name {name!r} is not an identifier")
    c.expect("", raw, dict, "an object")
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        c.fail(unknown[0], f"unknown key(s) {unknown}; allowed: {sorted(_ENTRY_KEYS)}")
    if "sources" not in raw:
        c.fail("sources", "missing required key")
    sources = {}
    for backend, items in c.expect("sources", raw["sources"], dict, "an object of backend -> list").items():
        if backend not in BACKENDS:
            c.fail(f"sources.{backend}", f"unknown backend {backend!r}; allowed: {list(BACKENDS)}")
        key = f"sources.{backend}"
        c.expect(key, items, list, "a list of sources")
        if not items:
            c.fail(key, "empty source list")
        parsed = []
        for i, item in enumerate(items):
            k = f"{key}[{i}]"
            if isinstance(item, str):
                parsed.append(SourceFile(c.existing_path(k, item, is_dir=False)))
                continue
            c.expect(k, item, dict, 'a path string or {"path": ..., "archs": [...], "shards": N}')
            bad = sorted(set(item) - _SOURCE_KEYS)
            if bad or "path" not in item:
                c.fail(k, f'expected keys {{"path", "archs", "shards"}}, got {sorted(item)}')
            path = c.existing_path(f"{k}.path", c.expect(f"{k}.path", item["path"], str, "a string"),
                                   is_dir=False)
            archs = c.archs(f"{k}.archs", item.get("archs", []))
            if archs and backend == "cpu":
                c.fail(f"{k}.archs", "arch restrictions apply to cuda/hip sources only")
            shards = c.expect(f"{k}.shards", item.get("shards", 1), int, "an integer")
            if not 1 <= shards <= MAX_SHARDS:
                c.fail(f"{k}.shards", f"expected 1..{MAX_SHARDS} shards, got {shards}")
            parsed.append(SourceFile(path, archs, shards))
        sources[backend] = tuple(parsed)
    if not sources:
        c.fail("sources", "no backend listed")
    include_dirs = tuple(c.existing_path(f"include_dirs[{i}]", d, is_dir=True)
                         for i, d in enumerate(c.str_list("include_dirs", raw.get("include_dirs", []))))
    defines = c.str_list("defines", raw.get("defines", []))
    for i, d in enumerate(defines):
        if not _DEFINE.match(d):
            c.fail(f"defines[{i}]", f"invalid define {d!r} (expected NAME or NAME=VALUE)")
    flags = {}
    for compiler, fl in c.expect("flags", raw.get("flags", {}), dict, "an object of compiler -> list").items():
        if compiler not in COMPILERS:
            c.fail(f"flags.{compiler}", f"unknown compiler {compiler!r}; allowed: {list(COMPILERS)}")
        flags[compiler] = tuple(c.expand(f"flags.{compiler}", f) for f in c.str_list(f"flags.{compiler}", fl))
    description = c.expect("description", raw.get("description", ""), str, "a string")
    archs = c.archs("archs", raw.get("archs", []))
    return ModuleEntry(name, description, sources, include_dirs, tuple(defines), flags, archs, c.path)


def parse_registry(data, path: Path, csrc: Path) -> dict[str, ModuleEntry]:
    c = _Checker(path, csrc)
    c.expect("", data, dict, "a JSON object at the top level")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        c.fail(unknown[0], f"unknown top-level key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}")
    if data.get("schema_version", 1) != 1:
        c.fail("schema_version", f"unsupported schema_version {data['schema_version']!r} (supported: 1)")
    modules = c.expect("modules", data.get("modules"), dict, "an object of module name -> entry")
    return {name: _parse_entry(c, name, raw) for name, raw in modules.items()}


def load_registry(paths: Iterable[Path], csrc: Path) -> Registry:
    """Load one or more registry files; a module defined twice is an error."""
    modules: dict[str, ModuleEntry] = {}
    paths = tuple(Path(p) for p in paths)
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise RegistryError("registry file not found", path=str(path)) from None
        except json.JSONDecodeError as e:
            raise RegistryError(f"invalid JSON: {e}", path=str(path)) from None
        for name, entry in parse_registry(data, path, csrc).items():
            if name in modules:
                raise RegistryError(f"defined again (first in {modules[name].registry_path})",
                                    path=str(path), module=name)
            modules[name] = entry
    return Registry(modules, paths)
