"""Compile time of each translation unit of a module, with the JIT's own flags (docs/jit.md, "Cold builds").

    PYTHONPATH=$PWD python3 bench/lab/tu_times.py module_matmul [--arch sm_90a] [--threads 1] [--jobs 1]
        [--only wgmma] [--phases] [--baseline /path/to/other/checkout]

Each unit of the module's spec (a sharded source counts once per shard) is compiled into a temp dir,
`--jobs` at a time, exactly as build.ninja would (same compiler, flags, defines and arch flags), and
its CPU seconds (user + sys of the compiler and its children) and wall time printed, most CPU first. `--threads` is what the JIT passes as --split-compile
(1: none). `--phases` adds nvcc's own per-phase times (`--time`: cicc, ptxas, the host compiler).
`--baseline ROOT`: an A/B against another checkout (its jit_config.json and csrc/): each unit of either
tree is compiled at the same time as its namesake of the other (so a shared machine's load hits both
alike), and the table shows both CPU times; units only one tree has run alone."""
from __future__ import annotations

import argparse
import csv
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiter_lite.jit import default_registry, read_env
from aiter_lite.jit.registry import load_registry
from aiter_lite.jit.ninja import parallel_flags
from aiter_lite.jit.spec import make_spec


def unit_command(spec, unit, threads: int, out: Path) -> list[str]:
    if unit.compiler == "cxx":
        return [spec.cxx.path, *spec.cxx_flags, *unit.defines, "-c", str(unit.source), "-o", str(out)]
    return [spec.device_compiler.path, *spec.device_flags, *parallel_flags(spec, threads), *unit.arch_flags,
            *unit.defines, "-c", str(unit.source), "-o", str(out)]


def phases(csv_path: Path) -> str:
    if not csv_path.exists():
        return ""
    totals: dict[str, float] = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f, skipinitialspace=True):
            row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
            phase = row.get("phase name", "")
            ms = float(row.get("metric") or 0) if row.get("unit") == "ms" else 0.0
            totals[phase] = totals.get(phase, 0.0) + ms
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:4]
    return "  [" + ", ".join(f"{k} {v / 1e3:.1f}s" for k, v in top) + "]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--arch", default="sm_90a", help="comma-separated target archs")
    ap.add_argument("--threads", type=int, default=1, help="--split-compile threads per device unit")
    ap.add_argument("--jobs", type=int, default=1, help="units compiled at once")
    ap.add_argument("--only", default="", help="substring: time only the units whose file name has it")
    ap.add_argument("--phases", action="store_true", help="nvcc --time: per-phase seconds")
    ap.add_argument("--baseline", default="", help="another checkout's root: A/B, unit by unit")
    args = ap.parse_args()
    if args.baseline:
        return ab(args)

    env = read_env()
    spec = make_spec(default_registry(env).get(args.module), args.backend, env, tuple(args.arch.split(",")))
    units = [u for u in spec.units if args.only in u.source.name]
    tmp = Path(tempfile.mkdtemp(prefix="tu_times-"))

    def run(i_unit):
        i, unit = i_unit
        out = tmp / f"{i:02d}_{unit.source.name}.o"
        cmd = unit_command(spec, unit, args.threads, out)
        if args.phases and unit.compiler == "device":
            cmd += ["--time", str(out) + ".csv"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)  # this compile's own CPU time (its children included)
        seconds = time.monotonic() - start
        rc = os.waitstatus_to_exitcode(status)
        if rc:
            print(shlex.join(cmd), output, sep="\n", file=sys.stderr)
        shard = " ".join(d[2:] for d in unit.defines if "SHARD" in d)
        cpu = usage.ru_utime + usage.ru_stime
        return cpu, seconds, f"{unit.source.name} {shard}".strip(), rc, phases(Path(str(out) + ".csv"))

    start = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run, enumerate(units)))
    print(f"{args.module} {args.backend} {args.arch}: {len(units)} units, --jobs {args.jobs}, "
          f"--threads {args.threads}, {time.monotonic() - start:.1f} s in all")
    print(f"  CPU s   wall s  unit  (CPU s in all: {sum(r[0] for r in results):.1f})")
    for cpu, seconds, name, rc, detail in sorted(results, reverse=True):
        print(f"{cpu:7.1f} {seconds:8.1f}  {name}{'  FAILED' if rc else ''}{detail}")
    return 1 if any(r[3] for r in results) else 0


def unit_name(unit) -> str:
    return f"{unit.source.name} {' '.join(d[2:] for d in unit.defines if 'SHARD' in d)}".strip()


def compile_cpu(cmd: list[str]) -> tuple[float, int]:
    """CPU seconds (user + sys, the compiler's children included) and exit code of one compile."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc:
        print(shlex.join(cmd), output, sep="\n", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime, rc


def ab(args) -> int:
    env = read_env()
    archs = tuple(args.arch.split(","))
    base_root = Path(args.baseline).resolve()
    specs = {"new": make_spec(default_registry(env).get(args.module), args.backend, env, archs),
             "base": make_spec(load_registry([base_root / "jit_config.json"], base_root / "csrc").get(args.module),
                               args.backend, env, archs)}
    tmp = Path(tempfile.mkdtemp(prefix="tu_ab-"))
    units = {side: {unit_name(u): u for u in spec.units if args.only in u.source.name} for side, spec in specs.items()}
    names = list(dict.fromkeys([*units["base"], *units["new"]]))
    rows = []
    for i, name in enumerate(names):
        jobs = [(side, units[side][name]) for side in ("base", "new") if name in units[side]]
        with ThreadPoolExecutor(2) as pool:
            cpu = dict(zip([side for side, _ in jobs], pool.map(
                lambda job: compile_cpu(unit_command(specs[job[0]], job[1], args.threads, tmp / f"{i:02d}_{job[0]}.o")),
                jobs)))
        rows.append((name, cpu.get("base", (0.0, 0))[0], cpu.get("new", (0.0, 0))[0],
                     any(rc for _, rc in cpu.values())))
        print(f"{rows[-1][1]:7.1f} {rows[-1][2]:7.1f}  {name}{'  FAILED' if rows[-1][3] else ''}", flush=True)
    print(f"{args.module} {args.backend} {args.arch}, --threads {args.threads}: CPU s, base = {base_root}")
    print(f"{'base':>7} {'new':>7}  unit")
    for name, b, n, failed in sorted(rows, key=lambda r: -max(r[1], r[2])):
        print(f"{b:7.1f} {n:7.1f}  {name}{'  FAILED' if failed else ''}")
    print(f"{sum(r[1] for r in rows):7.1f} {sum(r[2] for r in rows):7.1f}  total ({len(units['base'])} and "
          f"{len(units['new'])} units)")
    return 1 if any(r[3] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
