"""``gpulab slurm health|prolog|epilog``: gpulab as slurmd's HealthCheckProgram, Prolog and Epilog (docs/SLURM.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from assessor.slurm.hook import Mode


def _options(f: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--profile",
                "-p",
                required=True,
                metavar="NAME|FILE",
                help="The profile whose fast: true checks run (see `gpulab profiles show NAME`).",
            ),
            click.option(
                "--target",
                "-t",
                default="local",
                show_default=True,
                metavar="TARGET",
                help="Where the facts come from: this node (local), or a simulated one to try it out (mock:FILE.json).",
            ),
            click.option(
                "--node",
                metavar="NAME",
                help="The Slurm node to drain or resume [default: $SLURMD_NODENAME, else hostname -s].",
            ),
            click.option(
                "--deadline",
                type=click.FloatRange(0.5),
                metavar="SECONDS",
                help="No verdict by then: the tools are killed and the node drained "
                "[default: health 40, prolog 8, epilog 20].",
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(0.1),
                metavar="SECONDS",
                help="Seconds each tool may take on the node [default: half the deadline].",
            ),
            click.option(
                "--scontrol",
                "scontrol_program",
                default="scontrol",
                show_default=True,
                metavar="PATH",
                help="The scontrol to read and change the node's state with (SLURM_CONF names the cluster).",
            ),
        ]
    ):
        f = option(f)
    return f


@click.group()
def slurm() -> None:
    """Run by slurmd: check this node's GPUs, drain it on a problem, resume it when gpulab's problem is gone.

    \b
    The checks are the profile's fast: true ones. On a failed or errored check, a tool that hangs past the
    deadline, or a node gpulab cannot assess, the node is drained with a reason naming the check and what
    it saw ("gpulab: gpu.xid Xid 79 ..."). A node gpulab drained is resumed once that check passes; a node
    drained by anyone else is never touched.
    """


def _run(mode: Mode, options: dict[str, Any]) -> None:
    import os
    import sys
    import time

    from assessor.errors import GpulabError
    from assessor.neutralise import message
    from assessor.secrets import redact
    from assessor.slurm import hook, reason
    from assessor.slurm.run import assess_within, node_name, respond
    from assessor.slurm.scontrol import ScontrolCli

    start = time.monotonic()
    deadline = options["deadline"] or hook.DEADLINE_S[mode]
    timeout = options["timeout"] or deadline / 2
    try:
        node = node_name(options["node"], os.environ)
    except GpulabError as exc:  # no node to drain: only the exit code can say it
        click.echo(message(redact(str(exc)), prefix=f"gpulab slurm {mode}: error: "))
        sys.exit(hook.EXIT_BAD_INPUT)
    try:
        from assessor.assess.profiles import load
        from assessor.targets import open_target

        profile = hook.fast_checks(load(options["profile"]))
        target = open_target(options["target"])
    except GpulabError as exc:
        finding = reason.broken(str(exc), bad_input=True)
    else:
        finding = assess_within(target, profile, timeout=timeout, deadline=deadline)
    report = respond(mode, node, finding, ScontrolCli(options["scontrol_program"]), time.monotonic() - start)
    for line in report.lines():
        click.echo(message(redact(line)))
    sys.stdout.flush()
    sys.exit(report.exit_code)


@slurm.command()
@_options
def health(**options: Any) -> None:
    """slurmd's HealthCheckProgram: drains the node itself (slurmd only logs the exit code).

    \b
    Exit codes: 0 healthy, 1 a problem (the node drained), 2 bad input, 3 scontrol failed.
    """
    _run("health", options)


@slurm.command()
@_options
def prolog(**options: Any) -> None:
    """slurmd's Prolog: before a job, a non-zero exit has slurmd drain the node and requeue the job held.

    \b
    Exit codes: 0 healthy, 1 a problem (the node drained), 2 bad input.
    """
    _run("prolog", options)


@slurm.command()
@_options
def epilog(**options: Any) -> None:
    """slurmd's Epilog: after a job, a non-zero exit has slurmd drain the node.

    \b
    Exit codes: 0 healthy, 1 a problem (the node drained), 2 bad input.
    """
    _run("epilog", options)
