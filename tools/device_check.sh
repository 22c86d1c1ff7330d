#!/usr/bin/env bash
# The device check: one call on a machine with a GPU. By default: build with
# a plain pip install, the whole suite with the cuda backend as default
# (pytest-xdist), compute-sanitizer memcheck and racecheck over every CUDA
# rung (tools/sanitize_driver.py), and the accuracy/speed table
# (tools/bench_accuracy.py). Switches (environment):
#   PREBUILT=1          no build: use the extension already in the tree
#                       (built elsewhere for the device's Python, carried over)
#   PYTEST_ARGS=...     more pytest options (e.g. -rs, -k ...)
#   PYTEST_TIMEOUT=300  seconds for the suite
#   SKIP_SUITE=1        no pytest (a call that only times or sanitizes)
#   SKIP_SANITIZERS=1   no compute-sanitizer
#   SKIP_ACCURACY=1     no accuracy table
#   RUN_INTEROP=1       tools/bench_interop.py: transfers, call latency, memory growth beside CuPy
#   RUN_TARGETS=1       python -m cuatomic bench --targets (TARGETS_TIMEOUT=240)
#   RUN_TOOLKIT=1       python -m cuatomic bench --toolkit (TOOLKIT_TIMEOUT=240), toolkit_cuda.json back
#   RUN_BENCH=1         python -m cuatomic bench $BENCH_ARGS: every op x rung x size x entropy,
#                       scaling plots (BENCH_TIMEOUT=300)
#   RUN_AUTO=1          python -m cuatomic bench auto: the measurements method="auto" reads
#                       (AUTO_TIMEOUT=240)
#   RUN_FIGURES=1       python -m cuatomic.figures at full size (FIGURES_TIMEOUT=200)
#   RUN_MEMORY=1        tests/test_memory.py alone, its big cases too (CUATOMIC_MEMORY_TESTS=1: most
#                       of the GPU's memory, then CuPy, PyTorch and a second process after del)
#   RUN_GPUS=1          tests/test_gpus.py verbose (every call on each of two GPUs; skips on one)
#   RUN_GPUS_BENCH=1    tools/bench_gpus.py: one thread per GPU against one GPU, with CuPy's rows, a
#                       timeline and the dask threaded scheduler ($GPUS_BENCH_ARGS), gpus.json back
#   RUN_HUGE=1          tools/huge_inputs.py: calls on 2**31 + 3 and 2**32 + 3 elements vs CuPy
#   RUN_DASK=1          tools/bench_dask_gpu.py with one worker, then one per GPU ($DASK_ARGS)
#                       (RUN_GPUS and RUN_DASK install .devdata/wheels first when there: dask,
#                       distributed, dask-cuda)
#   RUN_NCU=1           Nsight Compute kernel times of tools/profile_kernels.py $NCU_CASES
#                       (default hist_small; NCU_TIMEOUT=150)
# What comes back is at most 7 files in $OUT (the device tool returns 8):
# pytest.log, accuracy_cuda.json, interop_cuda.json, rules_cuda.json, toolkit_cuda.json, gpus.json (each
# when its step ran), and results.tgz with everything else (build and
# sanitizer logs, each step's output, bench/ targets/ figures/ ncu/),
# packed again after every step so that a run cut short still returns it.
#   OUT=/some/dir bash tools/device_check.sh     (OUT defaults to ./device_out)
set -uo pipefail
OUT=${OUT:-$PWD/device_out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)  # outside $OUT: only the packed copy counts against the file limit
trap 'rm -rf "$WORK"' EXIT
pack() { tar -C "$WORK" -czf "$OUT/results.tgz" .; }
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$WORK/device.txt"
if [ "${PREBUILT:-0}" = 1 ]; then
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  # Nsight Compute's source view needs the kernels' line tables: a debug build.
  [ "${RUN_NCU:-0}" = 1 ] && export CUATOMIC_DEBUG=1
  ( time python3 -m pip install --no-build-isolation --no-deps -e . ) > "$WORK/build.log" 2>&1 \
    || { pack; tail -40 "$WORK/build.log"; exit 1; }
  grep -E "cuatomic setup: building|^real" "$WORK/build.log"
