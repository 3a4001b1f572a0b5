"""The small-shape sweep that bench/reliability/sanitize.py runs under compute-sanitizer (and a GPU
test of its own): every kernel of one op (every variant, layout, dtype, width path, update mode,
orientation and tile config), each result checked against float64 (docs/reliability.md lists what
each test covers). A combination an op refuses with ValueError is counted as skipped.

  test_conv     the op_tests --check_only sweeps, then padded rows, fp32 weights with 16-bit x,
                misaligned pointers, channel-last odd D, every update mode and an index past the pool
  test_matmul   the op_tests --check_only sweeps, then every tile config in every mode and orientation
  test_wgmma    every Hopper wgmma config (sm_90a) on shapes that reach tails, the stage ring's wrap and
                persistent loops

AITER_LITE_SWEEP_QUICK=1: fewer widths, shapes and orientations. Each test prints a SWEEP line.
test_canary plants an out-of-bounds write in an aiter_lite kernel for memcheck to report: it runs only
with AITER_LITE_SANITIZER_CANARY=1 (sanitize.py sets it in its memcheck run of the canary).

  compute-sanitizer --tool racecheck --kernel-name kns=aiter_lite \
      python3 -m pytest -q -s -m gpu tests/test_gpu_sanitize_sweep.py -k matmul
"""
from __future__ import annotations

import contextlib
import io
import itertools
import os
import sys
import time
from pathlib import Path

import pytest
import torch

import aiter_lite
from reliability_cases import MATMUL_TOL, check_conv, run_update_checked
from aiter_lite.testing import matmul_rel_error as matmul_error
from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "op_tests"))

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
QUICK = os.environ.get("AITER_LITE_SWEEP_QUICK") == "1"
f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16


class Tally:
    def __init__(self):
        self.checks, self.failed, self.skipped = 0, [], []

    def record(self, what: str, err) -> None:
        self.checks += 1
        if err:
            self.failed.append(f"{what}: {err}")
            print(f"FAIL {what}: {err}", flush=True)

    def run(self, what: str, fn) -> None:
        """fn() -> error string or None. ValueError = a refused combination (skipped)."""
        try:
            err = fn()
        except ValueError as e:
            self.skipped.append(f"{what}: {str(e).splitlines()[0][:160]}")
            return
        except Exception as e:  # a crash or a CUDA error: a failure
            err = f"{type(e).__name__}: {e}"
        self.record(what, err)

    def finish(self, op: str, t0: float) -> None:
        torch.cuda.synchronize()
        for s in self.skipped[:40]:
            print("skipped: " + s)
        print(f"SWEEP {op} {'FAIL' if self.failed else 'PASS'}: {self.checks} checks, {len(self.failed)} failed, "
              f"{len(self.skipped)} refused combinations skipped, {time.time() - t0:.1f} s")
        assert not self.failed, "\n".join(f.splitlines()[0] for f in self.failed[:20])


def op_test(tally: Tally, module, argv: list[str]) -> None:
    """Run an op_tests main(argv) in this process; its exit code 1 (a row over tolerance) is a failure."""
    what = f"{module.__name__} {' '.join(argv)}"
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            rc = module.main(argv)
    except ValueError as e:
        tally.skipped.append(f"{what}: {str(e).splitlines()[0][:160]}")
        return
    except Exception as e:
        rc = f"{type(e).__name__}: {e}"
    tally.record(what, None if rc == 0 else f"exit {rc}\n" + buf.getvalue()[-2000:])


# ---------------------------------------------------------------------------------------------
# conv


