"""Hostile inputs for every parser kind: what a node or a candidate can send to slow a grader.

Each input is built to a given size from patterns that defeat backtracking regexes (long runs
of the characters a pattern repeats over, with no terminator), from a real sample's head
followed by such a run (so the parser is in its table or block state), and from a real sample
repeated (a big but ordinary file). Shared by the linear-time tests and ``bench/parsers.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"

# Runs that backtracking patterns repeat over: whitespace, word characters, table rules,
# brackets, separators, and the tokens that start a parser's lines.
_RUNS = (
    " ",
    "\t",
    "a",
    "a ",
    "0 ",
    "0",
    "1.5 ",
    "|",
    "| ",
    "-",
    "+-",
    "=",
    "[",
    "[0]",
    "[0] ",
    "(",
    ":",
    ": ",
    "a: ",
    "#",
    "# ",
    ".",
    "x=",
    "GPU ",
    "NV",
    "mlx5_0 ",
    "NCCL INFO ",
    "via ",
    "<",
    "<a>",
)

# Line starts that put each parser into the state where its longest patterns run.
_LEADS: dict[str, tuple[str, ...]] = {
    "nvidia-smi-list": ("GPU 0: ", "GPU 0: A (UUID: ", "  MIG 1g.5gb Device 0: (UUID: "),
    "nvidia-smi-topo": ("\tGPU0\tGPU1\n", "GPU0\t X \t", "NIC Legend:\n\n  NIC0: "),
    "nvidia-smi-q": ("GPU 00000000:07:00.0\n    Product Name    : ", "    Persistence Mode : "),
    "nvidia-smi": (
        "|   0  NVIDIA H100 80GB HBM3          On  | ",
        "| N/A   30C    P0   ",
        "| Processes:   \n|  ",
    ),
    "nvidia-smi-nvlink": ("GPU 0: A (UUID: GPU-1)\n\t Link 0: ",),
    "ib-write-bw": (
        " RDMA_Write BW Test\n #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n",
        " Dual-port : ",
        " a",
    ),
    "nccl-tests": (
        "#  Rank  0 Group  0 Pid  1 on h device  0 [0x07] ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\n",
        "# nThread ",
    ),
    "nccl-debug": ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ", "h:1:1 [0] NCCL INFO Using network "),
    "dcgmi-diag": ("+---------------------------+\n| Diagnostic | Result |\n|----- ", "| a | "),
    "systemctl-show": ("Id=", "a="),
    "systemctl-status": ("● nvidia-fabricmanager.service - ", "     Active: failed ", "Main PID: 1 ("),
    "ibstat": ("CA 'mlx5_0'\n\tPort 1:\n\t\tState: ", "CA '"),
    "ibv-devinfo": ("hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t", "hca_id: "),
    "dmesg": ("[ 1.0] NVRM: Xid (PCI:0000:9b:00): 119, ", "NVRM: The NVIDIA GPU 0000:9b:00.0 "),
    "lsmod": ("Module Size Used by\nnvidia 1 0 ",),
    "nvidia-smi-xml": ('<?xml version="1.0"?>\n<nvidia_smi_log><gpu id="', "<nvidia_smi_log>"),
}

# A sample of each kind to repeat (the first corpus file that matches).
_SAMPLES: dict[str, str] = {
    "nvidia-smi-list": "nvml/nvidia_smi_L_*.txt",
    "nvidia-smi-topo": "nvidia_smi_topo/*.txt",
    "nvidia-smi-q": "nvidia_smi_q/*.txt",
    "nvidia-smi": "nvidia_smi/*.txt",
    "nvidia-smi-nvlink": "nvidia_smi_nvlink/*.txt",
    "nvidia-smi-mig-lgi": "nvml/mig_lgi_*.txt",
    "nvidia-smi-mig-lgip": "nvml/mig_lgip_*.txt",
    "nvidia-smi-mig-lgipp": "nvml/mig_lgipp_*.txt",
    "ibstat": "ibstat/*.txt",
    "ibv-devinfo": "ibv_devinfo/*.txt",
    "ib-write-bw": "perftest/*.txt",
    "dmesg": "dmesg_xid/*.txt",
    "systemctl-show": "fabricmanager/03_*.txt",
    "systemctl-status": "systemctl_status/01_*.txt",
    "nccl-tests": "nccl_tests/*.txt",
    "nccl-debug": "nccl_debug/*.txt",
    "dcgmi-diag": "dcgmi_diag/*.txt",
    "nvidia-smi-xml": "nvidia_smi_xml/*.xml",
}


def sample(kind: str) -> str | None:
    pattern = _SAMPLES.get(kind)
    if pattern is None:
        return None
    found = sorted(CORPUS.glob(pattern))
    return found[0].read_text(encoding="utf-8", errors="replace") if found else None


def _fill(run: str, size: int) -> str:
    return (run * (size // len(run) + 1))[:size]


# The runs that made parsers quadratic before (kept short for the test suite).
QUICK_RUNS = (" ", "a ", "a", "[0]", "| ", ": ", "0 ", "NCCL INFO ", "via ")


def hostile_inputs(kind: str, size: int, runs: tuple[str, ...] = _RUNS) -> Iterator[tuple[str, str]]:
    """(label, text) pairs of about ``size`` characters that stress parser ``kind``."""
    leads = ("", *_LEADS.get(kind, ()))
    base = sample(kind)
    if base:
        head = "\n".join(base.splitlines()[:40]) + "\n"
        leads = (*leads, head)
    for lead in leads:
        for run in runs:
            yield f"{lead[:24]!r}+{run!r}*", lead + _fill(run, size - len(lead))
    if base:
        yield "sample repeated", _fill(base + "\n", size)
        yield "sample lines, one per line x many", _fill("\n".join(base.splitlines()[:3]) + "\n", size)
    yield "many empty lines", "\n" * size
    yield "many short lines", _fill("a\n", size)
