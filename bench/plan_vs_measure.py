"""The tile planner's ranking against measurement (docs/planner.md). Per shape and mode (fp16, bf16: the
tensor_core_16 configs; fp32 strict: SIMT; tf32: tensor_core_tf32) it times every config that fits the
GPU's shared memory, the default call (autotuning off), the same call autotuned (a private tuned-config
file) and torch.matmul, each result checked once against float64 (medians, L2 flushed), and sets the
measured best beside the planner's order: its top 3, the best's rank there, how much slower its #1 ran.

    python bench/plan_vs_measure.py [--quick] [--out PATH]           # on a CUDA GPU, ~2-3 min on an H100
    python bench/plan_vs_measure.py --dry-run [--device h100]        # any machine: what would be measured
    python bench/plan_vs_measure.py --from-json PATH [--replan] [--update-docs docs/planner.md]

--out: the run's "records" (impl cublas, aiter_lite per config, aiter_lite_auto, aiter_lite_tuned) and
"comparisons"; exit 1 if a result is off. --from-json prints a run's table again (--replan: ranked by the
current planner; --update-docs: also between the PLAN VS MEASURE markers of that file).
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from records import parse_shapes, read_run, write_run  # noqa: E402

from aiter_lite.tuning.matmul_configs import configs_for, tc_config_on_sm90  # noqa: E402
from aiter_lite.tuning.planner import rank_table_configs, table_order  # noqa: E402

# (M, N, K): big square (compute bound, many configs tie in the model), a mid square, a K-heavy small
# output (few tiles: wave quantization), a skinny-M GEMM and a decode-like one (memory bound), and an
# LLM MLP shape (N = 11008: partial tiles along N). 8192^3 behaves like 4096^3 in the model and costs
# the most time, so it is left to --shapes.
SHAPES = [(4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 4096), (128, 8192, 8192), (16, 4096, 4096),
          (4096, 11008, 4096)]
QUICK_SHAPES = [(4096, 4096, 4096), (128, 8192, 8192)]
# mode -> (config path, planner dtype, aiter_lite variant, allow_tf32)
MODES = {"fp16": ("tensor_core_16", "fp16", "tensor_core", False),
         "bf16": ("tensor_core_16", "bf16", "tensor_core", False),
         "fp32": ("simt", "fp32", "tiled", False),
         "tf32": ("tensor_core_tf32", "tf32", "tensor_core", True)}
# Relative Frobenius error allowed against float64 (tests/test_gpu_matmul.py).
TOLERANCE = {"fp16": 2e-3, "bf16": 1e-2, "fp32": 1e-5, "tf32": 6e-4}
DOCS_BEGIN = "<!-- BEGIN PLAN VS MEASURE (bench/plan_vs_measure.py --update-docs) -->"
DOCS_END = "<!-- END PLAN VS MEASURE -->"


def tflops(m: int, n: int, k: int, us: float) -> float:
    return 2.0 * m * n * k / (us * 1e-6) / 1e12


# ---- the plan (no GPU needed) -------------------------------------------------------------------
def planned(shape, mode: str, model, max_smem: int) -> dict:
    """What gets timed for one shape and mode, and the planner's view of it."""
    m, n, k = shape
    path, pdtype, variant, tf32 = MODES[mode]
    elem = 2 if mode in ("fp16", "bf16") else 4
    fits = [c.index for c in configs_for(path) if c.smem_bytes(elem) <= max_smem]
    ests = {e.config.index: e for e in rank_table_configs(m, n, k, pdtype, model, path=path)}
    order = [e.config.index for e in table_order(ests.values())]
    return {"M": m, "N": n, "K": k, "dtype": mode, "path": path, "variant": variant, "allow_tf32": tf32,
            "configs": fits, "planner_order": order,
            "predicted_us": {str(i): (round(e.predicted_us, 2) if math.isfinite(e.predicted_us) else None)
                             for i, e in ests.items()},
            "pruned": {str(i): e.reasons for i, e in ests.items() if e.pruned}}


def dry_run(shapes, modes, model, max_smem: int) -> int:
    print(f"planner device model: {model.name}; shared memory per block {max_smem // 1024} KB")
    n_timings = 0
    for shape in shapes:
        for mode in modes:
            p = planned(shape, mode, model, max_smem)
            n_timings += len(p["configs"]) + 2
            top = ", ".join(f"{i} ({p['predicted_us'][str(i)]:.1f} us)" for i in p["planner_order"][:3])
            print(f"{'x'.join(map(str, shape)):>16} {mode}: torch.matmul, auto + configs {p['configs']} "
                  f"(variant={p['variant']}, allow_tf32={p['allow_tf32']}); planner top 3: {top}")
    print(f"{n_timings} timings, each result checked once against float64")
    return 0


