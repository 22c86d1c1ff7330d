#!/usr/bin/env bash
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
which nsys ncu; ls /usr/local/cuda/bin 2>/dev/null | grep -i nsys; ls /opt/nvidia 2>/dev/null
export PYTHONPATH=$PWD
.devdata/exp/overhead > $OUT/overhead.txt 2>&1; cat $OUT/overhead.txt
timeout 200 python3 .devdata/exp/prof.py > $OUT/prof.txt 2>&1; echo "prof rc $?"; head -30 $OUT/prof.txt
