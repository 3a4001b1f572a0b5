"""Compile time of each translation unit of a module, with the JIT's own flags (docs/jit.md, "Cold builds").

    PYTHONPATH=$PWD python3 bench/lab/tu_times.py module_matmul [--arch sm_90a] [--threads 1] [--jobs 1]
        [--only wgmma] [--phases]

Each unit of the module's spec (a sharded source counts once per shard) is compiled into a temp dir,
`--jobs` at a time, exactly as build.ninja would (same compiler, flags, defines and arch flags), and
its wall time printed, longest first. `--threads` is what the JIT passes as --split-compile
(1: none). `--phases` adds nvcc's own per-phase times (`--time`: cicc, ptxas, the host compiler)."""
from __future__ import annotations

import argparse
import csv
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiter_lite.jit import default_registry, read_env
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
    args = ap.parse_args()

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
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if proc.returncode:
            print(shlex.join(cmd), proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
        shard = " ".join(d[2:] for d in unit.defines)
        return seconds, f"{unit.source.name} {shard}".strip(), proc.returncode, phases(Path(str(out) + ".csv"))

    start = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run, enumerate(units)))
    print(f"{args.module} {args.backend} {args.arch}: {len(units)} units, --jobs {args.jobs}, "
          f"--threads {args.threads}, {time.monotonic() - start:.1f} s in all")
    for seconds, name, rc, detail in sorted(results, reverse=True):
        print(f"{seconds:7.1f} s  {name}{'  FAILED' if rc else ''}{detail}")
    return 1 if any(r[2] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