# ---- measurement (CUDA) -------------------------------------------------------------------------
def measure(args) -> int:
    import tempfile

    import torch

    import aiter_lite
    from aiter_lite.tuning import autotune
    from common import make_timer, set_torch_tf32 as set_tf32
    from aiter_lite.tuning.hardware import device_from_torch

    if not torch.cuda.is_available():
        print("plan_vs_measure: needs a CUDA GPU (use --dry-run to list the measurements)", file=sys.stderr)
        return 2
    props, device, dev_name, model = (torch.cuda.get_device_properties(0), torch.device("cuda"),
                                      torch.cuda.get_device_name(), device_from_torch())
    sms = props.multi_processor_count
    max_smem = int(getattr(props, "shared_memory_per_block_optin", 0) or model.smem_per_block)
    time_us, timer = make_timer(args.warmup_ms, args.rep_ms)
    print(f"device: {dev_name} ({sms} SMs), torch {torch.__version__}, timer {timer}; "
          f"planner model: {model.name}", flush=True)
    t_start = time.time()
    gen = torch.Generator(device=device).manual_seed(0)
    records, comparisons, bad = [], [], []
    tune_dir = Path(tempfile.mkdtemp(prefix="plan_vs_measure_"))
    tuner = autotune.Autotuner(autotune.TunedConfigStore(tune_dir / autotune.FILE_NAME, tune_dir / "locks"))
    autotune.configure(enabled=False)  # the default call is measured untuned, whatever the environment

    for shape in args.shapes:
        m, n, k = shape
        inputs = {}
        for mode in args.modes:
            p = planned(shape, mode, model, max_smem)
            dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode, torch.float32)
            if dtype not in inputs:  # fp32 and tf32 share inputs and reference
                a = torch.randn(m, k, device=device, generator=gen).to(dtype)
                b = torch.randn(k, n, device=device, generator=gen).to(dtype)
                inputs[dtype] = (a, b, torch.matmul(a.double(), b.double()))
            a, b, ref = inputs[dtype]
            ref_norm = ref.norm().item()
            out = torch.empty(m, n, device=device, dtype=dtype)
            tf32 = p["allow_tf32"]

            def check(fn) -> float:
                out.fill_(float("nan"))
                fn()
                return ((out.double() - ref).norm().item() / ref_norm) if ref_norm else float("nan")

            def record(impl, config, us, err):
                ok = err <= TOLERANCE[mode]  # NaN (an unwritten output) fails too
                rec = {"M": m, "N": n, "K": k, "dtype": mode, "impl": impl, "config": config, "us": round(us, 2),
                       "tflops": round(tflops(m, n, k, us), 2), "rel_err": float(f"{err:.3g}"), "ok": ok}
                records.append(rec)
                print(f"  {m}x{n}x{k} {mode:4s} {impl:15s} cfg {config:2d}: {us:10.1f} us "
                      f"{rec['tflops']:7.1f} TFLOP/s  err {err:.2e}{'' if ok else '  FAIL'}", flush=True)
                if impl != "cublas" and not ok:
                    bad.append(rec)
                return rec

            set_tf32(tf32)
            torch_fn = lambda: torch.matmul(a, b, out=out)  # noqa: E731
            err = check(torch_fn)
            cublas = record("cublas", -1, time_us(torch_fn), err)
            auto_fn = lambda: aiter_lite.matmul(a, b, out, allow_tf32=tf32)  # noqa: E731
            err = check(auto_fn)  # the first call also builds the module
            auto = record("aiter_lite_auto", -1, time_us(auto_fn), err)
            autotune.configure(enabled=True, tuner=tuner)
            n_tuned = tuner.tunings
            err = check(auto_fn)  # tunes (not timed)
            tuned_config = tuner.select(a.unsqueeze(0), b.unsqueeze(0), out.unsqueeze(0), tf32, "auto",
                                        no_launch)  # what the call above chose: a lookup now
            tuned = record("aiter_lite_tuned", tuned_config, time_us(auto_fn), err)
            autotune.configure(enabled=False)
            if tuner.tunings != n_tuned + 1:
                print(f"  note: the autotuner tuned {tuner.tunings - n_tuned} times for this call", flush=True)
            measured = {}
            # An sm_90 device runs the sm_90a image, which holds two mma.sync configs per path (wgmma's fallback).
            sm90 = torch.cuda.get_device_capability(device) == (9, 0) and p["path"] != "simt"
            for cfg in [c for c in p["configs"] if not sm90 or tc_config_on_sm90(c)]:
                fn = (lambda c=cfg: aiter_lite.matmul(a, b, out, allow_tf32=tf32, variant=p["variant"], config=c))
                err = check(fn)
                measured[cfg] = record("aiter_lite", cfg, time_us(fn), err)["us"]
            set_tf32(False)
            comparisons.append(compare(p, measured, cublas["us"], auto["us"], tuned["us"], tuned_config))
        del inputs
        torch.cuda.empty_cache()

    doc = write_run(args.out, dev_name, torch.__version__, records, timer=timer, planner_device=model.name,
                    seconds=round(time.time() - t_start, 1), comparisons=comparisons)
    autotune.reset()
    print(markdown(doc))
    if bad:
        print(f"FAILED: {len(bad)} aiter_lite results exceed the tolerance", file=sys.stderr)
        return 1
    return 0


