#!/bin/bash
# Session 26, call 3: the final rows backward (no inner-tile copy for fp32 with seq_idx) against call 2's next
# (.peers/wip_next.tar), built side by side, one A/B round on the aligned set; the rows tests on the final tree; then
# bench_conv_bwd.py --fla-narrow on it beside causal-conv1d, fla and torch (JSON $OUT/conv_bwd.json for
# bench/results, printed row by row; it gets the call's remaining time).
#   bash bench/gpu.sh lab/gpu_session26c.sh
source bench/lab/lab_steps.sh
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD
rm -rf /tmp/t_next && mkdir -p /tmp/t_next && tar -xf .peers/wip_next.tar -C /tmp/t_next
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_tree /tmp/t_next /tmp/c_next "$L/build_next.txt" &
build_tree "$NEW" /tmp/c_final "$L/build_final.txt" &
wait
for t in next final; do echo "build $t: $(tail -n 2 "$L/build_$t.txt" | tr '\n' ' ')"; done
tail -n 1 "$L/peers.txt"
for t in next final; do
  root=$NEW; [ $t = next ] && root=/tmp/t_next
  (cd "$root" && PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
    "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set aligned) >> "$L/ab.txt" 2>&1
done
echo "A/B at $((SECONDS - t0)) s"; grep -E "seqs|label" "$L/ab.txt"
export AITER_LITE_CACHE_DIR=/tmp/c_final
timeout 120 $P tests/test_gpu_causal_conv1d_bwd_paths.py -k "(rows_chunks and not whole_row) or rows_seq_idx" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 8
PYTHONPATH=/tmp/peers/site:$PYTHONPATH timeout $((590 - (SECONDS - t0))) python3 bench/bench_conv_bwd.py --fla-narrow \
  --out "$OUT/conv_bwd.json" > "$L/conv_bwd.txt" 2>&1
echo "conv_bwd rc=$? at $((SECONDS - t0)) s"
grep -E "^\|" "$L/conv_bwd.txt" | tail -n 40
