#!/usr/bin/env bash
# Set up everything gpulab and its tests need on a fresh Debian/Ubuntu machine:
# a virtual environment with the project and its dev tools, and (as root) the system
# packages the test bed uses. Safe to run again; does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

lists_fresh=0
apt_install() {  # as root on Debian/Ubuntu: install packages, refreshing the package lists once first
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
  if [ "$lists_fresh" = 0 ]; then
    apt-get update -qq || return 1
    lists_fresh=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The SSH test bed runs real OpenSSH servers on loopback.
if [ ! -x /usr/sbin/sshd ]; then
  apt_install openssh-server || echo "setup: /usr/sbin/sshd is missing; install openssh-server (the SSH tests need it)" >&2
fi
# A real Slurm (slurmctld, slurmd, scontrol/sinfo/srun, munge) runs `gpulab slurm health|prolog|epilog` in
# tests/slurm/test_real_slurm.py and the slurm labs inside the simulated node (assessor/sim/slurm_node), each with its
# own daemons, key, socket, ports and slurm.conf.
# Nothing here starts a daemon or writes /etc/slurm/slurm.conf (Debian's slurmd and slurmctld units need it to start);
# on a host run by systemd, the munge package starts its own munged, which the tests do not use.
if [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/bin/scontrol ] || [ ! -x /usr/sbin/munged ]; then
  apt_install --no-install-recommends slurmctld slurmd slurm-client munge \
    || echo "setup: install slurmctld slurmd slurm-client munge (the real-Slurm test needs them)" >&2
fi
# Headless Chromium photographs the HTML reports (scripts/screenshot-reports.sh and one test).
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  apt_install chromium || echo "setup: chromium is missing: install it to photograph the HTML reports" >&2
fi
# Vagrant validates the practice cluster's Vagrantfile (one test; `vagrant up` itself needs a provider).
if ! command -v vagrant >/dev/null; then
  apt_install --no-install-recommends vagrant \
    || echo "setup: vagrant is missing: install Debian's vagrant package (the Vagrantfile test needs it)" >&2
fi
# A simulated node (gpulab sim shell) runs in namespaces made by util-linux (unshare, nsenter); inside it,
# the host's /usr gives the ordinary tools a candidate types (ps, pgrep, fuser, lsof) and the python3 its
# tool client runs on.
missing=()
for tool in unshare:util-linux nsenter:util-linux ps:procps fuser:psmisc lsof:lsof; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
[ -x /usr/bin/python3 ] || [ -x /usr/local/bin/python3 ] || missing+=(python3)
# gpulab's libnvidia-ml.so.1 is built from C on first use, and its tests compile a C program against nvml.h.
command -v cc >/dev/null || missing+=(gcc libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}" || echo "setup: install ${missing[*]} (gpulab sim shell needs them)" >&2
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

# Third-party NVML programs the library is tested with, each in a virtual environment of its own where gpulab
# is NOT installed, so that only the library can answer them: nvidia-ml-py 12 and 13 with gpustat, nvitop,
# py3nvml and pynvml_utils (tests/sim/test_nvml_library.py).
tool_venv() {
  local dir=$1
  shift
  [ -f "$dir/.complete" ] && return 0
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@" && touch "$dir/.complete"
}
tool_venv .tools/nvml12 nvidia-ml-py==12.535.161 pynvml==12.0.0 gpustat==1.1.1 nvitop==1.7.2 py3nvml==0.2.7
tool_venv .tools/nvml13 nvidia-ml-py==13.615.71 pynvml==13.0.1 gpustat==1.1.1 nvitop==1.7.2 py3nvml==0.2.7
