"""Subprocess helper for the JIT tests: load one module from a test registry and report as JSON.

usage: python jit_worker.py REGISTRY MODULE [BACKEND]
Prints {"ok": true, "built": bool, "add": int, "load_ms": float} or {"ok": false, "error": ...}.
"""
import json
import logging
import sys
import time
from pathlib import Path


class _BuildCounter(logging.Handler):
    built = False

    def emit(self, record):
        if "building for" in record.getMessage():
            _BuildCounter.built = True


def main():
    registry_path, module = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    from aiter_lite.jit import load_registry, get_module, BuildError

    log = logging.getLogger("aiter_lite.jit")
    log.setLevel(logging.INFO)
    log.addHandler(_BuildCounter())
    t0 = time.perf_counter()
    try:
        registry = load_registry([Path(registry_path)], Path(registry_path).parent)
        mod = get_module(module, backend, registry=registry)
        load_ms = (time.perf_counter() - t0) * 1e3
        print(json.dumps({"ok": True, "built": _BuildCounter.built, "add": mod.add(2, 3),
                          "variant": mod.variant, "load_ms": load_ms}))
    except BuildError as e:
        print(json.dumps({"ok": False, "built": _BuildCounter.built, "type": type(e).__name__,
                          "error": str(e), "first_error": e.first_error}))


if __name__ == "__main__":
    main()
