#!/bin/bash
# Session 26, call 1: the rows backward's instruction cuts against main, built side by side and timed alternating
# (bench/lab/conv_bwd_odd_ab.py, aligned and odd sets, two rounds, causal-conv1d's backward beside main in round 1):
#   main  .peers/old_tree.tar  (git archive bedd3f3)
#   instr .peers/wip_instr.tar (git archive 2c179dd: bf16 widened by a shift or mask, one SiLU branch a vector,
#         SiLU's gradient in three instructions)
#   edge  this tree            (instr + the loop's inner tiles without the row-end checks)
# then the backward GPU tests and memcheck on this tree; the peers' built site packed into $OUT for later calls.
#   bash bench/gpu.sh lab/gpu_session26.sh
source bench/lab/lab_steps.sh
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD
( timeout 300 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers --pack "$OUT/prebuilt_site.tar.xz" \
    > "$L/peers.txt" 2>&1 ) &
declare -A ROOT=([main]=/tmp/t_main [instr]=/tmp/t_instr [edge]=$NEW)
for t in main instr; do rm -rf "${ROOT[$t]}" && mkdir -p "${ROOT[$t]}"; done
tar -xf .peers/old_tree.tar -C /tmp/t_main && tar -xf .peers/wip_instr.tar -C /tmp/t_instr
for t in main instr edge; do build_tree "${ROOT[$t]}" "/tmp/c_$t" "$L/build_$t.txt" & done
wait
for t in main instr edge; do echo "build $t: $(tail -n 2 "$L/build_$t.txt" | tr '\n' ' ')"; done
tail -n 2 "$L/peers.txt"; ls -la "$OUT"/prebuilt_site.tar.xz 2>/dev/null
for r in 1 2; do
  [ $((SECONDS - t0)) -gt 330 ] && break
  for set in aligned odd; do
    for t in main instr edge; do
      dao=""; [ $r = 1 ] && [ $t = main ] && dao=--dao
      (cd "${ROOT[$t]}" && PYTHONPATH=${ROOT[$t]}:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set $set $dao) >> "$L/ab.txt" 2>&1
    done
  done
  echo "round $r at $((SECONDS - t0)) s"
done
export AITER_LITE_CACHE_DIR=/tmp/c_edge
timeout $((520 - (SECONDS - t0))) $P tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "(rows_chunks and not whole_row) or rows_seq_idx or (test_shifted_rows and (4- or 8-))" > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
timeout $((580 - (SECONDS - t0))) compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "(test_rows_chunks and 4- and x_dtype1) or (test_rows_chunks and 8-) or test_rows_chunks_env_is_checked or short_last" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
grep -v "^$" "$L/ab.txt" | tail -n 90
