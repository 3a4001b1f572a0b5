"""op_tests/test_causal_conv1d.py's feature flags, run in-process on the CPU backend (checks only, tiny shapes):
every row is checked against its float64 reference, and main() returns nonzero when one is off."""
import pytest

from test_dtype_names import _op_test


@pytest.mark.parametrize("layout", ["contiguous", "channel_last", "strided"])
def test_feature_flags_check_in_every_layout(layout, capsys):
    conv = _op_test("test_causal_conv1d")
    argv = (f"--batch 2 --dim 24 --seqlen 37 --width 3 --dtype fp32,bf16 --layout {layout} --initial_states "
            "--seq_idx 3 --varlen --update --no_torch --device cpu --check_only").split()
    assert conv.main(argv) == 0
    out = capsys.readouterr().out
    assert "causal_conv1d_varlen" in out and "+seq_idx (3/row)" in out and "+initial/final states" in out
    # the layout reaches the prefill rows too (vLLM's Mamba2 passes the channel-last view)
    assert (layout == "contiguous") == (f"tokens) w3 {layout}" not in out)
