"""The Kubernetes objects that run gpulab on every GPU node, and node-problem-detector's plugin config.

Pure: a :class:`Plan` in, plain dictionaries out (validated against the Kubernetes schemas by the tests),
rendered as one YAML stream with a comment above each choice a reviewer would ask about.

- a Namespace, a ServiceAccount, a ClusterRole that may get and patch nodes and patch their status (the
  label and condition of :mod:`assessor.export.nodes`) and its ClusterRoleBinding;
- a ConfigMap holding NPD's custom plugin monitor config (:func:`npd_config`), to mount into NPD;
- a DaemonSet on every node labelled ``nvidia.com/gpu.present=true`` (GPU feature discovery's label) that
  runs ``gpulab serve`` on the pod's IP: the metrics for Prometheus, the node's label and condition;
- with a schedule, a CronJob whose Job takes the GPUs of ``job_nodes`` nodes (one pod a node) for the
  tests that load them (``dcgmi diag``), which a DaemonSet must not run beside the workloads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from assessor.errors import InputError

APP = "gpulab"
GPU_NODE_LABEL = "nvidia.com/gpu.present"  # set by NVIDIA GPU feature discovery (GPU operator)
GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource and the usual GPU-node taint
NPD_CONDITION = "GPUProblem"
CLUSTER_WIDE = ("Namespace", "ClusterRole", "ClusterRoleBinding")  # the kinds without a namespace
NPD_CONFIG_FILE = "gpulab-plugin-monitor.json"
DEFAULT_NPD_CHECKS = ("driver.loaded", "gpu.count", "gpu.ecc_errors", "gpu.row_remap", "gpu.xid")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")
_CRON_MACROS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


@dataclass(frozen=True)
class Plan:
    """What the manifests run, and where."""

    image: str = "gpulab:latest"
    namespace: str = "gpulab"
    profile: str = "any-gpu-node"
    port: int = 9402
    interval: int = 300  # seconds between assessments a scrape may start
    runtime_class: str | None = "nvidia"
    npd_checks: tuple[str, ...] = DEFAULT_NPD_CHECKS
    npd_plugin: str = "/usr/local/bin/gpulab"  # where gpulab is inside NPD's image
    schedule: str | None = None
    job_checks: tuple[str, ...] = ("dcgm.diag",)
    job_with: str = "dcgm:1"
    job_gpus: int = 8
    job_nodes: int = 1

    def check(self) -> Plan:
        """The plan, or InputError naming the option that is wrong."""
        if not _DNS_LABEL.match(self.namespace):
            raise InputError(f"--namespace {self.namespace!r}: not a namespace name (lower-case DNS label)")
        if not self.image or any(c.isspace() for c in self.image):
            raise InputError(f"--image {self.image!r}: an image reference has no spaces")
        if self.runtime_class is not None and not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", self.runtime_class):
            raise InputError(f"--runtime-class {self.runtime_class!r}: not a RuntimeClass name")
        if self.schedule is not None:
            check_schedule(self.schedule)
        check_profile(self.profile)
        for option, ids in (("--npd-checks", self.npd_checks), ("--job-checks", self.job_checks)):
            if not ids:
                raise InputError(f"{option}: give at least one check id")
            check_ids(ids, option)
        return self


def check_schedule(text: str) -> str:
    """A cron schedule as a CronJob takes it: five fields, or a macro such as @hourly."""
    fields = text.split()
    if text.strip() in _CRON_MACROS or (len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields)):
        return text
    raise InputError(f'--schedule {text!r}: a cron schedule has five fields ("0 3 * * *") or is @daily, @hourly...')


def check_profile(name: str) -> str:
    """A shipped profile's name is checked here; a path is a file in the image, which gpulab cannot see."""
    from pathlib import PurePosixPath

    from assessor.assess.profiles import shipped

    if PurePosixPath(name).suffix or "/" in name or name in shipped():
        return name
    raise InputError(
        f"--profile {name!r}: no such shipped profile ({', '.join(shipped())}); or give a path in the image"
    )


def check_ids(ids: tuple[str, ...], option: str) -> None:
    from assessor import checks

    unknown = [i for i in ids if i not in checks.REGISTRY]
    if unknown:
        raise InputError(f"{option}: no check {unknown[0]!r} (see `gpulab checks list`)")


