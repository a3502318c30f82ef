"""The "fixed but left broken" walks of every simulator lab: the task done, the node left worse than it was found.

A real operator hands the node back in service. Each walk here does what the lab asks (or looks as if it
did) and leaves something behind that a real node would suffer from: the daemons a drain stopped still
down, ``nvidia_drm`` still unloaded, the fabric manager's cause not fixed (it fails again at the next start
or boot), a fix made only in the shell's environment or until the next reboot, GPUDirect RDMA unloaded on
the way. None of them may pass, and each names the guard (or check) whose message must say why: the grade
output gives the candidate that reason.

Each lab maps to a list of ``(walk, check id)``: the steps (as in :mod:`tests.labs.walks`) and the check that
must fail on the node they leave. Walked in-process by :mod:`tests.labs.test_walk_left_broken`, typed inside
the node by :mod:`tests.labs.test_walk_shell` and over SSH by :mod:`tests.labs.test_walk_ssh_candidates`.
"""

from __future__ import annotations

from tests.labs.walks import (
    A100_DRAIN,
    A100_DRAIN_FM,
    A100_RAILS,
    H100_DRAIN,
    H100_RESTORE,
    IMEX_NEW_LIST,
    IMEX_NODES,
    Walk,
    row,
    ticket,
)

# The drain undone halfway: the daemons back, nvidia_drm (and nvidia_modeset with it) forgotten.
A100_DAEMONS_ONLY: Walk = ["systemctl start nvidia-persistenced nvidia-dcgm"]
H100_DAEMONS_ONLY: Walk = ["systemctl start nvidia-persistenced nvidia-dcgm"]
# An HGX H100 drained as a DGX A100 is: the fabric manager stopped too, and H100_RESTORE does not start it.
FM_TOO_DRAIN: Walk = ["systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager", "modprobe -r nvidia_drm"]
# Restarting the IB stack refuses while nvidia_peermem holds it: unloaded first, and never loaded again.
IB_RESTART: Walk = ["modprobe -r nvidia_peermem", "systemctl restart openibd"]
H100_RAILS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"


def shell_only(setting: str) -> str:
    """A setting exported in the candidate's shell and tried there, never written where NCCL reads it for
    every job: the next job (the grader's) runs without it."""
    return f"export {setting} && all_reduce_perf -b 8 -e 128M -f 2 -g 8"


LeftBroken = list[tuple[Walk, str]]

