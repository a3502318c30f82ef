"""Walks of the container labs (ctr-101, ctr-301): docker's daemon.json and the CDI spec on the simulated node.

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`.
"""

from __future__ import annotations

from tests.labs.walks import Walk

DAEMON_JSON = "/etc/docker/daemon.json"
# daemon.json written by hand: the site's logging settings kept, the NVIDIA runtime added.
BY_HAND = (
    '{\n  "log-driver": "json-file",\n  "log-opts": {"max-size": "100m"},\n'
    '  "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}\n}\n'
)
# The same with a comma missing: dockerd refuses to start with it.
BY_HAND_TYPO = BY_HAND.replace('"100m"},', '"100m"}')
SPEC = "/etc/cdi/nvidia.yaml"
GENERATE = f"nvidia-ctk cdi generate --output={SPEC}"

WALKS: dict[str, dict[str, list[Walk]]] = {
    "ctr-101": {
        "alternatives": [
            # daemon.json edited by hand, then the restart
            [{DAEMON_JSON: BY_HAND}, "systemctl restart docker"],
            # the toolkit's command with --set-as-default, the daemon stopped and started
            [
                "nvidia-ctk runtime configure --runtime=docker --set-as-default",
                "systemctl stop docker",
                "systemctl start docker",
            ],
            # configured, and the whole node rebooted (docker is enabled: it reads the file at boot)
            ["nvidia-ctk runtime configure --runtime=docker", "reboot"],
        ],
        "wrong": [
            # containerd configured instead of docker: docker's daemon.json is untouched
            ["nvidia-ctk runtime configure --runtime=containerd", "systemctl restart containerd"],
            # configured and never restarted: the running daemon still has what it read at its start
            ["nvidia-ctk runtime configure --runtime=docker"],
            # restarted only: --gpus works now (the toolkit's hook is found), --runtime=nvidia does not
            ["systemctl restart docker"],
            # the runtime written under another name than the one the jobs ask for
            [
                "nvidia-ctk runtime configure --runtime=docker --nvidia-runtime-name=nvidia-gpu",
                "systemctl restart docker",
            ],
        ],
    },
    "ctr-201": {
        "alternatives": [
            # the same, spelled with a space and the format named
            [f"nvidia-ctk cdi generate --format=yaml --output {SPEC}"],
            # regenerated, and docker restarted for good measure
            [GENERATE, "systemctl restart docker"],
        ],
        "wrong": [
            # docker restarted: the engine reads the same stale spec again
            ["systemctl restart docker"],
            # the runtime configured again: the runtime was never the problem
            ["nvidia-ctk runtime configure --runtime=docker", "systemctl restart docker"],
            # generated where no container engine looks
            ["nvidia-ctk cdi generate --output=/root/nvidia.yaml"],
        ],
    },
    "ctr-301": {
        "alternatives": [
            # the same, spelled with a space and the format named
            [f"nvidia-ctk cdi generate --format=yaml --output {SPEC}"],
            # devices named by index only: 0, 0:0, 0:1 and all are what the jobs use
            [f"{GENERATE} --device-name-strategy=index"],
            # docker restarted on the way (not needed: the engine reads the specs at each run)
            [GENERATE, "systemctl restart docker"],
        ],
        "wrong": [
            # generated where no container engine looks
            ["nvidia-ctk cdi generate --output=/root/nvidia.yaml"],
            # a JSON spec beside the stale YAML one: the stale devices are still defined
            ["nvidia-ctk cdi generate --output=/etc/cdi/nvidia.json"],
            # the spec emptied instead of regenerated: no device resolves at all
            [{SPEC: ""}],
            # the old partitioning back, so that the old spec is right again
            ["nvidia-smi mig -i 0 -dci", "nvidia-smi mig -i 0 -dgi", "nvidia-smi mig -i 0 -cgi 7g.80gb -C"],
        ],
    },
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    "ctr-101": [
        # daemon.json edited by hand with a comma missing: docker does not come back after the restart
        ([{DAEMON_JSON: BY_HAND_TYPO}, "systemctl restart docker"], "services.active"),
        # configured and restarted, then containerd stopped on the way out
        (
            ["nvidia-ctk runtime configure --runtime=docker", "systemctl restart docker", "systemctl stop containerd"],
            "services.active",
        ),
    ],
    "ctr-201": [
        # regenerated, then containerd stopped on the way out
        ([GENERATE, "systemctl stop containerd"], "services.active"),
    ],
    "ctr-301": [
        # regenerated, then docker left stopped
        ([GENERATE, "systemctl stop docker"], "services.active"),
        # regenerated, then GPU 0 repartitioned once more: the spec is stale again
        (
            [
                GENERATE,
                "nvidia-smi mig -i 0 -dci",
                "nvidia-smi mig -i 0 -dgi",
                "nvidia-smi mig -i 0 -cgi 3g.40gb,2g.20gb,1g.10gb -C",
            ],
            "containers.cdi",
        ),
    ],
}
