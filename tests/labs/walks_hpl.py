"""Walks of the HPL and nvbandwidth labs (health-306, health-406), merged into the shared tables by
:mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. Each lab is walked with its first variant:
health-306's power cap on GPUs 2 and 5 (350 W), health-406's hot GPU 5 and narrow GPU 1."""

from __future__ import annotations

from tests.labs.walks import Walk, row, ticket

HPL_8 = (
    "mpirun --allow-run-as-root --bind-to none -np 8 hpl.sh --dat /workspace/hpl-linux-x86_64/sample-dat/HPL-8GPUs.dat"
)
HOT = row("GPU 5", "thermal-slowdown", "check-cooling", "thermal slowdown active under HPL, clocks near half")
NARROW = row("GPU 1", "degraded-width", "reseat-gpu", "nvbandwidth at half the others', PCIe x8 of x16")

WALKS: dict[str, dict[str, list[Walk]]] = {
    "health-306": {
        "alternatives": [
            ["nvidia-smi -pl 700"],  # every GPU back to its default, the capped two among them
            ["nvidia-smi -q -d POWER", "nvidia-smi -i 2 -pl 700", "nvidia-smi -i 5 -pl 700", HPL_8],
            ["reboot"],  # a power limit set with nvidia-smi lasts until the driver unloads
        ],
        "wrong": [
            ["nvidia-smi -rgc"],  # no clocks were locked: the power cap stays
            ["nvidia-smi -i 2 -pl 700"],  # one of the two capped GPUs: HPL still runs at the other's pace
            ["nvidia-smi -pl 500"],  # every GPU capped, higher than before but below the default
            ["nvidia-smi -i 2,5 -lgc 1980,1980"],  # clocks locked at the maximum do not lift a power cap
            ["nvidia-smi -pm 1", HPL_8],
        ],
    },
    "health-406": {
        "alternatives": [
            [
                ticket(
                    row("GPU 5", "thermal-slowdown", ["check-cooling", "reseat-gpu"]),
                    row("GPU 1", "degraded-width", ["reseat-gpu", "rma-gpu"]),
                )
            ],
            [
                "nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce",
                "nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i 5",
                HPL_8,
                ticket(NARROW, HOT),
            ],
        ],
        "wrong": [
            [ticket(HOT)],  # the hot GPU alone: the narrow link missed
            [ticket(row("GPU 5", "thermal-slowdown", "rma-gpu"), NARROW)],  # an RMA before the cooling is checked
            [ticket(HOT, NARROW, row("GPU 3", "thermal-slowdown", "check-cooling"))],  # a healthy GPU sent too
            [ticket(row("GPU 5", "degraded-width", "reseat-gpu"), row("GPU 1", "thermal-slowdown", "check-cooling"))],
            ["reboot"],  # nothing physical changes, and no ticket
        ],
    },
}

# A walk that earns part of the points, and the score it must get.
PARTIAL: dict[str, tuple[Walk, float]] = {
    "health-306": (["nvidia-smi -pl 500"], 50.0),  # 35 TFLOPS per GPU: above 80 % of the 40, below the 40
    "health-406": ([ticket(NARROW)], 50.0),  # one of the two faulty GPUs
}

# The task done, the node left worse: (walk, the check whose message must say why).
LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the cap lifted, and DCGM stopped "so its policy does not cap the GPUs again": the node leaves service so
    "health-306": [(["nvidia-smi -pl 700", "systemctl stop nvidia-dcgm"], "services.active")],
    # the ticket right, and the fabric manager stopped while looking at the GPUs: the node leaves without it
    "health-406": [([ticket(HOT, NARROW), "systemctl stop nvidia-fabricmanager"], "services.active")],
}
