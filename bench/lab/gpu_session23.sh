#!/bin/bash
# Session 23: widths 5..8 of every conv family on one 8-tap kernel (to cut the build), against main before it
# (.peers/old_tree.tar = `git archive a2c61d9`). Part "build" (first call): each tree's conv module built ALONE from
# an empty cache (the cold-build figure of issue 22; old first, then new), then the conv GPU tests on the new tree
# and memcheck on the wide-kernel tests. Part "ab" (second call, machine still warm): conv_wide_ab.py, old and new
# alternating, then `python -m aiter_lite build --all` on the new tree from an empty cache.
#   bash bench/gpu.sh lab/gpu_session23.sh build|ab
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
part=${1:-build}
if [ "$part" = build ]; then
  rm -rf "$OLD" /tmp/c_old /tmp/c_new && mkdir -p "$OLD" && tar -xf .peers/old_tree.tar -C "$OLD"
  build_tree "$OLD" /tmp/c_old "$L/build_old.txt"
  build_tree "$NEW" /tmp/c_new "$L/build_new.txt"
  for f in "$L"/build_old.txt "$L"/build_new.txt; do echo "$(basename "$f"): $(tail -n 2 "$f" | tr '\n' ' ')"; done
  export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  gpu_checks "tests/test_gpu_conv_wide.py tests/test_gpu_conv_shards.py tests/test_gpu_causal_conv1d.py \
tests/test_gpu_causal_conv1d_states.py tests/test_gpu_causal_conv1d_bwd_paths.py" "tests/test_gpu_conv_wide.py" \
    "dtype1 and (5- or 7-)" 330 120
  check_summary
else
  ROUNDS=${ROUNDS:-2} ab_rounds conv_wide_ab.py 200
  grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k3,4 -s
  rm -rf /tmp/c_all && (PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_all AITER_LITE_LOCK_DIR=/tmp/c_all.locks \
    timeout 150 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build --all) > "$L/build_all.txt" 2>&1
  echo "build --all: $(tail -n 2 "$L/build_all.txt" | tr '\n' ' ')"
fi
