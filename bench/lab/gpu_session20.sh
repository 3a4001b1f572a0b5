#!/bin/bash
# Session 20, one device call: the rows kernel's seq_idx backward (this tree) against
# main (.peers/old_tree.tar): conv_bwd_seq_idx_ab.py alternating (ROUNDS, default 2), ncu metrics of the rows
# kernel on packed64 (1 x 4096 x 32768 bf16, 64 sequences) and aligned (plain) for both trees, the GPU tests of
# the backward paths, the states and peer-suite files, and memcheck on the seq_idx rows tests.
# Logs under $OUT; summary last.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
peers_and_trees "$NEW" "$OLD"
ab_rounds conv_bwd_seq_idx_ab.py 120
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes.sum
M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__instruction_throughput.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
for s in long_scoreboard lg_throttle mio_throttle short_scoreboard wait not_selected math_pipe_throttle no_instruction \
         dispatch_stall branch_resolving barrier selected; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
for v in old new; do
  T=$([ $v = old ] && echo "$OLD" || echo "$NEW")
  for c in packed64 aligned; do
    (cd "$T" && PYTHONPATH=$T AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 120 ncu -k regex:rows_kernel -c 1 --metrics "$M" \
      python3 "$NEW/bench/lab/conv_bwd_kernel_split.py" --one $c) > "$L/ncu_${v}_$c.txt" 2>&1; echo "ncu $v $c rc=$?"
  done
done
export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_conv_shards.py tests/test_gpu_causal_conv1d_states.py tests/test_gpu_peer_suite.py" \
  "tests/test_gpu_causal_conv1d_bwd_paths.py" "padding_inside_sequences and 4- or rows_seq_idx and 4- or not_non_decreasing and 4-" 360 200
python3 - "$L" <<'PY'
import re, sys
vals = {}
cols = [f"{v}_{c}" for c in ("packed64", "aligned") for v in ("old", "new")]
for col in cols:
    try:
        for line in open(f"{sys.argv[1]}/ncu_{col}.txt"):
            m = re.match(r"\s+(\S+)\s+(\S+)?\s+([\d.,]+)\s*$", line)
            if m and "__" in m.group(1):
                vals.setdefault(m.group(1), {})[col] = m.group(3)
    except OSError:
        pass
print(f"{'metric':70s}" + "".join(f"{c:>16s}" for c in cols))
for k, v in vals.items():
    print(f"{k[:70]:70s}" + "".join(f"{v.get(c, '-'):>16s}" for c in cols))
PY
cat "$L/ab.txt"
check_summary
