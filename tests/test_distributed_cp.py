"""Context-parallel causal conv1d on the CPU: gloo over 2, 3 and 4 local processes, against a float64
reference over the unsplit input (outputs, and x/weight/bias gradients), plus the plan on its own and
the errors every rank must raise together (within a time limit: a hang fails the test).

Processes come from a forkserver that has imported torch once per session (cp_workers.run_ranks); a rank
that does not report within the time limit fails the test.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cp_workers  # noqa: E402

from aiter_lite.distributed.plan import make_plan  # noqa: E402

run_ranks, assert_all_passed = cp_workers.run_ranks, cp_workers.assert_all_passed


@pytest.fixture(scope="module", autouse=True)
def conv_module_built():
    """The CPU conv module, built here once before any rank loads it: on a cold cache the ranks would
    otherwise spend their hang deadline waiting for the build (a minute on two busy cores)."""
    from aiter_lite.jit import get_module

    get_module("module_causal_conv1d", "cpu")


# ---------------------------------------------------------------------------------------------
# The plan alone (no processes)


def test_plan_halo_spans_several_short_ranks():
    # width 5 (halo 4), chunks of 5, 1, 2, 3 tokens: rank 3's halo is rank 2's 2 tokens, rank 1's 1 and
    # rank 0's last 1.
    plan = make_plan(3, 5, "contiguous", [5, 1, 2, 3])
    assert [(m.peer, m.tokens) for m in plan.recvs] == [(0, 1), (1, 1), (2, 2)]
    assert plan.sends == () and plan.halo_parts == (0,) and plan.head_len == 3
    assert [(r.src, r.src_start, r.slot, r.length) for m in plan.recvs for r in m.runs] == \
        [(0, 4, 0, 1), (1, 0, 1, 1), (2, 0, 2, 2)]
    # rank 0 sends its last token to ranks 2 and 3 and its last 4 to rank 1 (one message each)
    plan0 = make_plan(0, 5, "contiguous", [5, 1, 2, 3])
    assert [(m.peer, m.tokens) for m in plan0.sends] == [(1, 4), (2, 3), (3, 1)]
    assert plan0.recvs == () and plan0.halo_parts == ()


def test_plan_packed_sequences_send_only_what_continues():
    # 2 ranks of 6 tokens; a sequence starts exactly at rank 1's first token: nothing to exchange
    plan = make_plan(1, 4, "contiguous", [6, 6], cu_seqlens=[0, 6, 12])
    assert plan.recvs == () and plan.halo_parts == ()
    assert make_plan(0, 4, "contiguous", [6, 6], cu_seqlens=[0, 6, 12]).sends == ()
    # the sequence started 2 tokens before rank 1: only those 2 travel, the halo's first slot stays zero
    plan = make_plan(1, 4, "contiguous", [6, 6], cu_seqlens=[0, 4, 12])
    assert [(m.peer, m.tokens) for m in plan.recvs] == [(0, 2)]
    assert [(r.src_start, r.slot, r.length) for r in plan.recvs[0].runs] == [(4, 1, 2)]


def test_plan_zigzag_middle_rank_copies_its_own_front():
    # world 2, parts of 3 tokens: rank 1 holds parts 1 and 2, adjacent: part 2's halo is its own part 1
    plan = make_plan(1, 3, "zigzag", [6, 6])
    assert plan.halo_parts == (0, 1)
    assert [(r.src, r.src_start, r.part, r.slot, r.length) for r in plan.local_runs] == [(1, 1, 1, 0, 2)]
    assert [(m.peer, m.tokens) for m in plan.recvs] == [(0, 2)]
    # parts of 1 token, width 4: rank 0's back part (3) reads parts 0..2, i.e. rank 0, rank 1 twice
    plan = make_plan(0, 4, "zigzag", [2, 2])
    assert [(r.src, r.src_start, r.slot) for r in plan.local_runs] == [(0, 0, 0)]
    assert [(m.peer, [(r.src_start, r.slot) for r in m.runs]) for m in plan.recvs] == [(1, [(0, 1), (1, 2)])]


# ---------------------------------------------------------------------------------------------
# Against the float64 reference


@pytest.mark.parametrize("world", [2, 3, 4])
def test_random_splits_match_unsplit_reference(world):
    """Random unequal splits (1-token chunks, chunks shorter than the halo), packed sequences over
    one, several or all ranks (and empty ones), both layouts of x, zigzag, with/without bias and SiLU."""
    assert_all_passed(run_ranks(world, "random", 24 if world < 4 else 16))


def _case(index, **kw):
    base = dict(index=index, layout="contiguous", packed=False, width=4, dim=5, batch=2, cu=None,
                channel_last=False, bias=True, activation="silu", dtype=cp_workers.torch.float32)
    base.update(kw)
    if base["lens"] is not None:
        base["total"] = sum(base["lens"])
    return base


NAMED_CASES = [
    # a halo of 6 tokens over three 1-and-2-token ranks
    _case(100, width=7, lens=[4, 1, 2, 3]),
    # one packed sequence over every rank, and one that starts exactly at a rank's first token
    _case(101, packed=True, batch=1, lens=[3, 3, 3, 3], cu=[0, 12]),
    _case(102, packed=True, batch=1, lens=[3, 3, 3, 3], cu=[0, 2, 3, 9, 12], channel_last=True),
    # zigzag with 1-token parts (halos cross several parts, some on the rank itself), packed zigzag
    _case(103, layout="zigzag", width=5, lens=[2, 2, 2, 2], activation=None),
    _case(104, layout="zigzag", packed=True, batch=1, lens=[4, 4, 4, 4], cu=[0, 1, 7, 7, 16], bias=False),
    # bf16 activations with fp32 weights
    _case(105, lens=[6, 1, 9, 2], dtype=cp_workers.torch.bfloat16, channel_last=True),
]


def test_named_cases_on_four_ranks():
    assert_all_passed(run_ranks(4, "fixed", NAMED_CASES))


# ---------------------------------------------------------------------------------------------
# Mistakes: the same error on every rank, never a hang

MISMATCHES = {
    "width": ("ValueError", "width differs across the ranks"),
    "cu_seqlens": ("ValueError", "cu_seqlens differs across the ranks"),
    "decreasing": ("ValueError", "cu_seqlens must not decrease"),
    "zigzag_total": ("ValueError", "layout='zigzag' cannot cut"),
    "local_len_type": ("TypeError", "local_len must be an int"),
    "missing_local_len": ("ValueError", "local_len was passed on rank(s)"),
    "layout": ("ValueError", "layout differs across the ranks"),
}


@pytest.mark.parametrize("world", [2, 3])
def test_mismatched_arguments_raise_on_every_rank(world):
    results = run_ranks(world, "mismatch", sorted(MISMATCHES), timeout=60)
    assert_all_passed(results)
    for kind, (exc, text) in MISMATCHES.items():
        messages = {results[r][1][kind] for r in range(world)}
        assert len(messages) == 1, f"{kind}: ranks raised different errors: {messages}"
        message = messages.pop()
        assert message.startswith(exc) and text in message, f"{kind}: {message}"


def test_build_without_a_process_group_raises():
    from aiter_lite.distributed import build_cp_context

    with pytest.raises(ValueError, match="group: torch.distributed is not initialized"):
        build_cp_context(4, local_len=8)


def test_bad_call_arguments_raise():
    assert_all_passed(run_ranks(2, "bad_calls", None))


def test_world_size_one_is_the_plain_op():
    assert_all_passed(run_ranks(1, "world_one", None))

