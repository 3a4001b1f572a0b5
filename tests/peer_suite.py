"""Runs causal-conv1d 1.7's own test file against aiter_lite: on the GPU (tests/test_gpu_peer_suite.py), and on
the CPU backend for a fixed share of its cases (tests/test_peer_suite_cpu.py); `python3 tests/peer_suite.py
[--cpu] [PYTEST ARGS]` by hand. The peer's package is unpacked from the git-ignored
.peers/causal_conv1d-1.7.0.tar.gz into a temporary folder, where three of its pieces are replaced: the
CUDA extension's wrapper (cpp_functions.py) by a stub, and the package's __init__ by one that puts
aiter_lite's causal_conv1d_fn, causal_conv1d_update and causal_conv1d_varlen_states where the test file
imports them from. The peer's references (causal_conv1d_ref, causal_conv1d_update_ref,
causal_conv1d_varlen_states_ref) and its test file run unchanged (on the CPU, but for its `device = "cuda"`
lines)."""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / ".peers"

SHIM_INIT = '''"""causal-conv1d's package with aiter_lite's functions in it (tests/peer_suite.py)."""
import aiter_lite
from causal_conv1d import causal_conv1d_interface as _interface
from causal_conv1d import causal_conv1d_varlen as _varlen

_interface.causal_conv1d_fn = causal_conv1d_fn = aiter_lite.causal_conv1d_fn
_interface.causal_conv1d_update = causal_conv1d_update = aiter_lite.causal_conv1d_update
_varlen.causal_conv1d_varlen_states = causal_conv1d_varlen_states = aiter_lite.causal_conv1d_varlen_states
'''
STUB_CPP_FUNCTIONS = '''"""Stub: the peer's CUDA extension is not used (aiter_lite's functions replace its callers)."""
causal_conv1d_fwd_function = causal_conv1d_bwd_function = causal_conv1d_update_function = None
'''


def available() -> str | None:
    """None when the suite can run here, else why not."""
    if not glob.glob(str(PEERS / "causal_conv1d-1.7.0.tar.gz")) or not glob.glob(str(PEERS / "einops-*.whl")):
        return "needs .peers/causal_conv1d-1.7.0.tar.gz and an einops wheel (carry .peers)"
    return None


# The CPU run (tests/test_peer_suite_cpu.py): the test file's one edit is its device line; this conftest
# makes torch.cuda.synchronize a no-op and keeps every PEER_SAMPLE-th collected case (from PEER_OFFSET), so
# every test function of the file runs on a share of its cases.
CPU_CONFTEST = '''"""aiter_lite's CPU run of causal-conv1d's test file (tests/peer_suite.py)."""
import os
import torch

torch.cuda.synchronize = lambda *args, **kwargs: None


def pytest_collection_modifyitems(config, items):
    k, offset = int(os.environ.get("PEER_SAMPLE", "1")), int(os.environ.get("PEER_OFFSET", "0"))
    if k > 1:
        items[:] = [item for i, item in enumerate(items) if i % k == offset % k]
'''
# causal_conv1d_varlen.py imports triton at module level for a kernel the shim replaces; CPU builds of
# torch come without triton, so the CPU run gets a stand-in with the names that module touches on import.
TRITON_STUB = {
    "__init__.py": '''"""Stand-in for triton on the CPU (tests/peer_suite.py): the peer's module imports it; nothing runs it."""
from . import language


def jit(fn=None, **kwargs):
    return fn if fn is not None else (lambda f: f)


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    return 1 << (int(n) - 1).bit_length()
''',
    "language.py": "constexpr = object\n",
}
CUDA_DEVICE_LINE = re.compile(r'^(\s*)device = "cuda"$', re.M)


def prepare(work: Path, device: str = "cuda") -> tuple[Path, dict]:
    """Unpack the peer, install the shim and einops under work; return the test file and the env.
    device "cpu": the test file's device lines say "cpu" and CPU_CONFTEST sits beside it."""
    with tarfile.open(PEERS / "causal_conv1d-1.7.0.tar.gz") as tar:
        tar.extractall(work, filter="data")
    src = work / "causal_conv1d-1.7.0"
    (src / "causal_conv1d" / "__init__.py").write_text(SHIM_INIT)
    (src / "causal_conv1d" / "cpp_functions.py").write_text(STUB_CPP_FUNCTIONS)
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(site),
                    *glob.glob(str(PEERS / "einops-*.whl"))], check=True)
    test_file = src / "tests" / "test_causal_conv1d.py"
    if device == "cpu":
        text, edits = CUDA_DEVICE_LINE.subn(r'\1device = "cpu"', test_file.read_text())
        if edits == 0:
            raise RuntimeError(f"no device line found in {test_file}: the peer's test file changed")
        test_file.write_text(text)
        (test_file.parent / "conftest.py").write_text(CPU_CONFTEST)
        if importlib.util.find_spec("triton") is None:
            (site / "triton").mkdir(parents=True, exist_ok=True)
            for name, body in TRITON_STUB.items():
                (site / "triton" / name).write_text(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(REPO), str(site), os.environ.get("PYTHONPATH", "")]))
    return test_file, env


def run(pytest_args: list[str], device: str = "cuda", sample: int = 1, offset: int = 0) -> tuple[int, str, dict]:
    """(return code, output, counts such as {"passed": n, "failed": m}). device "cpu": every sample-th case
    from offset (CPU_CONFTEST)."""
    with tempfile.TemporaryDirectory(prefix="aiter_lite_peer_suite_") as tmp:
        test_file, env = prepare(Path(tmp), device)
        env.update(PEER_SAMPLE=str(sample), PEER_OFFSET=str(offset))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file),
                            *pytest_args], capture_output=True, text=True, env=env, cwd=tmp)
    out = r.stdout + r.stderr
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", summary)}
    return r.returncode, out, counts


if __name__ == "__main__":
    reason = available()
    if reason:
        sys.exit(reason)
    args = sys.argv[1:]
    device = "cuda"
    if args[:1] == ["--cpu"]:  # python3 tests/peer_suite.py --cpu [PYTEST ARGS]: every case, on the CPU
        device, args = "cpu", args[1:]
    code, output, _ = run(args, device)
    print(output[-20000:])
    sys.exit(code)
