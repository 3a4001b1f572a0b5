#!/usr/bin/env python3
"""Concurrent ranks on a cold JIT cache, started the way torchrun starts them (docs/reliability.md).

N workers (RANK, WORLD_SIZE, LOCAL_RANK, ... in their environment) share one fresh AITER_LITE_CACHE_DIR
and meet at a file barrier, so they reach the cold cache together; even ranks call the conv ops first,
odd ranks matmul, so both modules build at once. Each rank runs tests/reliability_cases.py's random
cases of every op in every dtype on its device (cuda:LOCAL_RANK % GPUs, or the CPU) against float64.
--nodes K: K simulated nodes, each with its own AITER_LITE_LOCK_DIR, so up to K builds of a module may
run; the atomic publish must leave one artifact. Builds are counted from the JIT's log in every rank.
Exit 1 on a mismatch, crash or timeout, a build count out of range, or leftovers in the cache.

  python3 bench/reliability/ranks.py [--nproc 8] [--nodes 2] [--device cpu] [--json F]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
MODULES = ("module_causal_conv1d", "module_matmul")
RESULT = "RANK_RESULT "


def worker(device_arg: str) -> int:
    rank, world, local_rank = (int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    import torch

    import reliability_cases as rc
    from aiter_lite.jit import get_module

    built = {}  # module -> builds this process ran, from the JIT's "<module>: building for ..." lines

    class BuildLog(logging.Handler):
        def emit(self, record):
            if isinstance(record.msg, str) and record.msg.startswith("%s: building for") and record.args:
                built[record.args[0]] = built.get(record.args[0], 0) + 1
    jit_log = logging.getLogger("aiter_lite.jit")
    jit_log.setLevel(logging.INFO)
    jit_log.addHandler(BuildLog())
    if device_arg == "cpu" or not torch.cuda.is_available():
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        torch.cuda.init()
    barrier = Path(os.environ["AITER_LITE_RANKS_BARRIER"])  # every rank continues once all have arrived
    (barrier / f"ready-{rank}").touch()
    while len(list(barrier.glob("ready-*"))) < world:
        time.sleep(0.005)
    t0 = time.time()
    conv = [lambda c, d=d, o=o: rc.conv_case(c, o, dtype=d) for d in rc.DTYPES for o in (False, True)]
    conv += [lambda c, d=d: rc.update_case(c, dtype=d) for d in rc.DTYPES]
    matmul = [lambda c, m=m: rc.matmul_case(c, mode=m) for m in rc.matmul_modes(device)]
    cases = conv + matmul if rank % 2 == 0 else matmul + conv  # odd ranks start with matmul
    seed = 1000 * (rank + 1)
    failed = [{"check": d, "error": e} for d, e in (rc.run_case(fn, device, seed + i) for i, fn in enumerate(cases)) if e]
    if device.type == "cuda":
        try:
            torch.cuda.synchronize(device)
        except Exception as e:  # noqa: BLE001 - a sticky CUDA error fails the rank
            failed.append({"check": "torch.cuda.synchronize", "error": f"{type(e).__name__}: {e}"})
    backend = "cpu" if device.type == "cpu" else ("hip" if torch.version.hip else "cuda")
    libraries = {m: get_module(m, backend).__file__ for m in MODULES}
    print(RESULT + json.dumps({"rank": rank, "device": str(device), "checks": len(cases), "failed": failed,
                               "built": built, "libraries": libraries, "work_s": round(time.time() - t0, 2)}))
    return 1 if failed else 0


def cache_state(cache: Path) -> dict:
    """Per module: the published artifacts (with the build seconds of their manifests) and the leftovers."""
    state = {}
    for m in MODULES:
        names = sorted(p.name for p in (cache / m).iterdir()) if (cache / m).is_dir() else []
        published = [n for n in names if not n.startswith((".", "failed-"))]
        seconds = [json.loads((cache / m / n / "manifest.json").read_text()).get("build_seconds")
                   if (cache / m / n / "manifest.json").is_file() else None for n in published]
        state[m] = {"published": published, "build_seconds": seconds,
                    "leftovers": [n for n in names if n.startswith((".tmp-", "failed-"))]}
    return state


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=int, default=8, help="ranks (default 8)")
    p.add_argument("--nodes", type=int, default=1, help="simulated nodes, each with its own lock dir (default 1)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cuda (when there is a GPU) or cpu")
    p.add_argument("--work-dir", type=Path, help="cache, lock dirs and rank logs (default: a new temp dir)")
    p.add_argument("--timeout", type=float, default=600, help="seconds for the whole run (default 600)")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.device)
    if args.nproc < 1 or args.nodes < 1 or args.nproc % args.nodes:
        p.error(f"--nproc ({args.nproc}) must be a positive multiple of --nodes ({args.nodes})")
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="aiter_lite_ranks-"))).absolute()
    cache, barrier, logs = work / "cache", work / "barrier", work / "logs"
    if cache.exists():
        p.error(f"{cache} exists; the run needs a cold cache")
    for d in (cache, barrier, logs):
        d.mkdir(parents=True, exist_ok=True)
    per_node = args.nproc // args.nodes
    print(f"ranks: {args.nproc} on {args.nodes} node(s), device {args.device}, cache {cache}", flush=True)
    procs, t0 = [], time.monotonic()
    for rank in range(args.nproc):
        node, local = divmod(rank, per_node)
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.nproc), LOCAL_RANK=str(local),
                   LOCAL_WORLD_SIZE=str(per_node), GROUP_RANK=str(node), AITER_LITE_CACHE_DIR=str(cache),
                   AITER_LITE_LOCK_DIR=str(work / f"locks-node{node}"), AITER_LITE_RANKS_BARRIER=str(barrier),
                   PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
        env.pop("AITER_LITE_REBUILD", None)
        if args.device == "cpu":
            env.setdefault("OMP_NUM_THREADS", "1")
        with open(logs / f"rank{rank}.out", "w") as out:
            procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--device", args.device], stdout=out,
                                          stderr=subprocess.STDOUT, env=env, cwd=REPO))
    results = []
    for rank, proc in enumerate(procs):
        try:
            proc.wait(timeout=max(0.1, t0 + args.timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its pid
            proc.wait()
        text = (logs / f"rank{rank}.out").read_text(errors="replace")
        lines = [l for l in text.splitlines() if l.startswith(RESULT)]
        r = json.loads(lines[-1][len(RESULT):]) if lines else {
            "rank": rank, "built": {}, "failed": [{"check": "process", "error": f"exit {proc.returncode}, no result: "
                                                   + " | ".join(text.strip().splitlines()[-3:])}]}
        results.append({**r, "node": rank // per_node, "ok": proc.returncode == 0 and not r["failed"]})
    wall = time.monotonic() - t0

    state, max_builds = cache_state(cache), args.nodes
    problems = [f"rank {r['rank']}: {r['failed'][0]['check']}: {r['failed'][0]['error']}" if r["failed"] else
                f"rank {r['rank']}: exit code not 0" for r in results if not r["ok"]]
    for m in MODULES:
        builds = sum(r["built"].get(m, 0) for r in results)
        libraries = {r.get("libraries", {}).get(m) for r in results if r["ok"]}
        problems += [f"{m}: compiled {builds} times (expected 1..{max_builds})"] if not 1 <= builds <= max_builds else []
        problems += [f"{m}: {len(state[m]['published'])} published artifacts"] if len(state[m]["published"]) != 1 else []
        problems += [f"{m}: leftovers {state[m]['leftovers']}"] if state[m]["leftovers"] else []
        problems += [f"{m}: ranks loaded different libraries {sorted(libraries)}"] if len(libraries) > 1 else []
        state[m]["builds"] = builds
        print(f"{m}: compiled {builds}x (max {max_builds}), published {len(state[m]['published'])}, build "
              f"{state[m]['build_seconds']} s (manifest), leftovers {len(state[m]['leftovers'])}")
    print(f"RANKS {'FAIL' if problems else 'PASS'}: {sum(r['ok'] for r in results)}/{len(results)} ranks ok, "
          f"{results[0].get('checks', 0)} checks each, nodes {args.nodes}, wall {wall:.1f} s")
    print("\n".join("  problem: " + p for p in problems) or f"logs: {logs}")
    if args.json:
        args.json.write_text(json.dumps({"nproc": args.nproc, "nodes": args.nodes, "wall_s": round(wall, 2),
                                         "cache": state, "ranks": results, "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