# ---- comparison and tables (pure Python) --------------------------------------------------------
def spearman(xs, ys):
    """Spearman's rank correlation (ties get their mean rank); None below 3 points or without spread."""
    def ranks(v):
        return [sum(u < x for u in v) + (sum(u == x for u in v) + 1) / 2 for x in v]
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    vx, vy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return None if vx == 0 or vy == 0 else sum((a - mx) * (b - my) for a, b in zip(rx, ry)) / math.sqrt(vx * vy)


def no_launch(*args):
    raise AssertionError("the autotuner launched a kernel for a call it had tuned")


def compare(p: dict, measured: dict, cublas_us: float, auto_us: float, tuned_us=None, tuned_config=None) -> dict:
    """The planner against the measured times (config -> us) of one shape and mode; auto_us: the
    default call (variant auto, config -1); tuned_us, tuned_config: the same call autotuned."""
    best = min(measured, key=lambda c: (measured[c], c))
    order = [c for c in p["planner_order"] if c in measured]
    pick = order[0] if order else None
    pred = p["predicted_us"]
    both = [c for c in measured if pred.get(str(c)) is not None]
    rho = spearman([pred[str(c)] for c in both], [measured[c] for c in both])
    best_pred = pred.get(str(best))
    # the model gave the measured best the same time as its #1 (to 4 digits, as table_order compares)
    tied = (pick is not None and best_pred is not None and pred.get(str(pick)) is not None
            and f"{best_pred:.4g}" == f"{pred[str(pick)]:.4g}")
    return {"M": p["M"], "N": p["N"], "K": p["K"], "dtype": p["dtype"], "path": p["path"],
            "measured_best": best, "measured_best_us": measured[best], "measured_best_predicted_us": best_pred,
            "planner_top3": order[:3], "planner_rank_of_best": order.index(best) + 1 if best in order else None,
            "best_tied_with_pick": tied,
            "planner_pick": pick, "planner_pick_us": measured.get(pick),
            "planner_pick_slowdown": round(measured[pick] / measured[best], 3) if pick is not None else None,
            "planner_pick_predicted_us": pred.get(str(pick)) if pick is not None else None,
            "auto_us": auto_us, "auto_slowdown": round(auto_us / measured[best], 3),
            "tuned_config": tuned_config, "tuned_us": tuned_us,
            "tuned_slowdown": None if tuned_us is None else round(tuned_us / measured[best], 3),
            "cublas_us": cublas_us, "spearman": None if rho is None else round(rho, 3),
            "measured_us": {str(c): measured[c] for c in sorted(measured)}, "predicted_us": pred}


def _fmt(x, spec=".1f", none="-"):
    return none if x is None else format(x, spec)


