"""The walks of every simulator lab: valid alternatives to the reference solution, and wrong but plausible fixes.

A step is a command line run with the simulated tools (as the candidate types it), or a dict of node
configuration files to write (node path -> text: the candidate editing ``/etc/nccl.conf``). Alternatives
must pass; wrong fixes must not (a step the node refuses is what the candidate would see, and the walk
goes on). Labs whose remedy is physical (a cable, a GPU) have no candidate alternative yet: ``None``.
"""

from __future__ import annotations

Step = str | dict[str, str]
Walk = list[Step]

# What holds the GPUs on a strict node, and the drain an admin types before a reset or an A100 MIG change.
H100_DRAIN: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm", "modprobe -r nvidia_drm"]
H100_RESTORE: Walk = ["modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm"]
A100_DRAIN: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager", "modprobe -r nvidia_drm"]
A100_RESTORE: Walk = ["modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm nvidia-fabricmanager"]
# After a reboot the daemons that hold the GPUs start again on their own; nothing to restore.

NCCL_CONF = "/etc/nccl.conf"
CONF_HEAD = "# /etc/nccl.conf\n"
A100_RAILS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9"


def conf(*lines: str) -> dict[str, str]:
    """A step that writes /etc/nccl.conf with these NAME=VALUE lines."""
    return {NCCL_CONF: CONF_HEAD + "".join(line + "\n" for line in lines)}


WALKS: dict[str, dict[str, list[Walk] | None]] = {
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
        "alternatives": [["systemctl restart nvidia-fabricmanager"]],
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
        "alternatives": [["reboot"]],
        "wrong": [["systemctl start nvidia-dcgm", "nvidia-smi -r -i 3"], ["systemctl start nvidia-dcgm"]],
    },
    "health-401": {
        "alternatives": None,  # GPU 6 fell off the bus: physical (reseat, RMA); a diagnosis lab is to come
        "wrong": [["nvidia-smi -r -i 2"], [*A100_DRAIN, "nvidia-smi -r -i 2", *A100_RESTORE]],
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
    "health-403": {"alternatives": None, "wrong": [["reboot"], [*["systemctl restart nvidia-dcgm"]]]},
    "ib-201": {"alternatives": None, "wrong": [["reboot"]]},
    "ib-301": {"alternatives": None, "wrong": [["modprobe nv_peer_mem"], ["reboot"]]},
    "ib-401": {"alternatives": None, "wrong": [["reboot"]]},
    "ib-402": {"alternatives": None, "wrong": [["reboot"]]},
    "mig-101": {
        "alternatives": [["nvidia-smi -mig 0"]],
        "wrong": [["nvidia-smi -i 0 -mig 0"]],
    },
    "mig-201": {
        "alternatives": [["nvidia-smi -i 0 -mig 1", "reboot"]],
        "wrong": [["nvidia-smi -i 0 -mig 1"], [*A100_DRAIN, "nvidia-smi -mig 1", *A100_RESTORE]],
    },
    "mig-202": {
        "alternatives": [["reboot"]],
        "wrong": [["nvidia-smi -i 4 -r"], ["nvidia-smi -i 4 -mig 0"]],
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
        ],
    },
    "nccl-302": {
        "alternatives": [[conf("NCCL_NVLS_ENABLE=1")]],
        "wrong": [[conf("NCCL_NVLS_ENABLE=0", "NCCL_ALGO=Ring")]],
    },
    "nccl-401": {
        "alternatives": [[conf("NCCL_IB_HCA=^mlx5_4,mlx5_5")], [conf()]],
        "wrong": [
            [conf("NCCL_IB_HCA=mlx5")],  # storage HCAs included
            [conf("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3")],  # 4 of 8 rails
        ],
    },
    "nccl-402": {
        "alternatives": [["modprobe nvidia_peermem", conf()], ["modprobe nvidia_peermem", conf("NCCL_IB_HCA=mlx5")]],
        "wrong": [["modprobe nvidia_peermem"], [conf()]],
    },
}


# Labs whose remedy is physical: the ticket the candidate raises (labs/<domain>/<id>/diagnosis.yaml is the
# reference), graded by design.diagnosis with these params. Wrong tickets that must not pass are beside them.
CABLE = ["reseat-cable", "replace-cable", "replace-transceiver", "check-switch-port"]
OPTIC = ["replace-cable", "replace-transceiver"]
DIAGNOSES: dict[str, dict[str, list[dict[str, object]]]] = {
    "ib-201": {"expected": [{"component": "mlx5_2", "finding": "no-link", "actions": CABLE}]},
    "ib-301": {"expected": [{"component": "mlx5_5", "finding": "degraded-rate", "actions": OPTIC}]},
    "ib-401": {
        "expected": [{"component": "the fabric", "finding": "no-subnet-manager", "actions": ["restore-subnet-manager"]}]
    },
    "ib-402": {
        "expected": [
            {"component": "mlx5_2", "finding": "no-link", "actions": CABLE},
            {"component": "mlx5_6", "finding": "degraded-rate", "actions": OPTIC},
        ]
    },
    "health-401": {
        "expected": [{"component": "GPU 6", "finding": "off-the-bus", "actions": ["power-cycle", "reseat-gpu"]}]
    },
    "health-403": {
        "expected": [{"component": "GPU 2", "finding": "degraded-width", "actions": ["reseat-gpu", "rma-gpu"]}]
    },
}


def row(component: str, finding: str, action: str) -> dict[str, str]:
    return {"component": component, "finding": finding, "action": action, "why": "as the tools showed"}


WRONG_DIAGNOSES: dict[str, list[list[dict[str, str]]]] = {
    "ib-201": [[row("mlx5_3", "no-link", "reseat-cable")], [row("mlx5_2", "no-link", "rma-gpu")]],
    "ib-301": [[row("mlx5_5", "no-link", "reseat-cable")]],
    "ib-401": [[row("mlx5_0", "no-link", "replace-cable")]],
    "ib-402": [
        # the two repairs swapped
        [row("mlx5_2", "degraded-rate", "replace-transceiver"), row("mlx5_6", "no-link", "reseat-cable")],
        # one of two
        [row("mlx5_2", "no-link", "reseat-cable")],
    ],
    "health-401": [[row("GPU 2", "off-the-bus", "power-cycle")]],
    "health-403": [[row("GPU 2", "degraded-width", "power-cycle")], [row("GPU 3", "degraded-width", "reseat-gpu")]],
}


# Partly done tasks keep partial credit: (steps, the percent they earn).
PARTIAL: dict[str, tuple[Walk, float]] = {
    "drv-202": (["nvidia-smi -pm 1"], 50.0),  # persistence on, but not through the daemon
    "nccl-402": (["modprobe nvidia_peermem"], 50.0),  # GPUDirect RDMA back, NCCL still on sockets
    "ib-301": (["modprobe nvidia_peermem"], 50.0),  # the module loaded; the slow port is the data centre's
    "mig-301": (["nvidia-smi -i 0 -mig 1"], 30.0),  # MIG on, no layout yet
    "health-301": (["systemctl start nvidia-dcgm"], 20.0),  # DCGM back; the remap still pending
}
