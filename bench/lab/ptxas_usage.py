"""Registers and spills of every kernel in some units of a module (ptxas -v with the JIT's own flags).

    PYTHONPATH=$PWD:$PWD/bench/lab python3 bench/lab/ptxas_usage.py SUBSTR [--module module_causal_conv1d] [--arch sm_90a]

Prints `regs | spill stores/loads | kernel` for each kernel of the units whose source name has SUBSTR."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from aiter_lite.jit import default_registry, read_env
from aiter_lite.jit.spec import make_spec
from tu_times import unit_command


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only")
    ap.add_argument("--module", default="module_causal_conv1d")
    ap.add_argument("--arch", default="sm_90a")
    args = ap.parse_args()
    env = read_env()
    spec = make_spec(default_registry(env).get(args.module), "cuda", env, (args.arch,))
    for unit in [u for u in spec.units if u.compiler == "device" and args.only in u.source.name]:
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(unit_command(spec, unit, 1, Path(d) / "o.o") + ["-Xptxas", "-v"],
                               capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[-3000:])
            return 1
        fn, spill = None, "spill ?"
        for line in r.stderr.splitlines():
            m = re.search(r"Compiling entry function '(\S+)'", line)
            if m:
                fn = m.group(1)
            m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                spill = f"spill {m.group(1)}/{m.group(2)}"
            m = re.search(r"Used (\d+) registers", line)
            if m and fn:
                name = subprocess.run(["c++filt", fn], capture_output=True, text=True).stdout.strip()
                print(f"{m.group(1):>4} regs | {spill} | {name[:220]}")
                fn = None
    return 0


if __name__ == "__main__":
    sys.exit(main())
