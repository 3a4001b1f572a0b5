"""causal-conv1d 1.7's own tests/test_causal_conv1d.py against aiter_lite's CPU backend (the GPU run is
tests/test_gpu_peer_suite.py). The file targets CUDA; here its `device = "cuda"` lines say "cpu" and every
AITER_LITE_PEER_SAMPLE-th of its 13,373 cases runs (default 16; 1 runs them all, about an hour on 2 cores),
so each of its test functions runs on a share of its parameters within CI's time. Needs the git-ignored
.peers/ with the peer's sdist and an einops wheel (.ci/run downloads them; bench/README.md says how)."""
import os

import pytest

import peer_suite

SAMPLE = int(os.environ.get("AITER_LITE_PEER_SAMPLE", "16"))


def test_causal_conv1d_own_test_file_passes_on_the_cpu():
    reason = peer_suite.available()
    if reason:
        pytest.skip(reason)
    code, output, counts = peer_suite.run(["--maxfail=20"], device="cpu", sample=SAMPLE)
    print(output[-3000:])
    assert counts.get("passed", 0) >= 13373 // SAMPLE // 2, output[-6000:]  # about a third are the file's own skips
    assert not counts.get("failed") and not counts.get("error") and not counts.get("errors"), output[-6000:]
    assert code == 0, output[-6000:]
