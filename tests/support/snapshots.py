"""Build snapshot directories from real corpus files for tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.corpus import CORPUS


def corpus_snapshot(directory: Path, files: dict[str, str]) -> Path:
    """A snapshot dir whose files are corpus files: {snapshot name: corpus path}."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rel in files.items():
        shutil.copyfile(CORPUS / rel, directory / name)
    return directory


# A node with one InfiniBand port polling, NCCL on sockets and an Xid 79 in the kernel log.
BROKEN_H100 = {
    "ibstat.txt": "ibstat/02_h100_cx7_roce400_one_down_polling.txt",
    "nccl-tests.txt": "nccl_debug/01_h800_single_node_ib_not_found_socket_fallback_nvls.txt",
    "dmesg.txt": "dmesg_xid/05_xid79_fallen_off_bus_single_and_multiline.txt",
}

HEALTHY_A100 = {
    "nvidia-smi-q.xml": "nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml",
    "ibstat.txt": "ibstat/01_h100_cx7_ndr400_ib_all_active.txt",
    "nccl-tests.txt": "nccl_tests/02_all_reduce_1node_8xA100_sxm4_80gb_g8.txt",
}
