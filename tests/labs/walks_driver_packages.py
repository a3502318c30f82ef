"""Walks of the driver-package labs (drv-203, drv-302): the node's package database, kernels and DKMS builds.

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`.
"""

from __future__ import annotations

from tests.labs.walks import Walk

NEW_KERNEL = "5.15.0-94-generic"
HEADERS = f"apt-get install -y linux-headers-{NEW_KERNEL}"
# The 525 branch's leftovers: seven rc rows and two packages still installed.
OLD_BRANCH = (
    "nvidia-driver-525-server nvidia-dkms-525-server nvidia-kernel-common-525-server nvidia-kernel-source-525-server "
    "nvidia-firmware-525-server-525.147.05 nvidia-utils-525-server nvidia-compute-utils-525-server "
    "libnvidia-compute-525-server libnvidia-cfg1-525-server"
)
PURGE_OLD = f"apt-get purge -y {OLD_BRANCH}"
# The driver brought back by hand, no reboot: its other modules, then the daemons that failed at boot.
BY_HAND: Walk = [
    "modprobe nvidia",
    "modprobe nvidia_drm",
    "modprobe nvidia_uvm",
    "modprobe nvidia_peermem",
    "systemctl restart nvidia-persistenced nvidia-fabricmanager nvidia-dcgm",
]

# drv-203: the L40S node moves from branch 550 to 570.
INSTALL_570 = "apt-get install -y nvidia-driver-570-server"
BRANCH_550 = (
    "nvidia-driver-550-server nvidia-dkms-550-server nvidia-kernel-common-550-server nvidia-kernel-source-550-server "
    "nvidia-firmware-550-server-550.54.15 nvidia-utils-550-server nvidia-compute-utils-550-server "
    "libnvidia-compute-550-server libnvidia-cfg1-550-server"
)

WALKS: dict[str, dict[str, list[Walk]]] = {
    "drv-203": {
        "alternatives": [
            # everything NVIDIA purged first, then the new branch installed whole
            ["apt purge -y '*nvidia*'", INSTALL_570, "reboot"],
            # the old branch's rc rows purged by glob after the install; a reboot through shutdown
            [INSTALL_570, "apt purge -y '*-550-server*'", "shutdown -r now"],
        ],
        "wrong": [
            # installed but never loaded: the 550 module still runs under the 570 library
            [INSTALL_570, f"apt-get purge -y {BRANCH_550}"],
            # the library alone: it replaces the 550 branch's packages, and no 570 module is built
            ["apt-get install -y libnvidia-compute-570-server", f"apt-get purge -y {BRANCH_550}", "reboot"],
            # the old metapackage removed first: its other packages stay, then go rc when 570 replaces them
            ["apt-get remove -y nvidia-driver-550-server", INSTALL_570, "reboot"],
            # a flavour the repositories do not carry: nothing changes
            ["apt-get install -y nvidia-driver-570-server-open", "reboot"],
        ],
    },
    "drv-302": {
        "alternatives": [
            # the headers through their metapackage; DKMS asked explicitly (already built: it says so); the old
            # branch by glob; the modules and daemons by hand
            [
                "apt install -y linux-headers-generic",
                f"dkms install nvidia/535.129.03 -k {NEW_KERNEL}",
                "apt purge -y '*-525-server*'",
                *BY_HAND,
            ],
            # the dkms package reinstalled once the headers are there; the rc rows purged with dpkg, the two
            # installed ones autoremoved
            [
                HEADERS,
                "apt-get install --reinstall -y nvidia-dkms-535-server",
                "dpkg -P nvidia-driver-525-server nvidia-dkms-525-server nvidia-kernel-common-525-server "
                "nvidia-utils-525-server nvidia-compute-utils-525-server libnvidia-compute-525-server "
                "libnvidia-cfg1-525-server",
                "apt autoremove --purge -y",
                "reboot",
            ],
            # dkms autoinstall after the headers (nothing left to build), then the purge and a reboot
            [HEADERS, "dkms autoinstall", PURGE_OLD, "systemctl reboot"],
        ],
        "wrong": [
            # another branch: without the headers DKMS builds it for no kernel either, and it is not 535
            ["apt-get install -y nvidia-driver-550-server", PURGE_OLD, "reboot"],
            # forcing modprobe: there is no module for this kernel to force
            ["modprobe -f nvidia", "systemctl restart nvidia-persistenced nvidia-fabricmanager nvidia-dcgm"],
            # the new kernel removed so that the old one boots: the driver works, on the kernel that had to go
            [f"apt-get purge -y linux-image-{NEW_KERNEL} linux-modules-{NEW_KERNEL}", PURGE_OLD, "reboot"],
            # everything NVIDIA purged: the leftovers are gone, and so is the driver
            ["apt purge -y '*nvidia*'", HEADERS, "reboot"],
            # autoremove takes the two installed leftovers; the rc rows keep their configuration files
            [HEADERS, "apt autoremove --purge -y", "reboot"],
            # DKMS asked to build before the headers are there: it refuses, nothing changes
            [f"dkms install nvidia/535.129.03 -k {NEW_KERNEL}", PURGE_OLD, "reboot"],
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    "drv-203": [
        # the new branch running, the old one's rows left rc: its configuration files are still there
        ([INSTALL_570, "reboot"], "driver.packages"),
    ],
    "drv-302": [
        # the module built and loaded, the old branch purged, the daemons that failed at boot left down
        ([HEADERS, PURGE_OLD, "modprobe nvidia"], "services.active"),
        # rebuilt and rebooted: all runs, and the old branch's rows are still in dpkg's database
        ([HEADERS, "reboot"], "driver.packages"),
    ],
}
