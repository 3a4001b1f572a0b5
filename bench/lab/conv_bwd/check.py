"""GPU check and timing of the causal conv1d CUDA backward (csrc/kernels/causal_conv1d_bwd*.cu) through a
test-only pybind11 shim (shim.cpp), built here with nvcc: the real binding is written elsewhere.

  python bench/lab/conv_bwd/check.py build            # compile the kernels + shim into $BUILD (default /tmp/conv_bwd)
  python bench/lab/conv_bwd/check.py check [VARIANT]  # gradients vs torch autograd of a float64 reference
  python bench/lab/conv_bwd/check.py sanitize         # a few small calls per path (run under compute-sanitizer)
  python bench/lab/conv_bwd/check.py time [--peer]    # CUDA-graph timings vs a same-bytes copy (and causal-conv1d)
  python bench/lab/conv_bwd/check.py profile          # a channel-last and an odd-L call, for ncu
  python bench/lab/conv_bwd/check.py ab [ROUNDS]       # packed-sequence rows, ours and the rows_* variants, interleaved
"""
import concurrent.futures as cf
import importlib.util
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("BUILD", "/tmp/conv_bwd")
SOURCES = ["causal_conv1d_bwd.cu", "causal_conv1d_bwd_rows.cu", "causal_conv1d_bwd_channel_last.cu",
           "causal_conv1d_bwd_tile.cu"]
DTYPE_ID = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
# A/B variants: module conv_bwd_shim_NAME = the base objects with SOURCES rebuilt under FLAGS (or taken from
# $PREBUILT: NAME.o for one source, NAME.SOURCE.o for several, e.g. an earlier version's objects compiled
# with that version's headers; FLAGS None: only from there, else left out), timed beside the base on rows
# of LAYOUT.
ALL_VARIANTS = {
    "cl_main": (("causal_conv1d_bwd_channel_last.cu",), None, "cl"),  # an earlier version's object, e.g. main's
    "cl_prev": (("causal_conv1d_bwd_channel_last.cu",), None, "cl"),  # the version before this one
    "rows_main": (("causal_conv1d_bwd_rows.cu",), None, "contig"),  # main's rows kernel
    # the rows kernel and dispatch before commit 26bd73d (seq_idx: every vector's ids loaded)
    "rows_prev": (("causal_conv1d_bwd.cu", "causal_conv1d_bwd_rows.cu"), None, "contig"),
    # prebuilt only: rows objects of session 15's versions of the seq_idx path (docs/causal_conv1d.md, session 15)
    "rows_calls": (("causal_conv1d_bwd_rows.cu",), None, "contig"),  # masked path out of line, where a start is
    "rows_inline": (("causal_conv1d_bwd_rows.cu",), None, "contig"),  # the same inline, taken by the whole warp
}


def variant_object(name, src):
    return f"{name}.o" if len(ALL_VARIANTS[name][0]) == 1 else f"{name}.{src}.o"


VARIANTS = {n: v for n, v in ALL_VARIANTS.items()
            if v[1] is not None or all(os.path.exists(f"{os.environ.get('PREBUILT', '')}/{variant_object(n, src)}")
                                       for src in v[0])}