fi
python3 -c "import cuatomic, json; print(json.dumps(cuatomic.backend_info()))" > "$WORK/backend_info.json" \
  || { pack; exit 1; }
export CUATOMIC_BACKEND=cuda
pack

# The suite: 8 pytest workers, OpenMP 2 threads each (the cpu-backend tests
# would oversubscribe the cores otherwise).
if [ "${SKIP_SUITE:-0}" != 1 ]; then
  OMP_NUM_THREADS=2 timeout "${PYTEST_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider -n 8 \
    ${PYTEST_ARGS:-} tests > "$OUT/pytest.log" 2>&1 || status=1
  grep -E "passed|failed|FAILED|Error" "$OUT/pytest.log" | tail -30
fi

for tool in $([ "${SKIP_SANITIZERS:-0}" = 1 ] || echo memcheck racecheck); do
  timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 3 python3 tools/sanitize_driver.py \
    > "$WORK/$tool.log" 2>&1 || { status=1; tail -30 "$WORK/$tool.log"; }
  grep -E "sanitize_driver|SUMMARY" "$WORK/$tool.log"
  pack
done

if [ "${SKIP_ACCURACY:-0}" != 1 ]; then
  timeout 200 python3 tools/bench_accuracy.py --backend cuda --speed-n $((1<<28)) --out "$OUT/accuracy_cuda.json" \
    > "$WORK/accuracy_cuda.txt" 2>&1 || status=1
  tail -12 "$WORK/accuracy_cuda.txt"; pack
fi

if [ "${RUN_INTEROP:-0}" = 1 ]; then
  timeout "${INTEROP_TIMEOUT:-150}" python3 tools/bench_interop.py --out "$OUT/interop_cuda.json" \
    > "$WORK/interop_cuda.txt" 2>&1 || status=1
  tail -12 "$WORK/interop_cuda.txt"; pack
fi

if [ "${RUN_TARGETS:-0}" = 1 ]; then  # every top rung beside CUB, CuPy, PyTorch, the tutorial's Numba
  mkdir -p "$WORK/targets"
  timeout "${TARGETS_TIMEOUT:-240}" python3 -m cuatomic bench --targets --out "$WORK/targets" \
    > "$WORK/targets/targets.txt" 2>&1 || status=1
  tail -3 "$WORK/targets/targets.txt"; pack
fi

if [ "${RUN_TOOLKIT:-0}" = 1 ]; then  # exact sums, weighted histogram, bincount, reduce beside their peers
  mkdir -p "$WORK/toolkit"
  timeout "${TOOLKIT_TIMEOUT:-240}" python3 -m cuatomic bench --toolkit --out "$WORK/toolkit" \
    > "$WORK/toolkit/toolkit.txt" 2>&1 || status=1
  cp "$WORK/toolkit/toolkit.json" "$OUT/toolkit_cuda.json" 2>/dev/null
  tail -40 "$WORK/toolkit/toolkit.txt"; pack
fi

if [ "${RUN_BENCH:-0}" = 1 ]; then  # the whole suite (narrow it with BENCH_ARGS, e.g. --sizes 10 18 26)
  mkdir -p "$WORK/bench"
  timeout "${BENCH_TIMEOUT:-300}" python3 -m cuatomic bench ${BENCH_ARGS:-} --out "$WORK/bench" \
    > "$WORK/bench/bench.txt" 2>&1 || status=1
  tail -3 "$WORK/bench/bench.txt"; pack
fi

if [ "${RUN_AUTO:-0}" = 1 ]; then  # what method="auto" reads: commit as cuatomic/rules/cuda-<GPU name>.json
  timeout "${AUTO_TIMEOUT:-240}" python3 -m cuatomic bench auto --backend cuda --out "$OUT/rules_cuda.json" \
    > "$WORK/auto.txt" 2>&1 || status=1
  tail -5 "$WORK/auto.txt"; pack
