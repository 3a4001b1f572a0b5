"""Cache keys, rebuilds, artifact integrity and build errors, on the tiny pybind11 test module."""
import contextlib
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from aiter_lite.jit import build_module, get_module, read_env
from aiter_lite.jit.key import compute_key
from aiter_lite.jit.spec import make_spec
from aiter_lite.jit.toolchain import find_nvcc


def key_of(tiny, backend="cpu", archs=None):
    return compute_key(make_spec(tiny.registry().get("module_tiny"), backend, read_env(), archs))


def test_key_is_stable_without_edits(tiny):
    assert key_of(tiny) == key_of(tiny)


def test_key_changes_with_source_header_and_flags(tiny):
    base = key_of(tiny)
    src = tiny.src / "tiny.cpp"
    src.write_text(src.read_text() + "\n// edited\n")
    k_src = key_of(tiny)
    header = tiny.src / "tiny.h"
    header.write_text(header.read_text() + "\n// edited header\n")
    k_hdr = key_of(tiny)
    reg = json.loads(tiny.registry_path.read_text())
    reg["modules"]["module_tiny"]["flags"]["cxx"] = ["-O1"]
    tiny.registry_path.write_text(json.dumps(reg))
    k_flag = key_of(tiny)
    reg["modules"]["module_tiny"]["defines"] = ["TINY_VARIANT=2"]
    tiny.registry_path.write_text(json.dumps(reg))
    k_define = key_of(tiny)
    assert len({base, k_src, k_hdr, k_flag, k_define}) == 5


@pytest.mark.skipif(find_nvcc(read_env()) is None, reason="needs nvcc")
def test_key_changes_with_arch_list(tiny):
    assert key_of(tiny, "cuda", ("sm_80",)) != key_of(tiny, "cuda", ("sm_90a",))
    assert key_of(tiny, "cuda", ("sm_80", "sm_90a")) == key_of(tiny, "cuda", ("sm_80", "sm_90a"))


def test_edit_rebuilds_and_no_edit_reuses(tiny):
    first = tiny.run_worker()
    assert first == {**first, "ok": True, "built": True, "add": 5}
    again = tiny.run_worker()
    assert again["ok"] and not again["built"], "an unchanged module must not rebuild"
    (tiny.src / "tiny.h").write_text("#pragma once\n#define TINY_VARIANT 7\nconstexpr int kTinyOffset = 100;\n")
    edited = tiny.run_worker()
    assert edited["ok"] and edited["built"] and edited["add"] == 105 and edited["variant"] == 7
    assert len([a for a in tiny.artifacts() if a.startswith("cpu-")]) == 2


def test_two_artifacts_of_one_module_load_side_by_side(tiny):
    """The CPU and CUDA builds of a module (or two keys of one backend) in one process are each their own
    code. CPython keeps one single-phase extension module per name: when every artifact was named after
    its module, the second load silently returned the first (the CUDA conv module ran CPU tensors)."""
    from aiter_lite.jit import get_module

    first = get_module("module_tiny", "cpu", registry=tiny.registry())
    reg = json.loads(tiny.registry_path.read_text())
    reg["modules"]["module_tiny"]["defines"] = ["TINY_VARIANT=2"]
    tiny.registry_path.write_text(json.dumps(reg))
    second = get_module("module_tiny", "cpu", registry=tiny.registry())
    assert (first.variant, second.variant) == (0, 2)
    assert first is not second and first.__file__ != second.__file__


def test_warm_load_in_new_process_is_fast(tiny, record_property):
    assert tiny.run_worker()["built"]
    times = [tiny.run_worker()["load_ms"] for _ in range(3)]
    record_property("warm_load_ms", min(times))
    print(f"\nwarm load of a built module in a new process: {min(times):.1f} ms (min of 3: {times})")
    assert min(times) < 100


