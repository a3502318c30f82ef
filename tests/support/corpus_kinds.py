"""Which parser kind reads which corpus file (every file of a supported kind is listed)."""

from __future__ import annotations

from pathlib import Path

# (glob under the corpus, parser kind)
CORPUS_KINDS: tuple[tuple[str, str], ...] = (
    ("nvidia_smi_xml/*.xml", "nvidia-smi-xml"),
    ("nvidia_smi_topo/*.txt", "nvidia-smi-topo"),
    ("nvml/topo_m_*.txt", "nvidia-smi-topo"),
    ("nvml/nvidia_smi_L_*.txt", "nvidia-smi-list"),
    ("nvml/nvidia_smi_q_*.txt", "nvidia-smi-q"),
    ("nvidia_smi_q/*.txt", "nvidia-smi-q"),
    ("nvml/nvidia_smi_default_*.txt", "nvidia-smi"),
    ("nvml/nvidia_smi_mig_devices_*.txt", "nvidia-smi"),
    ("nvidia_smi/*.txt", "nvidia-smi"),
    ("nvidia_smi_nvlink/*.txt", "nvidia-smi-nvlink"),
    ("nvml/mig_lgi_*.txt", "nvidia-smi-mig-lgi"),
    ("nvml/mig_lgip_*.txt", "nvidia-smi-mig-lgip"),
    ("nvml/mig_lgipp_*.txt", "nvidia-smi-mig-lgipp"),
    ("ibstat/*.txt", "ibstat"),
    ("ibstatus/*.txt", "ibstat"),
    ("ibv_devinfo/*.txt", "ibv-devinfo"),
    ("ibnetdiscover/*.txt", "ibnetdiscover"),
    ("iblinkinfo/*.txt", "iblinkinfo"),
    ("perftest/*.txt", "ib-write-bw"),
    ("dmesg_xid/*.txt", "dmesg"),
    ("fabricmanager/0[23]_*.txt", "systemctl-show"),
    ("fabricmanager/0[23]_*.txt", "systemctl-status"),
    ("systemctl_status/*.txt", "systemctl-status"),
    ("nccl_tests/*.txt", "nccl-tests"),
    ("nccl_debug/*.txt", "nccl-debug"),
    ("nccl_debug/01_*.txt", "nccl-tests"),
    ("nccl_debug/03_*.txt", "nccl-tests"),
    ("nccl_warn/*.txt", "nccl-debug"),
    ("dcgmi_diag/*.txt", "dcgmi-diag"),
    ("dpkg/*.txt", "dpkg-list"),
    ("dkms/*.txt", "dkms-status"),
    ("scontrol_node/*.txt", "scontrol-node"),
    ("hpl/*.txt", "hpl"),
    ("nvbandwidth/*.txt", "nvbandwidth"),
    ("mlxlink/*.txt", "mlxlink"),
    ("mlxfwmanager/*.txt", "mlxfwmanager"),
    ("ipmitool/0[12]_*.txt", "ipmitool-lan"),
    ("ipmitool/0[345]_*.txt", "ipmitool-users"),
    ("docker_info/*.txt", "docker-info"),
    ("cdi_spec/*.txt", "cdi-spec"),
    ("proc_cmdline/*.txt", "proc-cmdline"),
    ("grub_default/*.txt", "grub-default"),
)


def corpus_files(corpus: Path) -> list[tuple[Path, str]]:
    out = []
    for pattern, kind in CORPUS_KINDS:
        out.extend((path, kind) for path in sorted(corpus.glob(pattern)))
    return out
