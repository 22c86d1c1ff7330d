#!/usr/bin/env bash
# One device call for checking (issue 4/5 sessions): the suite on the cuda
# backend, compute-sanitizer, and the interop/latency benchmark. With
# CUATOMIC_PREBUILT=1 the extension built on the development machine for the
# device's Python (carried as cuatomic/_C.cpython-312-*.so) is used as is;
# otherwise tools/gpu_check.sh builds it there. RUN_TARGETS=1 / RUN_SCALING=1
# add `python -m cuatomic bench --targets` / the full bench (results packed
# in bench.tgz: the device returns at most 8 files).
set -uo pipefail
OUT=${OUT:-$PWD/device_out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD CUATOMIC_BACKEND=cuda
unset OMP_NUM_THREADS
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import cuatomic, json; print(json.dumps(cuatomic.backend_info()))" > "$OUT/backend_info.json" || exit 1
OMP_NUM_THREADS=${PYTEST_OMP:-2} timeout 240 python3 -m pytest -q -p no:cacheprovider -x ${PYTEST_ARGS:-} tests \
    > "$OUT/pytest.log" 2>&1 || status=1
tail -25 "$OUT/pytest.log"
for tool in $([ "${SKIP_SANITIZERS:-0}" = 1 ] || echo memcheck racecheck); do
    timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 3 python3 tools/sanitize_driver.py \
        > "$OUT/$tool.log" 2>&1 || { status=1; tail -30 "$OUT/$tool.log"; }
    grep -E "sanitize_driver|SUMMARY" "$OUT/$tool.log"
done
if [ "${SKIP_INTEROP:-0}" != 1 ]; then
    timeout 150 python3 tools/bench_interop.py --out "$OUT/bench_interop.json" > "$OUT/bench_interop.txt" 2>&1 || status=1
    tail -12 "$OUT/bench_interop.txt"
fi
mkdir -p "$OUT/bench"
if [ "${RUN_TARGETS:-0}" = 1 ]; then  # issue 5's target table, every peer, one run
    timeout "${TARGETS_TIMEOUT:-240}" python3 -m cuatomic bench --targets --out "$OUT/bench" \
        > "$OUT/bench/targets.txt" 2>&1 || status=1
    tail -3 "$OUT/bench/targets.txt"
fi
if [ "${RUN_SCALING:-0}" = 1 ]; then  # the full suite: every op x method x size x entropy, scaling plots
    timeout "${SCALING_TIMEOUT:-200}" python3 -m cuatomic bench ${BENCH_ARGS:-} --out "$OUT/bench" \
        > "$OUT/bench/scaling.txt" 2>&1 || status=1
    tail -3 "$OUT/bench/scaling.txt"
fi
if [ "${RUN_NCU:-0}" = 1 ]; then  # kernel-only times (Nsight Compute), cuatomic's rungs beside CUB's kernels
    timeout "${NCU_TIMEOUT:-150}" ncu --metrics gpu__time_duration.sum \
        -k regex:"hist_|filter_lookback|reduce_kernel|Histogram|Select|Compact|Reduce" \
        python3 tools/profile_kernels.py ${NCU_CASES:-hist_small} > "$OUT/bench/ncu_times.txt" 2>&1 || status=1
    grep -E "^  [a-zA-Z].*\(|gpu__time_duration" "$OUT/bench/ncu_times.txt" | cut -c1-110
fi
tar -C "$OUT" -czf "$OUT/bench.tgz" bench && rm -rf "$OUT/bench"
echo "device_check exit status $status"
exit $status
