#!/usr/bin/env bash
# Render every HTML report (candidate, cohort, fleet) and photograph it in headless Chromium:
# build/screenshots/<kind>.{html,png} (or the directory given with --out). Needs `chromium`
# (scripts/setup.sh installs it when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=${PYTHON:-python3}
exec "$PY" scripts/screenshot_reports.py "$@"
