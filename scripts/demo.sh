#!/usr/bin/env bash
# Set up, then assess a simulated 8x H100 node against the hgx-h100 readiness profile,
# running NCCL and DCGM diagnostics on it, print the report, and write the fleet readiness
# report (HTML, one self-contained file) whose path it prints last.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=${GPULAB_DEMO_OUT:-build/demo}
mkdir -p "$out"
status=0
.venv/bin/gpulab assess --target mock:hgx-h100 --profile hgx-h100 --with nccl,dcgm \
  --json "$out/results.json" --junit "$out/results.xml" --markdown "$out/summary.md" || status=$?
.venv/bin/gpulab report fleet "$out/results.json" -o "$out/fleet.html"
exit "$status"