def markdown(doc: dict) -> str:
    """The comparison table (and a line on where it came from) from a plan_vs_measure JSON."""
    lines = [f"{doc['device']}, {doc['date'][:10]}, torch {doc.get('torch', '?')}, {doc.get('timer', '?')}; "
             f"planner model: {doc.get('planner_device', '?')}. Times in us (medians); TFLOP/s of the measured best.",
             "",
             "| M×N×K | dtype | measured best: config, us (TFLOP/s) | its predicted us | planner top 3 | "
             "planner rank of best | planner #1: measured us (predicted) | #1 vs best | default call vs best | "
             "autotuned: config, vs best | rank corr. | cuBLAS us |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in doc["comparisons"]:
        m, n, k = c["M"], c["N"], c["K"]
        best_tf = tflops(m, n, k, c["measured_best_us"])
        rank = _fmt(c["planner_rank_of_best"], "d")
        if c.get("best_tied_with_pick") and c["planner_rank_of_best"] != 1:
            rank += " (tied with #1)"
        lines.append(
            f"| {m}×{n}×{k} | {c['dtype']} | {c['measured_best']}: {c['measured_best_us']:.1f} ({best_tf:.1f}) | "
            f"{_fmt(c.get('measured_best_predicted_us'))} | {', '.join(map(str, c['planner_top3'])) or '-'} | {rank} | "
            f"{c['planner_pick']}: {_fmt(c['planner_pick_us'])} ({_fmt(c['planner_pick_predicted_us'])}) | "
            f"{_fmt(c['planner_pick_slowdown'], '.2f')}× | {_fmt(c.get('auto_slowdown'), '.2f')}× | "
            f"{_fmt(c.get('tuned_config'), 'd')}: {_fmt(c.get('tuned_slowdown'), '.2f')}× | "
            f"{_fmt(c['spearman'], '.2f')} | {c['cublas_us']:.1f} |")
    n = len(doc["comparisons"])
    hits = sum(1 for c in doc["comparisons"] if c["planner_rank_of_best"] == 1)
    top3 = sum(1 for c in doc["comparisons"] if c["planner_rank_of_best"] is not None and c["planner_rank_of_best"] <= 3)
    worst = max(doc["comparisons"], key=lambda c: c["planner_pick_slowdown"] or 0, default=None)
    lines += ["", f"Planner's #1 is the measured best in {hits} of {n} cases, in its top 3 in {top3} of {n}"
              + (f"; worst #1: {worst['planner_pick_slowdown']:.2f}× the best ({worst['M']}×{worst['N']}×{worst['K']} "
                 f"{worst['dtype']})." if worst else ".")]
    ours = [r for r in doc["records"] if r.get("impl") != "cublas"]
    failed = [r for r in ours if not r.get("ok", True)]
    lines.append(f"{len(ours)} aiter_lite results checked against float64, {len(failed)} over the tolerance.")
    return "\n".join(lines)


def update_docs(doc_path: Path, table: str) -> None:
    text = doc_path.read_text()
    i, j = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if i < 0 or j < i:
        raise SystemExit(f"error: {doc_path} has no '{DOCS_BEGIN}' ... '{DOCS_END}' block")
    doc_path.write_text(text[:i + len(DOCS_BEGIN)] + "\n" + table + "\n" + text[j:])


def replan(doc: dict, model) -> dict:
    """The same measurements against the planner as it is now (model: a DeviceModel): every comparison
    recomputed from its stored measured times with a fresh plan. The measurements do not change, so
    this shows what a change to the model does to its ranking and times."""
    comparisons = []
    for c in doc["comparisons"]:
        p = planned((c["M"], c["N"], c["K"]), c["dtype"], model, model.smem_per_block)
        measured = {int(cfg): us for cfg, us in c["measured_us"].items()}
        comparisons.append(compare(p, measured, c["cublas_us"], c["auto_us"], c.get("tuned_us"), c.get("tuned_config")))
    return dict(doc, comparisons=comparisons, planner_device=f"{model.name}, replanned {datetime.date.today()}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", type=parse_shapes, default=None, help="MxNxK,... (default: six shapes, see SHAPES)")
    p.add_argument("--dtypes", default="fp16,bf16,fp32,tf32", help="modes: fp16,bf16,fp32 (strict),tf32")
    p.add_argument("--quick", action="store_true", help="two shapes, shorter timing")
    p.add_argument("--warmup-ms", type=float, default=None, help="warm-up per timing (default 25; quick 10)")
    p.add_argument("--rep-ms", type=float, default=None, help="timed time per measurement (default 100; quick 40)")
    p.add_argument("--out", type=Path, help="the run's JSON")
    p.add_argument("--dry-run", action="store_true", help="list the measurements and the planner's top 3; no GPU")
    p.add_argument("--device", default="h100", help="--dry-run, --replan: planner device model (default h100)")
    p.add_argument("--from-json", type=Path, help="print the tables of a written JSON; measure nothing")
    p.add_argument("--update-docs", type=Path, help="with --from-json: replace the PLAN VS MEASURE block of this file")
    p.add_argument("--replan", action="store_true",
                   help="with --from-json: rank the stored measurements with the current planner (model --device)")
    args = p.parse_args(argv)
    from aiter_lite.testing import dtype_names
    from aiter_lite.tuning.hardware import get_device

    try:
        args.modes = dtype_names(args.dtypes, allowed=tuple(MODES))
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    for flag in ("update_docs", "replan"):
        if getattr(args, flag) and not args.from_json:
            p.error(f"--{flag.replace('_', '-')} goes with --from-json")
    args.shapes = args.shapes or (QUICK_SHAPES if args.quick else SHAPES)
    args.warmup_ms = args.warmup_ms or (10.0 if args.quick else 25.0)
    args.rep_ms = args.rep_ms or (40.0 if args.quick else 100.0)
    if args.from_json:
        doc = read_run(args.from_json)
        table = markdown(replan(doc, get_device(args.device)) if args.replan else doc)
        print(table)
        if args.update_docs:
            update_docs(args.update_docs, table)
            print(f"\nupdated {args.update_docs}")
        return 0
    if args.dry_run:
        model = get_device(args.device)
        return dry_run(args.shapes, args.modes, model, model.smem_per_block)
    return measure(args)

if __name__ == "__main__":
    sys.exit(main())
