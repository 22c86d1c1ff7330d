#!/usr/bin/env bash
# GPU check, for the device machine: build there, run the whole suite with
# the cuda backend as default, and run compute-sanitizer (memcheck,
# racecheck) over a driver that calls every CUDA method. Logs go to $OUT.
#   bash tools/gpu_check.sh            (OUT defaults to ./gpu_check_out)
# PYTEST_ARGS adds pytest options (e.g. "-n 8" with pytest-xdist; then set
# OMP_NUM_THREADS so the workers' OpenMP teams do not oversubscribe the CPUs).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
status=0
step() { echo "== $*"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/device.txt"

step "build (CUATOMIC_CUDA=1)"
export CUATOMIC_CUDA=1
python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
grep "cuatomic setup: building" "$OUT/build.log"
python3 -c "import cuatomic, json; print(json.dumps(cuatomic.backend_info(), indent=1))" | tee "$OUT/backend_info.json"

step "pytest, cuda backend default"
CUATOMIC_BACKEND=cuda python3 -m pytest -q -p no:cacheprovider --durations=20 ${PYTEST_ARGS:-} tests 2>&1 | tee "$OUT/pytest.log" | tail -45
[ "${PIPESTATUS[0]}" = 0 ] || status=1

for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool"
    compute-sanitizer --tool "$tool" --error-exitcode 3 python3 tools/sanitize_driver.py >"$OUT/$tool.log" 2>&1
    rc=$?
    grep -E "sanitize_driver|SUMMARY" "$OUT/$tool.log"
    [ "$rc" = 0 ] || { status=1; tail -40 "$OUT/$tool.log"; }
done
step "gpu_check exit status $status"
exit $status
