"""Causal depthwise conv1d forward and decode update, side by side on the same random data: aiter_lite,
causal-conv1d (dao), flash-linear-attention (fla) and torch (F.conv1d groups=D + slice + SiLU).

  python bench/bench_causal_conv1d.py [--quick | --fwd-shapes fp16:4x512x2048:4,... | --host-only] [--out F]

Forward: x [B, D, L] (fla gets the same data as [B, L, D], its layout; "aiter_lite_cl" is ours on that
channel-last tensor), weight [D, W] and bias [D] in x's dtype, SiLU on. Medians of do_bench (CUDA
events, L2 flushed); TB/s counts x read + out written. "vs peer" = faster peer's time / ours; "vs
copy" = our TB/s / a 1 GiB device copy's in the same run ("here": a copy of the same bytes). Update:
x [B, D], conv_state [B, D, W-1] ("state CL": stored [B, W-1, D]), bytes = x + out + state read and
written. Host: where the time of a tiny call goes (bench_host).
"""
from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DTYPES, REPO, copy_tbps, fla_conv, host_us, load_peers, make_timer, need_cuda, rel_err, \
    torch_conv  # noqa: E402
from records import geomean, md_table, write_run  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.testing import dtype_name  # noqa: E402

# (dtype, B, D, L, W): the ANCHORS.md conv table, the copy-bandwidth targets in every dtype, small and
# odd lengths, widths 2..8.
FWD_SHAPES = [
    ("fp16", 2, 256, 1024, 4), ("fp16", 1, 4096, 4096, 4), ("fp16", 8, 5120, 2048, 4),
    ("fp16", 4, 8192, 8192, 4), ("fp16", 8, 4096, 4096, 2), ("fp16", 16, 2048, 129, 4),
    ("bf16", 2, 256, 1024, 4), ("bf16", 4, 512, 2048, 4), ("bf16", 4, 8192, 8192, 4),
    ("fp32", 8, 5120, 2048, 4), ("fp32", 4, 8192, 8192, 4), ("fp32", 16, 2048, 129, 4),
    ("bf16", 8, 5120, 2048, 4), ("bf16", 8, 4096, 4096, 2), ("fp32", 8, 4096, 4096, 2),
    ("fp16", 4, 512, 2048, 4), ("fp32", 4, 512, 2048, 4), ("bf16", 16, 2048, 129, 4),
    ("fp16", 8, 4096, 129, 4), ("bf16", 8, 4096, 1000, 4),
    *[("fp16", 8, 4096, 4096, w) for w in (3, 5, 6, 7, 8)],
    *[("bf16", 8, 4096, 4096, w) for w in (3, 8)], *[("fp32", 8, 4096, 4096, w) for w in (3, 8)],
    ("fp16", 16, 2048, 129, 8),
]
QUICK_FWD = [FWD_SHAPES[i] for i in (0, 2, 3, 4, 5, 12, 9, 11, 24)]
UPDATE_SHAPES = [(b, d) for b in (1, 16, 64, 256) for d in (4096, 10240)]
QUICK_UPDATE = [(1, 4096), (64, 10240), (256, 10240)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="target shapes only, shorter timing")
    p.add_argument("--host-only", action="store_true", help="only the host-overhead rows (no peers): bench/gpu.sh host")
    p.add_argument("--fwd-shapes", help="forward shapes only, dtype:BxDxL:W,... (no update or host rows)")
    p.add_argument("--out", type=Path, help="the run's JSON")
    args = p.parse_args(argv)
    args.fwd_shape_list = []
    for item in filter(None, (args.fwd_shapes or "").split(",")):
        try:
            dt, bdl, w = item.split(":")
            args.fwd_shape_list.append((dtype_name(dt), *(int(v) for v in bdl.split("x")), int(w)))
        except (ValueError, argparse.ArgumentTypeError) as e:
            p.error(f"--fwd-shapes takes dtype:BxDxL:W,..., got {item!r} ({e})")
    return args


