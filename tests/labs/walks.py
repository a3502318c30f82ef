"""The walks of every simulator lab: valid alternatives to the reference solution, and wrong but plausible fixes.

A step is a command line run with the simulated tools (as the candidate types it), a dict of node
configuration files to write (node path -> text: the candidate editing ``/etc/nccl.conf``), or, in a lab
whose remedy is physical (a cable, a GPU in its slot), the :class:`Ticket` the candidate hands in for the
data centre. Alternatives must pass; wrong fixes must not (a step the node refuses is what the candidate
would see, and the walk goes on).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ticket:
    """The candidate's ticket for the data centre: rows of component, finding, action (or an escalation list of
    actions) and why."""

    rows: tuple[dict[str, object], ...]

    def as_answer(self) -> dict[str, object]:
        return {"diagnosis": {"findings": [dict(r) for r in self.rows]}}


def row(component: str, finding: str, action: str | list[str], why: str = "as the tools showed") -> dict[str, object]:
    """One ticket row: a single first ``action``, or a list (an escalation: the first action, then what follows)."""
    key = "actions" if isinstance(action, list) else "action"
    return {"component": component, "finding": finding, key: action, "why": why}


def ticket(*rows: dict[str, object]) -> Ticket:
    return Ticket(tuple(rows))


Step = str | dict[str, str] | Ticket
Walk = list[Step]

# What holds the GPUs on a strict node, and the drain an admin types before a reset or an A100 MIG change.
H100_DRAIN: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm", "modprobe -r nvidia_drm"]
H100_RESTORE: Walk = ["modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm"]
# The same on a DGX A100: the fabric manager holds no GPU and stays running, for on an NVSwitch A100 it is what
# lets one GPU reset on its own (nvidia-smi(1), -r).
A100_DRAIN: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm", "modprobe -r nvidia_drm"]
A100_RESTORE: Walk = ["modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm"]
# The fabric manager stopped as well (the old habit): then only a reset of every NVLink peer at once goes through,
# and the fabric manager must be started again.
A100_DRAIN_FM: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager", "modprobe -r nvidia_drm"]
A100_RESTORE_FM: Walk = ["modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm nvidia-fabricmanager"]
# After a reboot the daemons that hold the GPUs start again on their own; nothing to restore.

# drv-301: the fabric manager's test config (a drop-in starts it with this copy), its topology path put right.
FM_TEST_CFG = "/etc/nvidia-fabricmanager/fabricmanager.cfg"
FM_FIXED_CFG = (
    "LOG_LEVEL=4\nLOG_FILE_NAME=/var/log/fabricmanager.log\nDAEMONIZE=1\n"
    "TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch\n"
)

NCCL_CONF = "/etc/nccl.conf"
CONF_HEAD = "# /etc/nccl.conf\n"
A100_RAILS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9"
H100_RAILS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"  # an HGX node's eight compute rails
ROOT_NCCL_CONF = "/root/.nccl.conf"  # nccl-403: root's own NCCL settings, read before /etc/nccl.conf


def conf(*lines: str) -> dict[str, str]:
    """A step that writes /etc/nccl.conf with these NAME=VALUE lines."""
    return {NCCL_CONF: CONF_HEAD + "".join(line + "\n" for line in lines)}


# health-302: the GB200 rack's IMEX node list, its 18 trays at their new management addresses.
IMEX_NODES = "/etc/nvidia-imex/nodes_config.cfg"
IMEX_NEW_LIST = "".join(f"10.114.2.{11 + i}\n" for i in range(18))

WALKS: dict[str, dict[str, list[Walk]]] = {
    "drv-101": {
        "alternatives": [["systemctl start nvidia-persistenced"]],
        "wrong": [["nvidia-smi -i 0 -pm 1"], ["nvidia-smi -L", "nvidia-smi -q"]],
    },
    "drv-201": {
        "alternatives": [
            [
                "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
                "modprobe -r nvidia_drm",  # and nvidia_modeset, nvidia: what used them is gone
                "modprobe -r nvidia_peermem",
                "modprobe -r nvidia_uvm",
                "modprobe nvidia",  # the installed 535.161.03 module loads
                # and what the unloading took with it: the display stack, GPUDirect RDMA, unified memory
                "modprobe nvidia_drm nvidia_peermem nvidia_uvm",
                "systemctl start nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
            ]
        ],
        "wrong": [["systemctl restart nvidia-persistenced"], ["modprobe nvidia"]],
    },
    "drv-202": {
        "alternatives": [["systemctl enable --now nvidia-persistenced"]],
        "wrong": [["nvidia-smi -pm 1"]],
    },
    "drv-301": {
        # the cause put right (the test config's topology path, or the drop-in gone), then the daemon
        "alternatives": [
            [{FM_TEST_CFG: FM_FIXED_CFG}, "systemctl restart nvidia-fabricmanager"],
            [{FM_TEST_CFG: FM_FIXED_CFG}, "reboot"],
        ],
        "wrong": [["nvidia-smi -pm 1"], ["systemctl start nvidia-dcgm"]],
    },
    "health-101": {
        "alternatives": [["systemctl restart nvidia-dcgm"], ["reboot"]],
        "wrong": [["systemctl start nvidia-persistenced"]],
    },
    "health-201": {
        "alternatives": [["reboot"]],
        "wrong": [["nvidia-smi -r -i 5"], [*H100_DRAIN, "nvidia-smi -r -i 4", *H100_RESTORE]],
    },
    "health-301": {
        # without the fabric manager the remap needs every NVLink peer reset in the same command
        "alternatives": [["reboot"], [*A100_DRAIN_FM, "nvidia-smi -r", *A100_RESTORE_FM]],
        "wrong": [
            ["systemctl start nvidia-dcgm", "nvidia-smi -r -i 3"],
            ["systemctl start nvidia-dcgm"],
            [*A100_DRAIN_FM, "nvidia-smi -r -i 3", *A100_RESTORE_FM],  # refused: GPU 3 alone without the FM
        ],
    },
    "health-401": {
        "alternatives": [
            [
                "reboot",
                ticket(row("gpu6", "off-the-bus", ["power-cycle", "reseat-gpu", "rma-gpu"], "Xid 79; not in -L")),
            ],
            [
                *A100_DRAIN,
                "nvidia-smi -i 2 -r",
                *A100_RESTORE,
                ticket(row("GPU 6", "off the bus", "power cycle", "fell off the bus")),
            ],
        ],
        "wrong": [
            ["nvidia-smi -r -i 2", ticket(row("GPU 6", "off-the-bus", "power-cycle"))],  # no drain: refused
            [*A100_DRAIN, "nvidia-smi -r -i 2", *A100_RESTORE],  # no ticket for GPU 6
            [*A100_DRAIN, "nvidia-smi -r -i 2", *A100_RESTORE, ticket(row("GPU 2", "off-the-bus", "power-cycle"))],
            # the drain left undone: the daemons stay stopped
            [*A100_DRAIN, "nvidia-smi -r -i 2", ticket(row("GPU 6", "off-the-bus", "power-cycle"))],
            # the remap done; the ticket skips the power cycle the policy takes first
            ["reboot", ticket(row("GPU 6", "off-the-bus", "reseat-gpu"))],
            ["reboot", ticket(row("GPU 6", "off-the-bus", ["power-cycle", "rma-gpu", "reseat-gpu"]))],  # climbs back
        ],
    },
    "health-402": {
        "alternatives": [
            ["reboot"],
            [
                "systemctl stop nvidia-dcgm nvidia-persistenced",
                "rmmod nvidia_drm",
                "nvidia-smi -i 4 -r",
                "modprobe nvidia_drm",
                "systemctl start nvidia-dcgm nvidia-persistenced",
            ],
        ],
        "wrong": [["nvidia-smi -r -i 4"], [*H100_DRAIN, "nvidia-smi -r -i 3", *H100_RESTORE]],
    },
    "health-403": {
        "alternatives": [
            [ticket(row("gpu 2", "degraded-width", "reseat-gpu", "LnkSta x8, LnkCap x16 under load"))],
            [ticket(row("GPU 2", "degraded width", ["reseat-gpu", "rma-gpu"], "x8 under load; RMA if it stays"))],
        ],
        "wrong": [
            ["reboot"],
            ["systemctl restart nvidia-dcgm"],
            [ticket(row("GPU 2", "degraded-width", "power-cycle"))],
            [ticket(row("GPU 2", "degraded-width", "rma-gpu"))],  # an RMA before the reseat the policy takes first
            [ticket(row("GPU 3", "degraded-width", "reseat-gpu"))],
            [ticket(row("GPU 2", "degraded-width", "reseat-gpu"), row("GPU 3", "degraded-width", "reseat-gpu"))],
        ],
    },
    "ib-201": {
        "alternatives": [
            [ticket(row("mlx5_2 port 1", "no-link", "reseat-cable", "Down/Polling"))],
            [ticket(row("MLX5_2", "No link", ["reseat cable", "replace transceiver", "check switch port"], "Polling"))],
        ],
        "wrong": [
            ["reboot"],
            [ticket(row("mlx5_3", "no-link", "reseat-cable"))],
            [ticket(row("mlx5_2", "no-link", "rma-gpu"))],
            [ticket(row("mlx5_2", "no-link", "replace-cable"))],  # an escalation where the policy reseats first
            [ticket(row("mlx5_2", "no-link", ["reseat-cable", "check-switch-port", "replace-cable"]))],  # climbs back
            [ticket(row("mlx5_2", "no-subnet-manager", "restore-subnet-manager"))],
        ],
    },
    "ib-301": {
        "alternatives": [
            ["modprobe nvidia-peermem", ticket(row("mlx5_5", "degraded-rate", "reseat-cable", "200 Gb/s, 2X NDR"))],
            # the boot loads the module again (as the node is configured to); the optic stays the data centre's
            ["reboot", ticket(row("mlx5_5", "degraded-rate", ["reseat-cable", "replace-transceiver"], "200 on NDR"))],
        ],
        "wrong": [
            ["modprobe nv_peer_mem", ticket(row("mlx5_5", "degraded-rate", "replace-transceiver"))],
            ["reboot"],
            ["modprobe nvidia_peermem", ticket(row("mlx5_5", "no-link", "reseat-cable"))],
            # the module loaded (half the points); the ticket replaces the optic before the reseat the policy asks first
            ["modprobe nvidia_peermem", ticket(row("mlx5_5", "degraded-rate", "replace-transceiver"))],
        ],
    },
    "ib-401": {
        "alternatives": [
            [ticket(row("subnet manager", "no-subnet-manager", "restore-subnet-manager", "SM lid 0"))],
            [ticket(row("UFM", "no subnet manager", "restore subnet manager", "every port Initializing"))],
        ],
        "wrong": [
            ["reboot"],
            ["systemctl start opensm", "ibstat"],  # no subnet manager on this node to start
            [ticket(row("mlx5_0", "no-link", "replace-cable"))],
            [ticket(*[row(f"mlx5_{i}", "no-link", "reseat-cable") for i in range(10)])],
        ],
    },
    "ib-402": {
        "alternatives": [
            [
                ticket(
                    row("mlx5_6", "degraded-rate", ["reseat-cable", "replace-cable"], "Active at 200 on NDR"),
                    row("mlx5_2", "no-link", ["reseat-cable", "replace-transceiver", "check-switch-port"], "Polling"),
                )
            ]
        ],
        "wrong": [
            ["reboot"],
            # the two faults swapped: each port named for what the other shows (the policy's actions for each)
            [
                ticket(
                    row("mlx5_2", "degraded-rate", "reseat-cable"),
                    row("mlx5_6", "no-link", "reseat-cable"),
                )
            ],
            # the two faults swapped, with the old repairs swapped too
            [
                ticket(
                    row("mlx5_2", "degraded-rate", ["reseat-cable", "replace-transceiver"]),
                    row("mlx5_6", "no-link", "reseat-cable"),
                )
            ],
            # one of two: half the points
            [ticket(row("mlx5_2", "no-link", "reseat-cable"))],
            # both right, and a healthy port sent to the data centre
            [
                ticket(
                    row("mlx5_2", "no-link", "reseat-cable"),
                    row("mlx5_6", "degraded-rate", "reseat-cable"),
                    row("mlx5_0", "degraded-rate", "reseat-cable"),
                )
            ],
        ],
    },
    "mig-101": {
        "alternatives": [["nvidia-smi -mig 0"]],
        "wrong": [["nvidia-smi -i 0 -mig 0"]],
    },
    "mig-201": {
        "alternatives": [["nvidia-smi -i 0 -mig 1", "reboot"]],
        "wrong": [["nvidia-smi -i 0 -mig 1"], [*A100_DRAIN, "nvidia-smi -mig 1", *A100_RESTORE]],
    },
    "mig-202": {
        "alternatives": [["reboot"], [*A100_DRAIN_FM, "nvidia-smi -r", *A100_RESTORE_FM]],
        "wrong": [
            ["nvidia-smi -i 4 -r"],
            ["nvidia-smi -i 4 -mig 0"],
            [*A100_DRAIN_FM, "nvidia-smi -i 4 -r", *A100_RESTORE_FM],  # refused: GPU 4 alone without the FM
        ],
    },
    "mig-301": {
        "alternatives": [
            [
                "nvidia-smi -i 0 -mig 1",
                "nvidia-smi mig -i 0 -cgi 3g.40gb,2g.20gb,1g.10gb,1g.10gb",
                "nvidia-smi mig -i 0 -cci",
            ]
        ],
        "wrong": [
            ["nvidia-smi -i 0 -mig 1", "nvidia-smi mig -i 0 -cgi 9,14,19,19"],  # no compute instances
            ["nvidia-smi -mig 1", "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C"],  # every GPU partitioned
        ],
    },
    "mig-302": {
        "alternatives": [
            [
                *A100_DRAIN,
                "nvidia-smi -i 4,5,6,7 -mig 1",
                *A100_RESTORE,
                *[
                    f"nvidia-smi mig -i {i} -cgi 1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb -C"
                    for i in (4, 5, 6, 7)
                ],
            ]
        ],
        "wrong": [
            [
                *A100_DRAIN,
                "nvidia-smi -i 4,5,6,7 -mig 1",
                *A100_RESTORE,
                *[f"nvidia-smi mig -i {i} -cgi 19,19,19,19,19,19,19" for i in (4, 5, 6, 7)],
            ]
        ],
    },
    "mig-401": {
        "alternatives": [
            [
                "nvidia-smi -i 2 -mig 0",
                "nvidia-smi mig -i 0 -cgi 3g.20gb,2g.10gb,1g.5gb,1g.5gb -C",
                "nvidia-smi mig -i 1 -cgi 3g.20gb,2g.10gb,1g.5gb,1g.5gb -C",
            ]
        ],
        "wrong": [
            ["nvidia-smi mig -i 0 -cgi 9,14,19,19 -C", "nvidia-smi mig -i 1 -cgi 9,14,19,19 -C"],
            ["nvidia-smi -i 2 -mig 0", "nvidia-smi mig -i 0 -cgi 9,14,19,19", "nvidia-smi mig -i 1 -cgi 9,14,19,19"],
        ],
    },
    "mig-402": {
        "alternatives": [
            [
                "nvidia-smi mig -i 0 -dci",
                "nvidia-smi mig -i 0 -dgi",
                "nvidia-smi mig -i 0 -cgi 3g.40gb,2g.20gb,1g.10gb,1g.10gb -C",
            ]
        ],
        "wrong": [
            ["nvidia-smi mig -i 0 -cgi 9,14 -C"],
            ["nvidia-smi mig -i 0 -dci", "nvidia-smi mig -i 0 -dgi", "nvidia-smi mig -i 0 -cgi 9,14,19,19"],
        ],
    },
    "nccl-301": {
        "alternatives": [[conf("NCCL_P2P_DISABLE=0")]],
        "wrong": [
            [conf("NCCL_P2P_DISABLE=1", "NCCL_P2P_LEVEL=NVL")],
            [conf("NCCL_P2P_DISABLE=1", "NCCL_NVLS_ENABLE=1")],
            # root's own file overrides the node's for root's runs only: every user's job still has P2P off
            [{ROOT_NCCL_CONF: "NCCL_P2P_DISABLE=0\n"}, "all_reduce_perf -b 1G -e 8G -f 2 -g 8"],
        ],
    },
    "nccl-302": {
        "alternatives": [[conf("NCCL_NVLS_ENABLE=1")]],
        "wrong": [
            [conf("NCCL_NVLS_ENABLE=0", "NCCL_ALGO=Ring")],
            [{ROOT_NCCL_CONF: "NCCL_NVLS_ENABLE=1\n"}],  # right for root's runs, not for the node's jobs
        ],
    },
    "nccl-401": {
        "alternatives": [[conf("NCCL_IB_HCA=^mlx5_4,mlx5_5")], [conf(f"NCCL_IB_HCA={A100_RAILS}")]],
        "wrong": [
            [conf("NCCL_IB_HCA=mlx5")],  # storage HCAs included
            [conf()],  # the line gone, and the site's rail list with it: the storage HCAs are used too
            [conf("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3")],  # 4 of 8 rails
        ],
    },
    "nccl-402": {
        "alternatives": [["modprobe nvidia_peermem", conf()], ["modprobe nvidia_peermem", conf("NCCL_IB_HCA=mlx5")]],
        "wrong": [["modprobe nvidia_peermem"], [conf()]],
    },
    "mig-303": {
        "alternatives": [
            [
                "nvidia-smi -i 0,1,2,3 -mig 1",
                *[f"nvidia-smi mig -i {i} -cgi 4g.90gb,1g.45gb,1g.23gb,1g.23gb -C" for i in (0, 1, 2, 3)],
            ],
            [  # the GPU instances first, then a compute instance in each
                "nvidia-smi -i 0,1,2,3 -mig 1",
                *[f"nvidia-smi mig -i {i} -cgi 5,15,19,19" for i in (0, 1, 2, 3)],
                *[f"nvidia-smi mig -i {i} -cci" for i in (0, 1, 2, 3)],
            ],
        ],
        "wrong": [
            # the 1g.45gb last: no placement left for it (Insufficient Resources); 4g.90gb + 2x 1g.23gb stay
            ["nvidia-smi -i 0,1,2,3 -mig 1", *[f"nvidia-smi mig -i {i} -cgi 5,19,19,15 -C" for i in (0, 1, 2, 3)]],
            ["nvidia-smi -i 0,1,2,3 -mig 1", *[f"nvidia-smi mig -i {i} -cgi 5,15,19,19" for i in (0, 1, 2, 3)]],
            ["nvidia-smi -mig 1", *[f"nvidia-smi mig -i {i} -cgi 5,15,19,19 -C" for i in (0, 1, 2, 3)]],  # all 8
        ],
    },
    "health-302": {
        # the node list names the rack's new addresses; the unit enabled again and started
        "alternatives": [
            [{IMEX_NODES: IMEX_NEW_LIST}, "systemctl enable nvidia-imex", "systemctl restart nvidia-imex"],
            [{IMEX_NODES: IMEX_NEW_LIST}, "systemctl enable nvidia-imex", "reboot"],
        ],
        "wrong": [
            ["systemctl enable --now nvidia-imex"],  # the cause untouched: it fails again
            ["systemctl enable nvidia-imex", "reboot"],  # and at boot
            [{IMEX_NODES: IMEX_NEW_LIST.replace("10.114.2.11\n", "")}, "systemctl enable --now nvidia-imex"],
        ],
    },
    # ---- verification labs (issue #24) ------------------------------------------------------------------
    "health-304": {
        "alternatives": [
            [ticket(row("GPU 5", "thermal-slowdown", "check-cooling", "targeted_power fails; HW Thermal Slowdown"))],
            [
                "dcgmi diag -r 3",
                "nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i 5",
                ticket(row("gpu5", "thermal slowdown", ["check cooling", "reseat gpu"], "91 C, slowdown 89 C")),
            ],
        ],
        "wrong": [
            ["reboot"],  # the heat does not go away with a reboot, and no ticket
            [ticket(row("GPU 5", "thermal-slowdown", "rma-gpu"))],  # an RMA before the cooling is checked
            [ticket(row("GPU 5", "thermal-slowdown", "reseat-gpu"))],  # an escalation where the policy starts
            [ticket(row("GPU 4", "thermal-slowdown", "check-cooling"))],  # a healthy neighbour
            [ticket(row("GPU 5", "degraded-width", "reseat-gpu"))],  # the wrong finding
            [
                ticket(
                    row("GPU 5", "thermal-slowdown", "check-cooling"),
                    row("GPU 4", "thermal-slowdown", "check-cooling"),  # and a healthy one sent along
                )
            ],
        ],
    },
    "health-305": {
        # the links come back with the baseboard: a reboot, typed either way, drained first or not
        "alternatives": [["shutdown -r now"], ["systemctl reboot"], [*H100_DRAIN, "reboot"]],
        "wrong": [
            ["systemctl restart nvidia-fabricmanager"],  # the fabric manager does not retrain a GPU's links
            [*H100_DRAIN, "nvidia-smi -r -i 3", *H100_RESTORE],  # the Xid stays in the log since boot
            ["nvidia-smi -r -i 3"],  # refused: the daemons hold the GPU
            ["systemctl restart nvidia-dcgm", "dcgmi diag -r 2"],
        ],
    },
    "health-404": {
        "alternatives": [
            ["kill -9 28417", *H100_DRAIN, "nvidia-smi -i 5 -r", *H100_RESTORE],
            ["reboot"],  # the job ends and the remap applies at the boot
            [
                "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                "kill 28417",
                "systemctl stop nvidia-dcgm nvidia-persistenced",
                "rmmod nvidia_drm",
                "nvidia-smi -r -i 5",
                "modprobe nvidia_drm",
                "systemctl start nvidia-dcgm nvidia-persistenced",
            ],
        ],
        "wrong": [
            [*H100_DRAIN, "nvidia-smi -r -i 5", *H100_RESTORE],  # refused: the hung job still holds the GPU
            ["kill 28417", "nvidia-smi -r -i 5"],  # refused: the daemons hold it
            ["kill 28417", *H100_DRAIN, "nvidia-smi -r -i 4", *H100_RESTORE],  # the wrong GPU reset
            ["kill 28417"],  # the job gone, the remap still pending
        ],
    },
    "health-405": {
        "alternatives": [
            [
                "systemctl restart nvidia-persistenced",
                ticket(
                    row("GPU 6", "degraded-width", "reseat-gpu", "x8 under load, x16 card"),
                    row("mlx5_2", "degraded-rate", "reseat-cable", "Rate 200 on NDR"),
                ),
            ],
            [
                "reboot",  # the daemon is enabled: the boot starts it; the link and the port stay as they are
                ticket(
                    row("mlx5_2 port 1", "degraded rate", ["reseat-cable", "replace-cable"], "half the rails' bw"),
                    row("gpu 6", "degraded width", ["reseat gpu", "rma gpu"], "LnkSta x8 (downgraded)"),
                ),
            ],
        ],
        "wrong": [
            # persistence on by hand, the daemon left down
            [
                "nvidia-smi -pm 1",
                ticket(row("GPU 6", "degraded-width", "reseat-gpu"), row("mlx5_2", "degraded-rate", "reseat-cable")),
            ],
            # one of two faults in the ticket
            ["systemctl start nvidia-persistenced", ticket(row("GPU 6", "degraded-width", "reseat-gpu"))],
            # the GPU returned before it is reseated
            [
                "systemctl start nvidia-persistenced",
                ticket(row("GPU 6", "degraded-width", "rma-gpu"), row("mlx5_2", "degraded-rate", "reseat-cable")),
            ],
            # both right, and a healthy GPU sent to the data centre
            [
                "systemctl start nvidia-persistenced",
                ticket(
                    row("GPU 6", "degraded-width", "reseat-gpu"),
                    row("mlx5_2", "degraded-rate", "reseat-cable"),
                    row("GPU 1", "degraded-width", "reseat-gpu"),
                ),
            ],
        ],
    },
    "nccl-303": {
        "alternatives": [
            [conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1")],
            [conf("NCCL_IB_HCA=mlx5", "NCCL_NVLS_ENABLE=1")],  # the prefix: every mlx5 device, all eight rails here
            [conf("NCCL_NVLS_ENABLE=1")],  # the line gone: NCCL takes every active HCA, all eight rails here
        ],
        "wrong": [
            [conf("NCCL_IB_HCA=ibp26s0,ibp44s0", "NCCL_NVLS_ENABLE=1")],  # interface names, not RDMA devices
            [conf("NCCL_IB_HCA=^mlx5", "NCCL_NVLS_ENABLE=1")],  # excludes every device
            [conf("NCCL_IB_HCA=mlx5_bond_0,mlx5_0", "NCCL_NVLS_ENABLE=1")],  # one rail of eight
        ],
    },
    "nccl-403": {
        "alternatives": [
            [{ROOT_NCCL_CONF: "# NCCL_IB_HCA=mlx5_bond_0\n# NCCL_IB_GID_INDEX=3\n"}],  # commented out
            [{ROOT_NCCL_CONF: "\n"}],  # emptied (`echo > ~/.nccl.conf`)
            [{ROOT_NCCL_CONF: f"NCCL_IB_HCA={H100_RAILS}\n"}],  # the user's file names the rails itself
        ],
        "wrong": [
            [conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1")],  # /etc/nccl.conf was right already
            [{ROOT_NCCL_CONF: "NCCL_IB_HCA=mlx5_bond_0\n"}],  # the GID index gone, the device list kept
            [{ROOT_NCCL_CONF: "NCCL_IB_HCA=mlx5_0\n"}],  # one rail of eight
        ],
    },
    "ib-302": {
        "alternatives": [
            [
                "ib_write_bw -d mlx5_3 --report_gbits -s 8388608 -n 5000 gpu-node-02",
                "ib_write_bw -d mlx5_2 --report_gbits -s 8388608 --use_cuda 2 --use_cuda_dmabuf gpu-node-02",
                ticket(row("mlx5_3", "degraded-rate", "reseat-cable", "196 Gb/s where the others give 389")),
            ],
            [ticket(row("MLX5_3 port 1", "degraded rate", ["reseat cable", "replace transceiver"], "Rate 200"))],
        ],
        "wrong": [
            ["reboot"],
            [ticket(row("mlx5_3", "degraded-rate", "replace-cable"))],  # a new cable before the reseat
            [ticket(row("mlx5_2", "degraded-rate", "reseat-cable"))],  # a healthy rail
            [ticket(row("mlx5_3", "no-link", "reseat-cable"))],  # the port is up: it trained slow
            [ticket(row("mlx5_3", "degraded-rate", "reseat-cable"), row("mlx5_0", "degraded-rate", "reseat-cable"))],
        ],
    },
    "ib-403": {
        "alternatives": [
            [
                conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1"),
                ticket(row("mlx5_1", "degraded-rate", "reseat-cable")),
            ],
            [
                conf("NCCL_IB_HCA=mlx5", "NCCL_NVLS_ENABLE=1"),
                ticket(row("mlx5_1", "degraded-rate", ["reseat-cable", "replace-transceiver"], "Rate 200")),
            ],
        ],
        "wrong": [
            [conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1")],  # the list right, no ticket for the slow rail
            [ticket(row("mlx5_1", "degraded-rate", "reseat-cable"))],  # the ticket, the rail still missing
            # the slow rail taken out of NCCL's list instead of repaired
            [
                conf("NCCL_IB_HCA=mlx5_0,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7", "NCCL_NVLS_ENABLE=1"),
                ticket(row("mlx5_1", "degraded-rate", "reseat-cable")),
            ],
            # the rail missing from the list blamed on the data centre
            [
                conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1"),
                ticket(row("mlx5_4", "no-link", "reseat-cable")),
            ],
        ],
    },
}


# Partly done tasks keep partial credit: (steps, the percent they earn).
PARTIAL: dict[str, tuple[Walk, float]] = {
    "drv-202": (["nvidia-smi -pm 1"], 50.0),  # persistence on, but not through the daemon
    "nccl-402": (["modprobe nvidia_peermem"], 50.0),  # GPUDirect RDMA back, NCCL still on sockets
    "ib-301": (["modprobe nvidia_peermem"], 50.0),  # the module loaded; no ticket for the slow port
    "ib-402": ([ticket(row("mlx5_2", "no-link", "reseat-cable"))], 50.0),  # one of two ports diagnosed
    "health-401": ([*A100_DRAIN, "nvidia-smi -r -i 2", *A100_RESTORE], 30.0),  # the remap, no ticket
    "mig-301": (["nvidia-smi -i 0 -mig 1"], 30.0),  # MIG on, no layout yet
    "health-301": (["systemctl start nvidia-dcgm"], 20.0),  # DCGM back; the remap still pending
    "mig-303": (["nvidia-smi -i 0,1,2,3 -mig 1"], 30.0),  # MIG on, no layout yet
    "health-405": (["systemctl start nvidia-persistenced", ticket(row("GPU 6", "degraded-width", "reseat-gpu"))], 65.0),
    "ib-403": ([conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1")], 50.0),  # the rails back, no ticket
}


def _merge_topic_walks() -> None:
    """Newer labs keep their walks in a module of their own, ``tests/labs/walks_<topic>.py`` (its ``WALKS`` and
    ``PARTIAL``, shaped as here; its ``LEFT_BROKEN`` is merged by :mod:`tests.labs.walks_left_broken`)."""
    import importlib
    from pathlib import Path

    for path in sorted(Path(__file__).parent.glob("walks_*.py")):
        if path.stem == "walks_left_broken":
            continue
        module = importlib.import_module(f"tests.labs.{path.stem}")
        for name, walks in getattr(module, "WALKS", {}).items():
            assert name not in WALKS, f"{path.name}: {name} has walks in tests/labs/walks.py already"
            WALKS[name] = walks
        PARTIAL.update(getattr(module, "PARTIAL", {}))


_merge_topic_walks()
