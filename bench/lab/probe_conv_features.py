"""GPU check and timing of the causal conv1d forward with states and packed sequences (issue 19).

Builds csrc/kernels/causal_conv1d_{fwd,fwd_rows,fwd_features,varlen_states}.cu with the torch-free shim
bench/lab/conv_features_shim.cpp (kernel objects built beforehand by `--build-objs` are reused), then:
  check   every feature against a float64 reference (torch cat + F.conv1d per sequence), NaN-poisoned
          outputs, odd L, contiguous / channel-last / strided layouts, widths 1..8 and 10, three x dtypes with
          fp32 and same-dtype weights, state pools updated in place (unnamed slots bit-for-bit unchanged);
  time    features vs the plain forward of the same shape, serving prefill vs copy, channel-last vs copy
          (do_bench medians, L2 flushed).
Usage: python bench/lab/probe_conv_features.py [--quick] [--no-time] [--build-objs DIR]
"""
import argparse, os, random, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = ["causal_conv1d_fwd", "causal_conv1d_fwd_rows", "causal_conv1d_fwd_features", "causal_conv1d_varlen_states"]
NVCC = ["nvcc", "-std=c++17", "-O3", "--use_fast_math", "-arch=sm_90a", "-Xcompiler", "-fPIC", f"-I{ROOT}/csrc/include"]


def build_objs(dst, only_missing=False):
    os.makedirs(dst, exist_ok=True)
    todo = [k for k in KERNELS if not (only_missing and os.path.exists(f"{dst}/{k}.o"))]
    cmds = [NVCC + ["-c", f"{ROOT}/csrc/kernels/{k}.cu", "-o", f"{dst}/{k}.o"] for k in todo]
    if not cmds:
        return
    with ThreadPoolExecutor(len(cmds)) as ex:
        for r in ex.map(lambda c: subprocess.run(c, capture_output=True, text=True), cmds):
            if r.returncode:
                sys.exit(r.stderr)


def load_shim(objdir, build):
    import importlib, sysconfig, pybind11
    build = os.path.abspath(build)
    os.makedirs(build, exist_ok=True)
    build_objs(objdir, only_missing=True)
    so = f"{build}/conv_features_shim{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = NVCC + ["-shared", f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
                  f"{ROOT}/bench/lab/conv_features_shim.cpp", *[f"{objdir}/{k}.o" for k in KERNELS], "-o", so]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, build)
    return importlib.import_module("conv_features_shim")


# ----------------------------------------------------------------------------------------------------
import torch
import torch.nn.functional as F

DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
SHIM = None
DEV = "cuda"


class DryShim:
    """--dry: runs the harness on the CPU without kernels (outputs zero), to catch harness errors."""

    @staticmethod
    def fwd(x, w, bias, out, *a):
        pass

    @staticmethod
    def varlen_states(*a):
        pass


def p(t):
    return 0 if t is None else t.data_ptr()


def call(x, w, bias, out, silu, init=None, final=None, seq_idx=None, cu=None, idx=None, has_init=None, pad=-1,
         variant=0):
    """x/out: [B, D, L] views, or in varlen mode (cu given) [D, total] views. init/final: [rows, D, S] views."""
    if cu is not None:
        B, (D, L) = cu.numel() - 1, x.shape
        xs, os_ = [0, x.stride(0), x.stride(1)], [0, out.stride(0), out.stride(1)]
    else:
        (B, D, L), xs, os_ = x.shape, list(x.stride()), list(out.stride())
    st = init if init is not None else final
    S, rows = (st.shape[2], st.shape[0]) if st is not None else (0, 0)
    SHIM.fwd(p(x), p(w), p(bias), p(out), B, D, L, w.shape[1], xs, list(w.stride()), bias.stride(0) if bias is not None else 0,
             os_, DT[x.dtype], DT[w.dtype], silu, variant, p(init), p(final), p(seq_idx), p(cu), p(idx), p(has_init), pad,
             S, rows, list(init.stride()) if init is not None else [], list(final.stride()) if final is not None else [],
             list(seq_idx.stride()) if seq_idx is not None else [], torch.cuda.current_stream().cuda_stream)


def ref_sequence(xs, window, w, b, silu, S):
    """xs [D, n] fp64, window [D, W-1] fp64: out [D, n], final [D, S] (last S of cat(window, xs), zeros before)."""
    full = torch.cat([window, xs], 1)
    if xs.shape[1] == 0:
        o = xs.clone()
    else:
        o = F.conv1d(full[None], w[:, None, :], b, groups=w.shape[0])[0]
    if silu:
        o = o * torch.sigmoid(o)
    fin = torch.cat([torch.zeros(xs.shape[0], S, dtype=xs.dtype, device=xs.device), full], 1)[:, full.shape[1]:]
    return o, fin