def bench_forward(shapes, timer, dao, fla, notes, records, gen):
    for dt, B, D, L, W in shapes:
        x, weight, bias = (torch.randn(*s, device="cuda", generator=gen).to(DTYPES[dt])
                           for s in ((B, D, L), (D, W), (D,)))
        x_cl = x.transpose(1, 2).contiguous().transpose(1, 2)  # [B, L, D] storage: fla's layout
        out, out_cl, copy_dst = torch.empty_like(x), torch.empty_like(x_cl), torch.empty_like(x)
        ref = torch_conv(x.float(), weight.float(), bias.float())
        impls = {  # copy: the same bytes moved, the ceiling at this size
            "copy": lambda: copy_dst.copy_(x),
            "aiter_lite": lambda: aiter_lite.causal_conv1d_fwd(out, x, weight, bias, True),
            "aiter_lite_cl": lambda: aiter_lite.causal_conv1d_fwd(out_cl, x_cl, weight, bias, True),
            "torch": lambda: torch_conv(x, weight, bias),
        }
        if dao is not None and W <= 4:
            impls["dao"] = lambda: dao.causal_conv1d_fn(x, weight, bias, activation="silu")
        if fla is not None:
            impls["fla"] = lambda run=fla_conv(fla): run(x_cl, weight, bias)  # [B, L, D] out
        for impl, fn in impls.items():
            try:
                y = fn()
                err = 0.0 if impl == "copy" else rel_err(y.transpose(1, 2) if impl == "fla" else y, ref)
                del y
                us = timer(fn)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape is noted, not fatal
                notes.append(f"{impl} failed on {dt} {B}x{D}x{L} W={W}: {type(e).__name__}: {str(e)[:160]}")
                continue
            records.append(dict(op="fwd", shape=f"{B}x{D}x{L}", B=B, D=D, L=L, W=W, dtype=dt, impl=impl, us=us,
                                tbps=2 * x.numel() * x.element_size() / us / 1e6, rel_err=err))
        del x, x_cl, out, out_cl, ref, copy_dst
        torch.cuda.empty_cache()


def torch_update(x, state, weight, bias):
    window = torch.cat([state, x.unsqueeze(-1)], dim=-1)
    state.copy_(window[..., 1:])
    return F.silu((window * weight).sum(-1) + bias)


def bench_update(shapes, timer, dao, notes, records, gen):
    W = 4
    for dt in ("fp16", "bf16"):
        for B, D in shapes:
            x, weight, bias = (torch.randn(*s, device="cuda", generator=gen).to(DTYPES[dt])
                               for s in ((B, D), (D, W), (D,)))
            nbytes = 2 * x.numel() * W * x.element_size()
            for op in ("update", "update_state_cl"):
                base = torch.randn(B, W - 1, D, device="cuda", generator=gen).to(DTYPES[dt]).transpose(1, 2)
                base = base if op == "update_state_cl" else base.contiguous()
                states = {k: base.clone() for k in ("aiter_lite", "dao", "torch")}  # clone keeps the strides
                ref = torch_update(x.float(), base.float(), weight.float(), bias.float())
                impls = {"aiter_lite": lambda s=states["aiter_lite"]: aiter_lite.causal_conv1d_update(
                    x, s, weight, bias, "silu"), "torch": lambda s=states["torch"]: torch_update(x, s, weight, bias)}
                if dao is not None:
                    impls["dao"] = lambda s=states["dao"]: dao.causal_conv1d_update(x, s, weight, bias, "silu")
                for impl, fn in impls.items():
                    try:
                        err = rel_err(fn(), ref)  # the first call, against the fp32 torch step
                        us = timer(fn)
                    except Exception as e:  # noqa: BLE001
                        notes.append(f"{impl} {op} failed on {dt} {B}x{D}: {type(e).__name__}: {str(e)[:160]}")
                        continue
                    records.append(dict(op=op, shape=f"{B}x{D}", B=B, D=D, L=1, W=W, dtype=dt, impl=impl, us=us,
                                        tbps=nbytes / us / 1e6, rel_err=err))


