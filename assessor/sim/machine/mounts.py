"""The script that builds a node's root inside its new namespaces, then becomes its PID 1 (pure).

It runs as root of the node's user namespace (the caller's own user outside), so every mount below is
the namespace's own and none reaches the host:

- ``/usr``: an overlay of the host's ``/usr`` under the simulated tools (``/usr/bin/nvidia-smi``, ...),
  with the node's changes kept in ``STATE.d/usr``; ``/etc`` the same over the host's ``/etc``, the node's
  own files (``nccl.conf``, ``modprobe.d``, ``hostname``) on top.
- ``/root``, ``/home``, ``/var``, ``/opt``, ``/srv``, ``/boot``: the node's own directories.
- ``/dev``: a fresh tmpfs with the standard devices and the node's ``/dev/nvidia*`` and
  ``/dev/infiniband/*``; ``/tmp``, ``/run`` and ``/sys`` fresh tmpfs; ``/proc`` of the node's PID namespace,
  its ``sys`` read-only, ``driver/nvidia`` and ``boot_id`` the node's.
- ``pivot_root`` into it and the host's tree is unmounted: nothing of the host stays reachable.
"""

from __future__ import annotations

import shlex

from assessor.sim.machine.layout import GPULAB_DIR, OWN_DIRS, SOCKET_DIR, NodePaths

_STANDARD_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def boot_script(paths: NodePaths, host: str, devices: list[str], python: str, *, address: str | None = None) -> str:
    """The ``sh`` script run under ``unshare``; it ends by exec-ing the node's PID 1 (``pid1.py``).

    ``address``: the node's network gets its loopback device up with this address beside ``127.0.0.1`` (a
    node that runs daemons talking over TCP, :mod:`assessor.sim.slurm_node`); None leaves it down, as before.
    """
    q = shlex.quote
    nr = q(str(paths.newroot))
    root = paths.root
    lines = [
        "set -eu",
        "umask 022",
        "export PATH=/usr/sbin:/usr/bin:/sbin:/bin",  # pivot_root and mount live in sbin
        f"NR={nr}",
        'mount -t tmpfs -o mode=755 gpulab-node "$NR"',
        'cd "$NR"',
        "mkdir -p usr etc proc dev sys tmp run mnt media .old " + " ".join(OWN_DIRS),
        f"mount -t overlay overlay -o userxattr,lowerdir={q(str(paths.layer))}:/usr,"
        f"upperdir={q(str(root / 'usr'))},workdir={q(str(paths.work / 'usr'))} usr",
        f"mount -t overlay overlay -o userxattr,lowerdir=/etc,upperdir={q(str(root / 'etc'))},"
        f"workdir={q(str(paths.work / 'etc'))} etc",
    ]
    for name in _TOP_LINKS:
        lines.append(
            f'if [ -L /{name} ]; then ln -s "$(readlink /{name})" {name}; '
            f"elif [ -d /{name} ]; then mkdir {name} && mount --rbind /{name} {name} && "
            f"mount -o remount,bind,ro {name}; fi"
        )
    for own in OWN_DIRS:
        lines.append(f"mount --bind {q(str(root / own))} {own}")
    lines += [
        "mount -t tmpfs -o mode=1777 tmp tmp",
        "mount -t tmpfs -o mode=755 run run",
        f"mkdir -p run{SOCKET_DIR[len('/run') :]} run/lock",
        f"mount --bind {q(str(paths.sockets))} run{SOCKET_DIR[len('/run') :]}",
        f"mount --bind {q(str(paths.sockets / 'jobs'))} usr{GPULAB_DIR[len('/usr') :]}/jobs",
        "mount -t tmpfs -o mode=755 sys sys",
        "mount -t tmpfs -o mode=755 dev dev",
        "mkdir -p dev/pts dev/shm dev/infiniband",
    ]
    for name in _STANDARD_DEVICES:
        lines.append(f"touch dev/{name} && mount --bind /dev/{name} dev/{name}")
    lines += [
        "ln -s /proc/self/fd dev/fd && ln -s /proc/self/fd/0 dev/stdin",
        "ln -s /proc/self/fd/1 dev/stdout && ln -s /proc/self/fd/2 dev/stderr",
        "mount -t tmpfs -o mode=1777 shm dev/shm",
    ]
    for device in devices:
        rel = device.lstrip("/")
        lines.append(f"mkdir -p {q(rel.rsplit('/', 1)[0])} && : > {q(rel)} && chmod 666 {q(rel)}")
    published = paths.published
    lines += [
        "pivot_root . .old",
        "cd /",
        "mount -t proc proc /proc",
        # The node's driver files and boot id, bound from the agent's published copies (still under /.old).
        f"if [ -d /proc/driver ]; then mount --bind /.old{q(str(published / 'driver'))} /proc/driver; fi",
        "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys",
        f"mount --bind /.old{q(str(published / 'boot_id'))} /proc/sys/kernel/random/boot_id",
        f"mount --bind /.old{q(str(published / 'cmdline'))} /proc/cmdline",  # the node's, not this machine's
        # ns_last_pid stays writable (it is the node's own PID namespace's): PID 1 starts processes under
        # the PIDs the node's state gives them.
        "mount --bind /proc/sys/kernel/ns_last_pid /proc/sys/kernel/ns_last_pid",
        "mount -o remount,bind,rw /proc/sys/kernel/ns_last_pid",
        "for p in sysrq-trigger kcore keys timer_list sched_debug; do "
        "if [ -e /proc/$p ]; then mount --bind /dev/null /proc/$p; fi; done",
        "umount -l /.old && rmdir /.old",
        f"hostname {q(host)}",
        *(
            [f"ip link set lo up && ip addr add {q(address)}/32 dev lo || echo 'gpulab: no network on the node' >&2"]
            if address
            else []
        ),
        "cd /root",
        f"exec {q(python)} -S -I {GPULAB_DIR}/pid1.py",
    ]
    return "\n".join(lines) + "\n"


# unshare(1) options: a user namespace whose root is the caller, and the rest of the node's namespaces.
UNSHARE_ARGS = (
    "unshare",
    "--user",
    "--map-root-user",
    "--mount",
    "--pid",
    "--fork",
    "--uts",
    "--ipc",
    "--net",
    "--propagation",
    "private",
    "--kill-child",
)
