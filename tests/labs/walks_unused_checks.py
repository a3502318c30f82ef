"""Walks of the labs that put the catalogue's once-unused checks to work (issue #24): health-202 (clocks a
benchmark left held down: gpu.throttle, gpu.temperature), ib-204 (one rail's cable in another rail's leaf: the
ticket ib.cabling's finding asks for), and the node.os guard of drv-203 and drv-302.

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. Each lab is
walked with its first variant: health-202 locks GPUs 3 and 6 at 1200 MHz and lowers GPU 1's applications
clock to 1410 MHz; ib-204 puts mlx5_2's cable in ib-leaf-04.
"""

from __future__ import annotations

from tests.labs.walks import Walk, conf, row, ticket

# ib-204's reference row, in the candidate's words: mlx5_2 (rail 3) sits on rail 4's leaf.
STRAY = row("mlx5_2", "miscabled", "recable", "on ib-leaf-04 port 24; the plan gives ib-leaf-03 port 1, which is empty")
IB_RESTART: Walk = ["modprobe -r nvidia_peermem", "systemctl restart openibd"]

WALKS: dict[str, dict[str, list[Walk]]] = {
    "health-202": {
        "alternatives": [
            ["nvidia-smi -rgc", "nvidia-smi -rac"],  # every GPU back to the defaults, the three among them
            [
                "nvidia-smi -q -d PERFORMANCE",
                "nvidia-smi -q -d CLOCK",
                "nvidia-smi -i 3 -rgc",
                "nvidia-smi -i 6 -rgc",
                "nvidia-smi -i 1 -rac",
            ],
            ["reboot"],  # neither a clock lock nor applications clocks outlive a driver load
            # the applications clocks set back to the default pair by hand, the lock released
            ["nvidia-smi -rgc", "nvidia-smi -i 1 -ac 2619,1980"],
        ],
        "wrong": [
            ["nvidia-smi -rgc"],  # the locks gone, GPU 1's lowered applications clocks stay
            ["nvidia-smi -rac"],  # the applications clocks reset, the locks stay
            ["nvidia-smi -i 3 -rgc", "nvidia-smi -i 1 -rac"],  # one of the two locked GPUs
            ["nvidia-smi -i 3,6 -lgc 1755,1755", "nvidia-smi -rac"],  # a higher lock is still a lock below the max
            ["nvidia-smi -pl 700"],  # the power limit was never lowered
            ["nvidia-smi -pm 1"],
        ],
    },
    "ib-204": {
        "alternatives": [
            ["ibstat", "iblinkinfo --switches-only", "ibnetdiscover", ticket(STRAY)],
            [ticket(row("MLX5_2 port 1", "Miscabled", ["recable"], "leaf-04 port 24 holds it"))],
        ],
        "wrong": [
            # the rail whose leaf holds the stray cable: that HCA is where it belongs
            [ticket(row("mlx5_3", "miscabled", "recable", "a second node port on ib-leaf-04"))],
            [ticket(STRAY, row("mlx5_3", "miscabled", "recable"))],
            # the plan's port is empty, but the cable is not broken: reseating it where it is moves nothing
            [ticket(row("mlx5_2", "no-link", "reseat-cable", "ib-leaf-03 port 1 is down"))],
            [ticket(row("mlx5_2", "miscabled", "reseat-cable"))],
            # NCCL told to leave the stray rail out: the cable stays where it is
            [conf("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7")],
            ["reboot"],
        ],
    },
}

# The task done, the node left worse: (walk, the check whose message must say why).
LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the right ticket, and the IB stack restarted on the way: GPUDirect RDMA gone
    "ib-204": [([*IB_RESTART, ticket(STRAY)], "ib.peermem")],
    # the clocks back, and DCGM stopped "so nothing sets them again": the node leaves service so
    "health-202": [(["nvidia-smi -rgc", "nvidia-smi -rac", "systemctl stop nvidia-dcgm"], "services.active")],
}

__all__ = ["LEFT_BROKEN", "WALKS"]