def gpu_per_kernel(fn, n: int = 800) -> float:
    """GPU time per call of n calls queued behind a sleep kernel (so the events time the kernels only)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / n


def bench_host(dao, notes, records):
    """Where the host time of a tiny call goes (1x64x16 fp16, W=4, bias, SiLU), the fastest of 7 rounds of
    back-to-back calls: wall = per call of 2000 with the final synchronize (max(host, GPU time)); enqueue =
    CPU time per call of 400 from an idle GPU (the host overhead proper); the GPU time per kernel; then
    the Python path's pieces alone (enqueue only)."""
    from aiter_lite.ops import _common

    conv = sys.modules["aiter_lite.ops.causal_conv1d"]
    x, w, b, state, x_step = (torch.randn(*s, device="cuda", dtype=torch.float16)
                              for s in ((1, 64, 16), (64, 4), (64,), (1, 64, 3), (1, 64)))  # x_step: a decode step's
    out = torch.empty_like(x)
    mod, stream = conv.get_module(conv.MODULE, "cuda"), torch.cuda.current_stream().cuda_stream
    largs = (x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), 1, 64, 16, 4, 1, 1, True, 0, stream)
    calls = {
        "aiter_lite causal_conv1d": lambda: aiter_lite.causal_conv1d(x, w, b, "silu"),
        "aiter_lite causal_conv1d_fwd(out=)": lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True),
        "causal_conv1d_fwd(out=) variant=naive": lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True,
                                                                                     variant="naive"),
        "causal_conv1d_update (1x64, state 3)": lambda: aiter_lite.causal_conv1d_update(x_step, state, w, b, "silu"),
        "torch F.conv1d+slice+silu": lambda: torch_conv(x, w, b),
        "torch.add": lambda: torch.add(x, x),
        "(part) binding call, arguments precomputed": lambda: mod.causal_conv1d_fwd_contiguous(*largs),
        "(part) _launch_fwd_fast (one-pass checks + launch)": lambda: conv._launch_fwd_fast(out, x, w, b, True, "auto"),
        "(part) torch.empty_like": lambda: torch.empty_like(x),
    }
    if dao is not None:
        calls["dao causal_conv1d_fn"] = lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")
    pieces = {  # no launch
        "_well_formed_fwd": lambda: conv._well_formed_fwd(out, x, w, b, True, "auto"),
        "check_no_alias": lambda: _common.check_no_alias("out", out, (("x", x), ("weight", w), ("bias", b))),
        "get_module": lambda: conv.get_module(conv.MODULE, "cuda"),
        "device_and_stream": lambda: _common.device_and_stream(x),
        "(update) _well_formed_update": lambda: conv._well_formed_update(x_step, state, w, b, None, None),
        "(update) unsqueeze + empty_like + squeeze": lambda: torch.empty_like(x_step.unsqueeze(-1)).squeeze(-1),
    }
    for name, fn in [*calls.items(), *(("(piece) " + k, f) for k, f in pieces.items())]:
        try:
            piece = name.startswith("(piece)")
            times = dict(enqueue_us=host_us(fn, 400 if not piece else 2000, 7, sync=False),
                         us=None if piece else host_us(fn, 2000, 7),
                         gpu_us=None if piece or "empty_like" in name else gpu_per_kernel(fn))
            records.append(dict(op="host", shape="1x64x16", B=1, D=64, L=16, W=4, dtype="fp16", impl=name, tbps=0.0,
                                **times))
        except Exception as e:  # noqa: BLE001 - a private piece that changed is noted, not fatal
            notes.append(f"host {name} failed: {type(e).__name__}: {str(e)[:160]}")


def cell(r) -> str:
    return "-" if r is None else f"{r['us']:.1f} ({r['tbps']:.2f})"


