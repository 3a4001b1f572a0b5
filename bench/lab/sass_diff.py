"""Kernel-by-kernel SASS of one module's units in two checkouts: which kernels are identical, which changed,
which exist in one tree only (a refactor that must not touch the fast paths, checked without a GPU).

    PYTHONPATH=$PWD python3 bench/lab/sass_diff.py module_causal_conv1d --only bwd_rows --baseline /path/old \
        [--arch sm_90a] [--jobs 2] [--show SUBSTR]

Each unit of either tree (a sharded source once per shard) is compiled with the JIT's own flags
(tu_times.unit_command), disassembled with cuobjdump, and each kernel's instructions compared with
addresses and immediates blanked. `--show SUBSTR` prints a unified diff of the changed kernels whose
name has SUBSTR. Exit status 0 whatever differs: read the table."""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiter_lite.jit import default_registry, read_env
from aiter_lite.jit.registry import load_registry
from aiter_lite.jit.spec import make_spec
from tu_times import unit_command


def cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for site in map(Path, sys.path):
        candidate = site / "nvidia" / "cu13" / "bin" / "cuobjdump"
        if candidate.exists():
            # cuobjdump -sass runs nvdisasm from PATH (the nvidia-cuda-nvdisasm wheel puts it beside cuobjdump)
            os.environ["PATH"] = f"{candidate.parent}{os.pathsep}{os.environ.get('PATH', '')}"
            return str(candidate)
    raise SystemExit("cuobjdump not found (PATH, or the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels)")


def sass_functions(obj: Path, tool: str) -> dict[str, list[tuple[int, str]]]:
    """Mangled kernel name -> [(address, instruction text)] from cuobjdump -sass."""
    sass = subprocess.run([tool, "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
    funcs: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            current = m.group(1)
            funcs[current] = []
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if current and m:
            funcs[current].append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def kernels_of(obj: Path, tool: str) -> dict[str, list[str]]:
    """Demangled kernel name -> its instructions, hex immediates blanked."""
    funcs = {n: [re.sub(r"0x[0-9a-f]+", "X", ins) for _, ins in code] for n, code in sass_functions(obj, tool).items()}
    # keyed by the demangled name: the anonymous namespace's mangled name hashes the unit's path and shard, its
    # demangled form is "(anonymous namespace)" in every tree and shard
    names = demangled(list(funcs))
    return {names[n]: ins for n, ins in funcs.items()}


def tree_kernels(spec, only: str, tmp: Path, jobs: int, tool: str) -> dict[str, list[str]]:
    units = [u for u in spec.units if u.compiler == "device" and only in u.source.name]

    def one(i_unit):
        i, unit = i_unit
        out = tmp / f"{i:02d}.o"
        subprocess.run(unit_command(spec, unit, 1, out), check=True, capture_output=True)
        return kernels_of(out, tool)

    merged: dict[str, list[str]] = {}
    with ThreadPoolExecutor(jobs) as pool:
        for funcs in pool.map(one, enumerate(units)):
            merged.update(funcs)
    return merged


def demangled(names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    if not shutil.which("c++filt"):  # mangled names hash the unit's path: the two trees' kernels would never pair
        raise SystemExit("c++filt not found (binutils)")
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("--baseline", required=True, help="the other checkout's root")
    ap.add_argument("--only", default="", help="substring of the source file names to compile")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", default=None, help="print the diff of changed kernels whose name has this")
    args = ap.parse_args()
    env = read_env()
    archs = tuple(args.arch.split(","))
    base_root = Path(args.baseline).resolve()
    new_spec = make_spec(default_registry(env).get(args.module), "cuda", env, archs)
    base_spec = make_spec(load_registry([base_root / "jit_config.json"], base_root / "csrc").get(args.module),
                          "cuda", env, archs)
    tool = cuobjdump()
    tmp = Path(tempfile.mkdtemp(prefix="sass_diff-"))
    (tmp / "new").mkdir()
    (tmp / "base").mkdir()
    new = tree_kernels(new_spec, args.only, tmp / "new", args.jobs, tool)
    base = tree_kernels(base_spec, args.only, tmp / "base", args.jobs, tool)
    same = [n for n in new if n in base and new[n] == base[n]]
    changed = [n for n in new if n in base and new[n] != base[n]]
    only_new = [n for n in new if n not in base]
    only_base = [n for n in base if n not in new]
    print(f"{args.module} [{args.only or 'all units'}] {args.arch}: {len(same)} identical, {len(changed)} changed, "
          f"{len(only_new)} only in this tree, {len(only_base)} only in the baseline")
    for title, group in (("changed (instructions base -> new)", changed), ("only in this tree", only_new),
                         ("only in the baseline", only_base)):
        if group:
            print(f"{title}:")
            for n in sorted(group):
                counts = f"{len(base.get(n, []))} -> {len(new.get(n, []))}" if n in base and n in new else \
                    str(len(new.get(n, base.get(n, []))))
                print(f"  {counts:>13}  {n[:200]}")
    if args.show is not None:
        for n in changed:
            if args.show in n:
                print(f"--- {n[:200]}")
                sys.stdout.writelines(difflib.unified_diff([i + "\n" for i in base[n]], [i + "\n" for i in new[n]],
                                                           "base", "new", n=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
