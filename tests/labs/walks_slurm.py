"""The walks of the Slurm labs (their node runs real munged, slurmctld and slurmd): typed inside the running node
by :mod:`tests.labs.test_walk_slurm`, never in-process (``Lab.needs_running_node``).

Wrong fixes are the ones admins really try: resuming a node whose GRES still do not match (slurmctld refuses
its next registration again), editing the configuration without making the daemons re-read it, restarting
only the controller, restarting slurmd or rebooting a node an admin drained (the drain is the controller's).
A fix that leaves slurmd stopped looks done to Slurm for minutes (the controller marks a silent node down only
after SlurmdTimeout): the labs' guard on the Slurm units is what catches it.
"""

from __future__ import annotations

from tests.labs.walks import Walk

GRES_CONF = "/etc/slurm/gres.conf"
RESUME = "scontrol update nodename=$(hostname) state=resume"
# after a reboot or a restart the candidate waits until slurmd has registered: the controller answers and shows
# the node neither UNKNOWN (a restarted slurmctld's state until then, even a drained node's: sinfo's "drain"
# hides it) nor NOT_RESPONDING ('*' in sinfo)
REGISTERED = (
    "for i in $(seq 60); do s=$(scontrol -o show node $(hostname) 2>/dev/null) && "
    '! echo "$s" | grep -q -e State=UNKNOWN -e NOT_RESPONDING && break; sleep 0.5; done; sinfo'
)
# slurmd stopped after the node is back in service: idle in sinfo until the controller's SlurmdTimeout
SLURMD_LEFT_STOPPED = "systemctl stop slurmd"
GRES_PER_GPU = {
    GRES_CONF: "# one line per GPU\n" + "".join(f"Name=gpu File=/dev/nvidia{i}\n" for i in range(8)),
}

