"""Runs causal-conv1d 1.7's own test file against aiter_lite (tests/test_gpu_peer_suite.py; `python3
tests/peer_suite.py [PYTEST ARGS]` by hand). The peer's package is unpacked from the git-ignored
.peers/causal_conv1d-1.7.0.tar.gz into a temporary folder, where three of its pieces are replaced: the
CUDA extension's wrapper (cpp_functions.py) by a stub, and the package's __init__ by one that puts
aiter_lite's causal_conv1d_fn, causal_conv1d_update and causal_conv1d_varlen_states where the test file
imports them from. The peer's references (causal_conv1d_ref, causal_conv1d_update_ref,
causal_conv1d_varlen_states_ref) and its test file run unchanged."""
from __future__ import annotations

import glob
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


def prepare(work: Path) -> tuple[Path, dict]:
    """Unpack the peer, install the shim and einops under work; return the test file and the env."""
    with tarfile.open(PEERS / "causal_conv1d-1.7.0.tar.gz") as tar:
        tar.extractall(work, filter="data")
    src = work / "causal_conv1d-1.7.0"
    (src / "causal_conv1d" / "__init__.py").write_text(SHIM_INIT)
    (src / "causal_conv1d" / "cpp_functions.py").write_text(STUB_CPP_FUNCTIONS)
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(site),
                    *glob.glob(str(PEERS / "einops-*.whl"))], check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(REPO), str(site), os.environ.get("PYTHONPATH", "")]))
    return src / "tests" / "test_causal_conv1d.py", env


def run(pytest_args: list[str]) -> tuple[int, str, dict]:
    """(return code, output, counts such as {"passed": n, "failed": m})."""
    with tempfile.TemporaryDirectory(prefix="aiter_lite_peer_suite_") as tmp:
        test_file, env = prepare(Path(tmp))
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
    code, output, _ = run(sys.argv[1:])
    print(output[-20000:])
    sys.exit(code)
