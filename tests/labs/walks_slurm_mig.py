"""The walks of slurm-302 (MIG devices made schedulable as typed Slurm GRES): typed inside the running node by
:mod:`tests.labs.test_walk_slurm`, where its real munged, slurmctld and slurmd run.

Wrong fixes are the ones admins really try: resuming the node as it is, undoing the MIG split so that the old
files fit again, writing the typed files but only ``scontrol reconfigure`` (a node's ``Gres=`` change needs
both daemons restarted), and listing the MIG devices as plain ``gpu`` GRES with no type a job can ask for.
"""

from __future__ import annotations

from tests.labs.walks import Walk
from tests.labs.walks_slurm import REGISTERED

GRES_CONF = "/etc/slurm/gres.conf"
SLURM_CONF = "/etc/slurm/slurm.conf"
RESUME = "scontrol update nodename=$(hostname) state=resume"
RESTART_BOTH = "systemctl restart slurmctld slurmd"
TYPED_GRES = "sed -i 's/Gres=gpu:8/Gres=gpu:1g.10gb:7,gpu:3g.40gb:2,gpu:h100:6/' /etc/slurm/slurm.conf"

# The capability minors /proc/driver/nvidia/capabilities gives the MIG devices of the lab's node (GPU 6: GPU
# instances 7 to 13, GPU 7: 1 and 2; each with its compute instance 0), as a candidate copies them by hand.
_GPU6 = [(876 + 9 * i, 877 + 9 * i) for i in range(7)]
_GPU7 = [(957, 958), (966, 967)]


def _mig_line(kind: str, gpu: int, gi: int, ci: int, typed: bool = True) -> str:
    files = f"/dev/nvidia{gpu},/dev/nvidia-caps/nvidia-cap{gi},/dev/nvidia-caps/nvidia-cap{ci}"
    return f"Name=gpu {f'Type={kind} ' if typed else ''}MultipleFiles={files}\n"


def _gres_by_hand(typed: bool = True) -> str:
    whole = "".join(f"Name=gpu {'Type=h100 ' if typed else ''}File=/dev/nvidia{i}\n" for i in range(6))
    return (
        "# whole GPUs, then one line per MIG device\n"
        + whole
        + "".join(_mig_line("1g.10gb", 6, gi, ci, typed) for gi, ci in _GPU6)
        + "".join(_mig_line("3g.40gb", 7, gi, ci, typed) for gi, ci in _GPU7)
    )


# The reference's gres.conf, as the lab's solution writes it from the driver's /proc files.
_FROM_PROC = (
    "( cd /proc/driver/nvidia/capabilities && "
    'cap() { echo "/dev/nvidia-caps/nvidia-cap$(awk \'/DeviceFileMinor/ {print $2}\' "$1")"; } && '
    "echo 'Name=gpu Type=h100 File=/dev/nvidia[0-5]' && "
    'for gi in gpu6/mig/gi*; do echo "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia6,$(cap $gi/access),'
    '$(cap $gi/ci0/access)"; done && '
    'for gi in gpu7/mig/gi*; do echo "Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia7,$(cap $gi/access),'
    '$(cap $gi/ci0/access)"; done ) > /etc/slurm/gres.conf'
)
_UNDO_MIG = [
    f"nvidia-smi mig -i {gpu} -dci && nvidia-smi mig -i {gpu} -dgi && nvidia-smi -i {gpu} -mig 0" for gpu in (6, 7)
]

WALKS: dict[str, dict[str, list[Walk]]] = {
    "slurm-302": {
        "alternatives": [
            # the minors read off /proc and ls -l /dev/nvidia-caps, gres.conf written by hand one line a device,
            # both daemons restarted in one go, the node put back with state=idle, a MIG job run to prove it
            [
                "sinfo -R",
                "nvidia-smi -L",
                "ls -l /dev/nvidia-caps",
                "grep -r DeviceFileMinor /proc/driver/nvidia/capabilities/gpu6/mig/gi7",
                {GRES_CONF: _gres_by_hand()},
                TYPED_GRES,
                RESTART_BOTH,
                REGISTERED,
                "scontrol update nodename=$(hostname) state=idle",
                "srun --gres=gpu:1g.10gb:1 nvidia-smi -L",
                "srun --gres=gpu:3g.40gb:2 nvidia-smi -L",
            ],
            # the daemons stopped and started again rather than restarted; undrain clears the drain and its reason
            [
                _FROM_PROC,
                TYPED_GRES,
                "systemctl stop slurmd slurmctld",
                "systemctl start slurmctld",
                "systemctl start slurmd",
                REGISTERED,
                "scontrol update nodename=$(hostname) state=undrain",
                "srun --gres=gpu:h100:6 nvidia-smi -L",
            ],
        ],
        "wrong": [
            # resumed as it is: in service, but still eight whole GPUs to Slurm and no MIG type to ask for
            [RESUME],
            # the split undone so that the old files fit again: Slurm is right, the inference team's slices gone
            [*_UNDO_MIG, RESUME],
            # the typed files written, but only re-read: a node's Gres= change needs both daemons restarted
            [_FROM_PROC, TYPED_GRES, "scontrol reconfigure", "sleep 2", RESUME],
            # every MIG device listed, but untyped: gpu:15, and --gres=gpu:1g.10gb:1 still has no GRES to match
            [
                {GRES_CONF: _gres_by_hand(typed=False)},
                "sed -i 's/Gres=gpu:8/Gres=gpu:15/' /etc/slurm/slurm.conf",
                RESTART_BOTH,
                REGISTERED,
                RESUME,
            ],
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the GRES typed and in effect, a MIG job run to try it, but the node left drained: no job lands on it
    "slurm-302": [
        (
            [_FROM_PROC, TYPED_GRES, RESTART_BOTH, REGISTERED, "scontrol show node $(hostname) | grep -i gres"],
            "slurm.node_state",
        )
    ],
}