def test_conv():
    dev, tally, t0 = torch.device("cuda"), Tally(), time.time()
    import test_causal_conv1d as tc

    from aiter_lite.ops.causal_conv1d import VARIANTS

    variants = ",".join(VARIANTS)  # auto first, then every GPU kernel step
    widths = "1,4,9" if QUICK else "1,2,4,7,9"
    base = ["--check_only", "--no_torch", "--device", str(dev), "--batch", "2", "--dim", "40", "--seqlen", "1,65,129",
            "--width", widths, "--dtype", "fp16,bf16,fp32", "--variants", variants]
    for layout in ("contiguous", "channel_last", "strided"):
        op_test(tally, tc, base + ["--layout", layout] + (["--update"] if layout == "contiguous" else []))

    gen = torch.Generator(device=dev).manual_seed(1)

    def rnd(*shape, dtype=bf16):
        return torch.randn(*shape, generator=gen, device=dev).to(dtype)

    vs = list(VARIANTS)
    for dtype, width, variant in itertools.product((f16, bf16, f32), (3, 4) if QUICK else (2, 3, 4, 8), vs):
        x = rnd(2, 24, 70 + 5, dtype=dtype)[:, :, :70]  # padded rows: the shared-memory kernel
        w, b = rnd(24, width, dtype=dtype), rnd(24, dtype=dtype)
        out = torch.full_like(x, float("nan"))

        def padded(x=x, w=w, b=b, out=out, variant=variant):
            aiter_lite.causal_conv1d_fwd(out, x, w, b, True, variant=variant)
            return check_conv(out, x, w, b, True)
        tally.run(f"conv padded {dtype} w{width} {variant}", padded)
    for dtype, variant in itertools.product((f16, bf16), vs):  # fp32 weights with 16-bit x
        x, w, b = rnd(2, 32, 129, dtype=dtype), rnd(32, 4, dtype=f32), rnd(32, dtype=f32)
        tally.run(f"conv fp32 weights {dtype} {variant}",
                  lambda x=x, w=w, b=b, v=variant: check_conv(aiter_lite.causal_conv1d(x, w, b, "silu", variant=v),
                                                              x, w, b, True))
    for dtype, variant in itertools.product((f16, bf16, f32), vs):  # misaligned x and out, odd-D channel-last
        x = rnd(2 * 24 * 65 + 1, dtype=dtype)[1:].view(2, 24, 65)
        out = torch.full((2 * 24 * 65 + 1,), float("nan"), dtype=dtype, device=dev)[1:].view(2, 24, 65)
        w, b = rnd(24, 4, dtype=dtype), rnd(24, dtype=dtype)

        def misaligned(x=x, w=w, b=b, out=out, v=variant):
            aiter_lite.causal_conv1d_fwd(out, x, w, b, True, variant=v)
            return check_conv(out, x, w, b, True)
        tally.run(f"conv misaligned {dtype} {variant}", misaligned)
        xc = rnd(2, 65, 13, dtype=dtype).transpose(1, 2)
        wc, bc = rnd(13, 3, dtype=dtype), rnd(13, dtype=dtype)
        tally.run(f"conv channel-last D=13 {dtype} {variant}",
                  lambda x=xc, w=wc, b=bc, v=variant: check_conv(aiter_lite.causal_conv1d(x, w, b, None, variant=v),
                                                                 x, w, b, False))

    # decode update: every mode
    modes = itertools.product((f16, bf16, f32), (1, 4) if QUICK else (1, 2, 4, 8), (1, 2, 4), ("shift", "circular"),
                              ("none", "indices"), ("contiguous", "channel_last"))
    for n, (dtype, width, seqlen, mode, idx_mode, state_layout) in enumerate(modes):
        batch, dim = 5, 40
        state_len = max(width - 1, 1) + n % 3
        pool = 2 * batch if idx_mode == "indices" else batch
        st = rnd(pool, state_len, dim, dtype=dtype).transpose(1, 2) if state_layout == "channel_last" else \
            rnd(pool, dim, state_len, dtype=dtype)
        x = rnd(batch, dim, dtype=dtype) if seqlen == 1 and n % 2 else rnd(batch, dim, seqlen, dtype=dtype)
        w = rnd(dim, width, dtype=dtype if n % 4 else f32)
        b = rnd(dim, dtype=w.dtype) if n % 2 else None
        seqlens = (torch.randint(-50, 1000, (batch,), generator=gen, device=dev, dtype=torch.int32)
                   if mode == "circular" else None)
        idx = None
        if idx_mode == "indices":
            idx = torch.randperm(pool, generator=gen, device=dev)[:batch].to(torch.int32)
            idx[1] = -1  # padded slot
        tally.run(f"update {dtype} w{width} L{seqlen} {mode} {idx_mode} {state_layout}",
                  lambda x=x, st=st, w=w, b=b, s=seqlens, i=idx: run_update_checked(x, st, w, b, True, s, i))
    # an index past the pool: treated as a padded slot on the GPU, never an out-of-bounds access
    x, st, w = rnd(4, 40, dtype=bf16), rnd(3, 40, 3, dtype=bf16), rnd(40, 4, dtype=bf16)
    idx = torch.tensor([0, 3, 2, 1 << 30], dtype=torch.int32, device=dev)
    if dev.type == "cuda":
        def past_pool():
            out = aiter_lite.causal_conv1d_update(x, st, w, None, "silu", None, idx)
            torch.cuda.synchronize(dev)
            return None if bool((out[1] == 0).all() and (out[3] == 0).all()) else "index past the pool not zeroed"
        tally.run("update index past the pool", past_pool)
    tally.finish("conv", t0)


