#!/bin/bash
# Session 19, one device call: the shifted rows (odd L) as this tree takes them ('new': 16-bit W <= 2 on the flat
# form, wider through the staged row-relative path) against 16-bit W <= 2 staged too ('words':
# -DAITER_LITE_BWD_ROWS_NO_FLAT), both
# beside causal-conv1d's backward (prebuilt peers from .peers/prebuilt_site.tar.xz); then the backward paths' and
# the states file's GPU tests and memcheck on the shifted rows tests. Summary last; logs under $OUT.
source bench/lab/lab_steps.sh
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
NVCC_APPEND_FLAGS="-DAITER_LITE_BWD_ROWS_NO_FLAT" build_tree "$PWD" /tmp/c_words "$L/build_words.txt" &
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"
wait
echo "peers: $(tail -n 1 "$L/peers.txt") new: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
for r in 1 2; do
  for v in new words; do
    PYTHONPATH=$PWD:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 90 python3 bench/lab/conv_bwd_odd_ab.py $v \
      $([ $v = new ] && echo --dao) >> "$L/odd.txt" 2>> "$L/odd_err.txt"
  done
done
echo "odd done at $((SECONDS - t0)) s"; tail -n 3 "$L/odd_err.txt"
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_words AITER_LITE_LOCK_DIR=/tmp/c_words.locks  # checks on the variant
gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py" \
  "tests/test_gpu_causal_conv1d_bwd_paths.py" "shifted_rows" 200 100
timeout 90 compute-sanitizer --tool racecheck --print-limit 20 python3 -m pytest -q -m gpu -p no:cacheprovider -s \
  tests/test_gpu_causal_conv1d_bwd_paths.py -k "shifted_rows and 4-" > "$L/racecheck.txt" 2>&1
echo "racecheck rc=$?"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 3
cat "$L/odd.txt"; echo
check_summary
