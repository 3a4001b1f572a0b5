#!/bin/bash
# Session 19, one device call: ncu metrics of the rows kernel on bf16 8x5120x2048 (aligned rows) and 8x5120x2047
# (odd L: row-relative vectors by 32-bit words): instructions, stall reasons per issue, L1 requests and sectors,
# L2 writes, DRAM bytes. Logs under $OUT; the side-by-side table last.
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"; tail -n 2 "$L/build_new.txt"
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes.sum
M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts.sum,lts__t_requests_srcunit_tex_op_write.sum
for s in long_scoreboard lg_throttle mio_throttle short_scoreboard wait not_selected math_pipe_throttle no_instruction \
         dispatch_stall drain selected tex_throttle; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
for c in aligned odd; do
  timeout 120 ncu -k regex:rows_kernel -c 1 --metrics "$M" python3 bench/lab/conv_bwd_kernel_split.py --one $c \
    > "$L/ncu_$c.txt" 2>&1; echo "ncu $c rc=$?"
done
python3 - "$L" <<'PY'
import re, sys
vals = {}
for c in ("aligned", "odd"):
    for line in open(f"{sys.argv[1]}/ncu_{c}.txt"):
        m = re.match(r"\s+(\S+)\s+(\S+)?\s+([\d.,]+)\s*$", line)
        if m and ("__" in m.group(1)):
            vals.setdefault(m.group(1), {})[c] = m.group(3)
for k, v in vals.items():
    print(f"{k:80s} {v.get('aligned', '-'):>16s} {v.get('odd', '-'):>16s}")
PY