def build(arch="sm_90a"):
    """Objects found in $PREBUILT (compiled elsewhere with the same flags, e.g. carried to a device call) are
    linked as they are; the rest are compiled here."""
    os.makedirs(BUILD, exist_ok=True)
    prebuilt = os.environ.get("PREBUILT", "")
    inc = ["-I" + os.path.join(ROOT, "csrc/include"), "-I" + os.path.join(ROOT, "csrc/kernels")]
    nv = ["nvcc", "-std=c++17", "-O3", "--use_fast_math", f"-arch={arch}", "-Xcompiler", "-fPIC", "-Xptxas", "-v",
          *os.environ.get("NVCC_EXTRA", "").split()]
    py_inc = subprocess.check_output([sys.executable, "-m", "pybind11", "--includes"], text=True).split()
    jobs = []
    for s in SOURCES:
        if prebuilt and os.path.exists(f"{prebuilt}/{s}.o"):
            subprocess.run(["cp", f"{prebuilt}/{s}.o", f"{BUILD}/{s}.o"], check=True)
        else:
            jobs.append(nv + inc + ["-c", os.path.join(ROOT, "csrc/kernels", s), "-o", f"{BUILD}/{s}.o"])
    shim = ["g++", "-std=c++17", "-O2", "-fPIC", *inc, *py_inc, "-c", os.path.join(ROOT, "bench/lab/conv_bwd/shim.cpp")]
    jobs.append(shim + ["-o", f"{BUILD}/shim.o"])
    for name, (srcs, flags, _) in VARIANTS.items():
        for src in srcs:
            obj = variant_object(name, src)
            if prebuilt and os.path.exists(f"{prebuilt}/{obj}"):
                subprocess.run(["cp", f"{prebuilt}/{obj}", f"{BUILD}/{obj}"], check=True)
            else:
                jobs.append(nv + inc + flags + ["-c", os.path.join(ROOT, "csrc/kernels", src), "-o", f"{BUILD}/{obj}"])
        jobs.append(shim + [f"-DSHIM_NAME=conv_bwd_shim_{name}", "-o", f"{BUILD}/shim_{name}.o"])
    t0 = time.time()
    with cf.ThreadPoolExecutor(len(jobs)) as ex:
        results = list(ex.map(lambda c: subprocess.run(c, capture_output=True, text=True), jobs))
    log = "".join(r.stdout + r.stderr for r in results)
    open(f"{BUILD}/ptxas.txt", "w").write(log)
    for r in results:
        if r.returncode != 0:
            sys.exit("build failed:\n" + r.stderr[-4000:])
    ext = subprocess.check_output([sys.executable, "-c", "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                                  text=True).strip()
    subprocess.run(["nvcc", "-shared", "-o", f"{BUILD}/conv_bwd_shim{ext}", *[f"{BUILD}/{s}.o" for s in SOURCES],
                    f"{BUILD}/shim.o", "-lcudart"], check=True)
    for name, (srcs, _, _) in VARIANTS.items():
        objs = [f"{BUILD}/{s}.o" for s in SOURCES if s not in srcs] + [f"{BUILD}/{variant_object(name, s)}" for s in srcs]
        subprocess.run(["nvcc", "-shared", "-o", f"{BUILD}/conv_bwd_shim_{name}{ext}", *objs, f"{BUILD}/shim_{name}.o",
                        "-lcudart"], check=True)
    print(f"built in {time.time() - t0:.1f} s")


def load(name="conv_bwd_shim"):
    if BUILD not in sys.path:
        sys.path.insert(0, BUILD)
    return importlib.import_module(name)


# ---------------------------------------------------------------------------------------------- call

def make_like(layout, B, D, L, dtype, fill=None):
    """A [B, D, L] tensor in the given storage: contig, cl (dim stride 1), strided (seq stride 2), padded."""
    dev = "cuda"
    if layout == "contig":
        t = torch.empty(B, D, L, device=dev, dtype=dtype)
    elif layout == "cl":
        t = torch.empty(B, L, D, device=dev, dtype=dtype).transpose(1, 2)
    elif layout == "cl_pad":  # channel-last rows of D + 8 channels (16-byte aligned steps for D % 8 == 0)
        t = torch.empty(B, L, D + 8, device=dev, dtype=dtype)[..., :D].transpose(1, 2)
    elif layout == "cl_odd":  # channel-last rows of D + 1 channels: steps off the 16-byte grid
        t = torch.empty(B, L, D + 1, device=dev, dtype=dtype)[..., :D].transpose(1, 2)
    elif layout == "strided":
        t = torch.empty(B, D, 2 * L, device=dev, dtype=dtype)[..., ::2]
    elif layout == "padded":
        t = torch.empty(B, D, L + 3, device=dev, dtype=dtype)[..., 1:L + 1]
    else:
        raise ValueError(layout)
    if fill is None:
        t.copy_(torch.randn(B, D, L, device=dev, dtype=torch.float32))
    else:
        t.fill_(fill)
    return t


def strides(prefix, t, d, names=("batch", "dim", "seq")):
    for n, s in zip(names, t.stride()):
        d[f"{prefix}_{n}_stride"] = s


class Call:
    """Outputs (NaN-poisoned), workspace and the params dict of one backward call."""

    def __init__(self, mod, x, w, bias, dout, seq_idx=None, init=None, dfinal=None, silu=True, want=("dx", "dw", "db"),
                 want_dinit=False, deterministic=False, dx_layout="contig"):
        B, D, L = x.shape
        W = w.shape[1]
        self.mod = mod
        self.dx = make_like(dx_layout, B, D, L, x.dtype, fill=float("nan")) if "dx" in want else None
        self.dw = torch.full((D, W), float("nan"), device="cuda") if "dw" in want else None
        self.db = torch.full((D,), float("nan"), device="cuda") if ("db" in want and bias is not None) else None
        self.dinit = (torch.full((B, W - 1, D), float("nan"), device="cuda", dtype=x.dtype).transpose(1, 2)
                      if want_dinit else None)
        p = dict(x=x.data_ptr(), weight=w.data_ptr(), bias=bias.data_ptr() if bias is not None else 0,
                 dout=dout.data_ptr(), seq_idx=seq_idx.data_ptr() if seq_idx is not None else 0,
                 initial_states=init.data_ptr() if init is not None else 0,
                 dfinal_states=dfinal.data_ptr() if dfinal is not None else 0,
                 dx=self.dx.data_ptr() if self.dx is not None else 0,
                 dweight=self.dw.data_ptr() if self.dw is not None else 0,
                 dbias=self.db.data_ptr() if self.db is not None else 0,
                 dinitial_states=self.dinit.data_ptr() if self.dinit is not None else 0,
                 batch=B, dim=D, seqlen=L, width=W, w_dim_stride=w.stride(0), w_width_stride=w.stride(1),
                 bias_stride=bias.stride(0) if bias is not None else 0,
                 x_dtype=DTYPE_ID[x.dtype], w_dtype=DTYPE_ID[w.dtype], silu=int(silu),
                 deterministic=int(deterministic))
        strides("x", x, p)
        strides("dout", dout, p)
        if self.dx is not None:
            strides("dx", self.dx, p)
        if init is not None:
            strides("init", init, p)
        if dfinal is not None:
            strides("dfinal", dfinal, p)
        if self.dinit is not None:
            strides("dinit", self.dinit, p)
        if seq_idx is not None:
            p["seq_idx_batch_stride"], p["seq_idx_seq_stride"] = seq_idx.stride()
        nbytes = mod.workspace_bytes(p)
        self.ws = torch.full(((nbytes + 3) // 4,), float("nan"), device="cuda") if nbytes else None
        p["workspace"] = self.ws.data_ptr() if self.ws is not None else 0
        self.p = p

    def __call__(self):
        self.mod.bwd(self.p, torch.cuda.current_stream().cuda_stream)
        return self


# ---------------------------------------------------------------------------------------------- reference

def reference(x, w, bias, dout, seq_idx, init, dfinal, silu):
    """dx, dweight, dbias, dinit by autograd of the forward in float64 (per-segment masks for seq_idx)."""
    B, D, L = x.shape
    W = w.shape[1]
    H = W - 1
    x64 = x.double().requires_grad_()
    w64 = w.double().requires_grad_()
    b64 = bias.double().requires_grad_() if bias is not None else None
    i64 = (init.double() if init is not None else torch.zeros(B, D, H, dtype=torch.float64, device=x.device))
    i64.requires_grad_()
    xe = torch.cat([i64, x64], dim=-1)  # positions -H .. L-1
    seq = seq_idx.long() if seq_idx is not None else torch.zeros(B, L, dtype=torch.long, device=x.device)
    seq_e = torch.cat([seq[:, :1].expand(B, H), seq], dim=-1)
    win = xe.unfold(-1, W, 1)                               # [B, D, L, W]: x at t - H + j
    mask = (seq_e.unfold(-1, W, 1) == seq[:, :, None]).double()  # [B, L, W]
    pre = (win * mask[:, None] * w64[None, :, None, :]).sum(-1)
    if b64 is not None:
        pre = pre + b64[None, :, None]
    y = F.silu(pre) if silu else pre
    loss = (y * dout.double()).sum()
    if dfinal is not None and H > 0:
        fmask = (seq_e[:, L:] == seq[:, L - 1:L]).double()  # [B, H]
        loss = loss + (xe[..., L:] * fmask[:, None] * dfinal.double()).sum()
    grads = torch.autograd.grad(loss, [x64, w64, i64] + ([b64] if b64 is not None else []), allow_unused=True)
    dx, dw, dinit = grads[:3]
    db = grads[3] if b64 is not None else None
    return dx, dw, db, dinit


def rel_err(a, ref):
    a = a.double()
    if torch.isnan(a).any():
        return float("inf")
    den = ref.norm().item()
    return (a - ref).norm().item() / (den if den > 0 else 1.0)


TOL_X = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
TOL_W = 2e-4  # fp32 sums of products of the (rounded) inputs


def random_seq_idx(B, L):
    """Sorted segment ids per row, 1-4 segments, some rows starting a new segment at 0."""
    rows = []
    for _ in range(B):
        cuts = sorted(torch.randint(0, L, (torch.randint(0, 4, ()).item(),)).tolist())
        s = torch.zeros(L, dtype=torch.int32)
        for c in cuts:
            s[c:] += 1
        rows.append(s)
    return torch.stack(rows).cuda()


def packed_seq_idx(B, L, max_len, shuffle=False):
    """Many short segments per row (lengths 1..max_len, so starts fall on every offset of a vector); with
    shuffle, ids that repeat out of order (equal ids apart still count as different segments' neighbours only
    where they touch)."""
    rows = []
    for _ in range(B):
        lens = torch.randint(1, max_len + 1, (L,))
        ids = torch.repeat_interleave(torch.arange(L), lens)[:L]
        if shuffle:
            ids = ids % 3
        rows.append(ids.to(torch.int32))
    return torch.stack(rows).cuda()


def run_case(mod, dtype, wdtype, B, D, L, W, layout, bias=True, silu=True, init=False, dfinal=False, seq=False,
             dinit=False, want=("dx", "dw", "db"), check_det=False):
    x = make_like(layout, B, D, L, dtype)
    dout = make_like(layout, B, D, L, dtype)
    w = torch.randn(D, W, device="cuda").to(wdtype) * 0.5
    b = torch.randn(D, device="cuda").to(wdtype) if bias else None
    H = W - 1
    st_init = torch.randn(B, H, D, device="cuda").to(dtype).transpose(1, 2) if init else None
    st_dfinal = torch.randn(B, D, H, device="cuda").to(dtype) if dfinal else None
    sidx = (packed_seq_idx(B, L, seq[0], seq[1] == "shuffle") if isinstance(seq, tuple)
            else random_seq_idx(B, L) if seq else None)
    c = Call(mod, x, w, b, dout, sidx, st_init, st_dfinal, silu, want, dinit, dx_layout=layout)()
    rdx, rdw, rdb, rdinit = reference(x, w, b, dout, sidx, st_init, st_dfinal, silu)
    errs = {}
    if c.dx is not None:
        errs["dx"] = (rel_err(c.dx, rdx), TOL_X[dtype])
    if c.dw is not None:
        errs["dw"] = (rel_err(c.dw, rdw), TOL_W)
    if c.db is not None:
        errs["db"] = (rel_err(c.db, rdb), TOL_W)
    if c.dinit is not None:
        errs["dinit"] = (rel_err(c.dinit, rdinit), TOL_X[dtype] * 2)
    ok = all(e <= t for e, t in errs.values())
    if check_det:
        c2 = Call(mod, x, w, b, dout, sidx, st_init, st_dfinal, silu, want, dinit, deterministic=True,
                  dx_layout=layout)()
        c3 = Call(mod, x, w, b, dout, sidx, st_init, st_dfinal, silu, want, dinit, deterministic=True,
                  dx_layout=layout)()
        same = all(torch.equal(getattr(c2, k), getattr(c3, k)) for k in ("dx", "dw", "db")
                   if getattr(c2, k) is not None)
        errs["det"] = (0.0 if same else 1.0, 0.0)
        ok = ok and same
    return ok, errs


def check(mod):
    torch.manual_seed(0)
    cases = []
    dts = [(torch.bfloat16, torch.float32), (torch.float16, torch.float16), (torch.float32, torch.float32),
           (torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32)]
    # every path x width x dtype pair, with all features somewhere
    for W in range(1, 10):
        for i, (dt, wdt) in enumerate(dts):
            f = (W + i) % 4
            for layout, L in (("contig", 1024), ("contig", 129), ("cl", 200), ("strided", 77), ("padded", 64)):
                cases.append(dict(dtype=dt, wdtype=wdt, B=2, D=40 if layout == "cl" else 24, L=L, W=W, layout=layout,
                                  bias=f != 1, silu=f != 2, init=f in (0, 3), dfinal=f in (0, 1), seq=False,
                                  dinit=f in (0, 2)))
    # seq_idx on every layout, with states
    for W in (2, 4, 7):
        for layout in ("contig", "cl", "strided"):
            for dt in (torch.bfloat16, torch.float32):
                cases.append(dict(dtype=dt, wdtype=torch.float32, B=3, D=32, L=300, W=W, layout=layout, seq=True,
                                  init=True, dfinal=True, dinit=True))
    # edges: L < W, L = 1, tiny, large rows, many tiles, single channel, only some outputs wanted
    for W in (3, 4, 8):
        for L in (1, 2, 5):
            cases.append(dict(dtype=torch.float32, wdtype=torch.float32, B=2, D=8, L=L, W=W, layout="contig",
                              init=True, dfinal=True, dinit=True))
            cases.append(dict(dtype=torch.bfloat16, wdtype=torch.float32, B=2, D=8, L=L, W=W, layout="cl",
                              init=True, dfinal=True, dinit=True))
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=4, D=256, L=4096, W=4, layout="contig", init=True,
                          dfinal=True, dinit=True, check_det=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=512, L=2048, W=4, layout="cl", check_det=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=16, D=128, L=129, W=4, layout="contig", check_det=True))
        cases.append(dict(dtype=dt, wdtype=dt, B=1, D=1, L=3000, W=4, layout="contig"))
        cases.append(dict(dtype=dt, wdtype=dt, B=2, D=1, L=3000, W=3, layout="cl"))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=64, L=512, W=4, layout="contig", want=("dx",)))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=64, L=512, W=4, layout="contig", want=("dw", "db")))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=64, L=300, W=4, layout="cl", want=("dw",),
                          dinit=True, init=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=64, L=300, W=4, layout="strided", want=("db",),
                          dinit=True, dfinal=True))
    # session 12: shifted rows (odd L on [B, D, L], a flat array whose last vector is partial), the staged
    # channel-last kernel (partial channel blocks, padded steps, long rows of many chunks) and the direct one
    for W in (1, 2, 3, 4, 5, 8):
        for i, (dt, wdt) in enumerate(dts):
            f = (W + i) % 4
            feats = dict(bias=f != 1, silu=f != 2, init=f in (0, 3), dfinal=f in (0, 1), dinit=f in (0, 2))
            for B, D, L in ((3, 5, 131), (2, 7, 777), (1, 3, 64), (2, 4, 1000)):
                cases.append(dict(dtype=dt, wdtype=wdt, B=B, D=D, L=L, W=W, layout="contig", **feats))
            for layout, D, L in (("cl", 72, 300), ("cl_pad", 40, 129), ("cl_odd", 40, 200), ("cl", 48, 5000)):
                cases.append(dict(dtype=dt, wdtype=wdt, B=2, D=D, L=L, W=W, layout=layout, **feats))
    for W in (3, 4):
        for layout in ("cl", "cl_pad", "cl_odd"):
            for dt in (torch.bfloat16, torch.float16, torch.float32):
                cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=72, L=700, W=W, layout=layout, seq=True,
                                  init=True, dfinal=True, dinit=True))
    for dt in (torch.bfloat16, torch.float32):
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=3, D=1536, L=777, W=3, layout="contig", init=True,
                          dfinal=True, dinit=True, check_det=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=4, D=1024, L=1001, W=4, layout="contig", check_det=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=1024, L=1000, W=4, layout="cl", check_det=True,
                          init=True, dinit=True))
    # the staged kernel's straight-line interior stages, SiLU off and on, every width, beside partial channel blocks
    for W in range(1, 9):
        for dt in (torch.bfloat16, torch.float16, torch.float32):
            cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=136, L=1500, W=W, layout="cl", silu=W % 2 == 0,
                              bias=W != 3))
    # seq_idx on aligned [B, D, L] rows (the rows kernel): packed short sequences (starts on every offset of a
    # vector, segments shorter than the filter), ids out of order, one or two vectors a lane, every feature
    for W in (1, 2, 3, 4, 5, 8):
        for i, (dt, wdt) in enumerate(dts):
            f = (W + i) % 4
            feats = dict(bias=f != 1, silu=f != 2, init=f in (0, 3), dfinal=f in (0, 1), dinit=f in (0, 2))
            for B, D, L, seq in ((2, 24, 1024, (9, "")), (3, 8, 512, (3, "shuffle")), (2, 16, 2048, (600, ""))):
                cases.append(dict(dtype=dt, wdtype=wdt, B=B, D=D, L=L, W=W, layout="contig", seq=seq, **feats))
    # rows whose last tile runs past the row end (vectors beyond L: no marks there), one and two vectors a lane
    for dt in (torch.bfloat16, torch.float32):
        for D, seq in ((24, (9, "")), (16, (3, "shuffle")), (640, (40, "")), (640, (4, "shuffle"))):
            cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=D, L=1000, W=4, layout="contig", seq=seq,
                              init=True, dfinal=True, dinit=True, check_det=D > 100))
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=512, L=4096, W=4, layout="contig", seq=(700, ""),
                          init=True, dfinal=True, dinit=True, check_det=True))
        cases.append(dict(dtype=dt, wdtype=torch.float32, B=2, D=64, L=1024, W=4, layout="contig", seq=(5, ""),
                          want=("dw", "db")))
    n_fail = 0
    for c in cases:
        ok, errs = run_case(mod, **c)
        if not ok:
            n_fail += 1
            desc = {k: (str(v).replace("torch.", "") if not isinstance(v, (int, bool)) else v) for k, v in c.items()}
            print("FAIL", desc, {k: f"{e:.2e}/{t:.0e}" for k, (e, t) in errs.items()})
    print(f"check: {len(cases) - n_fail}/{len(cases)} cases passed")
    return n_fail == 0


