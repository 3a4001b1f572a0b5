"""op_tests and bench scripts take torch's dtype names beside the short ones (issue 22, point 6)."""
import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aiter_lite.testing import dtype_list, dtype_name, dtype_names

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text,short", [("fp16", "fp16"), ("float16", "fp16"), ("half", "fp16"),
                                        ("torch.float16", "fp16"), ("bf16", "bf16"), ("bfloat16", "bf16"),
                                        ("fp32", "fp32"), ("float32", "fp32"), ("float", "fp32"),
                                        (" Float32 ", "fp32")])
def test_every_name_maps_to_its_short_name(text, short):
    assert dtype_name(text) == short


def test_lists_and_restricted_choices():
    assert dtype_list("float16,bf16,float") == [torch.float16, torch.bfloat16, torch.float32]
    assert dtype_names("half,tf32", allowed=("fp16", "tf32")) == ["fp16", "tf32"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown dtype 'float64'.*float16"):
        dtype_list("float16,float64")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown dtype 'float32'; choose from fp16"):
        dtype_name("float32", allowed=("fp16", "bf16"))


def _op_test(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "op_tests" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_op_tests_parse_torch_names():
    conv = _op_test("test_causal_conv1d").parse_args(
        "--batch 4 --dim 512 --seqlen 2048 --width 4 --dtype float16 --use_silu".split())
    assert conv.dtype == [torch.float16] and conv.use_silu and not conv.no_bias
    conv = _op_test("test_causal_conv1d").parse_args("--dtype bfloat16 --no_bias".split())
    assert conv.dtype == [torch.bfloat16] and conv.no_bias
    mm = _op_test("test_matmul").parse_args("--dtype half,float".split())
    assert mm.dtype == [torch.float16, torch.float32]


@pytest.mark.slow
@pytest.mark.parametrize("flags", ["--dtype float16 --use_silu", "--dtype bfloat16 --no_bias"])
def test_the_seed_commands_run(flags):
    """The integration note's commands (on the CPU, checks only, so CI stays fast)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, str(REPO / "op_tests" / "test_causal_conv1d.py"), "--batch", "4", "--dim", "512",
           "--seqlen", "2048", "--width", "4", *flags.split(), "--device", "cpu", "--check_only"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rows within tolerance" in r.stdout