def layout(shape, kind, dtype):
    """A random tensor of logical shape [.., D, L] stored contiguous, channel-last ([.., L, D]) or strided."""
    dev = DEV
    if kind == "contig":
        return torch.randn(shape, dtype=dtype, device=dev)
    if kind == "cl":
        return torch.randn(*shape[:-2], shape[-1], shape[-2], dtype=dtype, device=dev).transpose(-1, -2)
    big = torch.randn(*shape[:-1], 2 * shape[-1] + 1, dtype=dtype, device=dev)
    return big[..., 1::2]  # seq stride 2, odd offset


def check_case(dtype, wdtype, W, kind, L, feature, state_kind, rng):
    dev = DEV
    B, D = rng.choice([1, 2, 3]), rng.choice([8, 16, 24, 40])
    silu = rng.random() < 0.5
    w = torch.randn(D, W, dtype=wdtype, device=dev)
    bias = torch.randn(D, dtype=wdtype, device=dev) if rng.random() < 0.7 else None
    w64, b64 = w.double(), (bias.double() if bias is not None else None)
    S = W - 1 + (rng.choice([0, 2]) if state_kind != "none" else 0)

    def pool(rows):
        if state_kind == "cl":
            return torch.randn(rows, S, D, dtype=dtype, device=dev).transpose(1, 2)
        return torch.randn(rows, D, S, dtype=dtype, device=dev)

    errs, msgs = [], []
    if feature == "varlen":
        nseq = rng.choice([1, 3, 6])
        lens = [rng.choice([0, 1, 2, rng.randint(1, L + 5)]) for _ in range(nseq)]
        total = sum(lens)
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=dev)
        x = layout((D, max(total, 1)), kind, dtype)[:, :total]
        out = torch.full_like(x, float("nan"))
        slots = nseq + 3
        poolt = pool(slots)
        before = poolt.clone()
        perm = rng.sample(range(slots), nseq)
        idxl = [(-1 if rng.random() < 0.25 else s) for s in perm]
        idx = torch.tensor(idxl, dtype=torch.int32, device=dev)
        hil = [rng.random() < 0.6 for _ in range(nseq)]
        hi = torch.tensor(hil, dtype=torch.bool, device=dev)
        call(x, w, bias, out, silu, init=poolt, final=poolt, cu=cu, idx=idx, has_init=hi)  # the pool, in place
        torch.cuda.synchronize()
        x64, ref_pool = x.double(), before.clone()
        for b in range(nseq):
            s0, s1 = int(cu[b]), int(cu[b + 1])
            if idxl[b] < 0:
                if s1 > s0 and not torch.isnan(out[:, s0:s1].float()).all():
                    msgs.append(f"pad seq {b} wrote output")
                continue
            win = before[idxl[b], :, S - (W - 1):].double() if hil[b] else torch.zeros(D, W - 1, dtype=torch.float64, device=dev)
            o, fin = ref_sequence(x64[:, s0:s1], win, w64, b64, silu, S)
            if s1 > s0:
                errs.append((out[:, s0:s1].double(), o))
            ref_pool[idxl[b]] = fin.to(dtype)
        if not torch.equal(poolt, ref_pool):
            msgs.append("pool mismatch (named slots wrong or unnamed slots touched)")
    else:
        x = layout((B, D, L), kind, dtype)
        out = torch.full_like(x, float("nan"))
        init = pool(B) if feature in ("init", "init_final", "seq_idx_states") else None
        final = (pool(B).fill_(float("nan")) if feature in ("final", "init_final", "seq_idx_states") else None)
        seq_idx = None
        if feature.startswith("seq_idx"):
            cuts = sorted(rng.sample(range(1, L), min(L - 1, rng.choice([0, 1, 3])))) if L > 1 else []
            ids = torch.zeros(B, L, dtype=torch.int32)
            for c in cuts:
                ids[:, c:] += 1
            if rng.random() < 0.3 and L > 2:
                ids[:, : rng.randint(1, L - 1)] = -1  # leading padding tokens (still non-decreasing per run)
                ids = torch.cummax(ids, 1).values
            seq_idx = ids.to(dev)
        call(x, w, bias, out, silu, init=init, final=final, seq_idx=seq_idx)
        torch.cuda.synchronize()
        x64 = x.double()
        for b in range(B):
            ids = seq_idx[b].tolist() if seq_idx is not None else [0] * L
            starts = [0] + [t for t in range(1, L) if ids[t] != ids[t - 1]]
            ends = starts[1:] + [L]
            for k, (s0, s1) in enumerate(zip(starts, ends)):
                win = init[b, :, S - (W - 1):].double() if (init is not None and k == 0) else \
                    torch.zeros(D, W - 1, dtype=torch.float64, device=dev)
                o, fin = ref_sequence(x64[b, :, s0:s1], win, w64, b64, silu, S)
                errs.append((out[b, :, s0:s1].double(), o))
                if final is not None and k == len(starts) - 1 and not torch.equal(final[b], fin.to(dtype)):
                    msgs.append(f"final state row {b}")
    num = sum(((a - r) ** 2).sum().item() for a, r in errs)
    den = sum((r ** 2).sum().item() for a, r in errs)
    rel = (num / den) ** 0.5 if den > 0 else (0.0 if num == 0 else float("inf"))
    if rel != rel or rel > TOL[dtype]:
        msgs.append(f"rel err {rel:.2e}")
    return rel, msgs