def sanitize(mod):
    """Small calls through each path (rows, channel-last, tile, naive) with every feature."""
    torch.manual_seed(1)
    ok = True
    for dt in (torch.bfloat16, torch.float32):
        for layout, L, W in (("contig", 512, 4), ("cl", 100, 4), ("contig", 129, 3), ("strided", 50, 4),
                             ("contig", 40, 11), ("contig", 777, 4), ("cl_pad", 100, 3), ("cl_odd", 100, 4),
                             ("contig", 1024, 4)):
            for seq in (True, (7, "")):
                good, errs = run_case(mod, dt, torch.float32, 2, 32, L, W, layout, init=True, dfinal=True,
                                      seq=seq, dinit=True)
                ok = ok and good
                if not good:
                    print("FAIL", dt, layout, L, W, errs)
        # the staged channel-last kernel's interior stages (full warps of channels, no states, no seq_idx)
        for W, silu in ((4, True), (2, False), (7, True)):
            good, errs = run_case(mod, dt, torch.float32, 2, 128, 1000, W, "cl", silu=silu)
            ok = ok and good
            if not good:
                print("FAIL", dt, "cl interior", W, silu, errs)
    torch.cuda.synchronize()
    print("sanitize calls done", "ok" if ok else "FAILED")
    return ok