def _labels(plan: Plan, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": component}


def _meta(plan: Plan, name: str, component: str, *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = plan.namespace
    meta["labels"] = _labels(plan, component)
    return meta


def _env_from(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def npd_config(plan: Plan) -> dict[str, Any]:
    """NPD's custom plugin monitor config: one permanent rule, ``gpulab npd CHECKS``, behind the node
    condition ``GPUProblem`` (True when a check failed, as NPD's problem conditions read)."""
    return {
        "plugin": "custom",
        "pluginConfig": {
            "invoke_interval": "60s",
            "timeout": "45s",
            "max_output_length": 80,
            "concurrency": 1,
            "enable_message_change_based_condition_update": False,
        },
        "source": "gpulab-custom-plugin-monitor",
        "metricsReporting": True,
        "conditions": [
            {"type": NPD_CONDITION, "reason": "GPUIsHealthy", "message": "gpulab: the GPU checks pass"},
        ],
        "rules": [
            {
                "type": "permanent",
                "condition": NPD_CONDITION,
                "reason": "GPUCheckFailed",
                "path": plan.npd_plugin,
                "args": [
                    "npd",
                    ",".join(plan.npd_checks),
                    "--profile",
                    plan.profile,
                    "--deadline",
                    "40",  # under the rule's timeout: gpulab answers Unknown itself before NPD kills it
                    "--max-output",
                    "80",
                ],
                "timeout": "45s",
            }
        ],
    }


def _security(*, root_for_dmesg: bool) -> dict[str, Any]:
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if root_for_dmesg:
        context["runAsUser"] = 0
        context["runAsNonRoot"] = False
        context["capabilities"]["add"] = ["SYSLOG"]
    else:
        context["runAsUser"] = 65534
        context["runAsNonRoot"] = True
    return context


def _pod_basics(plan: Plan) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceAccountName": APP,
        "automountServiceAccountToken": True,
        "nodeSelector": {GPU_NODE_LABEL: "true"},
        "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
    }
    if plan.runtime_class:
        spec["runtimeClassName"] = plan.runtime_class
    return spec


def _volumes() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volumes: list[dict[str, Any]] = [
        {"name": "host-os-release", "hostPath": {"path": "/etc/os-release", "type": "File"}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "host-os-release", "mountPath": "/etc/os-release", "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    return volumes, mounts


def daemonset(plan: Plan) -> dict[str, Any]:
    volumes, mounts = _volumes()
    container = {
        "name": APP,
        "image": plan.image,
        "command": ["gpulab"],
        "args": [
            "serve",
            "--target",
            "local",
            "--profile",
            plan.profile,
            "--port",
            str(plan.port),
            "--bind",
            "$(POD_IP)",
            "--interval",
            str(plan.interval),
            "--node-name",
            "$(NODE_NAME)",
            "--label-node",
        ],
        "env": [
            _env_from("NODE_NAME", "spec.nodeName"),
            _env_from("POD_IP", "status.podIP"),
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
        ],
        "ports": [{"name": "metrics", "containerPort": plan.port, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": "20m", "memory": "96Mi"},
            "limits": {"cpu": "500m", "memory": "384Mi"},
        },
        "securityContext": _security(root_for_dmesg=True),
        "volumeMounts": mounts,
    }
    pod = {
        **_pod_basics(plan),
        "priorityClassName": "system-node-critical",
        "terminationGracePeriodSeconds": 10,
        "containers": [container],
        "volumes": volumes,
    }
    selector = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": "node-check"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(plan, APP, "node-check"),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {
                    "labels": _labels(plan, "node-check"),
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(plan.port),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": pod,
            },
        },
    }


def cronjob(plan: Plan) -> dict[str, Any]:
    volumes, mounts = _volumes()
    component = "deep-check"
    container = {
        "name": APP,
        "image": plan.image,
        "command": ["gpulab"],
        "args": [
            "npd",
            ",".join(plan.job_checks),
            "--profile",
            plan.profile,
            "--with",
            plan.job_with,
            "--timeout",
            "900",
            "--deadline",
            "1500",
            "--max-output",
            "1024",
            "--node-name",
            "$(NODE_NAME)",
            "--label-node",
            "--label-key",
            component,
        ],
        "env": [_env_from("NODE_NAME", "spec.nodeName")],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "2", "memory": "1Gi", GPU_RESOURCE: str(plan.job_gpus)},
        },
        "securityContext": _security(root_for_dmesg=True),
        "volumeMounts": mounts,
    }
    pod = {
        **_pod_basics(plan),
        "restartPolicy": "Never",
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/component": component}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "containers": [container],
        "volumes": volumes,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(plan, f"{APP}-{component}", component),
        "spec": {
            "schedule": plan.schedule,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 600,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "completionMode": "Indexed",
                    "completions": plan.job_nodes,
                    "parallelism": plan.job_nodes,
                    "backoffLimitPerIndex": 0,
                    "activeDeadlineSeconds": 1800,
                    "ttlSecondsAfterFinished": 86400,
                    "template": {"metadata": {"labels": _labels(plan, component)}, "spec": pod},
                }
            },
        },
    }


