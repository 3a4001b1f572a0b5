#!/bin/bash
# Session 20, one device call: three trees built side by side and timed on the seq_idx backward
# (conv_bwd_seq_idx_ab.py, alternating, ROUNDS default 1): main (.peers/old_tree.tar), "cut" (.peers/cut_tree.tar:
# the starts cut by zeroing in every vector) and this tree (cut only where a warp's windows hold a mark). Logs under
# $OUT; tables last.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree CUT=/tmp/cut_tree
mkdir -p "$OLD" "$CUT" && tar -xf .peers/old_tree.tar -C "$OLD" && tar -xf .peers/cut_tree.tar -C "$CUT"
build_tree "$NEW" /tmp/c_new "$L/build_new.txt" & build_tree "$OLD" /tmp/c_old "$L/build_old.txt" &
build_tree "$CUT" /tmp/c_cut "$L/build_cut.txt" & wait
for v in new old cut; do echo "build $v: $(tail -n 2 "$L/build_$v.txt" | tr '\n' ' ')"; done
for r in $(seq 1 "${ROUNDS:-1}"); do
  for v in old cut new; do
    T=$([ $v = old ] && echo "$OLD" || ([ $v = cut ] && echo "$CUT" || echo "$NEW"))
    (cd "$T" && PYTHONPATH=$T AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 120 python3 "$NEW/bench/lab/conv_bwd_seq_idx_ab.py" $v) \
      >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  done
done
echo "A/B done at $((SECONDS - t0)) s"; tail -n 3 "$L/ab_err.txt"
grep -E "^\| (old|cut|new) " "$L/ab.txt" | sort -t'|' -k4,4 -k2,2 -s
