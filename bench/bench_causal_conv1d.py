"""Causal depthwise conv1d, side by side: aiter_lite vs causal-conv1d (dao) vs flash-linear-attention
(fla) vs torch (F.conv1d groups=D + slice + SiLU), on the same random data, in one run.

  python bench/bench_causal_conv1d.py            # full sweep (a few minutes on an H100)
  python bench/bench_causal_conv1d.py --quick    # the target shapes only
  python bench/bench_causal_conv1d.py --out results.json

Forward: x [B, D, L] (fla gets the same data as a contiguous [B, L, D] tensor, its native layout;
"aiter_lite_cl" is aiter_lite on that channel-last tensor), weight [D, W] and bias [D] in x's dtype,
SiLU on. Times are medians of triton.testing.do_bench (CUDA events, L2 flushed before each call);
TB/s counts x read + out written. "vs peer" = faster peer's time / ours (> 1: ours is faster);
"vs copy" = our TB/s / the device-to-device copy bandwidth measured in the same run (1 GiB copy,
bytes read + written). Update: x [B, D], conv_state [B, D, W-1] ("state CL": stored [B, W-1, D]),
bytes = x + out + state read + state written. Host: back-to-back tiny calls, wall time per call.
Peers load from .peers/ (see .peers/peers.py); a peer that fails to load or run is skipped with a
note. Results go to JSON (--out, default bench/results/causal_conv1d_<gpu>.json); a markdown table
is printed last.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.testing import dtype_name  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}

# (dtype, B, D, L, W): every shape of the ANCHORS.md conv table, the copy-bandwidth targets in all
# dtypes, 4x512x2048 and L=129 in all dtypes, and widths 2..8.
FWD_SHAPES = [
    ("fp16", 2, 256, 1024, 4), ("fp16", 1, 4096, 4096, 4), ("fp16", 8, 5120, 2048, 4),
    ("fp16", 4, 8192, 8192, 4), ("fp16", 8, 4096, 4096, 2), ("fp16", 16, 2048, 129, 4),
    ("bf16", 2, 256, 1024, 4), ("bf16", 4, 512, 2048, 4), ("bf16", 4, 8192, 8192, 4),
    ("fp32", 8, 5120, 2048, 4), ("fp32", 4, 8192, 8192, 4), ("fp32", 16, 2048, 129, 4),
    # copy-bandwidth targets in every dtype
    ("bf16", 8, 5120, 2048, 4), ("bf16", 8, 4096, 4096, 2), ("fp32", 8, 4096, 4096, 2),
    # small and odd-length shapes in every dtype
    ("fp16", 4, 512, 2048, 4), ("fp32", 4, 512, 2048, 4), ("bf16", 16, 2048, 129, 4),
    ("fp16", 8, 4096, 129, 4), ("bf16", 8, 4096, 1000, 4),
    # widths
    *[("fp16", 8, 4096, 4096, w) for w in (3, 5, 6, 7, 8)],
    *[("bf16", 8, 4096, 4096, w) for w in (3, 8)],
    *[("fp32", 8, 4096, 4096, w) for w in (3, 8)],
    ("fp16", 16, 2048, 129, 8),
]
QUICK_FWD = [
    ("fp16", 2, 256, 1024, 4), ("fp16", 8, 5120, 2048, 4), ("fp16", 4, 8192, 8192, 4), ("fp16", 8, 4096, 4096, 2),
    ("fp16", 16, 2048, 129, 4), ("bf16", 8, 5120, 2048, 4), ("fp32", 8, 5120, 2048, 4), ("fp32", 16, 2048, 129, 4),
    ("fp16", 8, 4096, 4096, 8),
]
UPDATE_SHAPES = [(b, d) for b in (1, 16, 64, 256) for d in (4096, 10240)]
QUICK_UPDATE = [(1, 4096), (64, 10240), (256, 10240)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="target shapes only, shorter timing")
    p.add_argument("--host-only", action="store_true", help="only the host-overhead rows (no peers' build)")
    p.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/causal_conv1d_<gpu>.json)")
    p.add_argument("--peers", default=str(REPO / ".peers"), help="folder with peers.py and the peer packages")
    p.add_argument("--no-peers", action="store_true", help="skip dao and fla")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fwd-shapes", default=None,
                   help="forward shapes only, as dtype:BxDxL:W,... (e.g. fp16:4x512x2048:4); no update or host rows")
    args = p.parse_args(argv)
    fwd_shapes = []
    for item in (args.fwd_shapes or "").split(","):
        if not item:
            continue
        try:
            dt, bdl, w = item.split(":")
            dt = dtype_name(dt)
            batch, dim, seqlen = (int(v) for v in bdl.split("x"))
            fwd_shapes.append((dt, batch, dim, seqlen, int(w)))
        except argparse.ArgumentTypeError as e:
            p.error(f"--fwd-shapes: {e}")
        except ValueError:
            p.error(f"--fwd-shapes takes dtype:BxDxL:W,..., got {item!r}")
    args.fwd_shape_list = fwd_shapes
    return args


# ---------------------------------------------------------------------------------------------
# Timing


def make_timer(quick: bool):
    warmup, rep = (10, 40) if quick else (25, 100)
    try:
        from triton.testing import do_bench

        def timer(fn):
            return do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1e3  # ms -> us
        return timer, "triton.testing.do_bench"
    except Exception:  # noqa: BLE001 - no triton: our own CUDA-event timer with an L2 flush
        from aiter_lite.testing import bench

        def timer(fn):
            return bench(fn, torch.device("cuda"), warmup_ms=warmup, rep_ms=rep)["us"]
        return timer, "aiter_lite.testing.bench"


def copy_tbps(timer) -> float:
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    us = timer(lambda: dst.copy_(src))
    del src, dst
    return 2 * n / us / 1e6


# ---------------------------------------------------------------------------------------------
# Peers


def load_peers(root: str, skip: bool):
    notes, dao, fla = [], None, None
    if skip:
        return None, None, ["peers skipped (--no-peers)"]
    try:  # installed: bench/gpu.sh builds them once per machine (bench/peer_cache.py)
        import causal_conv1d as dao  # noqa: PLC0415
        from fla.modules.causal_conv1d import causal_conv1d as fla  # noqa: PLC0415
        return dao, fla, [f"peers installed: causal-conv1d from {Path(dao.__file__).parent}, fla"]
    except Exception:  # noqa: BLE001 - not installed: build them from .peers below
        pass
    try:
        sys.path.insert(0, root)
        import peers  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001
        return None, None, [f"peers.py not importable from {root}: {e}"]
    t0 = time.time()
    try:
        dao, build_s = peers.dao_causal_conv1d(root=root)
        notes.append(f"dao causal-conv1d loaded (build {build_s:.0f} s)")
    except Exception as e:  # noqa: BLE001
        notes.append(f"dao causal-conv1d unavailable: {type(e).__name__}: {str(e)[:200]}")
    try:
        fla = peers.fla_causal_conv1d(root=root)
        notes.append("fla loaded")
    except Exception as e:  # noqa: BLE001
        notes.append(f"fla unavailable: {type(e).__name__}: {str(e)[:200]}")
    notes.append(f"peer setup {time.time() - t0:.0f} s")
    return dao, fla, notes


def torch_conv(x, weight, bias):
    w = weight.shape[1]
    return F.silu(F.conv1d(x, weight.unsqueeze(1), bias, padding=w - 1, groups=x.shape[1])[..., : x.shape[-1]])


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.float(), ref.float()
    if not bool(torch.isfinite(out).all()):
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


# ---------------------------------------------------------------------------------------------
# Runs


def bench_forward(shapes, timer, dao, fla, notes, records, gen):
    for dtype_name, B, D, L, W in shapes:
        dtype = DTYPES[dtype_name]
        x = torch.randn(B, D, L, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
        weight = torch.randn(D, W, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
        bias = torch.randn(D, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
        x_btd = x.transpose(1, 2).contiguous()  # [B, L, D]: fla's layout, and our channel-last input
        x_cl = x_btd.transpose(1, 2)
        out = torch.empty_like(x)
        out_cl = torch.empty_like(x_cl)
        ref = torch_conv(x.float(), weight.float(), bias.float())
        copy_dst = torch.empty_like(x)
        impls = {
            # A copy of the same bytes (x read, out written): the ceiling at this size, launch and
            # ramp-up included, next to the 1 GiB copy ceiling.
            "copy": (lambda: copy_dst.copy_(x), None),
            "aiter_lite": (lambda: aiter_lite.causal_conv1d_fwd(out, x, weight, bias, True), lambda: out),
            "aiter_lite_cl": (lambda: aiter_lite.causal_conv1d_fwd(out_cl, x_cl, weight, bias, True), lambda: out_cl),
            "torch": (lambda: torch_conv(x, weight, bias), None),
        }
        if dao is not None and W <= 4:
            impls["dao"] = (lambda: dao.causal_conv1d_fn(x, weight, bias, activation="silu"), None)
        if fla is not None:
            def fla_fn():
                y = fla(x=x_btd, weight=weight, bias=bias, activation="silu")
                return y[0] if isinstance(y, tuple) else y
            impls["fla"] = (fla_fn, None)
        nbytes = 2 * x.numel() * x.element_size()
        shape = f"{B}x{D}x{L}"
        for impl, (fn, get_out) in impls.items():
            try:
                y = fn()
                y = get_out() if get_out is not None else y
                if impl == "fla":
                    y = y.transpose(1, 2)
                err = 0.0 if impl == "copy" else rel_err(y, ref)
                del y
                us = timer(fn)
            except Exception as e:  # noqa: BLE001
                notes.append(f"{impl} failed on {dtype_name} {shape} W={W}: {type(e).__name__}: {str(e)[:160]}")
                continue
            records.append(dict(op="fwd", shape=shape, B=B, D=D, L=L, W=W, dtype=dtype_name, impl=impl, us=us,
                                tbps=nbytes / us / 1e6, rel_err=err))
        del x, x_btd, x_cl, out, out_cl, ref, copy_dst
        torch.cuda.empty_cache()


def torch_update(x, state, weight, bias):
    window = torch.cat([state, x.unsqueeze(-1)], dim=-1)
    out = F.silu((window * weight).sum(-1) + bias)
    state.copy_(window[..., 1:])
    return out


def bench_update(shapes, timer, dao, notes, records, gen):
    W = 4
    for dtype_name in ("fp16", "bf16"):
        dtype = DTYPES[dtype_name]
        for B, D in shapes:
            x = torch.randn(B, D, device="cuda", generator=gen).to(dtype)
            weight = torch.randn(D, W, device="cuda", generator=gen).to(dtype)
            bias = torch.randn(D, device="cuda", generator=gen).to(dtype)
            nbytes = (2 * x.numel() + 2 * x.numel() * (W - 1)) * x.element_size()
            for layout in ("contiguous", "channel_last"):
                base = torch.randn(B, W - 1, D, device="cuda", generator=gen).to(dtype).transpose(1, 2)
                if layout == "contiguous":
                    base = base.contiguous()
                states = {k: base.clone() for k in ("aiter_lite", "dao", "torch")}  # clone keeps the strides
                ref = torch_update(x.float(), base.float(), weight.float(), bias.float())
                impls = {
                    "aiter_lite": lambda s=states["aiter_lite"]: aiter_lite.causal_conv1d_update(x, s, weight, bias,
                                                                                                 "silu"),
                    "torch": lambda s=states["torch"]: torch_update(x, s, weight, bias),
                }
                if dao is not None:
                    impls["dao"] = lambda s=states["dao"]: dao.causal_conv1d_update(x, s, weight, bias, "silu")
                tag = "" if layout == "contiguous" else " state CL"
                for impl, fn in impls.items():
                    try:
                        err = rel_err(fn(), ref)  # first call: checked against the fp32 torch step
                        us = timer(fn)
                    except Exception as e:  # noqa: BLE001
                        notes.append(f"{impl} update failed on {dtype_name} {B}x{D}{tag}: {type(e).__name__}: "
                                     f"{str(e)[:160]}")
                        continue
                    records.append(dict(op="update" + ("_state_cl" if tag else ""), shape=f"{B}x{D}", B=B, D=D,
                                        L=1, W=W, dtype=dtype_name, impl=impl, us=us, tbps=nbytes / us / 1e6,
                                        rel_err=err))


def bench_host(dao, notes, records, n=2000):
    """Wall time per call of back-to-back calls on tiny tensors (host overhead, the GPU idles): the
    fastest of 5 rounds of n calls."""
    x = torch.randn(1, 64, 16, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 4, device="cuda", dtype=torch.float16)
    b = torch.randn(64, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    from aiter_lite.jit import get_module  # noqa: PLC0415
    launch = get_module("module_causal_conv1d", "cuda").causal_conv1d_fwd_contiguous
    args = (x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), 1, 64, 16, 4, 1, 1, True, 0,
            torch.cuda.current_stream().cuda_stream)
    calls = {
        "aiter_lite causal_conv1d": lambda: aiter_lite.causal_conv1d(x, w, b, "silu"),
        "aiter_lite causal_conv1d_fwd(out=)": lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True),
        "torch F.conv1d+slice+silu": lambda: torch_conv(x, w, b),
        "torch.add": lambda: torch.add(x, x),
        # where aiter_lite's time goes: the binding + C++ launch with precomputed arguments, and the
        # output allocation of the functional form
        "(part) binding call, arguments precomputed": lambda: launch(*args),
        "(part) torch.empty_like": lambda: torch.empty_like(x),
    }
    if dao is not None:
        calls["dao causal_conv1d_fn"] = lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")
    for name, fn in calls.items():
        try:
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
            rounds = []
            for _ in range(5):  # the least disturbed of 5 rounds, as timeit does
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                torch.cuda.synchronize()
                rounds.append((time.perf_counter() - t0) / n * 1e6)
            us = min(rounds)
        except Exception as e:  # noqa: BLE001
            notes.append(f"host {name} failed: {type(e).__name__}: {str(e)[:160]}")
            continue
        records.append(dict(op="host", shape="1x64x16", B=1, D=64, L=16, W=4, dtype="fp16", impl=name, us=us,
                            tbps=0.0))


# ---------------------------------------------------------------------------------------------
# Report


def fmt(rec) -> str:
    return "-" if rec is None else f"{rec['us']:.1f} ({rec['tbps']:.2f})"


def table(records, copy) -> str:
    lines = []
    by_key = {}
    for r in records:
        by_key.setdefault((r["op"], r["dtype"], r["shape"], r["W"]), {})[r["impl"]] = r
    fwd_impls = ["aiter_lite", "aiter_lite_cl", "dao", "fla", "torch", "copy"]
    lines += ["### forward: us (TB/s); vs peer = faster peer time / ours; vs copy = ours / 1 GiB copy TB/s; "
              "vs copy here = ours / same-size copy TB/s", "",
              "| dtype | BxDxL, W | " + " | ".join(fwd_impls) + " | vs peer | vs copy | vs copy here | max rel err |",
              "|" + " --- |" * (len(fwd_impls) + 6)]
    ratios = []
    for (op, dtype, shape, w), row in by_key.items():
        if op != "fwd":
            continue
        ours = row.get("aiter_lite")
        peers = [row[p]["us"] for p in ("dao", "fla") if p in row]
        if ours and peers:
            ratios.append(min(peers) / ours["us"])
        vs_peer = f"{min(peers) / ours['us']:.2f}x" if ours and peers else "-"
        vs_copy = f"{ours['tbps'] / copy:.2f}" if ours and copy else "-"
        vs_here = f"{ours['tbps'] / row['copy']['tbps']:.2f}" if ours and "copy" in row else "-"
        errs = [row[i].get("rel_err", 0.0) for i in ("aiter_lite", "aiter_lite_cl") if i in row]
        lines.append(f"| {dtype} | {shape}, {w} | " + " | ".join(fmt(row.get(i)) for i in fwd_impls) +
                     f" | {vs_peer} | {vs_copy} | {vs_here} | {max(errs) if errs else float('nan'):.1e} |")
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines += ["", f"vs faster peer over {len(ratios)} shapes: geomean {geomean:.2f}x, min {min(ratios):.2f}x, "
                      f"{sum(r >= 1.0 for r in ratios)} at or above 1.0x"]
    upd_impls = ["aiter_lite", "dao", "torch"]
    lines += ["", "### update (W=4, seqlen 1): us (TB/s); vs dao = dao time / ours", "",
              "| dtype | BxD | state | " + " | ".join(upd_impls) + " | vs dao |", "|" + " --- |" * (len(upd_impls) + 4)]
    for (op, dtype, shape, w), row in by_key.items():
        if not op.startswith("update"):
            continue
        ours, dao = row.get("aiter_lite"), row.get("dao")
        vs = f"{dao['us'] / ours['us']:.2f}x" if ours and dao else "-"
        lines.append(f"| {dtype} | {shape} | {'CL' if op.endswith('cl') else 'BDS'} | " +
                     " | ".join(fmt(row.get(i)) for i in upd_impls) + f" | {vs} |")
    lines += ["", "### host overhead (tiny tensors, back-to-back): us per call", "", "| call | us |", "| --- | --- |"]
    lines += [f"| {r['impl']} | {r['us']:.1f} |" for r in records if r["op"] == "host"]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    fwd_shapes = args.fwd_shape_list
    t_start = time.time()
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    timer, timer_name = make_timer(args.quick)
    notes = [f"timer: {timer_name}"]

    # Build (or load) our module first, so its JIT time is not charged to any measurement.
    t0 = time.time()
    xw = torch.randn(1, 8, 8, device="cuda")
    aiter_lite.causal_conv1d(xw, torch.randn(8, 4, device="cuda"))
    aiter_lite.causal_conv1d_update(torch.randn(1, 8, device="cuda"), torch.randn(1, 8, 3, device="cuda"),
                                    torch.randn(8, 4, device="cuda"))
    torch.cuda.synchronize()
    notes.append(f"aiter_lite module ready in {time.time() - t0:.0f} s")

    dao, fla, peer_notes = load_peers(args.peers, args.no_peers or args.host_only)
    notes += peer_notes

    records = []
    copy = copy_tbps(timer)
    records.append(dict(op="copy", shape="1GiB", B=0, D=0, L=0, W=0, dtype="u8", impl="torch copy_",
                        us=2 * (1 << 30) / copy / 1e6, tbps=copy))
    with torch.inference_mode():
        try:
            if fwd_shapes:
                bench_forward(fwd_shapes, timer, dao, fla, notes, records, gen)
            elif not args.host_only:
                bench_forward(QUICK_FWD if args.quick else FWD_SHAPES, timer, dao, fla, notes, records, gen)
                bench_update(QUICK_UPDATE if args.quick else UPDATE_SHAPES, timer, dao, notes, records, gen)
            if not fwd_shapes:
                bench_host(dao, notes, records)
        except Exception:  # noqa: BLE001 - keep what was measured
            notes.append("aborted: " + traceback.format_exc(limit=3))

    name = torch.cuda.get_device_name()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    out_path = args.out or REPO / "bench" / "results" / f"causal_conv1d_{slug}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"device": name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "copy_tbps": copy, "notes": notes, "records": records}
    out_path.write_text(json.dumps(doc, indent=1))

    print(f"device: {name}, torch {torch.__version__}, copy {copy:.2f} TB/s, {time.time() - t_start:.0f} s total")
    for n in notes:
        print(f"note: {n}")
    print(f"wrote {out_path}\n")
    print(table(records, copy))
    bad = [r for r in records if r["impl"].startswith("aiter_lite") and not (r.get("rel_err", 0.0) <= 1e-2)]
    if bad:
        print(f"\nWARNING: {len(bad)} aiter_lite results differ from torch by more than 1e-2 (rel):", file=sys.stderr)
        for r in bad[:10]:
            print(f"  {r['op']} {r['dtype']} {r['shape']} W={r['W']} {r['impl']}: {r['rel_err']:.2e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