# ---------------------------------------------------------------------------------------------
# matmul


def test_matmul():
    dev, tally, t0 = torch.device("cuda"), Tally(), time.time()
    import test_matmul as tm

    from aiter_lite.ops.matmul import VARIANTS

    kernels = [v for v in VARIANTS if v != "auto"]
    shapes = ["-m", "1,129", "-n", "7,127", "-k", "16,129"]
    base = ["--check_only", "--no_torch", "--device", str(dev)] + shapes
    orientations = ([[]] if QUICK else [[], ["--transpose_a"], ["--transpose_b"], ["--transpose_a", "--transpose_b"]])
    groups = [("fp16,bf16", [], kernels + ["auto"]), ("fp32", [], ["naive", "tiled", "auto"]),
              ("fp32", ["--tf32"], [v for v in kernels if v not in ("naive", "tiled")] + ["auto"])]
    for dtypes, extra, variants in groups:
        for variant in variants:  # one call per variant: a variant refused for a dtype is skipped alone
            for orient in orientations:
                op_test(tally, tm, base + ["--dtype", dtypes, "--variants", variant] + extra + orient)
    op_test(tally, tm, base + ["--dtype", "fp16", "--variants", ",".join(kernels), "--batch", "3"])

    gen = torch.Generator(device=dev).manual_seed(2)
    modes = {"fp16": f16, "bf16": bf16, "tf32": f32, "fp32": f32}
    shape_list = [(130, 200, 96)] if QUICK else [(130, 200, 96), (256, 256, 128), (1, 7, 129)]
    orients = ((False, False), (True, True)) if QUICK else ((False, False), (True, True), (False, True), (True, False))

    def operands(m, n, k, dt, ta, tb):
        a = (torch.randn(k, m, generator=gen, device=dev).to(dt).t() if ta else
             torch.randn(m, k, generator=gen, device=dev).to(dt))
        b = (torch.randn(n, k, generator=gen, device=dev).to(dt).t() if tb else
             torch.randn(k, n, generator=gen, device=dev).to(dt))
        return a, b

    for index, cfg in enumerate(MATMUL_CONFIGS):
        for mode, variant in itertools.product(modes, kernels):
            dt, tf32 = modes[mode], mode == "tf32"
            name = f"config {index} ({getattr(cfg, 'path', '?')}) {mode} {variant}"
            try:  # does the op take this (config, mode, variant) at all? (refused before any launch)
                a, b = operands(16, 16, 16, dt, False, False)
                aiter_lite.matmul(a, b, allow_tf32=tf32, variant=variant, config=index)
            except ValueError as e:
                tally.skipped.append(f"{name}: {str(e).splitlines()[0][:160]}")
                continue
            for (m, n, k), (ta, tb) in itertools.product(shape_list, orients):
                a, b = operands(m, n, k, dt, ta, tb)
                out = torch.full((m, n), float("nan"), dtype=dt, device=dev)

                def one(a=a, b=b, out=out, mode=mode, variant=variant, index=index):
                    aiter_lite.matmul(a, b, out, allow_tf32=mode == "tf32", variant=variant, config=index)
                    err = matmul_error(out, a, b)
                    return None if err <= MATMUL_TOL[mode] else f"relative error {err:.3e}"
                tally.run(f"{name} {m}x{n}x{k} {'t' if ta else 'n'}{'t' if tb else 'n'}", one)
    tally.finish("matmul", t0)


