"""Walks of health-407 (only ``dcgmi diag -r 4`` finds the weak GPU), merged into the shared tables by
:mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. The lab is walked with its first variant:
GPU 3 has the weak HBM."""

from __future__ import annotations

from tests.labs.walks import H100_DRAIN, H100_RESTORE, Walk, row, ticket

RMA = row("GPU 3", "row-remap-failure", "rma-gpu", "memtest fails GPU 3 at -r 4; Remapping Failure Occurred: Yes")

WALKS: dict[str, dict[str, list[Walk]]] = {
    "health-407": {
        "alternatives": [
            ["dcgmi diag -r xlong", ticket(RMA)],
            # memtest alone, then the remapper's view of the GPU it failed
            ["dcgmi diag -r memtest", "nvidia-smi -q -d ECC,ROW_REMAPPER -i 3", ticket(RMA)],
            # GPU by GPU, the way a runbook that tests one GPU at a time does it
            [*(f"dcgmi diag -r 4 -i {i}" for i in range(4)), ticket(RMA)],
        ],
        "wrong": [
            # the long run passes everything: the node declared healthy, no ticket
            ["dcgmi diag -r 3"],
            ["dcgmi diag -r long", "dcgmi health -c", "nvidia-smi -q -d ECC,ROW_REMAPPER"],
            # the right GPU, but a reseat first: nothing on site repairs HBM
            ["dcgmi diag -r 4", ticket(row("GPU 3", "row-remap-failure", "reseat-gpu"))],
            # the right GPU, read as a GPU that needs a reset, reset, and handed back without a ticket
            ["dcgmi diag -r 4", *H100_DRAIN, "nvidia-smi -r -i 3", *H100_RESTORE],
            # level 4 on the first GPUs only: the weak one never ran memtest, and a healthy one is sent back
            ["dcgmi diag -r 4 -i 0,1,2", ticket(row("GPU 2", "row-remap-failure", "rma-gpu"))],
            # the right finding on a neighbour and the weak GPU's own row missing
            ["dcgmi diag -r 4", ticket(row("GPU 4", "row-remap-failure", "rma-gpu"))],
        ],
    },
}

# The task done, the node left worse: (walk, the check whose message must say why).
LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the ticket right, and the host engine stopped "so nothing runs a diagnostic on the weak GPU again"
    "health-407": [(["dcgmi diag -r 4", ticket(RMA), "systemctl stop nvidia-dcgm"], "services.active")],
}
