"""The first call of each op in a new process, modules cached (issue 22, point 3).

It must not import torch._dynamo (about 1.5 s on 2 cores, more than `import torch` itself): no
`@torch.library.custom_op`, no `torch.compiler.*` decorator at import (STYLE.md (d)). The extra time
beyond `import torch` is printed; the target is 100 ms (docs/jit.md has the measured figures). The
assertion on time is looser than the target, since CI shares its 2 cores, but far below what
importing torch._dynamo costs.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent

_FIRST_CALLS = """
    import json, sys, time
    t0 = time.perf_counter()
    import torch
    t1 = time.perf_counter()
    x, w, b = torch.randn(2, 8, 33), torch.randn(8, 4), torch.randn(8)
    state = torch.randn(2, 8, 3)
    a, bm = torch.randn(5, 3), torch.randn(3, 7)
    import aiter_lite
    calls = [
        ("causal_conv1d", lambda: aiter_lite.causal_conv1d(x, w, b, activation="silu")),
        ("causal_conv1d_fwd", lambda: aiter_lite.causal_conv1d_fwd(torch.empty_like(x), x, w, b, use_silu=True)),
        ("causal_conv1d_update", lambda: aiter_lite.causal_conv1d_update(x[:, :, 0].contiguous(), state, w, b)),
        ("matmul", lambda: aiter_lite.matmul(a, bm)),
    ]
    report = {"import_torch_s": t1 - t0, "ops": {}}
    for name, call in calls:
        s = time.perf_counter()
        call()
        report["ops"][name] = {"s": time.perf_counter() - s, "dynamo": "torch._dynamo" in sys.modules}
    report["extra_s"] = time.perf_counter() - t1
    report["build_machinery"] = sorted(m for m in ("aiter_lite.jit.builder", "aiter_lite.jit.ninja",
                                                   "aiter_lite.jit.lock", "subprocess") if m in sys.modules)
    print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def warm_cache():
    """Both CPU modules built in the session cache (by this or an earlier test)."""
    from aiter_lite.jit import get_module

    for module in ("module_causal_conv1d", "module_matmul"):
        get_module(module, "cpu")


def _first_calls() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("AITER_LITE_REBUILD", None)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_FIRST_CALLS)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", "a cache hit prints nothing"
    return json.loads(r.stdout.splitlines()[-1])


def test_first_calls_do_not_import_dynamo(warm_cache):
    report = _first_calls()
    print(f"\nimport torch {report['import_torch_s'] * 1e3:.0f} ms; first calls "
          + ", ".join(f"{k} {v['s'] * 1e3:.1f} ms" for k, v in report["ops"].items())
          + f"; extra beyond import torch {report['extra_s'] * 1e3:.0f} ms")
    for name, op in report["ops"].items():
        assert not op["dynamo"], f"the first call of {name} imported torch._dynamo"
    # A cache hit needs neither the builder nor ninja nor the locks (nor subprocess, which torch
    # itself may import: only ours are asserted).
    assert not [m for m in report["build_machinery"] if m.startswith("aiter_lite")], report
    # Importing torch._dynamo costs about as much as importing torch; the target is 100 ms.
    assert report["extra_s"] < max(0.3, 0.4 * report["import_torch_s"]), report

