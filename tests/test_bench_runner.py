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


SUITES = ["bench_causal_conv1d.py", "bench_conv_bwd.py", "bench_matmul.py", "bench_cp_conv.py", "host_overhead_conv.py",
          "plan_vs_measure.py", "reliability/ranks.py", "reliability/soak.py", "reliability/sanitize_sweep.py"]


def test_every_suite_imports_and_parses_its_arguments():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for suite in SUITES:
        r = subprocess.run([sys.executable, str(REPO / "bench" / suite), "--help"], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0 and "usage:" in r.stdout, suite + r.stderr[-2000:]


def test_suite_tables_from_records():
    sys.path.insert(0, str(REPO / "bench"))
    import bench_causal_conv1d as conv
    import bench_matmul as mm

    fwd = [dict(op="fwd", shape="2x4x8", B=2, D=4, L=8, W=4, dtype="fp16", impl=i, us=us, tbps=1 / us, rel_err=1e-4)
           for i, us in (("copy", 1.0), ("aiter_lite", 2.0), ("dao", 3.0))]
    assert "| fp16 | 2x4x8, 4 | 2.0 (0.50) |" in conv.tables(fwd, 1.0) and "geomean 1.50x" in conv.tables(fwd, 1.0)
    recs = []
    for m, n, k in mm.ISSUE6_SHAPES:
        recs += [dict(M=m, N=n, K=k, dtype="bf16", impl="cublas", config=-1, us=1.0, tflops=100.0),
                 dict(M=m, N=n, K=k, dtype="bf16", impl="aiter_lite", config=-1, us=1.0, tflops=97.0,
                      variant="auto", kernel="wgmma 13", config_resolved=13),
                 dict(M=m, N=n, K=k, dtype="bf16", impl="aiter_lite", config=14, us=1.0, tflops=99.0,
                      variant="wgmma", kernel="wgmma 14", config_resolved=14)]
    assert "| bf16 | auto | geomean of 6 shapes >= 0.95 | 0.970 | yes |" in mm.issue6_summary(recs)
    assert "oracle 0.990" in mm.best_config_summary(recs) and "| 14 | bf16 |" in mm.markdown_tables(recs)
