"""Argument checks of build_cp_context that every rank of the group passes or fails together.

A rank never raises on its own arguments before the group has talked: an error raised on one rank
alone would leave the others waiting in the next collective. Instead each rank sums its arguments up
in a fixed-size row of integers (with a code for anything wrong locally), the rows are all-gathered,
and every rank runs the same checks on the same rows, so a mistake on any rank raises the same
ValueError/TypeError, naming the argument and the ranks, on all of them.
"""
from __future__ import annotations

import hashlib
from array import array
import torch

LAYOUTS = ("contiguous", "zigzag")
ROW = ("width", "layout", "packed", "local_len", "total", "num_seqs", "digest_hi", "digest_lo", "error", "detail")
_W, _LAYOUT, _PACKED, _LOCAL, _TOTAL, _NSEQ, _DHI, _DLO, _ERR, _DETAIL = range(len(ROW))
_NONE = -1  # "not passed"

# Local errors: code -> (exception type, argument, message with {detail}).
_ERRORS = {
    1: (TypeError, "width", "width must be an int"),
    2: (ValueError, "width", "width must be >= 1, got {detail}"),
    3: (ValueError, "layout", "layout must be 'contiguous' or 'zigzag'"),
    4: (TypeError, "local_len", "local_len must be an int or None"),
    5: (ValueError, "local_len", "local_len must be >= 1, got {detail}"),
    6: (TypeError, "cu_seqlens", "cu_seqlens must be a 1-D int32/int64 tensor or a sequence of ints"),
    7: (ValueError, "cu_seqlens", "cu_seqlens must have num_seqs+1 >= 2 entries, got {detail}"),
    8: (ValueError, "cu_seqlens", "cu_seqlens must start at 0, got {detail}"),
    9: (ValueError, "cu_seqlens", "cu_seqlens must not decrease, but it does at index {detail}"),
    10: (ValueError, "cu_seqlens", "cu_seqlens must hold at least one token (it ends at 0)"),
}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _digest(values: list) -> tuple:
    h = hashlib.blake2b(array("q", values).tobytes(), digest_size=16).digest()
    mask = (1 << 62) - 1  # two non-negative int64 halves
    return int.from_bytes(h[:8], "little") & mask, int.from_bytes(h[8:], "little") & mask


def _parse_cu_seqlens(cu_seqlens) -> tuple:
    """(list of ints, error code, detail)."""
    if isinstance(cu_seqlens, torch.Tensor):
        if cu_seqlens.dim() != 1 or cu_seqlens.dtype not in (torch.int32, torch.int64):
            return None, 6, 0
        values = cu_seqlens.tolist()  # one device sync, at build time only
    elif isinstance(cu_seqlens, (list, tuple)) and all(_is_int(v) for v in cu_seqlens):
        values = list(cu_seqlens)
    else:
        return None, 6, 0
    if len(values) < 2:
        return None, 7, len(values)
    if values[0] != 0:
        return None, 8, values[0]
    for i in range(1, len(values)):
        if values[i] < values[i - 1]:
            return None, 9, i
    if values[-1] == 0:
        return None, 10, 0
    return values, 0, 0


def local_row(width, layout, cu_seqlens, local_len) -> tuple:
    """This rank's row (a list of ints, see ROW) and its parsed cu_seqlens (a list, or None). Never raises."""
    row = [_NONE] * len(ROW)
    row[_ERR] = row[_DETAIL] = 0

    def fail(code, detail=0):
        if row[_ERR] == 0:
            row[_ERR], row[_DETAIL] = code, detail

    def positive_int(value, index, type_code, value_code):
        if not _is_int(value):
            fail(type_code)
        elif value < 1:
            fail(value_code, value)
        else:
            row[index] = value

    positive_int(width, _W, 1, 2)
    if layout in LAYOUTS:
        row[_LAYOUT] = LAYOUTS.index(layout)
    else:
        fail(3)
    if local_len is not None:
        positive_int(local_len, _LOCAL, 4, 5)
    values = None
    row[_PACKED] = int(cu_seqlens is not None)
    if cu_seqlens is not None:
        values, code, detail = _parse_cu_seqlens(cu_seqlens)
        if code:
            fail(code, detail)
        else:
            row[_TOTAL], row[_NSEQ] = values[-1], len(values) - 1
            row[_DHI], row[_DLO] = _digest(values)
    return row, values