# ---------------------------------------------------------------------------------------------- timing

def gpu_time_us(fn, reps=40):
    """Median GPU time of fn replayed from a CUDA graph, L2 flushed before each replay (bench/common.py)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from common import graph_time_us

    return graph_time_us(fn, reps)


def time_all(mod, peer, variants=None, quick=False):
    """Backward GPU time of ours (default and deterministic), causal-conv1d's (dao) and each A/B variant's (on
    the rows of its layout), against a same-bytes copy."""
    variants = variants or {}
    dao = None
    if peer:
        try:  # unpacked by bench/peer_cache.py onto PYTHONPATH
            from causal_conv1d.cpp_functions import causal_conv1d_bwd_function as dao
        except Exception as e:  # noqa: BLE001 - the table says the peer is missing
            print("peer unavailable:", repr(e)[:300])
    bf, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    # (x dtype, w dtype, B, D, L, W, layouts, packed sequences per row or 0)
    shapes = [(bf, f32, 8, 5120, 2048, 4, ("contig", "cl"), 0), (bf, f32, 4, 4096, 4096, 4, ("contig", "cl"), 0),
              (bf, f32, 8, 4096, 4096, 2, ("contig", "cl"), 0), (f16, f32, 8, 5120, 2048, 4, ("cl",), 0),
              (f16, f32, 4, 4096, 4096, 4, ("cl",), 0), (bf, bf, 8, 5120, 2048, 4, ("cl",), 0),
              (f32, f32, 8, 5120, 2048, 4, ("cl",), 0), (f32, f32, 4, 4096, 4096, 4, ("cl",), 0),
              (f32, f32, 8, 4096, 4096, 2, ("cl",), 0),
              (bf, f32, 3, 1536, 777, 3, ("contig", "cl"), 0), (bf, f32, 2, 256, 1024, 4, ("contig", "cl"), 0),
              (bf, f32, 1, 4096, 32768, 4, ("contig", "cl"), 64), (bf, f32, 1, 4096, 32768, 4, ("contig",), 0),
              (f32, f32, 1, 4096, 32768, 4, ("contig",), 64), (bf, f32, 16, 2048, 129, 4, ("contig",), 0)]
    if not quick:
        shapes += [(bf, f32, 4, 512, 2048, 4, ("contig", "cl"), 0), (bf, f32, 16, 2048, 129, 4, ("cl",), 0),
                   (f32, f32, 16, 2048, 129, 4, ("contig", "cl"), 0)]
    rows = []
    copy_cache = {}
    names = list(variants)
    print("\n x/w | BxDxL | W | layout | copy us | ours us (frac of copy) | det us | dao us (frac) | "
          + " | ".join(f"{n} us (frac)" for n in names), flush=True)

    def show(dt, wdt, shape, W, layout, tc, to, tdet, td, tv):  # one row, printed as soon as it is measured
        print(f" {dt}/{wdt} | {shape} | {W} | {layout} | {tc:.1f} | {to:.1f} ({tc / to:.2f}) | {tdet:.1f} | "
              f"{td:.1f} ({tc / td:.2f}) | " + " | ".join(f"{tv[n]:.1f} ({tc / tv[n]:.2f})" for n in names),
              flush=True)
    for dt, wdt, B, D, L, W, layouts, n_seq in shapes:
        n = B * D * L
        esz = torch.finfo(dt).bits // 8
        if (n, esz) not in copy_cache:
            src = torch.randn(n * 3 // 2, device="cuda").to(dt)
            dst = torch.empty_like(src)
            copy_cache[(n, esz)] = gpu_time_us(lambda: dst.copy_(src))
            del src, dst
        t_copy = copy_cache[(n, esz)]
        sidx = None
        if n_seq:  # n_seq packed sequences of random lengths per row
            cuts = torch.sort(torch.randperm(L - 1)[: n_seq - 1] + 1).values
            ids = torch.zeros(L, dtype=torch.int32)
            ids[cuts] = 1
            sidx = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
        for layout in layouts:
            x = make_like(layout, B, D, L, dt)
            dout = make_like(layout, B, D, L, dt)
            w = (torch.randn(D, W, device="cuda") * 0.5).to(wdt)
            b = torch.randn(D, device="cuda").to(wdt)
            t_ours = gpu_time_us(Call(mod, x, w, b, dout, sidx, silu=True, dx_layout=layout))
            t_det = gpu_time_us(Call(mod, x, w, b, dout, sidx, silu=True, dx_layout=layout, deterministic=True))
            t_var = {name: (gpu_time_us(Call(vm, x, w, b, dout, sidx, silu=True, dx_layout=layout))
                            if layout == VARIANTS[name][2] else float("nan")) for name, vm in variants.items()}
            t_dao = float("nan")
            if dao is not None and (sidx is None or layout == "cl"):  # its seq_idx takes channel-last only
                try:
                    dxp = torch.empty_like(x)
                    t_dao = gpu_time_us(lambda: dao(x, w, b, dout, sidx, None, None, dxp, False, True))
                except Exception as e:  # noqa: BLE001
                    print("peer failed", dt, B, D, L, W, layout, repr(e)[:200])
            rows.append((str(dt).replace("torch.", ""), str(wdt).replace("torch.", ""),
                         f"{B}x{D}x{L}" + (f" seq{n_seq}" if n_seq else ""), W, layout, t_copy, t_ours, t_det, t_dao,
                         t_var))
            show(*rows[-1])
            del x, dout
    return rows


def time_ab(mod, variants, rounds=5):
    """Packed sequences on contiguous rows (issue 25's case) and the same rows without seq_idx: ours and each
    contiguous-layout variant, interleaved round by round; median and spread of the rounds' medians."""
    names = ["ours"] + [n for n in variants if VARIANTS[n][2] == "contig"]
    mods = {"ours": mod, **{n: variants[n] for n in names[1:]}}
    bf, f32 = torch.bfloat16, torch.float32
    print("\n x/w | BxDxL | W | copy us | " + " | ".join(f"{n} us median [min, max] (of copy)" for n in names))
    for dt, B, D, L, W, n_seq in ((bf, 1, 4096, 32768, 4, 64), (f32, 1, 4096, 32768, 4, 64), (bf, 1, 4096, 32768, 4, 0),
                                  (bf, 1, 4096, 32768, 4, 1024)):
        src = torch.randn(B * D * L * 3 // 2, device="cuda").to(dt)
        dst = torch.empty_like(src)
        t_copy = gpu_time_us(lambda: dst.copy_(src))
        del src, dst
        sidx = None
        if n_seq:
            cuts = torch.sort(torch.randperm(L - 1)[: n_seq - 1] + 1).values
            ids = torch.zeros(L, dtype=torch.int32)
            ids[cuts] = 1
            sidx = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
        x, dout = make_like("contig", B, D, L, dt), make_like("contig", B, D, L, dt)
        w, b = (torch.randn(D, W, device="cuda") * 0.5), torch.randn(D, device="cuda")
        times = {n: [] for n in names}
        for _ in range(rounds):
            for n in names:
                times[n].append(gpu_time_us(Call(mods[n], x, w, b, dout, sidx, silu=True)))
        cells = []
        for n in names:
            t = sorted(times[n])
            cells.append(f"{t[len(t) // 2]:.1f} [{t[0]:.1f}, {t[-1]:.1f}] ({t_copy / t[len(t) // 2]:.2f})")
        print(f" {str(dt)[6:]}/fp32 | {B}x{D}x{L}" + (f" seq{n_seq}" if n_seq else "") + f" | {W} | {t_copy:.1f} | "
              + " | ".join(cells), flush=True)
        del x, dout


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "build":
        build(*(sys.argv[2:3]))
    elif cmd == "check":  # the base build, or the A/B variant named
        sys.exit(0 if check(load(f"conv_bwd_shim_{sys.argv[2]}" if len(sys.argv) > 2 else "conv_bwd_shim")) else 1)
    elif cmd == "sanitize":
        sys.exit(0 if sanitize(load()) else 1)
    elif cmd == "profile":  # one call each (run under ncu): bf16 channel-last 4x4096x4096 W=4, contiguous
        # 3x1536x777 W=3, contiguous 1x4096x32768 W=4 with 64 packed sequences
        torch.manual_seed(0)
        for layout, (B, D, L, W), n_seq in (("cl", (4, 4096, 4096, 4), 0), ("contig", (3, 1536, 777, 3), 0),
                                            ("contig", (1, 4096, 32768, 4), 64)):
            x, dout = make_like(layout, B, D, L, torch.bfloat16), make_like(layout, B, D, L, torch.bfloat16)
            w, b = torch.randn(D, W, device="cuda"), torch.randn(D, device="cuda")
            sidx = None
            if n_seq:
                cuts = torch.sort(torch.randperm(L - 1)[: n_seq - 1] + 1).values
                ids = torch.zeros(L, dtype=torch.int32)
                ids[cuts] = 1
                sidx = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
            Call(load(), x, w, b, dout, sidx, dx_layout=layout)()
        torch.cuda.synchronize()
    elif cmd == "ab":
        time_ab(load(), {n: load(f"conv_bwd_shim_{n}") for n in VARIANTS}, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif cmd == "time":
        time_all(load(), "--peer" in sys.argv, {n: load(f"conv_bwd_shim_{n}") for n in VARIANTS}, "--quick" in sys.argv)
    else:
        sys.exit(__doc__)