def run_checks(quick):
    rng = random.Random(1234)
    torch.manual_seed(1234)
    feats = ["init", "final", "init_final", "seq_idx", "seq_idx_states", "varlen"]
    Ls = [1, 2, 3, 7, 64, 129, 1000]
    n = fails = 0
    worst = {}
    dts = [torch.float32, torch.float16, torch.bfloat16] if not quick else [torch.float32, torch.float16]
    widths = [1, 2, 3, 4, 5, 6, 7, 8, 10]
    for dtype in dts:
        for wsame in ((False, True) if not quick else (dtype == torch.float32,)):
            wdtype = dtype if wsame else torch.float32
            for W in widths if not quick else [2, 4, 10]:
                for kind in ("contig", "cl", "strided"):
                    for fi, feat in enumerate(feats if not quick else ["init_final", "seq_idx_states", "varlen"]):
                        L = Ls[(W + fi + len(kind)) % len(Ls)] if not quick else [7, 129][fi % 2]
                        st = "cl" if (W + fi) % 2 else "contig"
                        rel, msgs = check_case(dtype, wdtype, W, kind, L, feat, st, rng)
                        n += 1
                        worst[dtype] = max(worst.get(dtype, 0), rel)
                        if msgs:
                            fails += 1
                            print(f"FAIL {dtype} w={wdtype} W={W} {kind} L={L} {feat} states={st}: {'; '.join(msgs)}")
    print(f"checks: {n} cases, {fails} failed; worst rel err " +
          ", ".join(f"{str(k)[6:]} {v:.1e}" for k, v in worst.items()), flush=True)
    return fails


def varlen_states_check():
    rng = random.Random(7)
    fails = 0
    for dtype in (torch.float32, torch.bfloat16):
        for S in (1, 3, 5):
            lens = [rng.randint(0, 9) for _ in range(5)]
            cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=DEV)
            total, D = sum(lens), 24
            x = torch.randn(total, D, dtype=dtype, device=DEV)
            st = torch.full((5, D, S), float("nan"), dtype=dtype, device=DEV)
            SHIM.varlen_states(p(x), p(cu), p(st), 5, D, total, S, list(x.stride()), list(st.stride()), DT[dtype],
                               torch.cuda.current_stream().cuda_stream)
            ref = torch.zeros_like(st)
            for b in range(5):
                s0, s1 = int(cu[b]), int(cu[b + 1])
                n = min(S, s1 - s0)
                if n:
                    ref[b, :, S - n:] = x[s1 - n:s1].t()
            if not torch.equal(st, ref):
                fails += 1
                print(f"FAIL varlen_states {dtype} S={S}")
    print(f"varlen_states: {fails} failed", flush=True)
    return fails


# ----------------------------------------------------------------------------------------------------
def bench(fn):
    import triton
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3  # us


