#!/bin/bash
# Session 26, call 5: the rows backward with seq_idx taking the plain taps on inner tiles whose windows hold no
# sequence start or padding (this tree, wip/bwd-rows-seq-skip) against main's head (.peers/final_tree.tar), built
# side by side: conv_bwd_seq_idx_ab.py (packed rows, ours with seq_idx against plain) and conv_bwd_odd_ab.py
# --set aligned, alternating, two rounds; then the seq_idx tests of the rows kernel and memcheck on some.
#   bash bench/gpu.sh lab/gpu_session26e.sh
source bench/lab/lab_steps.sh
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD
rm -rf /tmp/t_final && mkdir -p /tmp/t_final && tar -xf .peers/final_tree.tar -C /tmp/t_final
build_tree /tmp/t_final /tmp/c_final "$L/build_final.txt" &
build_tree "$NEW" /tmp/c_skip "$L/build_skip.txt" &
wait
for t in final skip; do echo "build $t: $(tail -n 2 "$L/build_$t.txt" | tr '\n' ' ')"; done
for r in 1 2; do
  for s in seq aligned; do
    for t in final skip; do
      root=$NEW; [ $t = final ] && root=/tmp/t_final
      if [ $s = seq ]; then cmd=(conv_bwd_seq_idx_ab.py $t); else cmd=(conv_bwd_odd_ab.py $t --set aligned); fi
      (cd "$root" && PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/${cmd[0]}" "${cmd[@]:1}") >> "$L/ab.txt" 2>&1
    done
  done
  echo "round $r at $((SECONDS - t0)) s"
  [ $((SECONDS - t0)) -gt 250 ] && break
done
export AITER_LITE_CACHE_DIR=/tmp/c_skip
timeout $((400 - (SECONDS - t0))) $P tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "rows_seq_idx or (rows_chunks and not whole_row and not env) or (test_shifted_rows_chunks and 4-)" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 8
timeout $((450 - (SECONDS - t0))) compute-sanitizer --tool memcheck --print-limit 20 $P -s \
  tests/test_gpu_causal_conv1d_bwd_paths.py -k "test_rows_seq_idx and (4- or 8-)" > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
grep -v "^$" "$L/ab.txt" | grep -v label | grep -E "seq|final|skip" | tail -n 70
