#!/bin/bash
# Session 24. Part "validate": main's head with the two waiting branches merged (wip/bwd-dout-layout: dout copied
# into x's layout; wip/skinny-wide-wt: fp16/bf16 w.t() 8192..16384 columns to the skinny kernel). Builds both
# modules cold, runs the conv wide/states tests, the matmul skinny tests and memcheck on the rows kernel's
# runtime-width initial-state form (393abca), then times the dout-layout case, the skinny routing and the first
# call. Part "outdtype": matmul out_dtype=float32 on the GPU kernels (tests, memcheck, timing against cuBLAS).
# Part "dout": the backward staging dout in x's layout itself (a tiled transpose in its workspace) against the
# torch copy in Python before it: GPU tests, memcheck and racecheck on the new test, timing A/B.
#   bash bench/gpu.sh lab/gpu_session24.sh validate|outdtype|dout
source bench/lab/lab_steps.sh
part=${1:-validate}
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
if [ "$part" = validate ]; then
  ( timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d \
      module_matmul ) > "$L/build.txt" 2>&1
  echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
  gpu_checks "tests/test_gpu_conv_wide.py tests/test_gpu_causal_conv1d_states.py tests/test_gpu_matmul_skinny.py" \
    "tests/test_gpu_conv_wide.py" "forward_with_states and (rows or contiguous)" 240 120
  check_summary
  timeout 120 python3 bench/lab/conv_wide_ab.py new --widths 4,6 --cases "bwd channel-last" --dtypes bf16,fp32 \
    > "$L/dout_layout.txt" 2>&1; echo "dout layout rc=$? at $((SECONDS - t0)) s"; cat "$L/dout_layout.txt"
  timeout 150 python3 bench/lab/matmul_skinny_tc.py > "$L/skinny.txt" 2>&1
  echo "skinny rc=$? at $((SECONDS - t0)) s"; cat "$L/skinny.txt"
  timeout 60 python3 bench/lab/first_call.py > "$L/first_call.txt" 2>&1
  echo "first call rc=$? at $((SECONDS - t0)) s"; tail -n 30 "$L/first_call.txt"
elif [ "$part" = splits ]; then
  # The skinny kernel's split-K count forced (AITER_LITE_SKINNY_SPLITS) against the cost model's choice (0).
  ( timeout 200 python3 -m aiter_lite -q build module_matmul ) > "$L/build.txt" 2>&1
  echo "build rc=$? at $((SECONDS - t0)) s"
  for s in 0 1 2 3 4 6 8; do
    AITER_LITE_SKINNY_SPLITS=$s timeout 60 python3 bench/lab/skinny_splits.py >> "$L/splits.txt" 2>&1
  done
  echo "splits at $((SECONDS - t0)) s"; sort -t'|' -k2,2 -s "$L/splits.txt"
elif [ "$part" = vecs ] || [ "$part" = occ ]; then
  # A variant of the rows backward against this tree, beside causal-conv1d, alternating. vecs: 4 vectors a lane on
  # large problems (AITER_LITE_BWD_ROWS_VECS=4, as the constant) against 2; occ: OCC_BLOCKS (default 12) blocks an
  # SM for the plain W <= 4 kernels of 1 and 2 vectors against 8.
  OLD=/tmp/v4 NEW=$PWD
  rm -rf "$OLD" && mkdir -p "$OLD" && cp -r aiter_lite csrc jit_config.json bench "$OLD"/
  if [ "$part" = vecs ]; then
    sed -i 's/^constexpr int kRowsLargeVecs = 2;/constexpr int kRowsLargeVecs = 4;/' "$OLD/csrc/kernels/causal_conv1d_bwd_rows.cu"
    grep -c "kRowsLargeVecs = 4" "$OLD/csrc/kernels/causal_conv1d_bwd_rows.cu"
  else
    sed -i "s/: (kVecs_ >= 4 ? (kWidth_ <= 4 ? 5 : 4) : (kWidth_ <= 4 ? 8 :/: (kVecs_ >= 4 ? (kWidth_ <= 4 ? 5 : 4) : (kWidth_ <= 4 ? ${OCC_BLOCKS:-12} :/" \
      "$OLD/csrc/kernels/causal_conv1d_bwd_rows.cu"
    grep -c "kWidth_ <= 4 ? ${OCC_BLOCKS:-12} :" "$OLD/csrc/kernels/causal_conv1d_bwd_rows.cu"
  fi
  peers
  build_tree "$NEW" /tmp/c_new "$L/build_new.txt" &
  build_tree "$OLD" /tmp/c_old "$L/build_old.txt" &
  wait; echo "builds: $(tail -n 2 "$L"/build_new.txt | tr '\n' ' ') | $(tail -n 2 "$L"/build_old.txt | tr '\n' ' ')"
  for r in 1 2; do
    (cd "$OLD" && PYTHONPATH=$OLD:$PEER_CACHE/site AITER_LITE_CACHE_DIR=/tmp/c_old timeout 120 python3 \
      "$NEW/bench/lab/conv_bwd_vs_dao.py" "$part-variant") >> "$L/vecs.txt" 2>&1
    PYTHONPATH=$NEW:$PEER_CACHE/site AITER_LITE_CACHE_DIR=/tmp/c_new timeout 120 python3 bench/lab/conv_bwd_vs_dao.py this-tree \
      >> "$L/vecs.txt" 2>&1
  done
  echo "at $((SECONDS - t0)) s"; grep "^#" "$L/vecs.txt" | head -2; grep "^|" "$L/vecs.txt" | sort -t'|' -k3,3 -s
