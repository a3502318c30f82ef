"""Walks of the IOMMU lab (nccl-304), merged into the shared tables by :mod:`tests.labs.walks` and
:mod:`tests.labs.walks_left_broken`: a PCIe server booted with ``intel_iommu=on`` and no ``iommu=pt``."""

from __future__ import annotations

from tests.labs.walks import Walk, conf

GRUB = "/etc/default/grub"
GRUB_CFG = "/boot/grub/grub.cfg"


def grub(default: str, linux: str = "") -> dict[str, str]:
    """``/etc/default/grub`` as Ubuntu ships it, with these kernel parameters."""
    return {
        GRUB: (
            "# If you change this file, run 'update-grub' afterwards to update\n# /boot/grub/grub.cfg.\n\n"
            "GRUB_DEFAULT=0\nGRUB_TIMEOUT_STYLE=hidden\nGRUB_TIMEOUT=0\n"
            "GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\n"
            f'GRUB_CMDLINE_LINUX_DEFAULT="{default}"\nGRUB_CMDLINE_LINUX="{linux}"\n'
        )
    }


# grub.cfg's linux line edited by hand: the boot takes it, the next update-grub writes it over
HAND_EDITED_CFG: Walk = [
    {
        GRUB_CFG: (
            "menuentry 'Ubuntu' --class ubuntu --class gnu-linux --class gnu --class os {\n"
            "\tlinux\t/boot/vmlinuz-5.15.0-91-generic root=/dev/md0 ro quiet intel_iommu=on iommu=pt\n"
            "\tinitrd\t/boot/initrd.img-5.15.0-91-generic\n}\n"
        )
    },
    "reboot",
]

WALKS: dict[str, dict[str, list[Walk]]] = {
    "nccl-304": {
        "alternatives": [
            [grub("quiet intel_iommu=off"), "update-grub", "reboot"],  # the IOMMU off: nothing here needs it
            [grub("quiet", "intel_iommu=on iommu=pt"), "update-grub", "shutdown -r now"],  # in GRUB_CMDLINE_LINUX
            [grub("quiet iommu=pt"), "update-grub", "reboot"],  # passthrough alone
        ],
        "wrong": [
            [conf("NCCL_P2P_DISABLE=1")],  # P2P hidden from NCCL: through host memory, no faster
            [grub("quiet intel_iommu=on iommu=pt")],  # the file edited, never applied
            [grub("quiet intel_iommu=on iommu=pt"), "update-grub"],  # applied to grub.cfg, no reboot
            [grub("quiet intel_iommu=on iommu=pt"), "reboot"],  # rebooted without update-grub: the old grub.cfg
            ["reboot"],  # the same command line again
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # passthrough until the next update-grub (a kernel update runs one): /etc/default/grub still translates
    "nccl-304": [(HAND_EDITED_CFG, "node.iommu")],
}
