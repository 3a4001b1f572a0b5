"""A build you can see (issue 22, point 2): by default, one line on stderr when a build starts, progress
at least every 10 s, one line when done; nothing on a cache hit, nothing ever on stdout; AITER_LITE_LOG
or a configured `aiter_lite` logger silences it."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

_LOAD = """
    import logging, sys
    {pre}
    from pathlib import Path
    from aiter_lite.jit import get_module, load_registry
    reg = Path({registry!r})
    get_module("module_tiny", "cpu", registry=load_registry([reg], reg.parent))
"""


def _load(tiny, pre="", **env):
    code = textwrap.dedent(_LOAD.format(pre=textwrap.dedent(pre).replace("\n", "\n    "),
                                        registry=str(tiny.registry_path)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=tiny.env(**env),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "", "build messages must never go to stdout"
    return r.stderr


def test_a_build_announces_itself_and_a_cache_hit_is_silent(tiny):
    err = _load(tiny)
    lines = err.splitlines()
    start = [l for l in lines if "building for cpu" in l]
    assert len(start) == 1, err
    assert "module_tiny" in start[0] and "once" in start[0] and str(tiny.cache) in start[0]
    assert any("[1/2" in l and "tiny.cpp" in l for l in lines), err
    assert any("built for cpu in" in l for l in lines), err
    assert all(l.startswith("aiter_lite: ") for l in lines), err
    assert _load(tiny) == "", "a cache hit prints nothing"


@pytest.mark.parametrize("how", ["env", "logger"])
def test_the_messages_can_be_silenced(tiny, how):
    if how == "env":
        err = _load(tiny, AITER_LITE_LOG="warning")
    else:
        err = _load(tiny, pre='logging.getLogger("aiter_lite").setLevel(logging.WARNING)')
    assert err == ""


def test_a_configured_root_logger_prints_each_line_once(tiny):
    err = _load(tiny, pre='logging.basicConfig(level=logging.INFO, format="ROOT %(message)s")')
    start = [l for l in err.splitlines() if "building for cpu" in l]
    assert len(start) == 1 and start[0].startswith("ROOT "), err


def test_a_long_compile_reports_progress_while_it_runs(tiny, tmp_path):
    import shutil

    real = shutil.which("c++") or shutil.which("g++")
    slow = tmp_path / "slow-c++"
    slow.write_text(f'#!/bin/sh\nsleep 2\nexec "{real}" "$@"\n')
    slow.chmod(0o755)
    err = _load(tiny, pre="import aiter_lite.jit.progress as p; p.PROGRESS_EVERY_S = 0.5", CXX=str(slow))
    ticks = [l for l in err.splitlines() if "still compiling tiny.cpp" in l]
    assert len(ticks) >= 2, err
    assert "[0/2" in ticks[0]


def test_a_bad_log_level_names_the_variable():
    from aiter_lite.jit import read_env

    with pytest.raises(ValueError, match="AITER_LITE_LOG"):
        read_env({"AITER_LITE_LOG": "loud"})
    assert read_env({"AITER_LITE_LOG": "WARNING"}).log_level == 30
    assert read_env({}).log_level is None


def test_cli_quiet_build_prints_only_errors(tiny):
    r = subprocess.run([sys.executable, "-m", "aiter_lite", "-q", "build", "module_tiny", "--backend", "cpu"],
                       capture_output=True, text=True, timeout=300,
                       env=tiny.env(AITER_LITE_JIT_CONFIG=str(tiny.registry_path)))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
