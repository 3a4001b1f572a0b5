"""Instructions inside the loops of some kernels (SASS, sm_90a): how many a loop body holds, by opcode, without a GPU.

    PYTHONPATH=$PWD:$PWD/bench/lab python3 bench/lab/sass_loops.py KERNEL_SUBSTR [--only bwd_rows] [--shard 3]
        [--module module_causal_conv1d] [--arch sm_90a] [--top 12]

Compiles the units whose file name has --only (one shard of a sharded file with --shard), disassembles them and, for
each kernel whose demangled name has KERNEL_SUBSTR (every substring, separated by '&', must match), lists each loop
(a backward branch and the instructions from its target to it) with its instruction count and top opcodes. A loop
that holds another is listed with its own count, the inner loop's included. Issued instructions an element follow
from the loop's count and the elements one trip covers (the kernel's own arithmetic: say so in the notes you take)."""
from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from aiter_lite.jit import default_registry, read_env
from aiter_lite.jit.spec import make_spec
from sass_diff import cuobjdump, demangled, sass_functions
from tu_times import unit_command


def opcode(ins: str) -> str:
    ins = re.sub(r"^@!?U?P\w+\s+", "", ins)  # predicate guard
    return ins.split()[0].split(".")[0] if ins else ""


def loops(code: list[tuple[int, str]]) -> list[tuple[int, int, list[str]]]:
    """(start address, branch address, instructions) of every backward branch."""
    found = []
    for addr, ins in code:
        target = re.search(r"0x([0-9a-f]+)", ins) if opcode(ins) == "BRA" else None
        if target:
            t = int(target.group(1), 16)
            if t <= addr:
                found.append((t, addr, [i for a, i in code if t <= a <= addr]))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", help="substrings of the demangled kernel name, joined by '&'")
    ap.add_argument("--only", default="bwd_rows")
    ap.add_argument("--shard", type=int, default=None)
    ap.add_argument("--module", default="module_causal_conv1d")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--histogram", action="store_true", help="also every opcode of the whole kernel, by count")
    args = ap.parse_args()
    env = read_env()
    spec = make_spec(default_registry(env).get(args.module), "cuda", env, (args.arch,))
    units = [u for u in spec.units if u.compiler == "device" and args.only in u.source.name]
    if args.shard is not None:
        units = [u for u in units if f"-DAITER_LITE_SHARD={args.shard}" in u.defines]
    tool = cuobjdump()
    wanted = [s for s in args.kernel.split("&") if s]
    with tempfile.TemporaryDirectory() as d:
        for i, unit in enumerate(units):
            obj = Path(d) / f"{i}.o"
            subprocess.run(unit_command(spec, unit, 1, obj), check=True, capture_output=True)
            funcs = sass_functions(obj, tool)
            names = demangled(list(funcs))
            for mangled, code in funcs.items():
                name = names[mangled]
                if not all(s in name for s in wanted):
                    continue
                print(f"{len(code):6d} instructions  {name[:230]}")
                if args.histogram:
                    counts = collections.Counter(opcode(x) for _, x in code).most_common()
                    print("    kernel: " + " ".join(f"{k} {v}" for k, v in counts))
                for start, end, body in loops(code):
                    top = collections.Counter(opcode(x) for x in body).most_common(args.top)
                    print(f"    loop {start:#x}..{end:#x}: {len(body)} instructions: "
                          + " ".join(f"{k} {v}" for k, v in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
