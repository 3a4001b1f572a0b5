#!/bin/bash
# Session 20, one device call: the seq_idx rows backward's occupancy. main (.peers/old_tree.tar) against this tree
# built three ways (NVCC_APPEND_FLAGS, each into its own cache): v5 (2 vectors a lane, 5 blocks an SM: the
# default), v6 (2 vectors, 6 blocks), v1 (1 vector a lane, 7 blocks); conv_bwd_seq_idx_ab.py on each (ROUNDS,
# default 1); VARIANTS picks them (also v7, v8: 7 and 8 blocks). Logs under $OUT; tables last, sorted by shape.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
declare -A FLAGS=([v5]="" [v6]="-DAITER_LITE_BWD_ROWS_SEQ_LARGE_BLOCKS=6" [v7]="-DAITER_LITE_BWD_ROWS_SEQ_LARGE_BLOCKS=7"
                  [v8]="-DAITER_LITE_BWD_ROWS_SEQ_LARGE_BLOCKS=8" [v8n]="-DAITER_LITE_BWD_ROWS_SEQ_LARGE_BLOCKS=8 -DAITER_LITE_LAB_NO_IDS"
                  [v1]="-DAITER_LITE_BWD_ROWS_SEQ_ONE_VEC -DAITER_LITE_BWD_ROWS_SEQ_BLOCKS=7")
mkdir -p "$OLD" && tar -xf .peers/old_tree.tar -C "$OLD"
build_tree "$OLD" /tmp/c_old "$L/build_old.txt" &
for v in ${VARIANTS:-v5 v6 v1}; do NVCC_APPEND_FLAGS="${FLAGS[$v]}" build_tree "$NEW" /tmp/c_$v "$L/build_$v.txt" & done
wait
for v in old ${VARIANTS:-v5 v6 v1}; do echo "build $v: $(tail -n 2 "$L/build_$v.txt" | tr '\n' ' ')"; done
for r in $(seq 1 "${ROUNDS:-1}"); do
  (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 120 python3 "$NEW/bench/lab/conv_bwd_seq_idx_ab.py" old) \
    >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  for v in ${VARIANTS:-v5 v6 v1}; do
    NVCC_APPEND_FLAGS="${FLAGS[$v]}" PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 120 \
      python3 bench/lab/conv_bwd_seq_idx_ab.py $v >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  done
done
echo "A/B done at $((SECONDS - t0)) s"; tail -n 3 "$L/ab_err.txt"
grep -E "^\| (old|v[0-9]n?) " "$L/ab.txt" | sort -t'|' -k4,4 -k2,2 -s | cut -d'|' -f2-8
