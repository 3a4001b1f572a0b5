"""Where nvcc is present (CI has it, no GPU), every CUDA module of the registry builds: compile
and link, for each arch it declares (default sm_80 and sm_90a). Nothing is loaded or run."""
import pytest

from aiter_lite.jit import build_module, default_registry, read_env
from aiter_lite.jit.toolchain import find_nvcc

DEFAULT_ARCHS = ("sm_80", "sm_90a")
CUDA_MODULES = [e.name for e in default_registry() if "cuda" in e.sources]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_nvcc(read_env()) is None, reason="nvcc not found")]


@pytest.mark.parametrize("module", CUDA_MODULES)
def test_cuda_module_builds(module):
    entry = default_registry().get(module)
    path = build_module(module, "cuda", archs=entry.archs or DEFAULT_ARCHS)
    assert path.is_file() and path.stat().st_size > 0
    log = (path.parent / "build.log").read_text()
    assert " error" not in log.lower()
