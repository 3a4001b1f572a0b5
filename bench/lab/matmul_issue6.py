"""The Hopper matmul issue (6, closed): its shapes and targets against cuBLAS on an H100, and which config
of the table is fastest per shape against the default's pick (docs/matmul.md, the issue-6 sections).

    bench/gpu.sh lab/matmul_issue6.py [--variants auto,wgmma,tensor_core] [--rounds 3]
    bench/gpu.sh lab/matmul_issue6.py --configs --sweep-path wgmma_16 --sweep-shapes issue6 \\
        --sweep-dtypes bf16,fp16 --sweep-rep-ms 30

fp16 and bf16 on the issue's eight shapes, tf32 at 4096^3, through bench_matmul.run (its options);
--configs adds its per-config sweep (on CONFIG_SHAPES, or the issue's shapes with --sweep-shapes issue6).
Printed last: the fastest config per shape (with --configs) and the targets: >= 1.00x cuBLAS at 4096^3
and 8192^3, a geomean >= 0.95x over the other six, tf32 >= 0.90x at 4096^3.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_matmul as bm  # noqa: E402
from records import geomean, md_table, write_run  # noqa: E402

ISSUE6_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000),
                 (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096)]
ISSUE6_AT_LEAST_1 = ISSUE6_SHAPES[:2]  # bf16, fp16 >= 1.00x
ISSUE6_GEOMEAN = ISSUE6_SHAPES[2:]     # geomean >= 0.95x
ISSUE6_TF32 = [(4096, 4096, 4096)]     # tf32 >= 0.9x


def main(argv=None) -> int:
    p = bm.parser()
    p.description = __doc__
    p.add_argument("--configs", action="store_true", help="the per-config sweep too")
    p.add_argument("--sweep-shapes", choices=("default", "issue6"), default="default", help="per-config sweep shapes")
    args = bm.parse_args(argv, p, default_modes=("fp16", "bf16", "tf32"))
    bm.need_cuda("matmul_issue6")
    shapes = args.shape_list or ISSUE6_SHAPES
    sweep = (args.shape_list or (ISSUE6_SHAPES if args.sweep_shapes == "issue6" else bm.CONFIG_SHAPES)
             if args.configs else None)
    records = bm.run(args, lambda mode: ISSUE6_TF32 if mode == "tf32" else shapes, sweep)
    write_run(args.out, bm.torch.cuda.get_device_name(), bm.torch.__version__, records)
    print("\n" + bm.markdown_tables(records))
    best = best_config_summary(records)
    print("\n" + best if best else "")
    print("\n" + issue6_summary(records))
    return 0


def best_config_summary(records) -> str:
    """Per (dtype, shape) of the issue's shapes in the sweep: the fastest config and the default's pick
    (variant auto), as ratios to cuBLAS; then per dtype the geomean target if every shape had run its
    fastest config ("oracle") beside the default's."""
    sweep = [r for r in records if r["impl"] == "aiter_lite" and r["config"] >= 0]
    auto = {(r["dtype"], bm.shape_of(r)): r for r in records
            if r["impl"] == "aiter_lite" and r["config"] == -1 and r.get("variant", "auto") == "auto"}
    keys = sorted({(r["dtype"], bm.shape_of(r)) for r in sweep if bm.shape_of(r) in ISSUE6_SHAPES},
                  key=lambda x: (x[0], ISSUE6_SHAPES.index(x[1])))
    rows, oracle, chosen = [], {}, {}
    for dtype, shape in keys:
        top = max((r for r in sweep if (r["dtype"], bm.shape_of(r)) == (dtype, shape)), key=lambda r: r["tflops"])
        try:
            peer = bm.cublas_of(records, top)["tflops"]
        except StopIteration:
            continue
        d = auto.get((dtype, shape))
        rows.append([dtype, "×".join(map(str, shape)), f"{peer:.1f}", f"{top['config']} ({top['tflops']:.1f}, "
                     f"{top['tflops'] / peer:.3f})", "-" if d is None else
                     f"{d.get('config_resolved', -1)}: {d['tflops']:.1f}, {d['tflops'] / peer:.3f}"])
        if shape in ISSUE6_GEOMEAN:
            oracle.setdefault(dtype, []).append(top["tflops"] / peer)
            chosen.setdefault(dtype, []).extend([] if d is None else [d["tflops"] / peer])
    for dtype in sorted(oracle):
        o, c = (f"{geomean(xs):.3f}" if len(xs) == len(ISSUE6_GEOMEAN) else "-" for xs in (oracle[dtype],
                                                                                           chosen[dtype]))
        rows.append([dtype, "geomean of 6", "", f"oracle {o}", f"default {c}"])
    return md_table(["dtype", "M×N×K", "cuBLAS", "fastest config (TFLOP/s, ratio)", "default (cfg: TFLOP/s, ratio)"],
                    rows) if rows else ""


def issue6_summary(records) -> str:
    """The issue's targets, per dtype and variant: ratio to cuBLAS (aiter_lite TFLOP/s / cuBLAS TFLOP/s)."""
    ratios = {(r["dtype"], r.get("variant", "auto"), bm.shape_of(r)): r["tflops"] / bm.cublas_of(records, r)["tflops"]
              for r in records if r["impl"] == "aiter_lite" and r["config"] == -1}
    rows = []

    def row(dtype, variant, target, value, bound):
        met = "-" if value is None else "yes" if value >= bound else "no"
        rows.append([dtype, variant, target, "-" if value is None else f"{value:.3f}", met])

    for dtype, variant in sorted({(d, v) for d, v, _ in ratios}):
        if dtype == "tf32":
            for s in ISSUE6_TF32:
                row(dtype, variant, f"{'x'.join(map(str, s))} >= 0.90", ratios.get((dtype, variant, s)), 0.90)
            continue
        for s in ISSUE6_AT_LEAST_1:
            row(dtype, variant, f"{'x'.join(map(str, s))} >= 1.00", ratios.get((dtype, variant, s)), 1.00)
        got = [ratios.get((dtype, variant, s)) for s in ISSUE6_GEOMEAN]
        row(dtype, variant, "geomean of 6 shapes >= 0.95", geomean(got) if None not in got else None, 0.95)
    return md_table(["dtype", "variant", "target", "measured", "met"], rows)


if __name__ == "__main__":
    sys.exit(main())
