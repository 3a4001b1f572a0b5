"""GPU (-m gpu): causal-conv1d 1.7's own tests/test_causal_conv1d.py, unchanged, against aiter_lite's
causal_conv1d_fn / causal_conv1d_update / causal_conv1d_varlen_states (the drop-in promise of issue 19,
on the device its test file targets). See tests/peer_suite.py for how the functions are swapped in."""
import pytest
import torch

import peer_suite

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_causal_conv1d_own_test_file_passes():
    reason = peer_suite.available()
    if reason:
        pytest.skip(reason)
    code, output, counts = peer_suite.run(["--maxfail=20"])
    print(output[-4000:])
    assert counts.get("passed", 0) > 1000 and not counts.get("failed") and not counts.get("error"), output[-6000:]
