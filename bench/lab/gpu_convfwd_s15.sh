#!/bin/bash
# One device call (issue 19, session 15): build; the channel-last feature table beside causal-conv1d
# (bench/lab/conv_cl_features.py) on a quiet GPU; the dense kernel's cost split (bench/lab/conv_dense_diag.py);
# with NCU=1, ncu on the dense feature kernel (seq_idx, prefill);
# then the GPU test files side by side. Run from the repository root with .peers present; logs in $OUT (tarred).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L
nvidia-smi -L; date -u; git log --oneline -1
python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > $L/peers.txt 2>&1 && export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
( time timeout 80 python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > $L/build.txt 2>&1
tail -n 3 $L/build.txt
timeout ${AB_S:-45} python3 bench/lab/conv_cl_features.py --label final --reps ${REPS:-25} 2>&1 | tee $L/cl_features.txt
timeout 40 python3 bench/lab/${DENSE_AB:-conv_dense_diag.py} 2>&1 | tee $L/dense_ab.txt
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__warps_eligible.avg.per_cycle_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,dram__bytes.sum
[ -n "$NCU" ] && timeout 50 ncu -k regex:dense_features --launch-skip 1 --launch-count 3 --metrics \
  "$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" python3 bench/lab/ncu_conv_dense.py > $L/ncu.txt 2>&1
grep -E "dense_features|duration|dram__t|throughput|hit_rate|warps_active|issue_active|inst_executed|registers|eligible|sectors|requests|bytes.sum" $L/ncu.txt | head -60
grep -E "stalled" $L/ncu.txt | awk '$NF+0 > 0.05' | head -60
T=$(( 230 - SECONDS )); [ $T -gt ${TEST_S:-170} ] && T=${TEST_S:-170}; echo "tests get $T s (t=$SECONDS)"
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout $T $P tests/test_gpu_causal_conv1d_states.py > $L/tests_states.txt 2>&1 &
timeout $T $P tests/test_gpu_causal_conv1d.py -k "forward and not past_2_31" > $L/tests_fwd.txt 2>&1 &
timeout $T $P tests/test_gpu_peer_suite.py > $L/tests_peer.txt 2>&1 &
wait
for f in tests_states tests_fwd tests_peer; do
  echo "== $f"; grep -hE "^FAILED|Error" $L/$f.txt | head -8; tail -n 2 $L/$f.txt
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
