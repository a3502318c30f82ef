"""``gpulab sim``: simulated nodes, tool shims for your PATH, injected faults."""

from __future__ import annotations

from typing import Any

import click


def _shown(line: Any) -> str:
    """A line quoting a path, a host or GPU name (a recorded node's), a fault's option: the one rule, and
    several lines kept apart from the lines gpulab prints (:func:`assessor.neutralise.message`)."""
    from assessor.neutralise import message

    return message(line)


@click.group()
def sim() -> None:
    """The simulator: simulated nodes, tool shims for your PATH, injected faults."""


@sim.command("init")
@click.option(
    "--fixture", default="hgx-h100", show_default=True, help="A shipped fixture (`gpulab sim fixtures` lists them)."
)
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="State file to write.")
@click.option("--host", default=None, help="Host name the simulated node reports.")
@click.option("--force", is_flag=True, help="Overwrite an existing state file.")
@click.option(
    "--peer",
    "peers",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="An existing node's state file: put the new node on its fabric (each reaches the other by host name). "
    "Repeatable.",
)
def sim_init(fixture: str, state_path: str, host: str | None, force: bool, peers: tuple[str, ...]) -> None:
    """Create a simulated node's state file (and its configuration files) from a fixture.

    With --peer, the two nodes share one fabric: `ib_write_bw -d mlx5_0 HOST` on one measures against the
    other (docs/EAST_WEST.md).
    """
    from assessor.sim.node_init import init_node

    if peers:
        from assessor.errors import InputError
        from assessor.sim.state import load_state

        if host is None:
            raise InputError("--peer needs --host: two nodes on one fabric need two names")
        for peer in peers:
            if load_state(peer).host.lower() == host.lower():
                raise InputError(f"{peer} is already named {host}: give the new node another name (--host)")
    for line in init_node(fixture, state_path, host=host, force=force):
        click.echo(_shown(line))
    if peers:
        from assessor.sim.peers import join

        for peer in peers:
            mine, theirs = join(state_path, peer)
            click.echo(_shown(f"{mine} and {theirs} are on one fabric (each is the other's peer)"))


