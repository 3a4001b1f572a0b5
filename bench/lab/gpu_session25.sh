#!/bin/bash
# Session 25. Part "loop": the rows backward whose warps walk several tiles of a row (this tree) against main before
# it (.peers/old_tree.tar): both built side by side and timed alternating beside causal-conv1d
# (bench/lab/conv_bwd_odd_ab.py, aligned and odd sets), the chunk count swept on the new tree, then the new tree's
# GPU tests of the backward paths (the chunk tests, whole-row chunks in a child process) and memcheck on one.
# Part "loop2": the same after the first A/B (at least 4 tiles a chunk, the chunk's last tile prefetched into L2,
# shifted rows without a loop of one tile) against main, and a third tree with fp32 W <= 2 at 9 blocks an SM (56
# registers instead of 64); the GPU tests of the backward on every rows path, memcheck on the chunk tests.
# Part "loop3": the lookahead of a chunk's last tile before the loop only where warps walk several tiles (shifted
# rows compute it in their tile again, before the ascending pass), at least 2 tiles a chunk; against main, the
# chunk count 8192 beside the default; the GPU tests and memcheck on a chunk test and a shifted-rows test.
# Part "loop4": the weights loaded after the first data loads (their conversion waits for them); chunk counts 8192
# and 32768 beside the default.
# Part "mid": a third tree (bench/lab/rows_single_mid.sh: one-vector kernels without the loop, the loop only from
# 2^22 vectors) against this one and main, alternating, then that tree's GPU tests of the backward paths.
# Part "h100": this tree against main on the aligned set beside causal-conv1d, one run each (the end of the
# session's device time).
#   bash bench/gpu.sh lab/gpu_session25.sh loop|loop2|loop3|loop4|mid|h100
source bench/lab/lab_steps.sh
part=${1:-loop}
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
# bwd_checks TEST_S MEM_S MEM_K: the backward tests of the bwd_paths, states and conv_wide files (tests.txt), then
# memcheck on the bwd_paths tests selected by MEM_K (memcheck.txt), each under its timeout; summaries printed.
bwd_checks() {
  timeout "$1" $P tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py \
    tests/test_gpu_conv_wide.py -k "bwd or backward or grad or rows or chunks or dout or shifted or seq_idx" \
    > "$L/tests.txt" 2>&1
  echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
  timeout "$2" compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
    -k "$3" > "$L/memcheck.txt" 2>&1
  echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
}
if [ "$part" = loop ]; then
  OLD=/tmp/old_tree NEW=$PWD
  peers_and_trees "$NEW" "$OLD"
  export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  for r in 1 2; do
    (cd "$OLD" && PYTHONPATH=$OLD:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_old timeout 100 python3 \
      "$NEW/bench/lab/conv_bwd_odd_ab.py" old --set aligned --dao) >> "$L/ab.txt" 2>&1
    timeout 100 python3 bench/lab/conv_bwd_odd_ab.py new --set aligned --dao >> "$L/ab.txt" 2>&1
  done
  (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 60 python3 \
    "$NEW/bench/lab/conv_bwd_odd_ab.py" old) >> "$L/ab.txt" 2>&1
  timeout 60 python3 bench/lab/conv_bwd_odd_ab.py new >> "$L/ab.txt" 2>&1
  for n in 4096 8192 32768; do
    AITER_LITE_BWD_ROWS_CHUNKS=$n timeout 60 python3 bench/lab/conv_bwd_odd_ab.py "new-$n" --set aligned \
      >> "$L/ab.txt" 2>&1
  done
  echo "A/B at $((SECONDS - t0)) s"; head -n 2 "$L/ab.txt"; grep -E "^\| (old|new)" "$L/ab.txt" | sort -t'|' -k3,4 -s
  gpu_checks tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_bwd_paths.py \
    "test_rows_chunks and 8- and x_dtype1" 280 60
  check_summary
