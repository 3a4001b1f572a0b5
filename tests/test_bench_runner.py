"""bench/gpu.sh (the one device runner) and bench/peer_cache.py, on the CPU: suites run in order with
their logs under $OUT, a failing or unknown suite makes the call fail, and the peers are built once."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_runs_suites_in_order_and_reports_failures(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path))
    r = subprocess.run(["bash", str(REPO / "bench" / "gpu.sh"), "cmd", "echo", "first", "+", "cmd", "false", "+",
                        "no_such_suite"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (tmp_path / "1_cmd.txt").read_text() == "first\n"
    assert "rc 1" in r.stdout and "unknown suite 'no_such_suite'" in r.stdout
    assert "torch" in (tmp_path / "env.txt").read_text()  # the device line


def test_help_lists_the_suites():
    r = subprocess.run(["bash", str(REPO / "bench" / "gpu.sh"), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    for suite in ("conv", "matmul", "host", "planner", "reliability", "sanitize", "tests", "build", "lab/"):
        assert f"\n  {suite}" in r.stdout, suite


def test_peer_cache_without_peers_then_cached(tmp_path):
    script = [sys.executable, str(REPO / "bench" / "peer_cache.py"), "--cache", str(tmp_path / "cache")]
    r = subprocess.run([*script, "--peers", str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "carry .peers" in r.stdout
    (tmp_path / "cache" / "site").mkdir(parents=True)
    (tmp_path / "cache" / "site" / "READY").write_text("built earlier\n")
    r = subprocess.run([*script, "--peers", str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "cached" in r.stdout and "built earlier" in r.stdout
