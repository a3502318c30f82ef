"""``gpulab k8s manifests`` and ``gpulab k8s npd-config``: gpulab on every GPU node of a Kubernetes cluster."""

from __future__ import annotations

from typing import Any

import click


def _ids(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


# assessor.export.k8s.DEFAULT_NPD_CHECKS (written out here: the CLI imports nothing until a command runs)
NPD_CHECKS = "driver.loaded,gpu.count,gpu.ecc_errors,gpu.row_remap,gpu.xid"


def plan_options(f: Any) -> Any:
    options = [
        click.option("--namespace", "-n", default="gpulab", show_default=True, help="Namespace of the objects."),
        click.option("--profile", "-p", default="any-gpu-node", show_default=True, help="Profile the node checks run."),
        click.option(
            "--npd-checks",
            default=NPD_CHECKS,
            show_default=True,
            metavar="CHECK[,CHECK...]",
            help="Checks node-problem-detector's plugin runs.",
        ),
        click.option(
            "--npd-plugin",
            default="/usr/local/bin/gpulab",
            show_default=True,
            metavar="PATH",
            help="Where gpulab is in node-problem-detector's image.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group()
def k8s() -> None:
    """Run gpulab on Kubernetes: manifests, node-problem-detector plugin config."""


@k8s.command()
@click.option("--image", default="gpulab:latest", show_default=True, help="Image with gpulab installed.")
@plan_options
@click.option("--schedule", metavar="CRON", help='Also a CronJob for tests that load the GPUs ("0 3 * * *", @weekly).')
@click.option("--port", type=click.IntRange(1, 65535), default=9402, show_default=True, help="Metrics port.")
@click.option(
    "--interval", type=click.IntRange(10), default=300, show_default=True, help="Seconds between assessments."
)
@click.option(
    "--runtime-class",
    default="nvidia",
    show_default=True,
    help="RuntimeClass that gives the container nvidia-smi and NVML ('' for none: the cluster's default runtime).",
)
@click.option("--job-checks", default="dcgm.diag", show_default=True, metavar="CHECK[,CHECK...]")
@click.option("--job-with", default="dcgm:1", show_default=True, metavar="TESTS", help="Active tests of the CronJob.")
@click.option("--job-gpus", type=click.IntRange(1), default=8, show_default=True, help="GPUs each CronJob pod takes.")
@click.option("--job-nodes", type=click.IntRange(1), default=1, show_default=True, help="Nodes one CronJob run covers.")
def manifests(
    image: str,
    namespace: str,
    profile: str,
    npd_checks: str,
    npd_plugin: str,
    schedule: str | None,
    port: int,
    interval: int,
    runtime_class: str,
    job_checks: str,
    job_with: str,
    job_gpus: int,
    job_nodes: int,
) -> None:
    """Print the Kubernetes objects (YAML) that run gpulab on every GPU node: namespace, RBAC for the
    node label, node-problem-detector's plugin config, the DaemonSet, and with --schedule a CronJob.

    Apply with `gpulab k8s manifests | kubectl apply -f -`.
    """
    from assessor import __version__
    from assessor.cli.options import active_tests
    from assessor.export import k8s as kube

    active_tests(job_with)
    plan = kube.Plan(
        image=image,
        namespace=namespace,
        profile=profile,
        port=port,
        interval=interval,
        runtime_class=runtime_class or None,
        npd_checks=_ids(npd_checks),
        npd_plugin=npd_plugin,
        schedule=schedule,
        job_checks=_ids(job_checks),
        job_with=job_with,
        job_gpus=job_gpus,
        job_nodes=job_nodes,
    )
    text = kube.render(kube.manifests(plan))  # bad options fail before a line is printed
    click.echo(f"# gpulab {__version__}: gpulab k8s manifests | kubectl apply -f -\n{text}", nl=False)


@k8s.command("npd-config")
@plan_options
def npd_config(namespace: str, profile: str, npd_checks: str, npd_plugin: str) -> None:
    """Print node-problem-detector's custom plugin monitor config (JSON) whose plugin is `gpulab npd`."""
    import json

    from assessor.export import k8s as kube

    plan = kube.Plan(namespace=namespace, profile=profile, npd_checks=_ids(npd_checks), npd_plugin=npd_plugin).check()
    click.echo(json.dumps(kube.npd_config(plan), indent=2))
