#!/usr/bin/env python3
"""The small-shape sweep that sanitize.sh runs under compute-sanitizer: every kernel of one op (every
variant, layout, dtype, width path, update mode, orientation and tile config) in one process, each
result checked against float64 (docs/reliability.md lists what each --op covers).

  --op conv     the op_tests --check_only sweeps, then padded rows, fp32 weights with 16-bit x,
                misaligned pointers, channel-last odd D, every update mode and an index past the pool
  --op matmul   the op_tests --check_only sweeps, then every tile config in every mode and orientation
  --op wgmma    every Hopper wgmma config (sm_90a) on shapes that reach tails, the stage ring's wrap and
                persistent loops
  --canary      a planted out-of-bounds write in an aiter_lite kernel: memcheck must report it

Combinations an op refuses with ValueError are counted as skipped. Exit 1 on any mismatch or error.

  compute-sanitizer --tool racecheck --kernel-name kns=aiter_lite \
      python3 bench/reliability/sanitize_sweep.py --op matmul
"""
from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "op_tests"))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import aiter_lite  # noqa: E402
from checks import MATMUL_TOL, check_conv, matmul_error, run_update_checked  # noqa: E402

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


def conv_sweep(tally: Tally, dev, quick: bool) -> None:
    import test_causal_conv1d as tc

    from aiter_lite.ops.causal_conv1d import VARIANTS

    variants = ",".join(VARIANTS)  # auto first, then every GPU kernel step
    widths = "1,4,9" if quick else "1,2,4,7,9"
    base = ["--check_only", "--no_torch", "--device", str(dev), "--batch", "2", "--dim", "40", "--seqlen", "1,65,129",
            "--width", widths, "--dtype", "fp16,bf16,fp32", "--variants", variants]
    for layout in ("contiguous", "channel_last", "strided"):
        op_test(tally, tc, base + ["--layout", layout] + (["--update"] if layout == "contiguous" else []))

    gen = torch.Generator(device=dev).manual_seed(1)

    def rnd(*shape, dtype=bf16):
        return torch.randn(*shape, generator=gen, device=dev).to(dtype)

    vs = list(VARIANTS)
    for dtype, width, variant in itertools.product((f16, bf16, f32), (3, 4) if quick else (2, 3, 4, 8), vs):
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
    modes = itertools.product((f16, bf16, f32), (1, 4) if quick else (1, 2, 4, 8), (1, 2, 4), ("shift", "circular"),
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


# ---------------------------------------------------------------------------------------------
# matmul


def _configs():
    try:
        from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS
        return list(MATMUL_CONFIGS)
    except Exception as e:  # the table is another module's business; the sweep goes on without it
        print(f"note: no tile-config table ({type(e).__name__}: {e}); config sweep skipped", flush=True)
        return []


def matmul_sweep(tally: Tally, dev, quick: bool) -> None:
    import test_matmul as tm

    from aiter_lite.ops.matmul import VARIANTS

    kernels = [v for v in VARIANTS if v != "auto"]
    shapes = ["-m", "1,129", "-n", "7,127", "-k", "16,129"]
    base = ["--check_only", "--no_torch", "--device", str(dev)] + shapes
    orientations = ([[]] if quick else [[], ["--transpose_a"], ["--transpose_b"], ["--transpose_a", "--transpose_b"]])
    groups = [("fp16,bf16", [], kernels + ["auto"]), ("fp32", [], ["naive", "tiled", "auto"]),
              ("fp32", ["--tf32"], [v for v in kernels if v not in ("naive", "tiled")] + ["auto"])]
    for dtypes, extra, variants in groups:
        for variant in variants:  # one call per variant: a variant refused for a dtype is skipped alone
            for orient in orientations:
                op_test(tally, tm, base + ["--dtype", dtypes, "--variants", variant] + extra + orient)
    op_test(tally, tm, base + ["--dtype", "fp16", "--variants", ",".join(kernels), "--batch", "3"])

    gen = torch.Generator(device=dev).manual_seed(2)
    modes = {"fp16": f16, "bf16": bf16, "tf32": f32, "fp32": f32}
    shape_list = [(130, 200, 96)] if quick else [(130, 200, 96), (256, 256, 128), (1, 7, 129)]
    orients = ((False, False), (True, True)) if quick else ((False, False), (True, True), (False, True), (True, False))

    def operands(m, n, k, dt, ta, tb):
        a = (torch.randn(k, m, generator=gen, device=dev).to(dt).t() if ta else
             torch.randn(m, k, generator=gen, device=dev).to(dt))
        b = (torch.randn(n, k, generator=gen, device=dev).to(dt).t() if tb else
             torch.randn(k, n, generator=gen, device=dev).to(dt))
        return a, b

    for index, cfg in enumerate(_configs()):
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


def _round8(x: int) -> int:
    return (x + 7) // 8 * 8


def wgmma_sweep(tally: Tally, dev, quick: bool) -> None:
    """Every wgmma config (csrc/kernels/matmul_wgmma.cuh) on the shapes that reach its code paths."""
    if dev.type != "cuda" or torch.cuda.get_device_capability(dev) != (9, 0):
        print("note: the wgmma sweep needs a compute capability 9.0 GPU; skipped", flush=True)
        return
    from aiter_lite.ops.matmul import matmul_plan

    gen = torch.Generator(device=dev).manual_seed(3)
    # (M, N, K): tails on every side; K past the stage ring (several k-tiles, with a K tail); and
    # 2304 x 2048 (144 tiles of 128 x 256, more than an H100's 132 CTAs: a CTA runs a second tile,
    # which is where deferred stores and the ring's phase flips are exercised).
    shapes = [(130, 200, 96), (1, 7, 16), (129, 127, 520)] + ([] if quick else [(2304, 2048, 136), (64, 8192, 1000)])
    modes = {"wgmma_16": ("fp16", "bf16"), "wgmma_tf32": ("tf32",)}
    runs = [(c, mode) for c in _configs() for mode in modes.get(getattr(c, "path", ""), ())]
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


# ---------------------------------------------------------------------------------------------


class _SwapOut:
    """Wraps a loaded module: the call's out pointer (found by value) is swapped for another one."""

    def __init__(self, mod, real_ptr: int, fake_ptr: int):
        self.mod, self.real_ptr, self.fake_ptr = mod, real_ptr, fake_ptr

    def __getattr__(self, name):
        fn = getattr(self.mod, name)

        def call(*args):
            args = [self.fake_ptr if a == self.real_ptr else a for a in args]
            return fn(*args)
        return call


def canary(dev) -> int:
    """A planted out-of-bounds write in an aiter_lite kernel (memcheck must report it)."""
    import aiter_lite.ops  # noqa: F401, PLC0415
    conv_mod = sys.modules["aiter_lite.ops.causal_conv1d"]  # the module: aiter_lite.ops.causal_conv1d is the function

    x = torch.randn(4, 256, 1024, device=dev)
    w = torch.randn(256, 4, device=dev)
    out = torch.empty_like(x)
    tiny = torch.empty(16, device=dev)  # the kernel will write 1 M floats here
    real_get = conv_mod.get_module
    conv_mod.get_module = lambda name, backend: _SwapOut(real_get(name, backend), out.data_ptr(), tiny.data_ptr())
    try:
        aiter_lite.causal_conv1d_fwd(out, x, w, None, False)
        torch.cuda.synchronize(dev)
    except Exception as e:  # the sanitizer may turn the fault into a CUDA error here: expected
        print(f"canary: {type(e).__name__}: {str(e)[:200]}")
    finally:
        conv_mod.get_module = real_get
    print("CANARY_LAUNCHED (the sanitizer must report an invalid __global__ write in an aiter_lite kernel)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", choices=("conv", "matmul", "wgmma", "all"), default="all")
    p.add_argument("--device", default="auto")
    p.add_argument("--quick", action="store_true", help="fewer widths, shapes and orientations")
    p.add_argument("--canary", action="store_true", help="planted out-of-bounds write (run under memcheck only)")
    args = p.parse_args(argv)
    dev = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                       ("cpu" if args.device == "auto" else args.device))
    if args.canary:
        if dev.type != "cuda":
            raise SystemExit("--canary needs a GPU")
        return canary(dev)
    t0 = time.time()
    tally = Tally()
    if args.op in ("conv", "all"):
        conv_sweep(tally, dev, args.quick)
    if args.op in ("matmul", "all"):
        matmul_sweep(tally, dev, args.quick)
    if args.op == "wgmma":
        wgmma_sweep(tally, dev, args.quick)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    for s in tally.skipped[:40]:
        print("skipped: " + s)
    if len(tally.skipped) > 40:
        print(f"skipped: ... {len(tally.skipped) - 40} more")
    ok = not tally.failed
    print(f"SWEEP {args.op} {'PASS' if ok else 'FAIL'}: {tally.checks} checks, {len(tally.failed)} failed, "
          f"{len(tally.skipped)} refused combinations skipped, {time.time() - t0:.1f} s on {dev}")
    for f in tally.failed[:20]:
        print("  failed: " + f.splitlines()[0])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
