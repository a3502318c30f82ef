"""``gpulab k8s``: the manifests validated offline against the Kubernetes schemas; NPD's plugin config."""

from __future__ import annotations

import json
import shlex
from typing import Any

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from assessor.cli import main
from assessor.export import k8s

# the newest Kubernetes the schemas of kubernetes-validate know, and an older one still widely run
VERSIONS = (kubernetes_validate.latest_version(), "1.30")


def gpulab(*args: str) -> tuple[int, str, str]:
    run = CliRunner().invoke(main, list(args))
    return run.exit_code, run.stdout, run.stderr


def printed(*args: str) -> list[dict[str, Any]]:
    code, out, err = gpulab("k8s", "manifests", *args)
    assert code == 0, err
    return [doc for doc in yaml.safe_load_all(out) if doc is not None]


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objects}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_validates_against_the_kubernetes_schemas(version: str) -> None:
    objects = printed("--schedule", "0 3 * * *", "--job-nodes", "4")
    assert [o["kind"] for o in objects] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
        "CronJob",
    ]
    for obj in objects:
        # strict: a field the schema does not have (a typo, a field of another version) is an error too
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_validator_would_catch_a_wrong_manifest() -> None:
    daemonset = by_kind(printed())["DaemonSet"]
    daemonset["spec"]["template"]["spec"]["nodeSelectr"] = {"nvidia.com/gpu.present": "true"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, VERSIONS[0], strict=True)
    daemonset = by_kind(printed())["DaemonSet"]
    daemonset["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = ["500m"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, VERSIONS[0], strict=True)


def test_the_printed_yaml_is_the_objects_and_its_comments_change_nothing() -> None:
    plan = k8s.Plan(schedule="@weekly")
    text = k8s.render(k8s.manifests(plan))
    assert list(yaml.safe_load_all(text)) == k8s.manifests(plan)
    assert "# root only for CAP_SYSLOG" in text  # the one privilege is explained where it is granted


def test_the_daemonset_runs_on_gpu_nodes_with_the_least_privilege_it_needs() -> None:
    pod = by_kind(printed())["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod.get("hostNetwork") is not True and pod.get("hostPID") is not True
    [container] = pod["containers"]
    security = container["securityContext"]
    assert security["privileged"] is False and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}
    assert security["readOnlyRootFilesystem"] is True
    host_paths = [v for v in pod["volumes"] if "hostPath" in v]
    assert [v["hostPath"]["path"] for v in host_paths] == ["/etc/os-release"]
    mounted = {m["name"]: m for m in container["volumeMounts"]}
    assert all(mounted[v["name"]]["readOnly"] for v in host_paths)
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "384Mi"}
    assert "nvidia.com/gpu" not in container["resources"]["limits"]  # a monitor takes no GPU from workloads


def test_the_daemonset_serves_metrics_on_the_pods_address_and_labels_its_own_node() -> None:
    container = by_kind(printed("--port", "9500"))["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]}
    assert env["POD_IP"] == "status.podIP" and env["NODE_NAME"] == "spec.nodeName"
    args = container["args"]
    assert args[args.index("--bind") + 1] == "$(POD_IP)"
    assert args[args.index("--node-name") + 1] == "$(NODE_NAME)" and "--label-node" in args
    assert container["ports"] == [{"name": "metrics", "containerPort": 9500, "protocol": "TCP"}]


@pytest.mark.parametrize("kind", ["DaemonSet", "CronJob"])
def test_the_commands_in_the_manifests_are_ones_gpulab_accepts(kind: str) -> None:
    """Each container's command line parses with gpulab's own CLI (a renamed option would fail here)."""
    obj = by_kind(printed("--schedule", "@daily"))[kind]
    spec = obj["spec"] if kind == "DaemonSet" else obj["spec"]["jobTemplate"]["spec"]
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    args = [a.replace("$(POD_IP)", "10.1.2.3").replace("$(NODE_NAME)", "gpu-07") for a in container["args"]]
    command = main.get_command(None, args[0])  # type: ignore[arg-type]
    assert command is not None
    context = command.make_context(args[0], args[1:])
    assert context.params.get("node_name") == "gpu-07"


def test_the_cronjob_spreads_over_distinct_gpu_nodes_and_holds_their_gpus() -> None:
    cron = by_kind(printed("--schedule", "30 2 * * 0", "--job-gpus", "4", "--job-nodes", "3"))["CronJob"]
    assert cron["spec"]["schedule"] == "30 2 * * 0" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["completions"] == job["parallelism"] == 3
    pod = job["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= job["template"]["metadata"]["labels"].items()
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert "--with" in pod["containers"][0]["args"]


def test_the_rbac_allows_labelling_nodes_and_nothing_else() -> None:
    kinds = by_kind(printed("--namespace", "gpu-health"))
    assert kinds["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
    ]
    binding = kinds["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpulab", "namespace": "gpu-health"}]
    pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
    assert {o["metadata"].get("namespace") for o in kinds.values() if o["kind"] not in k8s.CLUSTER_WIDE} == {
        "gpu-health"
    }


def test_the_npd_config_is_a_valid_custom_plugin_monitor_running_gpulab_npd() -> None:
    code, out, _ = gpulab("k8s", "npd-config", "--npd-checks", "gpu.xid,gpu.count", "--npd-plugin", "/opt/gpulab")
    assert code == 0
    config = json.loads(out)
    assert config["plugin"] == "custom"
    plugin = config["pluginConfig"]
    assert plugin["max_output_length"] == 80 and plugin["concurrency"] >= 1
    [rule] = config["rules"]
    assert rule["type"] == "permanent" and rule["path"] == "/opt/gpulab"
    # NPD refuses a permanent rule whose condition has no default, and a rule timeout above the global one
    assert rule["condition"] in {c["type"] for c in config["conditions"]}
    assert seconds(rule["timeout"]) <= seconds(plugin["timeout"])
    args = rule["args"]
    assert args[:2] == ["npd", "gpu.xid,gpu.count"]
    assert float(args[args.index("--deadline") + 1]) < seconds(rule["timeout"])  # gpulab answers before NPD kills
    assert args[args.index("--max-output") + 1] == str(plugin["max_output_length"])
    context = main.get_command(None, "npd").make_context("npd", args[1:])  # type: ignore[union-attr,arg-type]
    assert context.params["checks_arg"] == "gpu.xid,gpu.count"
    # the same config travels in the manifests' ConfigMap
    configmap = by_kind(printed("--npd-checks", "gpu.xid,gpu.count", "--npd-plugin", "/opt/gpulab"))["ConfigMap"]
    assert json.loads(configmap["data"][k8s.NPD_CONFIG_FILE]) == config


def seconds(duration: str) -> float:
    assert duration.endswith("s"), duration
    return float(duration[:-1])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--schedule", "every night"], "--schedule"),
        (["--namespace", "GPU_Health"], "--namespace"),
        (["--npd-checks", "gpu.nope"], "gpu.nope"),
        (["--profile", "no-such-profile"], "--profile"),
        (["--image", "a b"], "--image"),
        (["--job-with", "burn:9"], "--with"),
    ],
)
def test_bad_options_are_refused_with_exit_2(args: list[str], says: str) -> None:
    code, out, err = gpulab("k8s", "manifests", *args)
    assert code == 2 and out == "" and says in err, shlex.join(args)


def test_the_cli_default_npd_checks_are_the_modules() -> None:
    from assessor.cli.k8s import NPD_CHECKS

    assert ",".join(k8s.DEFAULT_NPD_CHECKS) == NPD_CHECKS
