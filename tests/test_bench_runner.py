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


SUITES = ["bench_causal_conv1d.py", "bench_conv_bwd.py", "bench_matmul.py", "bench_cp_conv.py", "plan_vs_measure.py",
          "reliability/ranks.py", "reliability/soak.py", "reliability/sanitize.py"]


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
    sys.path.insert(0, str(REPO / "bench" / "lab"))
    import matmul_configs as issue6

    fwd = [dict(op="fwd", shape="2x4x8", B=2, D=4, L=8, W=4, dtype="fp16", impl=i, us=us, tbps=1 / us, rel_err=1e-4)
           for i, us in (("copy", 1.0), ("aiter_lite", 2.0), ("dao", 3.0))]
    assert "| fp16 | 2x4x8, 4 | 2.0 (0.50) |" in conv.tables(fwd, 1.0) and "geomean 1.50x" in conv.tables(fwd, 1.0)
    recs = []
    for m, n, k in issue6.ISSUE6_SHAPES:
        recs += [dict(M=m, N=n, K=k, dtype="bf16", impl="cublas", config=-1, us=1.0, tflops=100.0),
                 dict(M=m, N=n, K=k, dtype="bf16", impl="aiter_lite", config=-1, us=1.0, tflops=97.0,
                      variant="auto", kernel="wgmma 13", config_resolved=13),
                 dict(M=m, N=n, K=k, dtype="bf16", impl="aiter_lite", config=14, us=1.0, tflops=99.0,
                      variant="wgmma", kernel="wgmma 14", config_resolved=14)]
    assert "| bf16 | auto | geomean of 6 shapes >= 0.95 | 0.970 | yes |" in issue6.issue6_summary(recs)
    assert "oracle 0.990" in issue6.best_config_summary(recs) and "| 14 | bf16 |" in issue6.config_grid(recs)


def test_sanitizer_logs_are_attributed_and_judged():
    sys.path.insert(0, str(REPO / "bench" / "reliability"))
    import sanitize

    ours = ("========= Invalid __global__ write of size 4 bytes\n=========     at void aiter_lite::conv_kernel(...)\n"
            "=========     Saved host backtrace up to driver entry point\n=========     Host Frame: aiter_lite.so\n"
            "========= ERROR SUMMARY: 1 error\n")
    theirs = ("========= Uninitialized __global__ memory read of size 4 bytes\n=========     at at::native::fill\n"
              "=========     Saved host backtrace up to driver entry point\n=========     Host Frame: aiter_lite.so\n"
              "========= ERROR SUMMARY: 1 error\n")
    assert sanitize.parse_log(ours)["ours"] == 1 and sanitize.parse_log(theirs)["ours"] == 0  # host frames don't count
    sweep = "SWEEP conv PASS: 204 checks, 0 failed\n1 passed"
    assert sanitize.verdict("memcheck", "canary", sanitize.parse_log(ours), 9, "")[0]
    assert not sanitize.verdict("memcheck", "canary", sanitize.parse_log(theirs), 0, "")[0]
    assert sanitize.verdict("initcheck", "conv", sanitize.parse_log(theirs), 9, sweep)[0]  # torch's own report
    assert not sanitize.verdict("memcheck", "conv", sanitize.parse_log(ours), 9, sweep)[0]
    assert not sanitize.verdict("memcheck", "conv", sanitize.parse_log("no summary"), -9, "")[0]  # timed out
    racecheck = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert sanitize.verdict("racecheck", "conv", sanitize.parse_log(racecheck), 0, sweep)[0]
    assert not sanitize.verdict("racecheck", "conv", sanitize.parse_log(racecheck), 1, "SWEEP conv FAIL")[0]
