#!/usr/bin/env bash
# Set up everything gpulab and its tests need on a fresh Debian/Ubuntu machine:
# a virtual environment with the project and its dev tools, and (as root) the system
# packages the test bed uses. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
# The SSH test bed runs real OpenSSH servers on loopback.
if [ ! -x /usr/sbin/sshd ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null
  else
    echo "setup: /usr/sbin/sshd is missing; install openssh-server (the SSH tests need it)" >&2
  fi
fi
# Headless Chromium photographs the HTML reports (scripts/screenshot-reports.sh and one test, which
# skips without it). Optional: nothing else needs it.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
      || echo "setup: could not install chromium; report screenshots will be skipped" >&2
  else
    echo "setup: chromium is missing (optional): install it to photograph the HTML reports" >&2
  fi
fi
# Vagrant validates the practice cluster's Vagrantfile (one test; `vagrant up` itself needs a provider).
if ! command -v vagrant >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends vagrant >/dev/null \
      || echo "setup: could not install vagrant; the Vagrantfile test will fail" >&2
  else
    echo "setup: vagrant is missing: install Debian's vagrant package (the Vagrantfile test needs it)" >&2
  fi
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
