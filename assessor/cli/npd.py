"""``gpulab npd``: a node-problem-detector custom plugin (exit 0 OK, 1 problem, 2 unknown; one short line)."""

from __future__ import annotations

import click

from assessor.cli.options import active_option
from assessor.cli.serve import node_options


@click.command()
@click.argument("checks_arg", metavar="CHECK[,CHECK...]")
@click.option("--profile", "-p", metavar="NAME|FILE", help="Take the checks' parameters from this profile.")
@click.option("--target", "-t", default="local", show_default=True, metavar="TARGET", help="The node to check.")
@click.option(
    "--timeout", type=click.FloatRange(0.1), default=10.0, show_default=True, help="Seconds per command on the node."
)
@click.option(
    "--deadline",
    type=click.FloatRange(0.1),
    default=40.0,
    show_default=True,
    metavar="SECONDS",
    help="No verdict by then: exit 2 (unknown) at once. Keep it under NPD's rule timeout.",
)
@click.option(
    "--max-output",
    type=click.IntRange(1),
    default=80,
    show_default=True,
    metavar="BYTES",
    help="The message's length at most (NPD's max_output_length).",
)
@active_option
@node_options
def npd(
    checks_arg: str,
    profile: str | None,
    target: str,
    timeout: float,
    deadline: float,
    max_output: int,
    active: str,
    node_name: str | None,
    label_node: bool,
    label_key: str,
) -> None:
    """Check this node as node-problem-detector's custom plugin: one line on stdout, one exit code.

    \b
    Exit codes (NPD's plugin protocol):
      0  OK: the checks passed (or only warned, or some were skipped)
      1  NonOK: a check failed (the line names it and what it saw)
      2  Unknown: a check errored, nothing could be seen, the deadline passed, or bad input

    The line is cut to --max-output bytes, as NPD would. --with runs tests that load the GPUs
    (for a scheduled Job that holds them, not for NPD's own invocations).
    """
    import os
    import sys
    import threading
    from typing import Any

    from assessor.assess.pipeline import Job, assess_one
    from assessor.cli.options import active_tests
    from assessor.cli.serve import labeller
    from assessor.errors import GpulabError
    from assessor.export import npd as plugin
    from assessor.neutralise import message, visible

    try:
        ids = plugin.checks_of(checks_arg)
        base = None
        if profile:
            from assessor.assess.profiles import load

            base = load(profile)
        prof = plugin.profile_for(ids, base)
        tests = active_tests(active)
        mark = labeller(node_name, label_node, label_key)
        from assessor.targets import open_target

        job = Job(node_name or target, open_target(target, name=node_name))
    except GpulabError as exc:
        # NPD reads stdout only: the reason goes there, as the condition's message
        click.echo(plugin.cut(visible(f"gpulab: {exc}"), max_output))
        sys.exit(plugin.EXIT_UNKNOWN)

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = assess_one(job, prof, timeout=timeout, active=tests)
        except Exception as exc:  # reported as unknown below, never a traceback on NPD's stdout
            box["error"] = exc

    worker = threading.Thread(target=run, name="gpulab-npd", daemon=True)
    worker.start()
    worker.join(deadline)
    stalled = worker.is_alive()
    if stalled:
        verdict = plugin.Verdict(
            "unknown", f"gpulab: no verdict within {deadline:g}s: a tool on the node did not answer"
        )
    elif "error" in box:
        verdict = plugin.Verdict("unknown", visible(f"gpulab: {box['error']}"))
    else:
        verdict = plugin.verdict(box["result"])
    if mark is not None:
        try:
            mark(verdict)
        except Exception as exc:  # the verdict still goes to NPD
            click.echo(message(f"cannot label node {node_name}: {exc}", prefix="gpulab npd: "), err=True)
    click.echo(plugin.cut(verdict.message, max_output))
    if stalled:
        sys.stdout.flush()
        os._exit(verdict.exit_code)  # the stalled tool's thread is not waited for
    sys.exit(verdict.exit_code)