def copy_us(nbytes):
    a = torch.empty(nbytes // 2, dtype=torch.int16, device=DEV).random_()
    b = torch.empty_like(a)
    return bench(lambda: b.copy_(a))


def time_features(rows):
    rng = random.Random(5)
    shapes = [(torch.float16, 8, 5120, 2048, 4), (torch.float16, 4, 8192, 8192, 4), (torch.bfloat16, 4, 512, 2048, 4),
              (torch.bfloat16, 2, 256, 1024, 4), (torch.float16, 16, 2048, 129, 4), (torch.float16, 8, 5120, 2047, 4),
              (torch.bfloat16, 8, 4096, 4096, 2), (torch.bfloat16, 3, 1536, 777, 3), (torch.float32, 8, 5120, 2048, 4)]
    for dtype, B, D, L, W in shapes:
        for kind in ("contig", "cl"):
            x = layout((B, D, L), kind, dtype)
            out = torch.empty_like(x)
            w = torch.randn(D, W, device=DEV)
            bias = torch.randn(D, device=DEV)
            init = torch.randn(B, D, W - 1, dtype=dtype, device=DEV) if kind == "contig" else \
                torch.randn(B, W - 1, D, dtype=dtype, device=DEV).transpose(1, 2)
            final = torch.empty_like(init)
            ids = torch.zeros(B, L, dtype=torch.int32)
            for c in sorted(rng.sample(range(1, L), 3)):
                ids[:, c:] += 1
            ids = ids.cuda()
            t_plain = bench(lambda: call(x, w, bias, out, True))
            t_st = bench(lambda: call(x, w, bias, out, True, init=init, final=final))
            t_sid = bench(lambda: call(x, w, bias, out, True, seq_idx=ids))
            t_copy = copy_us(x.numel() * x.element_size())
            nb = 2 * x.numel() * x.element_size()
            rows.append(("features", f"{str(dtype)[6:]} {B}x{D}x{L} W={W} {kind}", t_plain, t_st, t_sid, t_copy,
                         f"states/plain {t_st / t_plain:.3f} seq_idx/plain {t_sid / t_plain:.3f} "
                         f"plain/copy {t_copy / t_plain:.3f} ({nb / t_plain / 1e6:.2f} TB/s)"))
            print(rows[-1], flush=True)
            del x, out


def time_prefill(rows):
    rng = random.Random(11)
    lens = [rng.randint(1, 4096) for _ in range(64)]
    total = sum(lens)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=DEV)
    for dtype in (torch.bfloat16, torch.float16):
        for D in (4096, 8192):
            for kind in ("cl", "contig"):
                W = 4
                x = layout((D, total), kind, dtype)
                out = torch.empty_like(x)
                w = torch.randn(D, W, dtype=dtype, device=DEV)
                bias = torch.randn(D, dtype=dtype, device=DEV)
                poolt = torch.randn(256, D, W - 1, dtype=dtype, device=DEV) if kind == "contig" else \
                    torch.randn(256, W - 1, D, dtype=dtype, device=DEV).transpose(1, 2)
                idx = torch.tensor(rng.sample(range(256), 64), dtype=torch.int32, device=DEV)
                hi = torch.tensor([rng.random() < 0.5 for _ in range(64)], dtype=torch.bool, device=DEV)
                t = bench(lambda: call(x, w, bias, out, True, init=poolt, final=poolt, cu=cu, idx=idx, has_init=hi))
                nb = 2 * x.numel() * x.element_size() + 2 * 64 * D * (W - 1) * x.element_size()
                t_copy = copy_us(x.numel() * x.element_size())
                copy_bw = 2 * x.numel() * x.element_size() / t_copy
                rows.append(("prefill", f"{str(dtype)[6:]} D={D} tokens={total} {kind}", t, t_copy,
                             f"{nb / t / 1e6:.2f} TB/s, vs copy {nb / t / copy_bw:.3f}"))
                print(rows[-1], flush=True)
                del x, out


def main():
    global SHIM
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--dry", action="store_true", help="harness only, on the CPU, no kernels")
    ap.add_argument("--build-objs", default=None, help="only build the kernel objects into this folder")
    ap.add_argument("--objs", default=os.environ.get("CONV_OBJS", f"{ROOT}/.conv_objs"))
    args = ap.parse_args()
    if args.build_objs:
        return build_objs(args.build_objs)
    if args.dry:
        global DEV
        DEV, SHIM = "cpu", DryShim()
        torch.cuda.synchronize = lambda: None
        torch.cuda.current_stream = lambda: type("S", (), {"cuda_stream": 0})()
        return run_checks(args.quick) + varlen_states_check() and 0
    t0 = time.time()
    SHIM = load_shim(args.objs, "/tmp/conv_feat_build")
    print(f"built in {time.time() - t0:.0f} s", flush=True)
    fails = run_checks(args.quick) + varlen_states_check()
    rows = []
    if not args.no_time:
        time_prefill(rows)
        time_features(rows)
        print("\n| what | shape | us ... | ratios |")
        for r in rows:
            print("| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in r) + " |")
    print("FAILURES" if fails else "ALL CHECKS PASSED", fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
