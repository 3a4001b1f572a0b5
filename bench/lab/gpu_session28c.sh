#!/bin/bash
# Session 28, call 4: dout staged two 16-bit elements at a time (causal_conv1d_bwd.cu) against main, fwd+bwd steps
# with dout in the other layout than x and the matched-layout controls (conv_wide_ab.py, W = 4, two rounds,
# alternating); the staging tests with memcheck and racecheck; then ncu of the few-row wgmma config 16 beside cuBLAS.
#   git archive HEAD > .peers/old_tree.tar; bash bench/gpu.sh lab/gpu_session28c.sh
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
for r in 1 2; do
  (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 120 python3 "$NEW/bench/lab/conv_wide_ab.py" old \
     --widths 4 --cases bwd --dtypes bf16,fp16,fp32) >> "$L/ab.txt" 2>&1
  PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new timeout 120 python3 bench/lab/conv_wide_ab.py new \
     --widths 4 --cases bwd --dtypes bf16,fp16,fp32 >> "$L/ab.txt" 2>&1
done
echo "A/B done at $((SECONDS - t0)) s"; grep -E "^\|" "$L/ab.txt" | sort -t'|' -k3,4 -s
export AITER_LITE_CACHE_DIR=/tmp/c_new
F=tests/test_gpu_causal_conv1d_bwd_paths.py
timeout 200 $P $F -k "dout_in_the_other_layout" > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 6
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $P -s $F -k "dout_in_the_other_layout and x_dtype1 and not shape2" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
timeout 100 compute-sanitizer --tool racecheck --print-limit 20 $P -s $F -k "dout_in_the_other_layout and x_dtype1 and (shape3 or shape0)" \
  > "$L/racecheck.txt" 2>&1
echo "racecheck rc=$? at $((SECONDS - t0)) s"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 4
