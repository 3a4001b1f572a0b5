"""python -m aiter_lite: list, build, clear, env; errors exit non-zero with a message."""
import subprocess
import sys


from aiter_lite.__main__ import main


def cli(tiny, *args, **env):
    return subprocess.run([sys.executable, "-m", "aiter_lite", *args], capture_output=True, text=True,
                          env=tiny.env(AITER_LITE_JIT_CONFIG=str(tiny.registry_path), **env))


def test_build_list_clear_cycle(tiny):
    listed = cli(tiny, "list")
    assert listed.returncode == 0, listed.stderr
    row = [l for l in listed.stdout.splitlines() if l.startswith("module_tiny ") and " cpu " in l]
    assert row and "not built" in row[0]
    built = cli(tiny, "build", "module_tiny", "--backend", "cpu")
    assert built.returncode == 0, built.stderr
    assert "module_tiny: [2/2" in built.stderr  # progress: n of m with seconds
    row = [l for l in cli(tiny, "list").stdout.splitlines() if l.startswith("module_tiny ") and " cpu " in l]
    assert "built" in row[0] and "not built" not in row[0]
    # An edit makes the built artifact stale for the new key.
    (tiny.src / "tiny.h").write_text((tiny.src / "tiny.h").read_text() + "// edit\n")
    row = [l for l in cli(tiny, "list").stdout.splitlines() if l.startswith("module_tiny ") and " cpu " in l]
    assert "stale" in row[0]
    cleared = cli(tiny, "clear", "module_tiny")
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    assert not (tiny.cache / "module_tiny").exists()


def test_clear_keeps_a_loaded_module_working(tiny):
    from aiter_lite.jit import get_module, read_env
    from aiter_lite.jit.admin import clear

    mod = get_module("module_tiny", "cpu", registry=tiny.registry())
    assert clear(read_env(), ["module_tiny"]) == 1
    assert mod.add(20, 22) == 42


def test_build_failure_exits_nonzero_with_the_compiler_error(tiny):
    r = cli(tiny, "build", "module_tiny_bad", "--backend", "cpu")
    assert r.returncode == 1
    assert "tiny_bad.cpp:5" in r.stderr and "error:" in r.stderr


def test_unknown_module_exits_nonzero(tiny):
    r = cli(tiny, "build", "module_nope")
    assert r.returncode == 1 and "unknown module 'module_nope'" in r.stderr


def test_build_without_modules_is_a_usage_error(tiny):
    assert cli(tiny, "build").returncode == 2


def test_env_lists_dirs_and_compilers(tiny):
    r = cli(tiny, "env")
    assert r.returncode == 0
    for needle in ("cache dir", str(tiny.cache), "lock dir", "c++", "nvcc", "torch", "cuda archs"):
        assert needle in r.stdout, needle


def test_bad_env_value_is_reported(tiny):
    r = cli(tiny, "list", AITER_LITE_REBUILD="perhaps")
    assert r.returncode == 1 and "AITER_LITE_REBUILD='perhaps'" in r.stderr


def test_main_is_callable_in_process(tiny, capsys, monkeypatch):
    monkeypatch.setenv("AITER_LITE_JIT_CONFIG", str(tiny.registry_path))
    from aiter_lite.jit import reset

    reset()
    try:
        assert main(["env"]) == 0
        assert "cache dir" in capsys.readouterr().out
    finally:
        reset()


def test_import_has_no_side_effects(tmp_path):
    code = """
import os, subprocess, sys
def forbid(*a, **k): raise AssertionError("import started a subprocess")
subprocess.Popen = forbid
import aiter_lite
from aiter_lite import causal_conv1d, matmul, ops
import torch
assert not torch.cuda.is_initialized(), "import queried the GPU"
assert not os.path.exists(os.environ["AITER_LITE_CACHE_DIR"]), "import created the cache"
print("clean")
"""
    import os
    env = dict(os.environ, AITER_LITE_CACHE_DIR=str(tmp_path / "c"), AITER_LITE_LOCK_DIR=str(tmp_path / "l"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "clean" in r.stdout, r.stderr
    assert not (tmp_path / "l").exists()
