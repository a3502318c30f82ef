"""Walks of the firmware and signal-quality labs: ib-303 (a marginal cable beside a port with old counts) and
ib-404 (an HCA below the fleet's firmware baseline, a GPU with another VBIOS).

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. The labs
built for nobody: ib-303's marginal port is mlx5_5 and its flapped port mlx5_1; ib-404's old HCA is mlx5_2 and
its GPU with another VBIOS is GPU 3.
"""

from __future__ import annotations

from tests.labs.walks import Walk, row, ticket

IB_RESTART: Walk = ["modprobe -r nvidia_peermem", "systemctl restart openibd"]

BAD_PORT = ticket(row("mlx5_5", "signal-errors", ["reseat-cable", "replace-transceiver"], "BER 3E-11 after a clear"))
IMAGE = "/root/firmware/fw-ConnectX7-rel-28_41_1000-MCX75310AAS-NEA_Ax-UEFI-14.34.12-FlexBoot-3.7.300.signed.bin"
OTHER_CARD = "/root/firmware/fw-ConnectX7-rel-28_41_1000-MCX755106AS-HEA_Ax-UEFI-14.34.12-FlexBoot-3.7.300.signed.bin"
VBIOS = ticket(
    row("GPU 3", "firmware-mismatch", "update-firmware", "VBIOS 96.00.61.00.01, the fleet runs 96.00.74.00.01")
)

WALKS: dict[str, dict[str, list[Walk]]] = {
    "ib-303": {
        "alternatives": [
            # read every port first, clear, read again; the ticket's first action alone
            [
                "mlxlink -d mlx5_1 -c -m",
                "mlxlink -d mlx5_5 -c -m",
                "mlxlink -d /dev/mst/mt4129_pciconf1 --pc",
                "mlxlink -d mlx5_1 -c",
                ticket(row("mlx5_5 port 1", "Signal errors", "reseat-cable", "Bad signal integrity")),
            ],
            # a reboot clears every port's counters too (the marginal port errs again at once)
            ["reboot", ticket(row("mlx5_5", "signal-errors", ["reseat-cable", "replace-cable"]))],
        ],
        "wrong": [
            # both ports' counters cleared and the marginal one called fixed: no ticket
            ["mlxlink -d mlx5_1 --pc", "mlxlink -d mlx5_5 --pc"],
            # the ticket for the port that only carried old counts
            ["mlxlink -d mlx5_1 --pc", ticket(row("mlx5_1", "signal-errors", "reseat-cable"))],
            # the module replaced before a clean and reseat: an escalation first breaks the policy
            ["mlxlink -d mlx5_1 --pc", ticket(row("mlx5_5", "signal-errors", "replace-transceiver"))],
            # the marginal port read as a slow one
            ["mlxlink -d mlx5_1 --pc", ticket(row("mlx5_5", "degraded-rate", "reseat-cable"))],
            # the right ticket, the old counts left in place
            [BAD_PORT],
        ],
    },
    "ib-404": {
        "alternatives": [
            # mlxfwmanager updates every adapter below the image's version (only mlx5_2 here), a reboot activates
            [f"mlxfwmanager -u -i {IMAGE} -y", "reboot", VBIOS],
            # mstflint by PCI address, then a firmware reset of that adapter
            [f"mstflint -d 0000:3c:00.0 -i {IMAGE} burn", "mlxfwreset -d mlx5_2 -y reset", VBIOS],
        ],
        "wrong": [
            # burned, never activated: ibstat still shows the old firmware running
            [f"flint -d mlx5_2 -i {IMAGE} burn", VBIOS],
            # the wrong adapter burned and reset
            [f"flint -d mlx5_0 -i {IMAGE} burn", "mlxfwreset -d mlx5_0 -y reset", VBIOS],
            # the image of another card: refused on the PSID, nothing changes
            [f"flint -d mlx5_2 -i {OTHER_CARD} burn", "mlxfwreset -d mlx5_2 -y reset", VBIOS],
            # the HCA put right, the ticket for the HCA instead of the GPU
            [
                f"flint -d mlx5_2 -i {IMAGE} burn",
                "mlxfwreset -d mlx5_2 -y reset",
                ticket(row("mlx5_2", "firmware-mismatch", "update-firmware")),
            ],
            # the HCA put right, no ticket for the GPU
            [f"flint -d mlx5_2 -i {IMAGE} burn", "mlxfwreset -d mlx5_2 -y reset"],
        ],
    },
}

PARTIAL: dict[str, tuple[Walk, float]] = {
    "ib-303": (["mlxlink -d mlx5_1 --pc"], 40.0),  # the old counts cleared, no ticket
    "ib-404": ([f"flint -d mlx5_2 -i {IMAGE} burn", "mlxfwreset -d mlx5_2 -y reset"], 50.0),  # the HCA, no ticket
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the counters cleared and the right ticket, but the IB stack restarted on the way: GPUDirect RDMA gone
    "ib-303": [([*IB_RESTART, "mlxlink -d mlx5_1 --pc", BAD_PORT], "ib.peermem")],
    # the firmware activated, then the IB stack restarted "to be sure": nvidia_peermem unloaded, never loaded again
    "ib-404": [
        ([f"flint -d mlx5_2 -i {IMAGE} burn", "mlxfwreset -d mlx5_2 -y reset", *IB_RESTART, VBIOS], "ib.peermem")
    ],
}

__all__ = ["LEFT_BROKEN", "PARTIAL", "WALKS"]