elif [ "$part" = ncu ]; then
  # Nsight Compute on the backward of ours and causal-conv1d's, bf16 4x4096x4096 W = 4 (issue 20 on the H200).
  peers
  ( timeout 200 python3 -m aiter_lite -q build module_causal_conv1d ) > "$L/build.txt" 2>&1
  echo "build rc=$? at $((SECONDS - t0)) s"
  timeout 240 ncu --profile-from-start off -k regex:"bwd|reduce" --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 bench/lab/profile_conv_bwd.py --shape 4x4096x4096 --width 4 --dtype bf16 > "$L/ncu.txt" 2>&1
  echo "ncu rc=$? at $((SECONDS - t0)) s"
  grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Block Size|Grid Size|Warp Cycles Per Issued|Issued Warp|No Eligible|L2 Hit|Mem Busy|Max Bandwidth|Waves Per SM|Shared Memory Config|Dynamic Shared|Static Shared|Block Limit" "$L/ncu.txt" | head -n 120
elif [ "$part" = dout ]; then
  # dout staged in x's layout inside the backward (this tree) against the torch copy in Python (.peers/old_tree.tar).
  OLD=/tmp/old_tree NEW=$PWD
  build_trees "$NEW" "$OLD"
  export AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_conv_wide.py tests/test_gpu_conv_shards.py" \
    "tests/test_gpu_causal_conv1d_bwd_paths.py" "dout_in_the_other and -4- and (shape0 or shape1)" 330 150
  check_summary
  timeout 100 compute-sanitizer --tool racecheck $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
    -k "dout_in_the_other and -4- and shape0 and x_dtype1" > "$L/racecheck.txt" 2>&1
  echo "racecheck rc=$?"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 3
  for r in 1 2; do
    (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 100 python3 "$NEW/bench/lab/conv_wide_ab.py" \
      old --widths 4,6 --cases "bwd" --dtypes bf16,fp32) >> "$L/ab.txt" 2>&1
    timeout 100 python3 bench/lab/conv_wide_ab.py new --widths 4,6 --cases "bwd" --dtypes bf16,fp32 >> "$L/ab.txt" 2>&1
  done
  echo "A/B at $((SECONDS - t0)) s"; grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k3,4 -s
else
  # The old tree (.peers/old_tree.tar: main before out_fp32) and this one, matmul only, side by side.
  OLD=/tmp/old_tree NEW=$PWD
  rm -rf "$OLD" && mkdir -p "$OLD" && tar -xf .peers/old_tree.tar -C "$OLD"
  for t in old new; do
    root=$NEW; [ $t = old ] && root=$OLD
    (cd "$root" && PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$t AITER_LITE_LOCK_DIR=/tmp/c_$t.locks timeout 200 \
      /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul) > "$L/build_$t.txt" 2>&1 &
  done
  wait; echo "builds: $(tail -n 1 "$L"/build_old.txt) | $(tail -n 1 "$L"/build_new.txt) at $((SECONDS - t0)) s"
  export AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  gpu_checks "tests/test_gpu_matmul_out_fp32.py tests/test_gpu_matmul_epilogue.py tests/test_gpu_matmul.py \
tests/test_gpu_matmul_skinny.py" "tests/test_gpu_matmul_out_fp32.py" "several_tiles or (every_config and 2) or skinny" \
    300 150
  check_summary
  for r in 1 2; do
    (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 150 python3 bench/bench_matmul.py \
      --epilogue) >> "$L/epi_old.txt" 2>&1
    timeout 150 python3 bench/bench_matmul.py --epilogue >> "$L/epi_new.txt" 2>&1
  done
  echo "epilogue A/B at $((SECONDS - t0)) s"; grep -h "^| [0-9]" "$L/epi_old.txt" | sed 's/^/old /'
  grep -h "^| [0-9]" "$L/epi_new.txt" | sed 's/^/new /'
  timeout 200 python3 bench/bench_matmul.py --out-fp32 > "$L/outfp32.txt" 2>&1
  echo "out fp32 rc=$? at $((SECONDS - t0)) s"; tail -n 20 "$L/outfp32.txt"
fi
