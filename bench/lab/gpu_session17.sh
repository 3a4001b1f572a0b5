#!/bin/bash
# One device call (session 17, issue 19: serving prefill): this tree and the tree in .peers/old_tree.tar
# (`git archive -o .peers/old_tree.tar BASE`) built side by side from empty caches; bench/lab/conv_prefill.py
# old/new in alternation (ROUNDS, default 2); ncu on the dense kernel in both trees (NCU=, empty, skips it); then
# this tree's GPU tests of the varlen paths (TESTS: a pytest -k expression, default "varlen or prefill"; "not zz"
# runs the whole file) and compute-sanitizer memcheck (SAN_TESTS) + racecheck on the dense kernel's prefill tests.
# Run from the repository root with .peers carried; logs under $OUT. Every step has a timeout: a kernel that hangs
# costs those, not the call (session 17 lost most of a call that way).
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
echo "builds done at $((SECONDS - t0)) s"
ab_rounds conv_prefill.py 60
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,launch__registers_per_thread,launch__grid_size,launch__occupancy_limit_registers
# ncu on the dense kernel (64 and 8 sequences, the second call of each), old and new trees.
for tree in old new; do
  root=$NEW; [ $tree = old ] && root=$OLD
  [ -n "${NCU:-1}" ] && (cd $root && PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$tree timeout 60 ncu -k regex:dense_features \
    --launch-skip 1 --launch-skip-before-match 0 --metrics "$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python3 $NEW/bench/lab/conv_prefill.py ncu --profile) > "$L/ncu_$tree.txt" 2>&1
  echo "== ncu $tree"; grep -E "duration|dram__t|issue_active|inst_executed.sum|thread_inst|registers_per" "$L/ncu_$tree.txt" | awk '{print $1, $NF}'
done
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout 240 $P tests/test_gpu_causal_conv1d_states.py -k "${TESTS:-varlen or prefill}" > "$L/tests.txt" 2>&1 &
# -s: the sanitizer's reports reach the log as they happen (pytest would hold them until the end); -x: stop at
# the first failure.
timeout 240 compute-sanitizer --tool memcheck --print-limit 20 $P -x -s tests/test_gpu_causal_conv1d_states.py \
  -k "${SAN_TESTS:-dense_kernel_prefill}" > "$L/memcheck.txt" 2>&1 &
timeout 240 compute-sanitizer --tool racecheck --print-limit 20 $P -x -s tests/test_gpu_causal_conv1d_states.py \
  -k "many_short and (dtype0 or dtype2)" > "$L/racecheck.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests memcheck racecheck; do
  echo "== $f"; grep -hE "^FAILED|ERROR SUMMARY|RACECHECK SUMMARY|Error|=====.*(Invalid|Race|hazard|at 0x)|Error:|assert" "$L/$f.txt" | head -12; tail -n 2 "$L/$f.txt"
done
echo; cat "$L/ab.txt"
