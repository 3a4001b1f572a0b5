#!/bin/bash
# Session 26, call 2: shifted rows with one vector a lane and the chunk loop (wip/shifted-rows-loop) merged onto the
# instruction cuts. Three trees built side by side and timed alternating (bench/lab/conv_bwd_odd_ab.py, both sets,
# two rounds): main (.peers/old_tree.tar, bedd3f3), edge (.peers/wip_edge.tar: call 1's best) and next (this tree);
# then the backward GPU tests on this tree (the rows, shards and wide-filter files) and memcheck on the new tests.
#   bash bench/gpu.sh lab/gpu_session26b.sh
source bench/lab/lab_steps.sh
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD
declare -A ROOT=([main]=/tmp/t_main [edge]=/tmp/t_edge [next]=$NEW)
for t in main edge; do rm -rf "${ROOT[$t]}" && mkdir -p "${ROOT[$t]}"; done
tar -xf .peers/old_tree.tar -C /tmp/t_main && tar -xf .peers/wip_edge.tar -C /tmp/t_edge
for t in main edge next; do build_tree "${ROOT[$t]}" "/tmp/c_$t" "$L/build_$t.txt" & done
wait
for t in main edge next; do echo "build $t: $(tail -n 2 "$L/build_$t.txt" | tr '\n' ' ')"; done
for r in 1 2; do
  for set in odd aligned; do
    for t in main edge next; do
      (cd "${ROOT[$t]}" && PYTHONPATH=${ROOT[$t]} AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set $set) >> "$L/ab.txt" 2>&1
    done
  done
  echo "round $r at $((SECONDS - t0)) s"
done
export AITER_LITE_CACHE_DIR=/tmp/c_next
timeout $((500 - (SECONDS - t0))) $P tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_conv_shards.py \
  tests/test_gpu_conv_wide.py -k "bwd or backward or grad or rows or chunks or shifted or seq_idx" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
timeout $((585 - (SECONDS - t0))) compute-sanitizer --tool memcheck --print-limit 20 $P -s \
  tests/test_gpu_causal_conv1d_bwd_paths.py -k "(test_shifted_rows_chunks and (2- or 4-)) or short_last" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
grep -v "^$" "$L/ab.txt" | grep -v "label" | tail -n 60