LEFT_BROKEN: dict[str, LeftBroken] = {
    "drv-101": [([*A100_DRAIN, "nvidia-smi -pm 1"], "services.active")],
    "drv-201": [
        (
            [
                "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
                "modprobe -r nvidia_drm",
                "modprobe -r nvidia_peermem",
                "modprobe -r nvidia_uvm",
                "modprobe nvidia",  # the new module loads; the daemons it stopped stay down
            ],
            "services.active",
        ),
        (
            [
                "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
                "modprobe -r nvidia_drm",
                "modprobe -r nvidia_peermem",
                "modprobe -r nvidia_uvm",
                "modprobe nvidia",  # nvidia alone: nvidia_drm, nvidia_modeset and nvidia_peermem stay unloaded
                "systemctl start nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
            ],
            "driver.loaded",
        ),
    ],
    "drv-202": [
        (["systemctl start nvidia-persistenced"], "services.active"),  # running until the next boot only
        (["systemctl start nvidia-persistenced", "reboot"], "gpu.persistence"),  # and after it, off again
    ],
    "drv-301": [
        (["systemctl restart nvidia-fabricmanager"], "fabric.state"),  # the cause untouched: it fails again
        (["reboot"], "fabric.state"),  # a reboot does not clear it: the fabric manager fails at boot
    ],
    "health-101": [
        (["systemctl restart nvidia-dcgm", "modprobe -r nvidia_drm"], "driver.loaded"),
    ],
    "health-201": [
        ([*H100_DRAIN, "nvidia-smi -r -i 5"], "services.active"),
        ([*H100_DRAIN, "nvidia-smi -r -i 5", *H100_DAEMONS_ONLY], "driver.loaded"),
        # The fabric manager stopped as well (an A100 habit) and never started: CUDA cannot initialise.
        ([*FM_TOO_DRAIN, "nvidia-smi -r -i 5", *H100_RESTORE], "nccl.errors"),
    ],
    "health-301": [
        ([*A100_DRAIN, "nvidia-smi -r -i 3", "systemctl start nvidia-dcgm"], "services.active"),
    ],
    "health-401": [
        (
            [
                *A100_DRAIN,
                "nvidia-smi -r -i 2",
                *A100_DAEMONS_ONLY,
                ticket(row("GPU 6", "off-the-bus", "power-cycle", "Xid 79")),
            ],
            "driver.loaded",
        ),
    ],
    "health-402": [([*H100_DRAIN, "nvidia-smi -r -i 4"], "services.active")],
    "health-403": [
        (
            [
                "systemctl stop nvidia-persistenced nvidia-dcgm",
                "modprobe -r nvidia_drm",
                "nvidia-smi -r -i 2",  # a reset does not retrain a narrow link; the drain stays
                ticket(row("GPU 2", "degraded-width", "reseat-gpu", "x8 under load")),
            ],
            "services.active",
        )
    ],
    "ib-201": [([*IB_RESTART, ticket(row("mlx5_2", "no-link", "reseat-cable", "Polling"))], "ib.peermem")],
    "ib-301": [
        (
            [
                *H100_DRAIN,
                "modprobe nvidia_peermem",
                ticket(row("mlx5_5", "degraded-rate", "reseat-cable", "200 on NDR")),
            ],
            "services.active",
        )
    ],
    "ib-401": [
        (
            [*IB_RESTART, ticket(row("subnet manager", "no-subnet-manager", "restore-subnet-manager", "LID 0"))],
            "ib.peermem",
        )
    ],
    "ib-402": [
        (
            [
                *IB_RESTART,
                ticket(
                    row("mlx5_6", "degraded-rate", "reseat-cable", "200 on NDR"),
                    row("mlx5_2", "no-link", "reseat-cable", "Polling"),
                ),
            ],
            "ib.peermem",
        )
    ],
    "mig-101": [([*H100_DRAIN, "nvidia-smi -mig 0"], "services.active")],
    "mig-201": [([*A100_DRAIN, "nvidia-smi -i 0 -mig 1"], "services.active")],
    "mig-202": [
        ([*A100_DRAIN, "nvidia-smi -i 4 -r"], "services.active"),
        # every GPU reset with the fabric manager stopped, and it never started again: the fabric waits
        (
            [*A100_DRAIN_FM, "nvidia-smi -r", "modprobe nvidia_drm", "systemctl start nvidia-persistenced nvidia-dcgm"],
            "fabric.state",
        ),
    ],
    "mig-301": [
        (
            [*H100_DRAIN, "nvidia-smi -i 0 -mig 1", "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C"],
            "driver.loaded",
        )
    ],
    "mig-302": [
        (
            [
                *A100_DRAIN,
                "nvidia-smi -i 4,5,6,7 -mig 1",
                *A100_DAEMONS_ONLY,  # nvidia_drm forgotten
                *[f"nvidia-smi mig -i {i} -cgi 19,19,19,19,19,19,19 -C" for i in (4, 5, 6, 7)],
            ],
            "driver.loaded",
        )
    ],
    "mig-401": [
        (
            [
                *A100_DRAIN,
                "nvidia-smi -i 2 -mig 0",
                "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C",
                "nvidia-smi mig -i 1 -cgi 9,14,19,19 -C",
            ],
            "services.active",
        )
    ],
    "mig-402": [
        (
            [
                *H100_DRAIN,
                "nvidia-smi mig -i 0 -dci",
                "nvidia-smi mig -i 0 -dgi",
                "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C",
            ],
            "services.active",
        )
    ],
    "nccl-301": [([shell_only("NCCL_P2P_DISABLE=0")], "nccl.busbw")],
    "nccl-302": [([shell_only("NCCL_NVLS_ENABLE=1")], "nccl.busbw")],
    "nccl-401": [([shell_only(f"NCCL_IB_HCA=={A100_RAILS}")], "nccl.transport")],
    "nccl-402": [
        (["modprobe nvidia_peermem", shell_only(f"NCCL_IB_HCA={H100_RAILS}")], "nccl.transport"),
    ],
    "mig-303": [
        (
            [
                *FM_TOO_DRAIN,  # drained as an A100 is, though a B200 needs none: the fabric manager stopped too
                "nvidia-smi -i 0,1,2,3 -mig 1",
                *[f"nvidia-smi mig -i {i} -cgi 5,15,19,19 -C" for i in (0, 1, 2, 3)],
                *H100_RESTORE,  # and not started again
            ],
            "fabric.state",
        )
    ],
    "health-302": [
        # the node list put right and the daemon started, but the unit left disabled: down after the next boot
        ([{IMEX_NODES: IMEX_NEW_LIST}, "systemctl restart nvidia-imex"], "services.active"),
    ],
    # ---- verification labs (issue #24) ------------------------------------------------------------------
    "health-304": [
        # a reset tried on the hot GPU (it does not cool it), the drain undone halfway: nvidia_drm forgotten
        (
            [
                *H100_DRAIN,
                "nvidia-smi -r -i 5",
                *H100_DAEMONS_ONLY,
                ticket(row("GPU 5", "thermal-slowdown", "check-cooling", "targeted_power thermal violations")),
            ],
            "driver.loaded",
        ),
    ],
    "health-305": [
        # the fabric manager blamed and disabled before the reboot: the links never train, CUDA never starts
        (["systemctl disable nvidia-fabricmanager", "reboot"], "fabric.state"),
    ],
    "health-404": [
        (["kill 28417", *H100_DRAIN, "nvidia-smi -r -i 5", *H100_DAEMONS_ONLY], "driver.loaded"),
        (["kill 28417", *H100_DRAIN, "nvidia-smi -r -i 5"], "services.active"),
    ],
    "health-405": [
        # a reset tried on the narrow GPU (a reset does not retrain a link): DCGM and nvidia_drm left down
        (
            [
                *H100_DRAIN,
                "nvidia-smi -r -i 6",
                "systemctl start nvidia-persistenced",
                ticket(row("GPU 6", "degraded-width", "reseat-gpu"), row("mlx5_2", "degraded-rate", "reseat-cable")),
            ],
            "services.active",
        ),
    ],
    "nccl-303": [([shell_only(f"NCCL_IB_HCA={H100_RAILS}")], "nccl.transport")],
    "nccl-403": [([shell_only(f"NCCL_IB_HCA={H100_RAILS}")], "nccl.transport")],
    "ib-302": [
        # the slow rail hidden from NCCL instead of repaired: the node's jobs lose a rail
        (
            [
                {"/etc/nccl.conf": "NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_4,mlx5_5,mlx5_6,mlx5_7\n"},
                ticket(row("mlx5_3", "degraded-rate", "reseat-cable", "Rate 200 on NDR")),
            ],
            "nccl.transport",
        )
    ],
    "ib-403": [
        # the IB stack restarted to retrain the slow link: nvidia_peermem unloaded on the way, never loaded again
        (
            [
                *IB_RESTART,
                {"/etc/nccl.conf": f"NCCL_IB_HCA={H100_RAILS}\nNCCL_NVLS_ENABLE=1\n"},
                ticket(row("mlx5_1", "degraded-rate", "reseat-cable", "Rate 200 on NDR")),
            ],
            "ib.peermem",
        )
    ],
}


def _merge_topic_left_broken() -> None:
    """The ``LEFT_BROKEN`` of each ``tests/labs/walks_<topic>.py`` (see :mod:`tests.labs.walks`)."""
    import importlib
    from pathlib import Path

    for path in sorted(Path(__file__).parent.glob("walks_*.py")):
        if path.stem == "walks_left_broken":
            continue
        module = importlib.import_module(f"tests.labs.{path.stem}")
        for name, walks in getattr(module, "LEFT_BROKEN", {}).items():
            assert name not in LEFT_BROKEN, f"{path.name}: {name} has left-broken walks here already"
            LEFT_BROKEN[name] = walks


_merge_topic_left_broken()
