"""Where the first CUDA call of each op goes, module cached (docs/jit.md, "First call"; issue 22).

    PYTHONPATH=$PWD python3 bench/lab/first_call.py            # every mode, each in a new process
    PYTHONPATH=$PWD python3 bench/lab/first_call.py MODE        # one mode in this process

Modes (the modules must be built: run the ops once first):
  floor     torch's own first CUDA op after `import torch`: torch.ones(1, device=DEV) + 1, synchronized
            (context creation included): what any first CUDA call pays.
  user      as a user meets it: `import torch`, then `import aiter_lite` and the first causal_conv1d on CUDA
            tensors (context creation included); then the other ops' first calls.
  warm      context already up (a torch op ran first): `import aiter_lite`, then each op's first and second call.
  phases    context up: get_module's parts for each module (spec, key, manifest check, dlopen), then the
            first launch of each op with its module loaded.
  profile   context up: cProfile of the first calls, top functions by cumulative time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MODES = ("floor", "user", "warm", "phases", "profile")
DEV = os.environ.get("FIRST_CALL_DEVICE", "cuda")  # cpu: a smoke test of this script without a GPU


def sync(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1e3, 1)


def inputs(torch):
    x, w, b = (torch.randn(*s, device=DEV) for s in ((2, 64, 33), (64, 4), (64,)))
    state = torch.randn(2, 64, 3, device=DEV)
    a, bm = torch.randn(65, 33, device=DEV), torch.randn(33, 17, device=DEV)
    return x, w, b, state, a, bm


def calls(aiter_lite, x, w, b, state, a, bm):
    return [("causal_conv1d", lambda: aiter_lite.causal_conv1d(x, w, b, activation="silu")),
            ("causal_conv1d_update", lambda: aiter_lite.causal_conv1d_update(x[:, :, 0].contiguous(), state, w, b)),
            ("matmul", lambda: aiter_lite.matmul(a, bm))]


def timed_calls(torch, aiter_lite, tensors) -> dict:
    out = {}
    for name, call in calls(aiter_lite, *tensors):
        t0 = time.perf_counter()
        call()
        sync(torch)
        first = ms(t0)
        t0 = time.perf_counter()
        call()
        sync(torch)
        out[name] = {"first_ms": first, "second_ms": ms(t0)}
    return out


def context_up(torch):
    (torch.ones(1, device=DEV) + 1).cpu()
    sync(torch)


def run(mode: str) -> dict:
    t0 = time.perf_counter()
    import torch

    res = {"mode": mode, "import_torch_ms": ms(t0), "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING")}
    if mode == "floor":
        t0 = time.perf_counter()
        context_up(torch)
        res["first_torch_cuda_op_ms"] = ms(t0)
        t0 = time.perf_counter()
        context_up(torch)
        res["second_torch_cuda_op_ms"] = ms(t0)
        return res
    if mode == "user":
        t0 = time.perf_counter()
        import aiter_lite

        res["import_aiter_lite_ms"] = ms(t0)
        x = torch.randn(2, 64, 33, device=DEV)
        w, b = torch.randn(64, 4, device=DEV), torch.randn(64, device=DEV)
        aiter_lite.causal_conv1d(x, w, b, activation="silu")
        sync(torch)
        res["first_conv_call_incl_context_ms"] = ms(t0)
        t0 = time.perf_counter()
        res["then"] = timed_calls(torch, aiter_lite, inputs(torch))
        res["dynamo_imported"] = "torch._dynamo" in sys.modules
        return res
    context_up(torch)
    tensors = inputs(torch)
    sync(torch)
    if mode == "warm":
        t0 = time.perf_counter()
        import aiter_lite
        import aiter_lite.ops  # noqa: F401

        res["import_aiter_lite_ms"] = ms(t0)
        res["calls"] = timed_calls(torch, aiter_lite, tensors)
        res["all_ms"] = round(res["import_aiter_lite_ms"] + sum(c["first_ms"] for c in res["calls"].values()), 1)
        return res
    if mode == "phases":
        t0 = time.perf_counter()
        import aiter_lite
        from aiter_lite.jit import default_registry, load_library, read_env
        from aiter_lite.jit.cache import ModuleCache
        from aiter_lite.jit.key import compute_key
        from aiter_lite.jit.spec import make_spec

        res["import_ms"] = ms(t0)
        env = read_env()
        backend = "cuda" if DEV == "cuda" else "cpu"
        for name in ("module_causal_conv1d", "module_matmul"):
            p = {}
            t0 = time.perf_counter()
            spec = make_spec(default_registry(env).get(name), backend, env)
            p["spec_ms"] = ms(t0)
            t0 = time.perf_counter()
            key = compute_key(spec)
            p["key_ms"] = ms(t0)
            cache = ModuleCache(env.cache_dir, name, backend, key)
            t0 = time.perf_counter()
            m = cache.valid_manifest()
            p["manifest_ms"] = ms(t0)
            if m is None:
                p["error"] = "not built"
                res[name] = p
                continue
            lib = cache.artifact_dir / m.library
            p["library_mb"] = round(lib.stat().st_size / 2**20, 1)
            t0 = time.perf_counter()
            from aiter_lite.jit.cache import sha256_file

            sha256_file(lib)
            p["sha256_ms (skipped on warm loads)"] = ms(t0)
            t0 = time.perf_counter()
            load_library(name, lib)
            p["dlopen_ms"] = ms(t0)
            res[name] = p
        res["ops_after_modules_loaded"] = timed_calls(torch, aiter_lite, tensors)
        return res
    if mode == "profile":
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        import aiter_lite

        for _, call in calls(aiter_lite, *tensors):
            call()
        sync(torch)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(28)
        res["profile"] = "\n".join(l[:150] for l in text.getvalue().splitlines() if l.strip())
        return res
    raise SystemExit(f"unknown mode {mode!r}; choose from {MODES}")


def main() -> None:
    if len(sys.argv) > 1:
        print(json.dumps(run(sys.argv[1])))
        return
    for mode in MODES:
        for env_extra in ({},) if mode != "warm" else ({}, {"CUDA_MODULE_LOADING": "EAGER"}):
            env = dict(os.environ, **env_extra)
            proc = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True, env=env)
            lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
            if proc.returncode or not lines:
                print(f"{mode}: failed ({proc.returncode}): {proc.stderr[-1500:]}")
                continue
            res = json.loads(lines[-1])
            profile = res.pop("profile", None)
            print(json.dumps(res))
            if profile:
                print(profile)


if __name__ == "__main__":
    main()
