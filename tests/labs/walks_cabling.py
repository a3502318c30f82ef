"""Walks of the fabric-reading labs: ib-202 (two rails' cables crossed at the leaves) and ib-203 (one link
trained below the fabric's 4xNDR), both found with the fabric tools and fixed by a ticket.

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. The labs
built for nobody cross mlx5_1 (rail 2) and mlx5_2 (rail 3), and slow mlx5_5 a speed grade down.
"""

from __future__ import annotations

from tests.labs.walks import Walk, conf, row, ticket

# The two rows of the reference ticket, in the candidate's own words.
CROSSED = ticket(
    row("mlx5_1", "miscabled", "recable", "on ib-leaf-03 port 1, the plan gives ib-leaf-02 port 1"),
    row("mlx5_2", "miscabled", "recable", "on ib-leaf-02 port 1, the plan gives ib-leaf-03 port 1"),
)
SWAPPED_ORDER = "mlx5_0,mlx5_2,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"  # rails 2 and 3 traded in NCCL's list
IB_RESTART: Walk = ["modprobe -r nvidia_peermem", "systemctl restart openibd"]

WALKS: dict[str, dict[str, list[Walk]]] = {
    "ib-202": {
        "alternatives": [
            # read first (the tools only read), then the ticket, its rows in other words
            [
                "nvidia-smi topo -m",
                "iblinkinfo --switches-only",
                "ibnetdiscover",
                ticket(
                    row("MLX5_2 port 1", "Miscabled", "recable", "leaf-02 port 1 holds it"),
                    row("mlx5_1", "miscabled", ["recable"], "leaf-03 port 1 holds it"),
                ),
            ],
            [CROSSED],
        ],
        "wrong": [
            # NCCL told to use the rails in another order: every cable stays where it is
            [conf(f"NCCL_IB_HCA={SWAPPED_ORDER}")],
            # one end of the swap only
            [ticket(row("mlx5_1", "miscabled", "recable", "in rail 3's leaf"))],
            # a reseat does not move a cable, and the ports are not down
            [ticket(row("mlx5_1", "miscabled", "reseat-cable"), row("mlx5_2", "miscabled", "reseat-cable"))],
            [ticket(row("mlx5_1", "no-link", "reseat-cable"), row("mlx5_2", "no-link", "reseat-cable"))],
            # the right pair and a healthy HCA sent along
            [ticket(*CROSSED.rows, row("mlx5_3", "miscabled", "recable"))],
            ["reboot"],
        ],
    },
    "ib-203": {
        "alternatives": [
            ["ibnetdiscover", "iblinkinfo --cas-only", ticket(row("mlx5_5", "degraded-rate", "reseat-cable", "4xHDR"))],
            [ticket(row("MLX5_5 port 1", "Degraded rate", ["reseat cable", "replace transceiver"], "ib-leaf-06 p1"))],
        ],
        "wrong": [
            ["reboot"],
            # a healthy rail, the right one with a replacement before the reseat, the right one as miscabled
            [ticket(row("mlx5_4", "degraded-rate", "reseat-cable"))],
            [ticket(row("mlx5_5", "degraded-rate", "replace-cable"))],
            [ticket(row("mlx5_5", "miscabled", "recable"))],
            # NCCL told to leave the slow rail out: the link stays slow
            [conf("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_6,mlx5_7")],
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the right ticket, and the IB stack restarted on the way: GPUDirect RDMA gone
    "ib-202": [([*IB_RESTART, CROSSED], "ib.peermem")],
    "ib-203": [([*IB_RESTART, ticket(row("mlx5_5", "degraded-rate", "reseat-cable"))], "ib.peermem")],
}

__all__ = ["LEFT_BROKEN", "WALKS"]
