#!/usr/bin/env python3
"""Concurrent ranks on a cold JIT cache, started the way torchrun starts them (docs/reliability.md).

N workers (RANK, WORLD_SIZE, LOCAL_RANK, ... in their environment) share one fresh AITER_LITE_CACHE_DIR
and meet at a file barrier, so they reach the cold cache together; even ranks call the conv ops first,
odd ranks matmul, so both modules build at once. Each rank runs soak.py's cases of every op in every
dtype on its device (cuda:LOCAL_RANK % GPUs, or the CPU) against the float64 references. --nodes K:
K simulated nodes, each with its own AITER_LITE_LOCK_DIR, so up to K builds of a module may run; the
atomic publish must leave one artifact. Builds are counted from the JIT's log in every rank and checked
against the cache dir. Exit 1 on any mismatch, crash, timeout, build count out of range or leftover.

  python3 bench/reliability/ranks.py [--nproc 8] [--nodes 2] [--device cpu] [--json F]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODULES = ("module_causal_conv1d", "module_matmul")
RESULT_PREFIX = "RANK_RESULT "


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=int, default=8, help="number of ranks (default 8)")
    p.add_argument("--nodes", type=int, default=1, help="simulated nodes, each with its own lock dir (default 1)")
    p.add_argument("--device", default="auto", help="auto (GPU if available), cuda or cpu")
    p.add_argument("--cache-dir", type=Path, help="cache dir to use; must not hold built modules (default: a fresh "
                   "dir under --work-dir)")
    p.add_argument("--work-dir", type=Path,
                   help="where cache, lock dirs and per-rank logs go (default: a new temp dir)")
    p.add_argument("--timeout", type=float, default=600, help="seconds for the whole run (default 600)")
    p.add_argument("--json", type=Path, help="write the full report here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# Worker (one rank)


class _BuildLog(logging.Handler):
    """Counts this process's builds from the JIT log: '<module>: building for ...', '<module>: built in ...'."""

    def __init__(self):
        super().__init__()
        self.built: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def emit(self, record):
        msg, args = record.msg, record.args or ()
        if not isinstance(msg, str) or not args:
            return
        if msg.startswith("%s: building for"):
            self.built[args[0]] = self.built.get(args[0], 0) + 1
        elif msg.startswith("%s: built in"):
            self.seconds[args[0]] = float(args[1])


def _barrier(world: int, rank: int, timeout: float = 300) -> float:
    """All ranks continue together: each drops a file and waits for all of them. Returns seconds waited."""
    d = Path(os.environ["AITER_LITE_RANKS_BARRIER"])
    (d / f"ready-{rank}").touch()
    start = time.monotonic()
    while len(list(d.glob("ready-*"))) < world:
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"barrier: only {len(list(d.glob('ready-*')))} of {world} ranks arrived")
        time.sleep(0.005)
    return time.monotonic() - start


def _check_groups(device, seed: int):
    """A rank's checks, one group per module: soak.py's cases of every op in every dtype, seeded per rank."""
    import random

    import torch
    from soak import CPU_MAX, DTYPES, MAX, Case, conv_case, matmul_case, update_case

    if device.type == "cpu":
        MAX.update(CPU_MAX)
    conv = [lambda c, d=d, o=o: conv_case(c, o, dtype=d) for d in DTYPES for o in (False, True)]
    conv += [lambda c, d=d: update_case(c, dtype=d) for d in DTYPES]
    modes = ("fp16", "bf16", "fp32") + (("tf32",) if device.type == "cuda" else ())
    matmul = [lambda c, m=m: matmul_case(c, mode=m) for m in modes]

    def group(cases):
        def run():
            results = []
            for i, fn in enumerate(cases):
                c = Case(device, random.Random(seed + i), torch.Generator(device=device).manual_seed(seed + i))
                try:
                    results.append(fn(c))
                except Exception as e:  # a crash is a failed check, reported like a mismatch
                    results.append((c.desc or run.__name__, f"{type(e).__name__}: {e}"))
            return results
        run.__name__ = "conv" if cases is conv else "matmul"
        return run
    return [group(conv), group(matmul)]