@sim.command("shell", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--candidate", default=None, help="Whose open lab to enter when STATE is left out (default: you).")
@click.option(
    "--db",
    default=None,
    type=click.Path(dir_okay=False),
    help="Attempts database (default: $GPULAB_DB, else ~/.local/share/gpulab/attempts.db).",
)
@click.argument("words", metavar="[STATE] [-- COMMAND...]", nargs=-1, type=click.UNPROCESSED)
def sim_shell(words: tuple[str, ...], candidate: str | None, db: str | None) -> None:
    """Enter the simulated node in STATE as a real Linux machine, or run one command in it.

    The node has its own host name, processes, files and devices (user, mount, PID, UTS, IPC and network
    namespaces through unshare): nvidia-smi, ibstat, systemctl ... sit at their real paths, its GPU daemons
    and jobs are real processes, and nothing typed inside reaches the host. Without STATE (a first word that
    is no state file): the node of your open lab. `gpulab sim shell STATE -- COMMAND ARGS...` runs one command
    and exits with its status.
    """
    from pathlib import Path

    from assessor.sim.machine.enter import enter

    args = [w for w in words]
    if args and args[0] == "--":
        args = args[1:]
        state_path = None
    elif args and (Path(args[0]).is_file() or args[0].endswith(".json")):
        state_path = args.pop(0)
        if args and args[0] == "--":
            args = args[1:]
    else:
        state_path = None
    if state_path is None:
        from assessor.labs.attempts import default_candidate, open_starts, opened

        with opened(db) as conn:
            starts = [s for s in open_starts(conn, candidate or default_candidate()) if s.target.startswith("mock:")]
        if not starts:
            from assessor.errors import InputError

            raise InputError("no open lab on a simulated node: name the node (gpulab sim shell STATE)")
        state_path = max(starts, key=lambda s: s.recorded_at).target.removeprefix("mock:")
    enter(state_path, args)


@sim.command("login")
@click.argument("state_path", metavar="STATE", type=click.Path(dir_okay=False))
@click.option("--admin", is_flag=True, help="This key may also run `gpulab-node VERB` on the host (instructors).")
def sim_login(state_path: str, admin: bool) -> None:
    """What an SSH login to the simulated node in STATE runs (sshd's forced command; docs/NODE.md).

    The session lands inside the node as `gpulab sim shell` does: a login shell, the client's command
    ($SSH_ORIGINAL_COMMAND, run by the node's bash) or SFTP. With --admin, a `gpulab-node probe|flags|start|
    solve|reset LAB` line runs on the host instead, where the node's state is.
    """
    import os
    import sys

    from assessor.sim.machine.enter import enter
    from assessor.sim.machine.login import admin_words, session_command

    original = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    words = admin_words(original)
    if words is not None:
        if not admin:
            click.echo("gpulab-node: command not found", err=True)
            sys.exit(127)
        from assessor.labs.node_admin import admin as run_admin

        status, lines = run_admin(state_path, words)
        for line in lines:
            click.echo(line)
        sys.exit(status)
    enter(state_path, session_command(original))


@sim.command("stop")
@click.argument("state_path", metavar="STATE", type=click.Path(dir_okay=False))
def sim_stop(state_path: str) -> None:
    """Shut the running simulated node in STATE down (its processes end; its files and state stay)."""
    from assessor.sim.machine.enter import stop

    click.echo(_shown(f"{state_path}: {'stopped' if stop(state_path) else 'was not running'}"))


@sim.command("shims")
@click.argument("directory", type=click.Path(file_okay=False))
def sim_shims(directory: str) -> None:
    """Write executables named like the real tools (nvidia-smi, ibstat, ...) into DIRECTORY.

    Put DIRECTORY first on PATH and set GPULAB_SIM_STATE to a state file: the tools then
    act on that simulated node.
    """
    from assessor.sim.shims import shims_report, write_shims

    written = write_shims(directory)
    for line in shims_report(directory, written):
        click.echo(_shown(line))


@sim.command("nvml-lib")
@click.argument("directory", type=click.Path(file_okay=False))
def sim_nvml_lib(directory: str) -> None:
    """Write the simulator's libnvidia-ml.so.1 into DIRECTORY: NVML's C API answered by a simulated node.

    Any program that loads NVML (gpustat, nvitop, py3nvml, C, Go) then runs unchanged on the node in
    GPULAB_SIM_STATE:  LD_LIBRARY_PATH=DIRECTORY GPULAB_SIM_STATE=node.json gpustat
    Inside `gpulab sim shell` the library is already at its real path.
    """
    import shlex

    from assessor.sim.nvml_lib.build import write_library

    written = write_library(_path(directory))
    quoted = shlex.quote(str(written.parent))
    click.echo(_shown(f"wrote {written} (and libnvidia-ml.so)"))
    click.echo(_shown(f"use it: LD_LIBRARY_PATH={quoted} GPULAB_SIM_STATE=STATE PROGRAM"))


def _path(directory: str) -> Any:
    from pathlib import Path

    return Path(directory).resolve()


def _fault_options(options: tuple[str, ...]) -> dict[str, Any]:
    import yaml

    from assessor.errors import InputError

    kwargs: dict[str, Any] = {}
    for item in options:
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(f"--option {item}: expected KEY=VALUE")
        kwargs[key] = yaml.safe_load(value)
    return kwargs


@sim.command("fault")
@click.argument("state_path", metavar="STATE", type=click.Path(dir_okay=False))
@click.argument("fault", required=False)
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="Fault option, e.g. gpu=3.")
@click.option("--list", "list_faults", is_flag=True, help="List the faults that can be injected.")
def sim_fault(state_path: str, fault: str | None, options: tuple[str, ...], list_faults: bool) -> None:
    """Inject FAULT into the simulated node in STATE (``--list`` shows them)."""
    from assessor.sim import faults

    if list_faults or not fault:
        for name, spec in sorted({**faults.FAULTS, **faults.CONDITIONS}.items()):
            click.echo(f"{name:24} {spec.description}")
        return
    click.echo(_shown(faults.inject(state_path, fault, **_fault_options(options))))


@sim.command("repair")
@click.argument("state_path", metavar="STATE", type=click.Path(dir_okay=False))
@click.argument("fault")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="Which device, e.g. ca=mlx5_3.")
def sim_repair(state_path: str, fault: str, options: tuple[str, ...]) -> None:
    """Do the physical work that undoes FAULT: reseat a cable, reboot, replace a GPU.

    On a real node these are hands-on jobs no command does; on a simulated one, ask for them here.
    """
    from assessor.sim import faults

    click.echo(_shown(faults.repair(state_path, fault, **_fault_options(options))))


@sim.command("fixtures")
def sim_fixtures() -> None:
    """The simulated nodes that ship with gpulab."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    for name in fixture_names():
        state = load_fixture(name)
        model = state.gpus[0].name if state.gpus else "no GPU"
        click.echo(_shown(f"{name:12} {len(state.gpus)} x {model}"))


@sim.command("record")
@click.option("--from", "source", required=True, metavar="snapshot:DIR", help="A real node's snapshot directory.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="State file to write.")
@click.option("--force", is_flag=True, help="Overwrite an existing state file.")
def sim_record(source: str, out: str, force: bool) -> None:
    """Build a simulated copy of a real node from its snapshot.

    What the snapshot does not say is filled from the closest shipped fixture, and listed.
    """
    from pathlib import Path

    from assessor.errors import InputError
    from assessor.sim.record import record_command

    if Path(out).exists() and not force:
        raise InputError(f"{out}: already exists (use --force to replace it)")
    state, filled = record_command(source, out)
    # the host and GPU names come from a real node's snapshot: data, shown by the one rule
    click.echo(_shown(f"simulated node {state.host} ({len(state.gpus)} GPUs, from {state.fixture}) written to {out}"))
    if filled:
        click.echo(_shown(f"filled from the fixture ({len(filled)}): {', '.join(filled)}"))
