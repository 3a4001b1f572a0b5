"""A CLI prebuild serves the op calls of later processes (issue 22, point 1).

The key includes torch's version. The CLI computes it before torch is imported, an op call after.
Both must read the same string. A GPU machine showed how they can differ: the package metadata said
"2.11.0" while torch.__version__ said "2.11.0+cu130". These tests put such metadata (a shadow
dist-info, found first on the path) in front of the real torch, so they fail if a key reads metadata.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def shadow_metadata(tmp_path):
    """A directory whose torch dist-info claims a version without the local tag."""
    import torch

    d = tmp_path / "shadow"
    info = d / f"torch-{torch.__version__.split('+')[0]}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {torch.__version__.split('+')[0]}-shadow\n")
    return d


def _env(shadow: Path, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _python(code: str, env: dict) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


_KEY_OF_BOTH = """
    import json, sys
    {pre}
    from aiter_lite.jit import default_registry, read_env, toolchain
    from aiter_lite.jit.key import compute_key
    from aiter_lite.jit.spec import make_spec
    env = read_env()
    keys = {{m: compute_key(make_spec(default_registry(env).get(m), "cpu", env))
            for m in ("module_causal_conv1d", "module_matmul")}}
    print(json.dumps({{"torch": toolchain.torch_version(), "imported": "torch" in sys.modules, "keys": keys}}))
"""


def test_key_is_the_same_with_torch_imported_or_not(shadow_metadata):
    import torch

    env = _env(shadow_metadata)
    cold = json.loads(_python(_KEY_OF_BOTH.format(pre=""), env))
    warm = json.loads(_python(_KEY_OF_BOTH.format(pre="import torch, aiter_lite.ops"), env))
    assert not cold["imported"] and warm["imported"]
    assert cold["torch"] == warm["torch"] == torch.__version__
    assert cold["keys"] == warm["keys"]


def test_cli_list_shows_the_key_an_op_call_uses(shadow_metadata):
    env = _env(shadow_metadata)
    listed = subprocess.run([sys.executable, "-m", "aiter_lite", "list"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    rows = {tuple(line.split()[:2]): line.split()[-1] for line in listed.stdout.splitlines()[1:]}
    op = json.loads(_python(_KEY_OF_BOTH.format(pre="import torch, aiter_lite.ops"), env))
    for module, key in op["keys"].items():
        assert rows[(module, "cpu")] == key


def _counting_compiler(tmp_path: Path) -> tuple[Path, Path]:
    """A c++ wrapper that appends one line per call to a log, then runs the real compiler."""
    import shutil

    real = shutil.which("c++") or shutil.which("g++")
    if real is None:
        pytest.skip("no C++ compiler")
    bindir, log = tmp_path / "bin", tmp_path / "compiler_calls.log"
    bindir.mkdir()
    wrapper = bindir / "c++"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


@pytest.mark.slow
def test_prebuild_then_op_call_in_a_new_process_compiles_nothing(tmp_path, shadow_metadata):
    wrapper, log = _counting_compiler(tmp_path)
    env = _env(shadow_metadata, CXX=str(wrapper), AITER_LITE_CACHE_DIR=str(tmp_path / "cache"),
               AITER_LITE_LOCK_DIR=str(tmp_path / "locks"), AITER_LITE_LOG="warning")
    built = subprocess.run([sys.executable, "-m", "aiter_lite", "build", "module_causal_conv1d", "module_matmul",
                            "--backend", "cpu"], capture_output=True, text=True, env=env, timeout=900)
    assert built.returncode == 0, built.stderr
    calls = log.read_text().count("\n")
    assert calls >= 4, "the prebuild must have compiled both modules through the wrapper"
    out = _python("""
        import torch, aiter_lite
        y = aiter_lite.causal_conv1d(torch.randn(1, 8, 16), torch.randn(8, 4), None, activation="silu")
        c = aiter_lite.matmul(torch.randn(5, 3), torch.randn(3, 7))
        print(tuple(y.shape), tuple(c.shape))
    """, env)
    assert out.split() == ["(1,", "8,", "16)", "(5,", "7)"]
    assert log.read_text().count("\n") == calls, \
        "the op call rebuilt a module the CLI had prebuilt: " + _key_differences(tmp_path / "cache")


def _key_differences(cache: Path) -> str:
    """For each module with two artifacts of one backend: the key inputs (key_inputs.json) that differ."""
    lines = []
    for module_dir in sorted(p for p in cache.iterdir() if p.is_dir()):
        inputs = [json.loads(f.read_text()) for f in sorted(module_dir.glob("*/key_inputs.json"))]
        if len(inputs) == 2:
            a, b = inputs
            for field in sorted(set(a) | set(b)):
                if a.get(field) != b.get(field):
                    lines.append(f"{module_dir.name}.{field}: {a.get(field)!r} != {b.get(field)!r}")
    return "; ".join(lines)[:4000] or "no key_inputs.json pair differs"
