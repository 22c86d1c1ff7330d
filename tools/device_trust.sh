#!/usr/bin/env bash
# One device call: build with a plain pip install, the whole suite on the
# cuda backend (pytest-xdist), compute-sanitizer memcheck and racecheck over
# every CUDA method, and the accuracy/speed table. Logs to $OUT.
set -uo pipefail
OUT=${OUT:-$PWD/device_out}; mkdir -p "$OUT"; cd "$(dirname "$0")/.."
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
( time python3 -m pip install --no-build-isolation --no-deps -e . ) > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
grep -E "cuatomic setup: building|^real" "$OUT/build.log"
export CUATOMIC_BACKEND=cuda OMP_NUM_THREADS=2
timeout ${PYTEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider -n 8 ${PYTEST_ARGS:-} tests > "$OUT/pytest.log" 2>&1 || status=1
grep -E "passed|failed|FAILED|Error" "$OUT/pytest.log" | tail -30
for tool in $([ "${SKIP_SANITIZERS:-0}" = 1 ] || echo memcheck racecheck); do
  timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 3 python3 tools/sanitize_driver.py > "$OUT/$tool.log" 2>&1 || { status=1; tail -30 "$OUT/$tool.log"; }
  grep -E "sanitize_driver|SUMMARY" "$OUT/$tool.log"
done
[ "${SKIP_ACCURACY:-0}" = 1 ] || timeout 200 python3 tools/bench_accuracy.py --backend cuda --speed-n $((1<<28)) --out "$OUT/accuracy_cuda.json" > "$OUT/accuracy_cuda.txt" 2>&1 || status=1
tail -12 "$OUT/accuracy_cuda.txt" 2>/dev/null
if [ "${RUN_TARGETS:-0}" = 1 ]; then  # the target table: every top rung beside CUB, CuPy, PyTorch, Numba
  mkdir -p "$OUT/bench"
  timeout "${TARGETS_TIMEOUT:-240}" python3 -m cuatomic bench --targets --out "$OUT/bench" > "$OUT/bench/targets.txt" 2>&1 || status=1
  tail -3 "$OUT/bench/targets.txt"; tar -C "$OUT" -czf "$OUT/bench.tgz" bench && rm -rf "$OUT/bench"
fi
echo "device_trust exit status $status"
exit $status