def worker(args) -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    t_start = time.time()
    import torch

    from aiter_lite.jit import get_module  # importing builds nothing

    log = _BuildLog()
    jit_log = logging.getLogger("aiter_lite.jit")
    jit_log.setLevel(logging.INFO)
    jit_log.addHandler(log)
    logging.basicConfig(level=logging.INFO, format=f"[rank {rank}] %(asctime)s %(name)s: %(message)s")

    if args.device == "cpu" or (args.device == "auto" and not torch.cuda.is_available()):
        device = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda but no GPU is visible")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        torch.cuda.init()
    backend = "cpu" if device.type == "cpu" else ("hip" if torch.version.hip else "cuda")
    t_ready = time.time()
    waited = _barrier(world, rank)
    t_go = time.time()

    groups = _check_groups(device, 1000 * (rank + 1))
    if rank % 2:  # odd ranks start with matmul: both modules build at once
        groups = groups[::-1]
    checks, first_call_s = [], None
    for group in groups:
        t = time.time()
        try:
            checks += group()
        except Exception as e:  # a crash is a failed rank, reported like a mismatch
            checks.append((group.__name__, f"{type(e).__name__}: {e}"))
        if first_call_s is None:
            first_call_s = time.time() - t
    sync_error = None
    if device.type == "cuda":
        try:
            torch.cuda.synchronize(device)
        except Exception as e:
            sync_error = f"{type(e).__name__}: {e}"
    libraries = {}
    for m in MODULES:
        try:
            libraries[m] = get_module(m, backend).__file__
        except Exception as e:
            libraries[m] = f"error: {e}"
    failed = [{"check": n, "error": e} for n, e in checks if e]
    if sync_error:
        failed.append({"check": "torch.cuda.synchronize", "error": sync_error})
    result = {
        "rank": rank, "local_rank": local_rank, "node": int(os.environ.get("GROUP_RANK", 0)),
        "device": str(device), "pid": os.getpid(), "checks": len(checks), "failed": failed, "ok": not failed,
        "built": log.built, "build_seconds": log.seconds, "libraries": libraries,
        "startup_s": round(t_ready - t_start, 3), "barrier_wait_s": round(waited, 3),
        "first_group_s": round(first_call_s or 0, 3), "work_s": round(time.time() - t_go, 3),
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


# ---------------------------------------------------------------------------------------------
# Launcher


def inspect_cache(cache: Path) -> dict:
    """Per module: published artifacts (with manifest figures), failed builds, leftover build dirs."""
    report = {}
    for m in MODULES:
        d = cache / m
        entries = sorted(p.name for p in d.iterdir()) if d.is_dir() else []
        published = []
        for name in entries:
            if name.startswith((".", "failed-")):
                continue
            manifest = d / name / "manifest.json"
            try:
                info = json.loads(manifest.read_text())
                published.append({"dir": name, "build_seconds": info.get("build_seconds"),
                                  "size": info.get("size"), "sha256": info.get("sha256", "")[:16]})
            except (OSError, ValueError):
                published.append({"dir": name, "manifest": "missing or invalid"})
        report[m] = {"published": published,
                     "failed": [n for n in entries if n.startswith("failed-")],
                     "tmp_leftovers": [n for n in entries if n.startswith(".tmp-")],
                     "trash_leftovers": [n for n in entries if n.startswith(".trash-")]}
    return report


def launch(args) -> int:
    if args.nproc < 1 or args.nodes < 1 or args.nproc % args.nodes:
        raise SystemExit(f"--nproc ({args.nproc}) must be a positive multiple of --nodes ({args.nodes})")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="aiter_lite_ranks-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = (args.cache_dir or work / "cache").absolute()
    if cache.exists() and any((cache / m).exists() for m in MODULES):
        raise SystemExit(f"error: {cache} already holds built modules; the run needs a cold cache")
    cache.mkdir(parents=True, exist_ok=True)
    barrier = work / f"barrier-{os.getpid()}"
    shutil.rmtree(barrier, ignore_errors=True)
    barrier.mkdir()
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    per_node = args.nproc // args.nodes
    print(f"ranks: {args.nproc} on {args.nodes} node(s), device {args.device}, cache {cache}", flush=True)

    procs = []
    t0 = time.monotonic()
    for rank in range(args.nproc):
        node, local = divmod(rank, per_node)
        env = dict(os.environ)
        env.update(RANK=str(rank), WORLD_SIZE=str(args.nproc), LOCAL_RANK=str(local),
                   LOCAL_WORLD_SIZE=str(per_node), GROUP_RANK=str(node), NODE_RANK=str(node),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", AITER_LITE_CACHE_DIR=str(cache),
                   AITER_LITE_LOCK_DIR=str(work / f"locks-node{node}"), AITER_LITE_RANKS_BARRIER=str(barrier),
                   PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)] + ([os.environ["PYTHONPATH"]]
                                                                       if os.environ.get("PYTHONPATH") else [])))
        env.pop("AITER_LITE_REBUILD", None)
        if args.device == "cpu":
            env.setdefault("OMP_NUM_THREADS", "1")
        out = open(logs / f"rank{rank}.out", "w")
        err = open(logs / f"rank{rank}.err", "w")
        p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", "--device", args.device],
                             stdout=out, stderr=err, env=env, cwd=str(REPO))
        procs.append((rank, node, p, out, err))

    def stop_children(signum, frame):  # killed from outside (e.g. a session timeout): take the ranks along
        for _, _, p, _, _ in procs:
            if p.poll() is None:
                p.kill()  # our own children, by pid
        raise SystemExit(f"ranks: stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop_children)
    deadline = t0 + args.timeout
    timed_out = []
    for rank, _, p, out, err in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()  # our own child, by its pid
            p.wait()
            timed_out.append(rank)
        out.close()
        err.close()
    wall = time.monotonic() - t0

    results = []
    for rank, node, p, _, _ in procs:
        text = (logs / f"rank{rank}.out").read_text(errors="replace")
        lines = [l for l in text.splitlines() if l.startswith(RESULT_PREFIX)]
        if lines:
            r = json.loads(lines[-1][len(RESULT_PREFIX):])
        else:
            tail = (logs / f"rank{rank}.err").read_text(errors="replace").strip().splitlines()[-5:]
            r = {"rank": rank, "node": node, "ok": False, "built": {},
                 "failed": [{"check": "process",
                             "error": ("timed out" if rank in timed_out else f"exit {p.returncode}, no result")
                             + " | " + " | ".join(tail)}]}
        r["returncode"] = p.returncode
        if p.returncode != 0:
            r["ok"] = False
        results.append(r)

    cache_report = inspect_cache(cache)
    compilations = {m: sum(r.get("built", {}).get(m, 0) for r in results) for m in MODULES}
    max_builds = 1 if args.nodes == 1 else args.nodes
    problems = []
    for r in results:
        if not r["ok"]:
            first = r["failed"][0] if r.get("failed") else {"check": "?", "error": f"exit {r['returncode']}"}
            problems.append(f"rank {r['rank']}: {first['check']}: {first['error']}")
    for m in MODULES:
        c, info = compilations[m], cache_report[m]
        if not 1 <= c <= max_builds:
            problems.append(f"{m}: compiled {c} times (expected {'1' if max_builds == 1 else f'1..{max_builds}'})")
        if len(info["published"]) != 1:
            problems.append(f"{m}: {len(info['published'])} published artifacts (expected 1)")
        if info["tmp_leftovers"] or info["failed"]:
            problems.append(f"{m}: leftovers {info['tmp_leftovers'] + info['failed']}")
    libs = {m: sorted({r.get("libraries", {}).get(m, "?") for r in results}) for m in MODULES}
    for m, paths in libs.items():
        if len(paths) != 1:
            problems.append(f"{m}: ranks loaded different libraries: {paths}")

    print("| rank | node | device | checks | failed | built | first group s | total s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        built = ",".join(f"{k.replace('module_', '')}" for k in r.get("built", {})) or "-"
        print(f"| {r['rank']} | {r.get('node', '?')} | {r.get('device', '?')} | {r.get('checks', 0)} | "
              f"{len(r.get('failed', []))} | {built} | {r.get('first_group_s', float('nan'))} | "
              f"{r.get('work_s', float('nan'))} |")
    for m in MODULES:
        pub = cache_report[m]["published"]
        secs = pub[0].get("build_seconds") if len(pub) == 1 else None
        print(f"{m}: compiled {compilations[m]}x (max {max_builds}), published {len(pub)}, "
              f"build {secs} s (manifest), leftovers {len(cache_report[m]['tmp_leftovers'])}")
    ok = not problems
    print(f"RANKS {'PASS' if ok else 'FAIL'}: {sum(r['ok'] for r in results)}/{len(results)} ranks ok, "
          f"nodes {args.nodes}, wall {wall:.1f} s")
    for p in problems:
        print("  problem: " + p)
    report = {"nproc": args.nproc, "nodes": args.nodes, "device": args.device, "wall_s": round(wall, 2),
              "cache_dir": str(cache), "compilations": compilations, "max_builds": max_builds,
              "cache": cache_report, "libraries": libs, "ranks": results, "problems": problems, "ok": ok}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    shutil.rmtree(barrier, ignore_errors=True)
    if args.work_dir is None and args.cache_dir is None and ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"logs: {logs}")
    return 0 if ok else 1


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        sys.path.insert(0, str(HERE))
        sys.path.insert(0, str(REPO))
        return worker(args)
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