def tables(records, copy) -> str:
    by_key = {}
    for r in records:
        by_key.setdefault((r["op"], r["dtype"], r["shape"], r["W"]), {})[r["impl"]] = r
    fwd_impls, rows, ratios = ["aiter_lite", "aiter_lite_cl", "dao", "fla", "torch", "copy"], [], []
    for (op, dt, shape, w), row in by_key.items():
        ours, peers = row.get("aiter_lite"), [row[p]["us"] for p in ("dao", "fla") if p in row]
        if op != "fwd" or ours is None:
            continue
        ratios += [min(peers) / ours["us"]] if peers else []
        errs = [row[i]["rel_err"] for i in ("aiter_lite", "aiter_lite_cl") if i in row]
        rows.append([dt, f"{shape}, {w}", *(cell(row.get(i)) for i in fwd_impls),
                     f"{min(peers) / ours['us']:.2f}x" if peers else "-", f"{ours['tbps'] / copy:.2f}",
                     f"{ours['tbps'] / row['copy']['tbps']:.2f}" if "copy" in row else "-", f"{max(errs):.1e}"])
    text = ["### forward: us (TB/s)", md_table(["dtype", "BxDxL, W", *fwd_impls, "vs peer", "vs copy",
                                                "vs copy here", "max rel err"], rows)]
    if ratios:
        text.append(f"vs faster peer over {len(ratios)} shapes: geomean {geomean(ratios):.2f}x, min "
                    f"{min(ratios):.2f}x, {sum(r >= 1.0 for r in ratios)} at or above 1.0x")
    rows = [[dt, shape, "CL" if op.endswith("cl") else "BDS",
             *(cell(row.get(i)) for i in ("aiter_lite", "dao", "torch")),
             f"{row['dao']['us'] / row['aiter_lite']['us']:.2f}x" if {"dao", "aiter_lite"} <= set(row) else "-"]
            for (op, dt, shape, _), row in by_key.items() if op.startswith("update")]
    text += ["### update (W=4, seqlen 1): us (TB/s)", md_table(["dtype", "BxD", "state", "aiter_lite", "dao", "torch",
                                                                 "vs dao"], rows)]
    rows = [[r["impl"], *("-" if r.get(k) is None else f"{r[k]:.2f}" for k in ("us", "enqueue_us", "gpu_us"))]
            for r in records if r["op"] == "host"]
    return "\n\n".join(text + ["### host overhead (tiny tensors, back-to-back): us per call",
                               md_table(["call", "wall (2000, synced)", "enqueue", "GPU per kernel"], rows)])


def main(argv=None) -> int:
    args = parse_args(argv)
    need_cuda("bench_causal_conv1d")
    gen = torch.Generator(device="cuda").manual_seed(0)
    timer, timer_name = make_timer(*((10, 40) if args.quick else (25, 100)))
    notes = [f"timer: {timer_name}"]
    aiter_lite.causal_conv1d(torch.randn(1, 8, 8, device="cuda"), torch.randn(8, 4, device="cuda"))  # JIT first
    aiter_lite.causal_conv1d_update(torch.randn(1, 8, device="cuda"), torch.randn(1, 8, 3, device="cuda"),
                                    torch.randn(8, 4, device="cuda"))
    dao, fla, peer_notes = load_peers(REPO / ".peers", args.host_only)
    notes += peer_notes
    copy = copy_tbps(timer)
    records = [dict(op="copy", shape="1GiB", B=0, D=0, L=0, W=0, dtype="u8", impl="torch copy_",
                    us=2 * (1 << 30) / copy / 1e6, tbps=copy)]
    with torch.inference_mode():
        try:
            if not args.host_only:
                fwd = args.fwd_shape_list or (QUICK_FWD if args.quick else FWD_SHAPES)
                bench_forward(fwd, timer, dao, fla, notes, records, gen)
            if not args.host_only and not args.fwd_shape_list:
                bench_update(QUICK_UPDATE if args.quick else UPDATE_SHAPES, timer, dao, notes, records, gen)
            if not args.fwd_shape_list:
                bench_host(dao, notes, records)
        except Exception:  # noqa: BLE001 - keep what was measured
            notes.append("aborted: " + traceback.format_exc(limit=3))
    write_run(args.out, torch.cuda.get_device_name(), torch.__version__, records, copy_tbps=copy, notes=notes)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy:.2f} TB/s")
    print("\n".join(f"note: {n}" for n in notes) + "\n\n" + tables(records, copy))
    bad = [r for r in records if r["impl"].startswith("aiter_lite") and not r.get("rel_err", 0.0) <= 1e-2]
    for r in bad[:10]:
        print(f"WARNING: {r['op']} {r['dtype']} {r['shape']} W={r['W']} {r['impl']}: rel err {r['rel_err']:.2e}",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