def _round8(x: int) -> int:
    return (x + 7) // 8 * 8


def test_wgmma():
    """Every wgmma config (csrc/kernels/matmul_wgmma.cuh) on the shapes that reach its code paths."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the wgmma kernels need a compute capability 9.0 GPU")
    dev, tally, t0 = torch.device("cuda"), Tally(), time.time()
    from aiter_lite.ops.matmul import matmul_plan

    gen = torch.Generator(device=dev).manual_seed(3)
    # (M, N, K): tails on every side; K past the stage ring (several k-tiles, with a K tail); and
    # 2304 x 2048 (144 tiles of 128 x 256, more than an H100's 132 CTAs: a CTA runs a second tile,
    # which is where deferred stores and the ring's phase flips are exercised).
    shapes = [(130, 200, 96), (1, 7, 16), (129, 127, 520)] + ([] if QUICK else [(2304, 2048, 136), (64, 8192, 1000)])
    modes = {"wgmma_16": ("fp16", "bf16"), "wgmma_tf32": ("tf32",)}
    runs = [(c, mode) for c in MATMUL_CONFIGS for mode in modes.get(getattr(c, "path", ""), ())]
    dtypes = {"fp16": f16, "bf16": bf16, "tf32": f32}
    for (cfg, mode), tb in itertools.product(runs, (False, True)):
        dt, tf32 = dtypes[mode], mode == "tf32"
        for m, n, k in shapes:
            # TMA wants 16-byte row strides: odd sizes are slices of tensors padded to 8 columns.
            a = torch.randn(m, _round8(k), generator=gen, device=dev).to(dt)[:, :k]
            b = (torch.randn(n, _round8(k), generator=gen, device=dev).to(dt)[:, :k].t() if tb else
                 torch.randn(k, _round8(n), generator=gen, device=dev).to(dt)[:, :n])
            out = torch.full((m, n), float("nan"), dtype=dt, device=dev)
            name = f"wgmma config {cfg.index} {mode} {m}x{n}x{k} {'nt' if tb else 'nn'}"

            def one(a=a, b=b, out=out, index=cfg.index, mode=mode, tf32=tf32):
                kernel = matmul_plan(a, b, out, allow_tf32=tf32, variant="wgmma", config=index)
                if not kernel.startswith("wgmma"):
                    return f"ran {kernel}, not the wgmma kernel"
                aiter_lite.matmul(a, b, out, allow_tf32=tf32, variant="wgmma", config=index)
                err = matmul_error(out, a, b)
                return None if err <= MATMUL_TOL[mode] else f"relative error {err:.3e}"
            tally.run(name, one)
    tally.finish("wgmma", t0)


@pytest.mark.skipif(os.environ.get("AITER_LITE_SANITIZER_CANARY") != "1", reason="run by sanitize.py under memcheck")
def test_canary():
    """One causal_conv1d_fwd whose out pointer is swapped for a 16-float buffer's (memcheck must report it)."""
    conv = sys.modules["aiter_lite.ops.causal_conv1d"]
    x, w = torch.randn(4, 256, 1024, device="cuda"), torch.randn(256, 4, device="cuda")
    out, tiny = torch.empty_like(x), torch.empty(16, device="cuda")
    real_get = conv.get_module

    class SwapOut:  # the loaded module, with the out pointer (found by value) swapped in every call
        def __init__(self, mod):
            self.mod = mod

        def __getattr__(self, name):
            fn = getattr(self.mod, name)
            return lambda *a: fn(*(tiny.data_ptr() if v == out.data_ptr() else v for v in a))
    conv.get_module = lambda name, backend: SwapOut(real_get(name, backend))
    try:
        aiter_lite.causal_conv1d_fwd(out, x, w, None, False)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the sanitizer may turn the fault into a CUDA error: expected
        print(f"canary: {type(e).__name__}: {str(e)[:200]}")
    finally:
        conv.get_module = real_get
    print("CANARY_LAUNCHED (the sanitizer must report an invalid __global__ write in an aiter_lite kernel)")
