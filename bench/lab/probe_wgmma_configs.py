"""Chosen wgmma configs against cuBLAS on chosen shapes, in interleaved rounds, with and without the
row repack (ops/matmul_repack.py) of operands whose rows are not 128-byte aligned.

    python bench/lab/probe_wgmma_configs.py --configs 17,21,27,28 --shapes 3000x3000x3000,4096x4096x4096 \
        [--dtypes bf16,fp16] [--rounds 3] [--no-repack] [--modules module_matmul,...] [--out probe.json]

Each round times cuBLAS (torch.matmul), the default (config -1) and each listed config with
triton.testing.do_bench (medians, L2 flushed), on fresh random normal data per shape and dtype;
every output is first checked against cuBLAS (relative Frobenius error). With several --modules
(builds of module_matmul registered in AITER_LITE_JIT_CONFIG: experiment variants, or the previous
revision of the sources for an A/B of a kernel change) every module runs the same list in the same
rounds. Prints TFLOP/s and the
ratio to cuBLAS per round and the median ratio. --no-repack runs the kernels on the operands as they
are (a misaligned operand then goes straight to the kernel), which is what a config that handles
such rows itself needs to be compared on.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="", help="comma-separated wgmma config indices (besides the default)")
    ap.add_argument("--shapes", required=True, help="comma-separated MxNxK")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=60.0, help="do_bench rep per timing (ms)")
    ap.add_argument("--no-repack", action="store_true", help="never repack misaligned operands")
    ap.add_argument("--b-layout", choices=("n", "t"), default="n",
                    help="n: b a row-major [K, N] tensor; t: b = w.t() for a row-major [N, K] w")
    ap.add_argument("--out", default=None, help="JSON with every timing")
    ap.add_argument("--modules", default="module_matmul",
                    help="comma-separated builds of module_matmul (extra registries in AITER_LITE_JIT_CONFIG)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the check against cuBLAS (experiment builds whose output is wrong by design)")
    args = ap.parse_args(argv)

    import triton.testing

    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan
    from aiter_lite.testing import dtype_names

    ops_matmul = sys.modules["aiter_lite.ops.matmul"]
    modules = [m for m in args.modules.split(",") if m]
    if args.no_repack:
        sys.modules["aiter_lite.ops.matmul"].maybe_repack_pair = lambda a, b, flops: (a, b)
    configs = [-1] + [int(c) for c in args.configs.split(",") if c]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    dev = torch.cuda.get_device_name()
    print(f"{dev}, torch {torch.__version__}, repack {'off' if args.no_repack else 'on'}, B layout {args.b_layout}")
    records = []
    for m, n, k in shapes:
        for name in dtype_names(args.dtypes, allowed=DTYPES):
            dtype = DTYPES[name]
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype) if args.b_layout == "n" else \
                torch.randn(n, k, device="cuda", dtype=dtype).t()
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ref = torch.matmul(a, b).float()
            runs = {"cublas": lambda: torch.matmul(a, b, out=out)}
            labels = {}
            entries = [(mod, c) for mod in modules for c in configs]  # (module, config)

            def call(mod, c):
                ops_matmul.MODULE = mod
                return aiter_lite.matmul(a, b, out, config=c)

            for mod, c in entries:
                res = call(mod, c)
                err = ((res.float() - ref).norm() / ref.norm()).item()
                if not err < 1e-2 and not args.no_check:
                    print(f"MISMATCH {m}x{n}x{k} {name} {mod} config {c}: rel err {err:.3g}")
                    return 1
                labels[mod, c] = str(matmul_plan(a, b, out, config=c))
                runs[mod, c] = (lambda mod=mod, c=c: call(mod, c))
            flop = 2.0 * m * n * k
            per = {key: [] for key in runs}
            for _ in range(args.rounds):
                for key, fn in runs.items():
                    per[key].append(triton.testing.do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median"))
            base = statistics.median(per["cublas"])
            line = [f"{m}x{n}x{k} {name}: cuBLAS {flop / base / 1e9:.0f}"]
            for mod, c in entries:
                ratios = [cb / ours for cb, ours in zip(per["cublas"], per[mod, c])]
                ms = statistics.median(per[mod, c])
                prefix = f"{mod} " if len(modules) > 1 else ""
                line.append(f"{prefix}{'auto' if c == -1 else c} [{labels[mod, c]}] {flop / ms / 1e9:.0f} "
                            f"({statistics.median(ratios):.3f}x; rounds {', '.join(f'{r:.3f}' for r in ratios)})")
                records.append({"M": m, "N": n, "K": k, "dtype": name, "module": mod, "config": c,
                                "kernel": labels[mod, c], "us": [x * 1e3 for x in per[mod, c]],
                                "cublas_us": [x * 1e3 for x in per["cublas"]],
                                "ratio_median": statistics.median(ratios), "repack": not args.no_repack,
                                "b_layout": args.b_layout})
            print("\n  ".join(line))
    if args.out:
        Path(args.out).write_text(json.dumps({"device": dev, "date": datetime.date.today().isoformat(),
                                              "torch": torch.__version__, "records": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