def rbac(plan: Plan) -> list[dict[str, Any]]:
    role_name = f"{APP}-node-labeller"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(plan, APP, "node-check")},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(plan, role_name, "node-check", namespaced=False),
            "rules": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
                {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(plan, role_name, "node-check", namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": [{"kind": "ServiceAccount", "name": APP, "namespace": plan.namespace}],
        },
    ]


def manifests(plan: Plan) -> list[dict[str, Any]]:
    """Every object, in the order ``kubectl apply`` needs them."""
    plan.check()
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": plan.namespace, "labels": _labels(plan, "node-check")},
        },
        *rbac(plan),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(plan, f"{APP}-npd", "npd-plugin"),
            "data": {NPD_CONFIG_FILE: json.dumps(npd_config(plan), indent=2) + "\n"},
        },
        daemonset(plan),
    ]
    if plan.schedule is not None:
        objects.append(cronjob(plan))
    return objects


# Comments put above the first line, in a document of that kind, that starts with the key: why a setting is
# what it is. They change nothing a parser reads.
NOTES: dict[str, list[tuple[str, str]]] = {
    "ClusterRole": [
        ("rules:", "get and patch nodes: the gpulab.io/* label and annotations; nodes/status: the Gpulab* condition"),
    ],
    "ConfigMap": [
        (
            "data:",
            "node-problem-detector's custom plugin monitor: mount this file into NPD's config folder and add it "
            "to --config.custom-plugin-monitor; NPD's image needs gpulab at the plugin path",
        ),
    ],
    "DaemonSet": [
        ("nodeSelector:", "GPU nodes only: the label NVIDIA GPU feature discovery sets"),
        ("tolerations:", "GPU nodes are often tainted nvidia.com/gpu:NoSchedule"),
        ("runtimeClassName:", "the NVIDIA container runtime mounts nvidia-smi and libnvidia-ml into the container"),
        (
            "- name: NVIDIA_VISIBLE_DEVICES",
            "see every GPU without taking one from the device plugin (a monitor, "
            "like dcgm-exporter); utility = nvidia-smi and NVML only",
        ),
        ("- --bind", "the pod's own address: the metrics are reachable from the pod network, not the node's"),
        (
            "securityContext:",
            "root only for CAP_SYSLOG: the driver's Xid errors are in the kernel log (dmesg). Not "
            "privileged, every other capability dropped, read-only root file system",
        ),
        ("- name: host-os-release", "the node's OS, not the image's, is what node.os checks"),
        ("resources:", "one assessment at a time runs nvidia-smi and reads NVML: small, bounded"),
    ],
    "CronJob": [
        (
            "schedule:",
            "Kubernetes starts one Job per schedule, not one pod per node: the Job below spreads its "
            "pods over distinct GPU nodes (anti-affinity) and takes their GPUs, so the diagnostics never run beside "
            "a workload",
        ),
        ("backoffLimitPerIndex:", "a node whose checks fail is not tried again; the other nodes' pods go on"),
        ("securityContext:", "root only for CAP_SYSLOG (the kernel log); not privileged"),
    ],
}


def render(objects: list[dict[str, Any]]) -> str:
    """The objects as one YAML stream (``kubectl apply -f -``), with the comments of :data:`NOTES`."""
    import textwrap

    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text_block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        # a file kept in a ConfigMap reads as itself (a literal block), not as one escaped string
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text_block)
    parts = []
    for obj in objects:
        text = yaml.dump(obj, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=120)
        notes = list(NOTES.get(obj.get("kind", ""), []))
        lines = []
        for line in text.splitlines():
            stripped = line.lstrip()
            for i, (start, note) in enumerate(notes):
                if stripped.startswith(start):
                    indent = line[: len(line) - len(stripped)]
                    lines += [f"{indent}# {part}" for part in textwrap.wrap(note, 110 - len(indent))]
                    del notes[i]
                    break
            lines.append(line)
        parts.append("\n".join(lines) + "\n")
    return "---\n" + "---\n".join(parts)