WALKS: dict[str, dict[str, list[Walk]]] = {
    "slurm-101": {
        "alternatives": [
            # the reason read, the GPUs looked at, undrain (clears the drain and its reason, keeps the base
            # state), then a job on every GPU proves the node takes work again
            [
                "sinfo -R",
                "scontrol show node $(hostname)",
                "nvidia-smi -L",
                "scontrol update nodename=$(hostname) state=undrain",
                "srun --gres=gpu:8 nvidia-smi -L",
            ],
            # state=idle: Slurm 22.05's scontrol takes it as "clear DRAIN and FAIL too", as resume does
            ["sinfo -R", "scontrol update NodeName=$(hostname -s) State=IDLE"],
        ],
        "wrong": [
            # slurmd restarted: the drain is the controller's, slurmd registers into a drained node
            ["systemctl restart slurmd", "sleep 2"],
            # rebooted: slurmctld keeps the drain and its reason in its saved state across the boot
            ["reboot", REGISTERED],
            # state=down (with the reason scontrol insists on) keeps the DRAIN flag: DOWN+DRAIN
            ["scontrol update nodename=$(hostname) state=down reason='firmware update done'"],
        ],
    },
    "slurm-201": {
        "alternatives": [
            # the range put right in place, slurmd restarted (it re-reads gres.conf), the node resumed
            [
                "sinfo -R",
                r"sed -i 's/nvidia\[0-6\]/nvidia[0-7]/' /etc/slurm/gres.conf",
                "systemctl restart slurmd",
                "sleep 2",
                RESUME,
                "srun --gres=gpu:8 nvidia-smi -L",
            ],
            # one File= line per GPU, then reconfigure; state=idle clears the drain as resume does
            [GRES_PER_GPU, "scontrol reconfigure", "sleep 1", "scontrol update nodename=$(hostname) state=idle"],
        ],
        "wrong": [
            # resumed with gres.conf still one short: the next registration is refused again
            [RESUME, "systemctl restart slurmd", "sleep 2"],
            # gres.conf fixed, but neither re-read nor the node resumed
            [r"sed -i 's/nvidia\[0-6\]/nvidia[0-7]/' /etc/slurm/gres.conf"],
            # the controller restarted: the drain and its reason are kept in its state
            ["systemctl restart slurmctld", "sleep 2"],
        ],
    },
    "slurm-301": {
        "alternatives": [
            # read the reason and the kernel log first, reboot the way systemd does, resume once registered
            [
                "sinfo -R",
                "dmesg | grep -i xid",
                "systemctl reboot",
                REGISTERED,
                "nvidia-smi -L",
                RESUME,
                "srun --gres=gpu:8 nvidia-smi -L",
            ],
            # shutdown -r, then state=idle, which clears the drain and its reason as resume does
            ["shutdown -r now", REGISTERED, "scontrol update nodename=$(hostname) state=idle"],
        ],
        "wrong": [
            # resumed with the GPU still lost: the node is in service on seven GPUs (and drained again at the
            # health check's next run)
            [RESUME],
            # a reset of a GPU that fell off the bus is refused, and the node stays drained
            ["nvidia-smi -r -i 3", RESUME],
            # slurmd restarted: its health check runs at start and drains the node again
            ["systemctl restart slurmd", "sleep 2"],
        ],
    },
    "slurm-401": {
        "alternatives": [
            # gres.conf one line per GPU left, the controller restarted rather than reconfigured
            [
                "systemctl status slurmd",
                "tail -n 3 /var/log/slurm/slurmd.log",
                {GRES_CONF: "".join(f"Name=gpu File=/dev/nvidia{i}\n" for i in range(7))},
                "sed -i 's/Gres=gpu:8/Gres=gpu:7/' /etc/slurm/slurm.conf",
                "sed -i 's/expected=8/expected=7/' /etc/slurm/healthcheck.sh",
                "systemctl restart slurmctld",
                "systemctl restart slurmd",
                REGISTERED,
                "srun --gres=gpu:7 nvidia-smi -L",
            ],
        ],
        "wrong": [
            # gres.conf alone: slurmd starts and reports 7, slurm.conf still says 8: invalid registration
            [r"sed -i 's/nvidia\[0-7\]/nvidia[0-6]/' /etc/slurm/gres.conf", "systemctl restart slurmd"],
            # Slurm's files right, the health check still expecting 8: it drains the node at slurmd's start
            [
                "sed -i 's/Gres=gpu:8/Gres=gpu:7/' /etc/slurm/slurm.conf",
                r"sed -i 's/nvidia\[0-7\]/nvidia[0-6]/' /etc/slurm/gres.conf",
                "scontrol reconfigure",
                "systemctl restart slurmd",
            ],
            # restarted as it is: slurmd waits for /dev/nvidia7 and gives up again
            ["systemctl restart slurmd"],
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    "slurm-101": [
        # slurmd stopped "to restart it" and never started: the controller marks the resumed node not responding
        (["systemctl stop slurmd", RESUME], "slurm.node_state"),
        # the GPUs reset after the firmware update, their daemons stopped for it and left stopped
        (
            [
                "systemctl stop nvidia-persistenced nvidia-dcgm nvidia-fabricmanager",
                "modprobe -r nvidia_drm",
                "nvidia-smi -r",
                RESUME,
            ],
            "services.active",
        ),
        # resumed, then slurmd stopped "while the firmware tool runs" and never started again
        ([RESUME, SLURMD_LEFT_STOPPED], "services.active"),
    ],
    "slurm-201": [
        # "fixed" by telling slurm.conf the node has seven GPUs: it schedules again, one GPU lost to every job
        (
            [
                "sed -i 's/Gres=gpu:8/Gres=gpu:7/' /etc/slurm/slurm.conf",
                "scontrol reconfigure",
                "sleep 1",
                RESUME,
            ],
            "slurm.gres",
        ),
        # gres.conf put right and the node resumed, then slurmd stopped before another edit and left stopped
        (
            [
                r"sed -i 's/nvidia\[0-6\]/nvidia[0-7]/' /etc/slurm/gres.conf",
                "systemctl restart slurmd",
                "sleep 2",
                RESUME,
                SLURMD_LEFT_STOPPED,
            ],
            "services.active",
        ),
    ],
    "slurm-301": [
        # the GPU is back after the reboot, but the node is left drained: no job lands on it
        (["reboot", REGISTERED, "nvidia-smi -L"], "slurm.node_state"),
        # back and resumed, then slurmd stopped so that its health check "cannot drain the node again"
        (["reboot", REGISTERED, RESUME, SLURMD_LEFT_STOPPED], "services.active"),
    ],
    "slurm-401": [
        # slurmd "fixed" by making the missing device file: it registers eight GPUs the node does not have
        (["touch /dev/nvidia7", "systemctl restart slurmd"], "slurm.gres"),
        # the reference fix, then slurmd stopped until the replacement GPU arrives
        (
            [
                "sed -i 's/Gres=gpu:8/Gres=gpu:7/' /etc/slurm/slurm.conf",
                r"sed -i 's/nvidia\[0-7\]/nvidia[0-6]/' /etc/slurm/gres.conf",
                "sed -i 's/^expected=8$/expected=7/' /etc/slurm/healthcheck.sh",
                "scontrol reconfigure",
                "systemctl restart slurmd",
                REGISTERED,
                SLURMD_LEFT_STOPPED,
            ],
            "services.active",
        ),
    ],
}
