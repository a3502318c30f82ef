"""Before an nccl-tests run on a node the grade learns how many GPUs it has from one `nvidia-smi -L`, not a
whole first capture; a node that does not answer with a list leaves it to a capture."""

from __future__ import annotations

from dataclasses import dataclass, field

from assessor.labs.capture import _listed_gpus
from assessor.targets.ssh_connection import HostError

LISTED = (
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0f2d)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1a2b)\n"
    "  MIG 1g.10gb     Device  0: (UUID: MIG-aaaa)\n"
    "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2c3d)\n"
)


@dataclass
class Node:
    answer: tuple[int, str] | Exception
    lines: list[str] = field(default_factory=list)

    def run_line(self, line: str, *, timeout: float) -> tuple[int, str]:
        self.lines.append(line)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_gpus_nvidia_smi_lists_not_their_mig_devices() -> None:
    node = Node((0, LISTED))
    assert _listed_gpus(node, 30) == 3
    assert node.lines == ["nvidia-smi -L"]


def test_no_list_a_failed_tool_or_an_unreachable_node_leave_it_to_a_capture() -> None:
    assert _listed_gpus(Node((0, "No devices were found\n")), 30) is None
    assert (
        _listed_gpus(Node((9, "NVIDIA-SMI has failed because it couldn't communicate with the driver\n")), 30) is None
    )
    assert _listed_gpus(Node((127, "")), 30) is None
    assert _listed_gpus(Node(HostError("127.0.0.1: connection refused")), 30) is None
    assert _listed_gpus(object(), 30) is None  # a target that cannot run a line
