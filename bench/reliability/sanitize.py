#!/usr/bin/env python3
"""compute-sanitizer over every kernel: memcheck, racecheck, initcheck and synccheck, each over each op's
sweep (tests/test_gpu_sanitize_sweep.py: test_conv, test_matmul, test_wgmma), one process per tool x op
under a timeout, several at once; a line per run and a verdict last (exit 1 unless every run is clean).

memcheck, racecheck and synccheck filter on kns=aiter_lite (our kernels' namespace), so torch's kernels
are not instrumented. initcheck runs unfiltered (a filtered kernel's writes would not count as
initialization) and counts only our reports: a report is ours when a line of it before the host
backtrace names aiter_lite. PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes every tensor its own allocation.
The canary (memcheck over test_canary: an out-of-bounds write planted in an aiter_lite kernel) must be
reported.

  python3 bench/reliability/sanitize.py [--tools memcheck,racecheck,initcheck,synccheck]
      [--ops conv,matmul,wgmma] [--jobs 5] [--timeout 300] [--quick] [--no-canary] [--logs DIR]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SWEEP = "tests/test_gpu_sanitize_sweep.py"
NOT_REPORTS = ("ERROR SUMMARY", "COMPUTE-SANITIZER", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
               "Saved host backtrace", "Host Frame", "Device Frame", "Warning:", "This warning")


def parse_log(text: str) -> dict:
    """The error count of a sanitizer log (racecheck: its errors + warnings) and which reports are ours."""
    counts = re.findall(r"ERROR SUMMARY: (\d+) error", text)
    counts += [str(int(e) + int(w)) for e, w in
               re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)]
    reports = []  # [header, ours, in the host backtrace yet]
    for line in text.splitlines():
        body = line[len("========="):] if line.startswith("=========") else ""
        if not body.strip():
            continue
        if not body.startswith("  ") and not body.strip().startswith(NOT_REPORTS):
            reports.append([body.strip(), "aiter_lite" in body, False])
        elif reports:
            reports[-1][2] |= "Saved host backtrace" in body
            reports[-1][1] |= not reports[-1][2] and "aiter_lite" in body
    ours = [r[0] for r in reports if r[1]]
    return {"errors": int(counts[-1]) if counts else None, "reports": len(reports), "ours": len(ours),
            "first": (ours or [r[0] for r in reports] or [""])[0]}


def verdict(tool: str, target: str, info: dict, rc: int, app: str) -> tuple:
    sweep = next((l for l in reversed(app.splitlines()) if l.startswith("SWEEP")), "")
    n = info["errors"]
    if target == "canary":
        ok = info["ours"] > 0
        return ok, "detected (filter and tool work)" if ok else "NOT DETECTED: the check proves nothing", sweep
    if n is None:
        return False, f"NO ERROR SUMMARY (timed out or crashed: rc {rc})", sweep
    swept = rc == 0 or (rc == 9 and " PASS" in sweep)  # pytest passed (or skipped), errors aside
    if tool == "initcheck":
        ok = info["ours"] == 0 and swept
        text = f"{info['ours']} in aiter_lite kernels ({n} in all)"
    else:
        ok, text = n == 0 and swept, f"{n} errors"
    return ok, f"{'clean' if ok else 'ERRORS'}: {text}" + ("" if swept else "; the sweep did not pass"), sweep


def run_one(san: str, tool: str, target: str, i: int, args) -> dict:
    log = args.logs / f"{tool}-{target}"
    cmd = [san, "--tool", tool, *([] if tool == "initcheck" else ["--kernel-name", "kns=aiter_lite"]),
           "--error-exitcode", "9", "--launch-timeout", "120", "--port", str(49152 + 32 * i), "--print-limit", "2000",
           "--log-file", f"{log}.san.log", sys.executable]
    cmd += ["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", f"{SWEEP}::test_{target}"]
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", AITER_LITE_SWEEP_QUICK="1" if args.quick else "0",
               AITER_LITE_SANITIZER_CANARY="1" if target == "canary" else "0")
    with open(f"{log}.app.log", "w") as out:
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:  # subprocess.run killed its child
            rc = -9
    app = Path(f"{log}.app.log").read_text(errors="replace")
    info = parse_log(Path(f"{log}.san.log").read_text(errors="replace") if Path(f"{log}.san.log").exists() else "")
    ok, text, sweep = verdict(tool, target, info, rc, app)
    print(f"SANITIZE {tool:9s} {target:7s} {'ok  ' if ok else 'FAIL'} {text} | rc {rc} | {sweep or '-'}"
          + ("" if ok or not info["first"] else f" | first: {info['first'][:120]}"), flush=True)
    return {"tool": tool, "target": target, "ok": ok, "rc": rc, "verdict": text, "sweep": sweep, **info}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tools", default="memcheck,racecheck,initcheck,synccheck")
    p.add_argument("--ops", default="conv,matmul,wgmma")
    p.add_argument("--jobs", type=int, default=5, help="runs at once")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("--quick", action="store_true", help="the sweeps' quick form (fewer widths, shapes, orientations)")
    p.add_argument("--no-canary", action="store_true")
    p.add_argument("--logs", type=Path, help="log dir (default $OUT/sanitize, else /tmp/aiter_lite_sanitize)")
    args = p.parse_args(argv)
    san = os.environ.get("COMPUTE_SANITIZER") or shutil.which("compute-sanitizer") or next(
        iter(sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True)), None)
    if not san:
        print("SANITIZE FAIL: compute-sanitizer not found (set COMPUTE_SANITIZER)")
        return 1
    if args.logs is None:
        args.logs = Path(os.environ["OUT"], "sanitize") if os.environ.get("OUT") else Path("/tmp/aiter_lite_sanitize")
    shutil.rmtree(args.logs, ignore_errors=True)
    args.logs.mkdir(parents=True)
    if subprocess.run([sys.executable, "-m", "aiter_lite", "-q", "build", "module_causal_conv1d", "module_matmul",
                       "--backend", "cuda"], cwd=REPO).returncode:  # outside the sanitizer; a no-op when warm
        print("SANITIZE FAIL: the modules did not build")
        return 1
    tools, ops = args.tools.split(","), args.ops.split(",")
    runs = [(t, o) for t in tools for o in ops] + ([] if args.no_canary or "memcheck" not in tools else
                                                 [("memcheck", "canary")])
    print(f"== {len(runs)} runs of {san}, {args.jobs} at a time, {args.timeout:.0f} s each at most", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda ir: run_one(san, *ir[1], ir[0], args), enumerate(runs)))
    (args.logs / "summary.json").write_text(json.dumps(rows, indent=1))
    ok = all(r["ok"] for r in rows)
    print(f"SANITIZE {'PASS' if ok else 'FAIL'}: {sum(r['ok'] for r in rows)}/{len(rows)} runs clean")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
