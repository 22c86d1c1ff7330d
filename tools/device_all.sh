#!/usr/bin/env bash
# Everything a device session needs, in one call (the device tool returns at
# most 8 files, so figures and benchmark results come back as tarballs):
#   1. tools/gpu_check.sh (build, suite on the cuda backend, compute-sanitizer)
#   2. tools/bench_interop.py (issue 4's transfer/latency figures beside CuPy)
#   3. python -m cuatomic.figures (issue 3's figures at full size)
#   4. python -m cuatomic bench (issue 5's suite; BENCH_ARGS, default --quick)
# Logs and results land in $OUT.
set -uo pipefail
OUT=${OUT:-$PWD/device_out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
status=0
OUT="$OUT/check" bash tools/gpu_check.sh > "$OUT/gpu_check.txt" 2>&1 || status=1
grep -E "passed|failed|SUMMARY|sanitize_driver|exit status" "$OUT/gpu_check.txt"
timeout "${BENCH_INTEROP_TIMEOUT:-200}" python3 tools/bench_interop.py --out "$OUT/bench_interop.json" \
    > "$OUT/bench_interop.txt" 2>&1 || status=1
tail -8 "$OUT/bench_interop.txt"
timeout "${FIGURES_TIMEOUT:-200}" python3 -m cuatomic.figures --out "$OUT/figures" > "$OUT/figures.txt" 2>&1 || status=1
tail -6 "$OUT/figures.txt"
timeout "${BENCH_TIMEOUT:-300}" python3 -m cuatomic bench ${BENCH_ARGS:---quick} --out "$OUT/bench" \
    > "$OUT/bench.txt" 2>&1 || status=1
tail -3 "$OUT/bench.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" check figures bench 2>/dev/null
rm -rf "$OUT/check" "$OUT/figures" "$OUT/bench"
echo "device_all exit status $status"
exit $status
