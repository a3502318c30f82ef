#!/bin/sh
# gpulab: a process of the simulated node (a GPU daemon or a job). It holds the device files its
# node process has open, and does nothing else: systemctl and kill end it, as on a real node.
if [ -z "${GPULAB_STANDIN:-}" ]; then
  # typed by hand: the fabric manager's binary answers -v through the node's agent, as a simulated tool
  if [ "${0##*/}" = nv-fabricmanager ] && [ -x /usr/lib/gpulab/by-hand ]; then
    exec /usr/lib/gpulab/by-hand "$0" "$@"
  fi
  echo "${0##*/}: on this simulated node, start the daemon through its unit (systemctl start ...)" >&2
  exit 1
fi
unset GPULAB_STANDIN
read -r _ <&9
