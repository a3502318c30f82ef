"""Walks of ib-304 (one leaf switch on older firmware than the fleet's baseline: a ticket for the fabric team).

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. The lab
built for nobody: its old leaf is ib-leaf-05, LID 7 (a leaf's LID is its number plus the two spines').
"""

from __future__ import annotations

from tests.labs.walks import Walk, row, ticket

IMAGE = "/root/firmware/fw-ConnectX7-rel-28_41_1000-MCX75310AAS-NEA_Ax-UEFI-14.34.12-FlexBoot-3.7.300.signed.bin"
OLD_LEAF = ticket(
    row("ib-leaf-05", "firmware-mismatch", "update-firmware", "flint -d lid-7 q: 31.2010.1064, baseline 31.2012.1024")
)

WALKS: dict[str, dict[str, list[Walk]]] = {
    "ib-304": {
        "alternatives": [
            # the fabric listed first, then only the leaves queried, by hex LID, with mstflint
            ["ibnetdiscover", "ibswitches", "mstflint -d lid-0x5 q", "mstflint -d lid-0x7 q", OLD_LEAF],
            # the ticket written with the finding's spelling variant and an escalation-free action list
            [
                "ibswitches",
                "flint -d lid-7 q",
                ticket(row("IB-LEAF-05", "Firmware mismatch", ["update-firmware"], "31.2010.1064 on flash")),
            ],
        ],
        "wrong": [
            # the ticket for a healthy leaf
            ["ibswitches", ticket(row("ib-leaf-03", "firmware-mismatch", "update-firmware"))],
            # the node's own adapter burned and reset instead, and a ticket for the adapter: the leaf stays old
            [
                f"flint -d mlx5_4 -i {IMAGE} burn",
                "mlxfwreset -d mlx5_4 -y reset",
                ticket(row("mlx5_4", "firmware-mismatch", "update-firmware")),
            ],
            # an adapter image pushed at the switch (refused on its PSID), no ticket
            ["ibswitches", f"flint -d lid-7 -i {IMAGE} burn"],
            # the right leaf, read as a cabling fault
            ["ibswitches", ticket(row("ib-leaf-05", "miscabled", "recable"))],
        ],
    },
}

PARTIAL: dict[str, tuple[Walk, float]] = {}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the right ticket, but the IB stack restarted "to refresh the fabric view": nvidia_peermem never loaded again
    "ib-304": [(["ibswitches", "modprobe -r nvidia_peermem", "systemctl restart openibd", OLD_LEAF], "ib.peermem")],
}

__all__ = ["LEFT_BROKEN", "PARTIAL", "WALKS"]