elif [ "$part" = loop2 ]; then
  OLD=/tmp/old_tree NEW=$PWD N9=/tmp/new9
  rm -rf "$N9" && mkdir -p "$N9" && cp -r aiter_lite csrc jit_config.json bench "$N9"/
  sed -i "s/: (kVecs_ >= 4 ? (kWidth_ <= 4 ? 5 : 4) : (kWidth_ <= 4 ? 8 :/: (kVecs_ >= 4 ? (kWidth_ <= 4 ? 5 : 4) : (kWidth_ <= 4 ? (sizeof(T_) == 4 \&\& kWidth_ <= 2 ? 9 : 8) :/" \
    "$N9/csrc/kernels/causal_conv1d_bwd_rows.cu"
  grep -c "? 9 : 8" "$N9/csrc/kernels/causal_conv1d_bwd_rows.cu"
  build_tree "$N9" /tmp/c_n9 "$L/build_n9.txt" &
  peers_and_trees "$NEW" "$OLD"
  wait; tail -n 2 "$L/build_n9.txt"
  export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  for r in 1 2; do
    for t in old new n9; do
      root=$NEW; [ $t = old ] && root=$OLD; [ $t = n9 ] && root=$N9
      (cd "$root" && PYTHONPATH=$root:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set aligned --dao) >> "$L/ab.txt" 2>&1
    done
    for t in old new; do
      root=$NEW; [ $t = old ] && root=$OLD
      (cd "$root" && PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 60 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t) >> "$L/ab.txt" 2>&1
    done
  done
  echo "A/B at $((SECONDS - t0)) s"
  bwd_checks 300 80 "test_rows_chunks and (4- or 5-) and x_dtype1"
elif [ "$part" = loop3 ] || [ "$part" = loop4 ]; then
  OLD=/tmp/old_tree NEW=$PWD
  peers_and_trees "$NEW" "$OLD"
  export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  for r in 1 2; do
    for set in aligned odd; do
      (cd "$OLD" && PYTHONPATH=$OLD:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_old timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" old --set $set --dao) >> "$L/ab.txt" 2>&1
      timeout 100 python3 bench/lab/conv_bwd_odd_ab.py new --set $set --dao >> "$L/ab.txt" 2>&1
    done
  done
  for n in 8192 32768; do
    [ "$part" = loop3 ] && [ $n = 32768 ] && continue
    AITER_LITE_BWD_ROWS_CHUNKS=$n timeout 60 python3 bench/lab/conv_bwd_odd_ab.py new-$n --set aligned \
      >> "$L/ab.txt" 2>&1
  done
  echo "A/B at $((SECONDS - t0)) s"
  bwd_checks 240 100 "(test_rows_chunks and 4- and x_dtype1) or (test_shifted_rows and 4- and x_dtype2)"
elif [ "$part" = mid ]; then
  OLD=/tmp/old_tree NEW=$PWD MID=/tmp/v1mid
  rm -rf "$MID" && mkdir -p "$MID" && cp -r aiter_lite csrc jit_config.json bench tests pyproject.toml "$MID"/
  bash bench/lab/rows_single_mid.sh "$MID"
  build_tree "$MID" /tmp/c_mid "$L/build_mid.txt" &
  peers_and_trees "$NEW" "$OLD"
  wait; tail -n 2 "$L/build_mid.txt"
  for r in 1 2; do
    for t in old new mid; do
      root=$NEW; [ $t = old ] && root=$OLD; [ $t = mid ] && root=$MID
      dao=""; [ $r = 1 ] && dao=--dao
      (cd "$root" && PYTHONPATH=$root:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 100 python3 \
        "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set aligned $dao) >> "$L/ab.txt" 2>&1
    done
  done
  echo "A/B at $((SECONDS - t0)) s"
  (cd "$MID" && PYTHONPATH=$MID AITER_LITE_CACHE_DIR=/tmp/c_mid timeout 200 $P \
    tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py tests/test_gpu_conv_wide.py \
    -k "bwd or backward or grad or rows or chunks or dout or shifted or seq_idx") > "$L/tests_mid.txt" 2>&1
  echo "mid tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_mid.txt" | tail -n 8
elif [ "$part" = h100 ]; then
  OLD=/tmp/old_tree NEW=$PWD
  peers_and_trees "$NEW" "$OLD"
  for t in new old; do
    root=$NEW; [ $t = old ] && root=$OLD
    (cd "$root" && PYTHONPATH=$root:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$t timeout 60 python3 \
      "$NEW/bench/lab/conv_bwd_odd_ab.py" $t --set aligned --dao --reps 20) >> "$OUT/ab.txt" 2>&1
  done
  echo "A/B at $((SECONDS - t0)) s"
fi
