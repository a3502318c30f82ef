"""``gpulab serve``: the latest assessment as a Prometheus / OpenMetrics endpoint."""

from __future__ import annotations

from typing import Any

import click

from assessor.cli.options import Reach, check_options, reach_options


def node_options(f: Any) -> Any:
    """--node-name, --label-node and --label-key: the Kubernetes node a verdict is about and is written to."""
    for option in reversed(
        [
            click.option(
                "--node-name",
                metavar="NAME",
                help="This node's name: the host the results carry (in a pod, the node's, not the pod's), and "
                "the node --label-node writes to.",
            ),
            click.option(
                "--label-node",
                is_flag=True,
                help="Write the verdict to the Kubernetes node --node-name: label gpulab.io/KEY=true|false|unknown, "
                "two annotations and the condition Gpulab<Key> (in-cluster service account).",
            ),
            click.option(
                "--label-key",
                default="healthy",
                show_default=True,
                metavar="KEY",
                help="The name after gpulab.io/ of the label --label-node sets.",
            ),
        ]
    ):
        f = option(f)
    return f


def labeller(node_name: str | None, label_node: bool, label_key: str) -> Any:
    """A function that writes a verdict to the node, or None without --label-node (bad options: exit 2)."""
    if not label_node:
        return None
    from assessor.errors import InputError
    from assessor.export import nodes

    if not node_name:
        raise InputError("--label-node needs --node-name (in a pod: --node-name $(NODE_NAME) from spec.nodeName)")
    nodes.check_node_name(node_name)
    nodes.check_key(label_key)
    api = nodes.InClusterApi.from_environment()
    return lambda verdict: nodes.mark(api, node_name, verdict, key=label_key)


@click.command()
@reach_options
@check_options
@click.option(
    "--results",
    "results_file",
    type=click.Path(dir_okay=False),
    help="Serve this results file (`gpulab assess --json FILE`), read again when it changes, instead of assessing.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=9402, show_default=True, help="TCP port (0: any free).")
@click.option(
    "--bind", default="127.0.0.1", show_default=True, metavar="ADDRESS", help="Address to listen on (0.0.0.0: all)."
)
@click.option(
    "--interval",
    type=click.FloatRange(1.0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="A scrape starts a new assessment once the last one started this long ago.",
)
@node_options
def serve(
    reach: Reach,
    profile: str | None,
    check_opts: tuple[str, ...],
    results_file: str | None,
    port: int,
    bind: str,
    interval: float,
    node_name: str | None,
    label_node: bool,
    label_key: str,
) -> None:
    """Serve the latest assessment as Prometheus / OpenMetrics metrics on http://ADDRESS:PORT/metrics.

    A scrape never waits for an assessment: it gets the last results at once, and starts a new
    assessment in the background when the last one is older than --interval (one at a time, so a
    stalled tool holds no scrape). With --results, serves a results file instead. Runs until
    interrupted; exit 2 when the address cannot be had.
    """
    import threading
    from pathlib import Path

    from assessor.errors import InputError
    from assessor.export import serve as endpoint
    from assessor.neutralise import message

    def report(text: str) -> None:
        click.echo(message(text, prefix="gpulab serve: "), err=True)

    source: endpoint.Source
    if results_file:
        if reach.targets or reach.inventory or check_opts or profile:
            raise InputError("--results serves a results file: give no --target, --inventory, --profile or --check")
        source = endpoint.ResultsFile(Path(results_file), report)
        source.latest()
    else:
        source = endpoint.Assessments(
            assessment(reach, profile, check_opts, node_name, labeller(node_name, label_node, label_key), report),
            interval=interval,
            report=report,
        )
        source.refresh()  # the first assessment starts now, not at the first scrape
    server = endpoint.start(source, port=port, bind=bind)
    host = f"[{bind}]" if ":" in bind else bind
    click.echo(message(f"serving metrics on http://{host}:{server.server_port}/metrics", prefix="gpulab: "), err=True)
    try:
        threading.Event().wait()
    finally:
        server.shutdown()


def assessment(
    reach: Reach,
    profile: str | None,
    check_opts: tuple[str, ...],
    node_name: str | None,
    mark: Any,
    report: Any,
) -> Any:
    """A function that assesses the targets once and returns the results document (options checked now)."""
    from assessor.assess import fleet, profiles
    from assessor.assess import pipeline as runner
    from assessor.checks import result as results

    if profile:
        prof = profiles.load(profile)
    elif check_opts:
        prof = profiles.Profile("checks", "checks given on the command line", ())
    else:
        prof = profiles.everything()
    prof = runner.with_overrides(prof, list(check_opts))
    jobs = reach.jobs(default=("local",))
    if node_name:
        if len(jobs) != 1:
            raise click.UsageError("--node-name names the one node assessed: give one --target")
        jobs[0].label = node_name
        jobs[0].target.name = node_name

    def run() -> dict[str, Any]:
        done = fleet.run(jobs, prof, forks=reach.forks, timeout=reach.timeout)
        if mark is not None and len(done.results) == 1:
            from assessor.export.npd import verdict

            try:
                mark(verdict(done.results[0]))
            except Exception as exc:  # the API being away must not stop the metrics
                report(f"cannot label node {node_name}: {exc}")
        return results.document(done.results, prof.name)

    return run