def test_truncated_artifact_is_rebuilt(tiny):
    assert tiny.run_worker()["built"]
    (art,) = [tiny.cache / "module_tiny" / a for a in tiny.artifacts() if a.startswith("cpu-")]
    (lib,) = art.glob("*.so")
    lib.write_bytes(lib.read_bytes()[: lib.stat().st_size // 2])
    result = tiny.run_worker()
    assert result["ok"] and result["built"] and result["add"] == 5


def test_checksum_mismatch_is_rebuilt(tiny):
    assert tiny.run_worker()["built"]
    (art,) = [tiny.cache / "module_tiny" / a for a in tiny.artifacts() if a.startswith("cpu-")]
    (lib,) = art.glob("*.so")
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different bytes
    lib.write_bytes(bytes(data))
    result = tiny.run_worker()
    assert result["ok"] and result["built"]


def test_untouched_library_skips_the_checksum(tiny, monkeypatch):
    """A warm load hashes no library that is older than its manifest; a library written after its
    manifest (touched, replaced, corrupted) is hashed again."""
    from aiter_lite.jit import cache as cache_mod

    assert tiny.run_worker()["built"]
    (art,) = [tiny.cache / "module_tiny" / a for a in tiny.artifacts() if a.startswith("cpu-")]
    (lib,) = art.glob("*.so")
    key = art.name.split("-", 1)[1]
    hashed = []
    real = cache_mod.sha256_file
    monkeypatch.setattr(cache_mod, "sha256_file", lambda p: hashed.append(p) or real(p))
    cache = cache_mod.ModuleCache(tiny.cache, "module_tiny", "cpu", key)
    assert cache.valid_manifest() is not None and hashed == []
    newer = (art / "manifest.json").stat().st_mtime_ns + 10**9
    os.utime(lib, ns=(newer, newer))
    assert cache.valid_manifest() is not None and hashed == [lib]


@contextlib.contextmanager
def read_only_dir(path: Path):
    """A directory nobody can write: permission bits for a normal user; root ignores those, so for
    root a read-only tmpfs mount (or the immutable attribute) instead."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    for on, off in ((["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(path)], ["umount", str(path)]),
                    (["chattr", "+i", str(path)], ["chattr", "-i", str(path)])):
        if subprocess.run(on, capture_output=True).returncode == 0:
            try:
                yield path
            finally:
                subprocess.run(off, capture_output=True)
            return
    pytest.skip("running as root without mount or chattr: cannot make a read-only directory")


def test_read_only_cache_root_names_the_variable(tiny):
    with read_only_dir(tiny.cache.parent / "readonly") as ro:
        result = tiny.run_worker(AITER_LITE_CACHE_DIR=str(ro / "cache"))
    assert not result["ok"] and result["type"] == "BuildError", result
    assert "AITER_LITE_CACHE_DIR" in result["error"] and str(ro) in result["error"]
    assert not result["built"]


def test_syntax_error_raises_build_error_with_first_line(tiny):
    result = tiny.run_worker("module_tiny_bad")
    assert not result["ok"] and result["type"] == "BuildError"
    assert "tiny_bad.cpp:5" in result["first_error"] and "error" in result["first_error"]
    assert result["first_error"] in result["error"]
    assert "full log:" in result["error"]
    log = result["error"].split("full log: ")[1].splitlines()[0]
    assert Path(log).is_file() and "expected primary-expression" in Path(log).read_text()


def test_concurrent_waiters_get_the_same_build_error(tiny):
    procs = [tiny.start_worker("module_tiny_bad") for _ in range(4)]
    results = [tiny.result(p) for p in procs]
    assert all(not r["ok"] for r in results)
    assert len({r["first_error"] for r in results}) == 1
    assert sum(r["built"] for r in results) == 1, "waiters must not retry a build that just failed"


def test_get_module_hot_path_is_cached_in_process(tiny, monkeypatch):
    from aiter_lite.jit import loader

    monkeypatch.setattr(loader, "_registry", tiny.registry())
    monkeypatch.setattr(loader, "_loaded", {})
    mod = get_module("module_tiny", "cpu")
    assert mod.add(1, 1) == 2
    # No file-system access after the first call: a missing cache dir doesn't matter any more.
    monkeypatch.setenv("AITER_LITE_CACHE_DIR", "/nonexistent/never")
    assert get_module("module_tiny", "cpu") is mod


def test_build_module_reports_the_library_path(tiny):
    path = build_module("module_tiny", "cpu", registry=tiny.registry())
    assert path.is_file() and path.name.startswith("module_tiny.") and path.suffix == ".so"
    manifest = json.loads((path.parent / "manifest.json").read_text())
    assert manifest["library"] == path.name and manifest["size"] == path.stat().st_size
    assert (path.parent / "build.log").is_file() and (path.parent / "build.ninja").is_file()
    assert not (path.parent / "obj").exists()
    assert oct(tiny.cache.stat().st_mode & 0o777) == "0o700"
    # key_inputs.json holds what the key hashed: its canonical form hashes to the artifact's key.
    inputs = json.loads((path.parent / "key_inputs.json").read_text())
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()
    assert hashlib.sha256(canonical).hexdigest()[:32] == manifest["key"] == key_of(tiny)
