#!/bin/bash
# The session-25 waiting branches of the rows backward against this tree, for the next session with device time:
# wip/bwd-rows-fewer-instrs (instr), wip/shifted-rows-loop (shift) and their merge wip/bwd-rows-next (next), each
# carried as .peers/wip_NAME.tar (`git archive wip/... > .peers/wip_NAME.tar`). All four trees built side by side,
# timed alternating on the aligned and odd sets beside causal-conv1d (bench/lab/conv_bwd_odd_ab.py, two rounds),
# then the backward GPU tests and memcheck on the merge.
#   bash bench/gpu.sh lab/gpu_wip_rows.sh
source bench/lab/lab_steps.sh
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_tree "$NEW" /tmp/c_main "$L/build_main.txt" &
for w in instr shift next; do
  rm -rf "/tmp/wip_$w" && mkdir -p "/tmp/wip_$w" && tar -xf ".peers/wip_$w.tar" -C "/tmp/wip_$w"
  build_tree "/tmp/wip_$w" "/tmp/c_$w" "$L/build_$w.txt" &
done
wait
for t in main instr shift next; do echo "build $t: $(tail -n 2 "$L/build_$t.txt" | tr '\n' ' ')"; done
for r in 1 2; do
  for set in aligned odd; do
    for t in main instr shift next; do
      root=/tmp/wip_$t; [ $t = main ] && root=$NEW
      dao=""; [ $r = 1 ] && [ $t = main ] && dao=--dao
      (cd "$root" && PYTHONPATH=$root:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set $set $dao) >> "$L/ab.txt" 2>&1
    done
  done
done
echo "A/B at $((SECONDS - t0)) s"
cd /tmp/wip_next && export PYTHONPATH=/tmp/wip_next AITER_LITE_CACHE_DIR=/tmp/c_next
timeout 240 $P tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py \
  tests/test_gpu_conv_wide.py -k "bwd or backward or grad or rows or chunks or dout or shifted or seq_idx" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "(test_shifted_rows and (2- or 4-) and x_dtype1) or (test_rows_chunks and 4- and x_dtype2)" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