def _ranks(rows, pick) -> list:
    return [r for r, row in enumerate(rows) if pick(row)]


def _per_rank(rows, index) -> str:
    return ", ".join(f"rank {r}: {'None' if row[index] == _NONE else row[index]}" for r, row in enumerate(rows))


def check_rows(rows: list) -> tuple:
    """The same checks on every rank. Returns (width, layout, local_lens) or raises."""
    world = len(rows)
    failed = _ranks(rows, lambda row: row[_ERR] != 0)
    if failed:
        code, detail = rows[failed[0]][_ERR], rows[failed[0]][_DETAIL]
        exc, arg, text = _ERRORS[code]
        same = [r for r in failed if rows[r][_ERR] == code]
        raise exc(f"{text.format(detail=detail)} (build_cp_context on rank(s) {same} of {world})")
    for index, arg in ((_W, "width"), (_LAYOUT, "layout")):
        if len({row[index] for row in rows}) > 1:
            values = _per_rank(rows, index) if index == _W else ", ".join(
                f"rank {r}: {LAYOUTS[row[_LAYOUT]]!r}" for r, row in enumerate(rows))
            raise ValueError(f"{arg} differs across the ranks of the group ({values}); pass the same on every rank")
    width, layout = rows[0][_W], LAYOUTS[rows[0][_LAYOUT]]
    packed = _ranks(rows, lambda row: row[_PACKED] == 1)
    if packed and len(packed) != world:
        raise ValueError(f"cu_seqlens was passed on rank(s) {packed} but not on the others; pass the same global "
                         "cu_seqlens on every rank (or none for fixed-length batches)")
    given = _ranks(rows, lambda row: row[_LOCAL] != _NONE)
    if given and len(given) != world:
        raise ValueError(f"local_len was passed on rank(s) {given} but not on the others; pass it on every rank "
                         "or on none")
    lens = [row[_LOCAL] for row in rows]
    if not packed:
        if not given:
            raise ValueError("local_len is required for fixed-length batches (without cu_seqlens): "
                             "pass this rank's x_local.shape[-1]")
        if layout == "zigzag" and (len(set(lens)) > 1 or lens[0] % 2):
            raise ValueError(f"local_len must be the same even number on every rank with layout='zigzag' (two equal "
                             f"parts per rank), got {_per_rank(rows, _LOCAL)}")
        return width, layout, lens
    if len({(row[_DHI], row[_DLO], row[_TOTAL], row[_NSEQ]) for row in rows}) > 1:
        raise ValueError(f"cu_seqlens differs across the ranks of the group (totals {_per_rank(rows, _TOTAL)}); "
                         "pass the same global cu_seqlens on every rank")
    total = rows[0][_TOTAL]
    parts = world if layout == "contiguous" else 2 * world
    if layout == "zigzag" and total % parts:
        raise ValueError(f"cu_seqlens ends at {total} tokens, which layout='zigzag' cannot cut into 2*world = {parts} "
                         "equal parts")
    if not given:
        if total % world:
            raise ValueError(f"cu_seqlens ends at {total} tokens, which do not split equally over {world} ranks; "
                             "pass local_len on every rank")
        return width, layout, [total // world] * world
    if sum(lens) != total:
        raise ValueError(f"cu_seqlens ends at {total} tokens but the ranks' local_len sum to {sum(lens)} "
                         f"({_per_rank(rows, _LOCAL)})")
    if layout == "zigzag" and len(set(lens)) > 1:
        raise ValueError(f"local_len must be {total // world} on every rank with layout='zigzag', got "
                         f"{_per_rank(rows, _LOCAL)}")
    return width, layout, lens


def gather_rows(row: list, group, device: torch.device) -> list:
    """All-gather every rank's row (one collective and one host sync: build time only)."""
    import torch.distributed as dist

    world = dist.get_world_size(group)
    mine = torch.tensor(row, dtype=torch.int64, device=device)
    everyone = torch.empty(world * len(row), dtype=torch.int64, device=device)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # the new name (torch 2.13)
    gather(everyone, mine, group=group)
    flat = everyone.tolist()
    return [flat[r * len(row):(r + 1) * len(row)] for r in range(world)]

