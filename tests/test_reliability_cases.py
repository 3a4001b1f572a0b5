"""tests/reliability_cases.py (the soak's and the ranks' random cases) on the CPU: random cases of every
op pass against float64, the largest ones too, and the checks catch a wrong or unwritten output."""
import pytest
import torch

import reliability_cases as rc


@pytest.mark.parametrize("op", sorted(rc.OPS))
def test_random_cases_pass(op):
    for seed in range(12):
        desc, err = rc.run_case(rc.OPS[op], "cpu", seed)
        assert err is None, f"seed {seed}: {desc}: {err}"


def test_largest_cases_pass():
    cases = list(rc.largest_cases("cpu"))
    assert {op for op, _ in cases} == set(rc.OPS)
    for i, (op, fn) in enumerate(cases[::5]):  # a spread of them: the float64 references are slow here
        desc, err = rc.run_case(fn, "cpu", i, biggest=True)
        assert err is None, f"{op}: {desc}: {err}"


def test_checks_can_fail():
    ref = torch.randn(2, 3, 5, dtype=torch.float64)
    out = ref.to(torch.float16)
    assert rc.elementwise_error(out, ref, torch.float16) is None
    bad = out.clone()
    bad[1, 2, 3] += 0.5
    assert "1 elements off, first at (1, 2, 3)" in rc.elementwise_error(bad, ref, torch.float16)
    bad[0, 0, 0] = float("nan")
    assert "non-finite output at (0, 0, 0)" in rc.elementwise_error(bad, ref, torch.float16)
    a, b = torch.randn(4, 6), torch.randn(6, 5)
    assert rc.check_matmul(a @ b, a, b, "fp32") is None
    assert "relative error" in rc.check_matmul(a @ b + 1e-3, a, b, "fp32")


def test_an_exception_is_reported_with_its_case():
    def raises(c):
        c.desc = "the case"
        raise RuntimeError("boom")
    assert rc.run_case(raises, "cpu", 0) == ("the case", "RuntimeError: boom")
