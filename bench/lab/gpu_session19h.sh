#!/bin/bash
# Session 19, one device call: the seq_idx backward through the registered op in both layouts beside causal-conv1d
# 1.7's backward (prebuilt peers from .peers/prebuilt_site.tar.xz): conv_bwd_seq_idx_ab.py --dao, channel-last
# (where causal-conv1d takes seq_idx) and contiguous (its plain backward only). Tables last; logs under $OUT.
source bench/lab/lab_steps.sh
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"
wait
echo "peers: $(tail -n 1 "$L/peers.txt") build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
for layout in channel_last contiguous; do
  PYTHONPATH=$PWD:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new timeout 150 python3 bench/lab/conv_bwd_seq_idx_ab.py \
    new --layout $layout --dao >> "$L/seq.txt" 2>> "$L/seq_err.txt"
  echo "$layout done at $((SECONDS - t0)) s"
done
tail -n 3 "$L/seq_err.txt"; cat "$L/seq.txt"
