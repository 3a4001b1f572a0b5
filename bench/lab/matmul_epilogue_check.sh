# Issue 21, the fused epilogue of the wgmma kernels, in one device call: cold build of module_matmul,
# the epilogue and wgmma GPU tests (two pytest processes side by side), bench_matmul.py --epilogue
# (the LLM shapes: plain, fused epilogues, cuBLAS + torch ops), Nsight Compute on plain vs bias+gelu_tanh
# at 4096^3 bf16, and compute-sanitizer memcheck on the wgmma epilogue tests. Logs under $OUT.
#   bench/gpu.sh lab/matmul_epilogue_check.sh
set -uo pipefail
step() { local t=$1 name=$2; shift 2; local t0=$SECONDS
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0)) s: $(tail -n 1 "$OUT/$name.txt")"; }
python3 -m aiter_lite -q clear module_matmul > /dev/null 2>&1
step 120 build python3 -m aiter_lite -q build module_matmul --backend cuda
grep -h "compile\|seconds\| s$" "$OUT/build.txt" | tail -n 5
( step 100 tests_epilogue python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_epilogue.py ) &
( step 100 tests_wgmma python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_wgmma.py ) &
wait
grep -h "FAILED\|Error" "$OUT/tests_epilogue.txt" "$OUT/tests_wgmma.txt" | head -n 20
step 40 bench_epilogue python3 bench/bench_matmul.py --epilogue
cat "$OUT/bench_epilogue.txt"
cat > /tmp/ncu_epi.py <<'PY'
import torch, aiter_lite
m = n = k = 4096
a, b = (torch.randn(s, device="cuda").bfloat16() for s in ((m, k), (k, n)))
bias, out = torch.randn(n, device="cuda"), torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
res = torch.randn(m, n, device="cuda").bfloat16()
calls = [lambda: aiter_lite.matmul(a, b, out), lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="gelu_tanh"),
         lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="relu", residual=res)]
for f in calls: f()
torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStart()
for f in calls: f()
torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStop()
PY
step 45 ncu ncu --profile-from-start off -k regex:matmul_wgmma --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,dram__bytes_write.sum python3 /tmp/ncu_epi.py
grep -v "^==PROF==\|^$" "$OUT/ncu.txt" | grep -i "matmul_wgmma\|duration\|registers\|grid_size\|gmma\|inst_executed.sum\|local\|global_op\|dram" | sed 's/  */ /g' | cut -c1-160
step 75 memcheck compute-sanitizer --tool memcheck --kernel-name kns=matmul_wgmma python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_epilogue.py -k "wgmma and (parts or several)"
grep -h "ERROR SUMMARY\|passed\|failed" "$OUT/memcheck.txt" | tail -n 3