fi

if [ "${RUN_FIGURES:-0}" = 1 ]; then
  timeout "${FIGURES_TIMEOUT:-200}" python3 -m cuatomic.figures --out "$WORK/figures" \
    > "$WORK/figures.txt" 2>&1 || status=1
  tail -6 "$WORK/figures.txt"; pack
fi

if [ "${RUN_MEMORY:-0}" = 1 ]; then
  CUATOMIC_MEMORY_TESTS=1 timeout "${MEMORY_TIMEOUT:-200}" python3 -m pytest -v -p no:cacheprovider \
    tests/test_memory.py -rs > "$WORK/memory.txt" 2>&1 || status=1
  grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" "$WORK/memory.txt" | tail -20; pack
fi

if [ "${RUN_GPUS:-0}" = 1 ] || [ "${RUN_DASK:-0}" = 1 ] || [ "${RUN_GPUS_BENCH:-0}" = 1 ]; then
  # dask, distributed, dask-cuda from wheels
  [ -d .devdata/wheels ] && python3 -m pip install -q --no-index --find-links .devdata/wheels dask-cuda \
    > "$WORK/dask_install.txt" 2>&1
fi

if [ "${RUN_GPUS:-0}" = 1 ]; then
  timeout "${GPUS_TIMEOUT:-200}" python3 -m pytest -v -p no:cacheprovider tests/test_gpus.py -rs \
    > "$WORK/gpus.txt" 2>&1 || status=1
  grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" "$WORK/gpus.txt" | tail -30; pack
fi

if [ "${RUN_GPUS_BENCH:-0}" = 1 ]; then
  dask_flag=$(python3 -c "import dask" 2>/dev/null && echo --dask)  # dask's rows when dask is there
  timeout "${GPUS_BENCH_TIMEOUT:-300}" python3 tools/bench_gpus.py ${GPUS_BENCH_ARGS:---peers --timeline $dask_flag} \
    --out "$OUT/gpus.json" > "$WORK/gpus_bench.txt" 2>&1 || status=1
  tail -20 "$WORK/gpus_bench.txt"; pack
fi

if [ "${RUN_HUGE:-0}" = 1 ]; then
  timeout "${HUGE_TIMEOUT:-300}" python3 tools/huge_inputs.py > "$WORK/huge.txt" 2>&1 || status=1
  tail -40 "$WORK/huge.txt"; pack
fi

if [ "${RUN_DASK:-0}" = 1 ]; then
  mkdir -p "$WORK/dask"
  gpus=$(nvidia-smi -L | wc -l)
  for workers in 1 $([ "$gpus" -gt 1 ] && echo "$gpus"); do
    timeout "${DASK_TIMEOUT:-240}" python3 tools/bench_dask_gpu.py --workers "$workers" ${DASK_ARGS:-} \
      --out "$WORK/dask/dask_${workers}worker.json" > "$WORK/dask/dask_${workers}worker.txt" 2>&1 || status=1
    grep -E "^histogram|^exact_sum|Error|error" "$WORK/dask/dask_${workers}worker.txt" | cut -c1-400; pack
  done
fi

if [ "${RUN_NCU:-0}" = 1 ]; then  # kernel-only times: cuatomic's rungs beside CUB's kernels
  mkdir -p "$WORK/ncu"
  timeout "${NCU_TIMEOUT:-150}" ncu --metrics gpu__time_duration.sum \
    -k regex:"hist_|filter_lookback|reduce_kernel|Histogram|Select|Compact|Reduce" \
    python3 tools/profile_kernels.py ${NCU_CASES:-hist_small} > "$WORK/ncu/ncu_times.txt" 2>&1 || status=1
  grep -E "^  [a-zA-Z].*\(|gpu__time_duration" "$WORK/ncu/ncu_times.txt" | cut -c1-110; pack
fi

echo "device_check exit status $status"
exit $status
