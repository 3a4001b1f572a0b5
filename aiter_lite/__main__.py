"""Command line: python -m aiter_lite {list,build,clear,env,plan}."""
from __future__ import annotations

import argparse
import contextlib
import logging
import platform
import sys
from typing import Iterator, Optional, Sequence

from .errors import AiterLiteError


def main_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m aiter_lite", description="aiter_lite JIT kernel modules")
    p.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="modules, backends, and whether built for the current key")
    b = sub.add_parser("build", help="build modules ahead of time, in parallel")
    b.add_argument("modules", nargs="*", help="module names (default: none; see --all)")
    b.add_argument("--all", action="store_true", help="build every module of the registry")
    b.add_argument("--backend", action="append", choices=("cpu", "cuda", "hip"),
                   help="backend(s) to build for (default: every available backend)")
    c = sub.add_parser("clear", help="remove built modules from the cache (all, or the named ones)")
    c.add_argument("modules", nargs="*")
    sub.add_parser("env", help="cache dir, lock dir, compilers, archs and versions")
    pl = sub.add_parser("plan", help="rank matmul tile configs for a shape from the hardware model")
    pl.add_argument("--m", type=int, required=True)
    pl.add_argument("--n", type=int, required=True)
    pl.add_argument("--k", type=int, required=True)
    pl.add_argument("--dtype", default="bf16", choices=("fp16", "bf16", "fp32", "tf32"))
    pl.add_argument("--device", default="h100", help="device model name (default: h100)")
    pl.add_argument("--all", action="store_true", help="also show the pruned configs and why")
    return p


@contextlib.contextmanager
def _errors_to_exit() -> Iterator[None]:
    """Map our exceptions to a message on stderr and a non-zero exit."""
    try:
        yield
    except (AiterLiteError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None


def _cmd_list(env) -> int:
    from .jit import default_registry
    from .jit.admin import status

    rows = status(default_registry(env), env)
    print(f"{'module':<24} {'backend':<8} {'state':<12} key")
    for r in rows:
        print(f"{r.module:<24} {r.backend:<8} {r.state:<12} {r.key}")
    return 0


def _cmd_build(args, env) -> int:
    from .jit import default_registry
    from .jit.admin import available_backends, build_many

    registry = default_registry(env)
    modules = [e.name for e in registry] if args.all else args.modules
    if not modules:
        print("error: name modules to build, or pass --all", file=sys.stderr)
        return 2
    for m in modules:
        registry.get(m)
    backends = args.backend or available_backends(env)
    errors = build_many(registry, env, modules, backends)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors else 0


def _cmd_clear(args, env) -> int:
    from .jit.admin import clear

    n = clear(env, args.modules or None)
    print(f"removed {n} built module(s) from {env.cache_dir}")
    return 0


def _cmd_env(env) -> int:
    from importlib import metadata

    from . import __version__
    from .jit import toolchain

    def ver(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "not installed"

    print(f"aiter_lite        {__version__}")
    print(f"python            {platform.python_version()} ({toolchain.python_abi()})")
    print(f"torch             {toolchain.torch_version()}")
    for name, pkg in (("ninja", "ninja"), ("pybind11", "pybind11"), ("filelock", "filelock")):
        print(f"{name:<17} {ver(pkg)}")
    print(f"cache dir         {env.cache_dir}   (AITER_LITE_CACHE_DIR)")
    print(f"lock dir          {env.lock_dir}   (AITER_LITE_LOCK_DIR)")
    print(f"lock timeout      {env.lock_timeout or 'none'}   (AITER_LITE_LOCK_TIMEOUT)")
    print(f"max jobs          {env.max_jobs or 'auto'}   (MAX_JOBS)")
    from .tuning.autotune import DEFAULT_TOP_K

    print(f"matmul autotune   {'on, top ' + str(env.autotune_top_k or DEFAULT_TOP_K) if env.autotune else 'off'}   "
          f"(AITER_LITE_AUTOTUNE; tuned configs in {env.cache_dir / 'tuning'})")
    for name, comp in (("c++", toolchain.find_cxx(env)), ("nvcc", toolchain.find_nvcc(env)),
                       ("hipcc", toolchain.find_hipcc(env))):
        print(f"{name:<17} {f'{comp.path}: {comp.version}' if comp else 'not found'}")
    try:
        import torch

        print(f"torch cuda/hip    cuda={torch.version.cuda} hip={torch.version.hip} "
              f"devices={torch.cuda.device_count() if torch.cuda.is_available() else 0}")
    except ImportError:
        pass
    for backend in ("cuda", "hip"):
        try:
            archs = ",".join(toolchain.target_archs(backend, env))
        except (AiterLiteError, ValueError) as e:
            archs = f"n/a ({str(e).splitlines()[0]})"
        print(f"{backend} archs{'':<7} {archs}   (AITER_LITE_ARCH)")
    return 0


def _cmd_plan(args) -> int:
    from .tuning.planner import format_plan

    print(format_plan(args.m, args.n, args.k, args.dtype, device=args.device, show_pruned=args.all))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = main_parser().parse_args(argv)
    with _errors_to_exit():
        from .jit import read_env

        env = read_env()
        # Build progress and results on stderr; -q (or AITER_LITE_LOG=warning) keeps only warnings.
        level = logging.WARNING if args.quiet else (env.log_level or logging.INFO)
        logging.basicConfig(level=level, format="%(message)s")
        logging.getLogger("aiter_lite").setLevel(level)
        if args.command == "list":
            return _cmd_list(env)
        if args.command == "build":
            return _cmd_build(args, env)
        if args.command == "clear":
            return _cmd_clear(args, env)
        if args.command == "env":
            return _cmd_env(env)
        return _cmd_plan(args)


if __name__ == "__main__":
    raise SystemExit(main())
