"""The ``gpulab`` command line: a thin layer of click commands. Imports stay lazy so
``gpulab --help`` starts at once."""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any

import click

from assessor import __version__


class _Group(click.Group):
    """Turns GpulabError into a one-line message and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        from assessor.errors import GpulabError

        try:
            return super().invoke(ctx)
        except GpulabError as exc:
            click.echo(f"gpulab: error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpulab")
def main() -> None:
    """gpulab: GPU-cluster readiness lab and skills assessor.

    Capture a node's tool outputs, check them against a readiness profile, practise on a
    simulated node. Targets: local, snapshot:DIR, mock:NAME, mock:FILE.json, ssh://[user@]host[:port].
    """


def _target_options(f: Any) -> Any:
    """Options every command that reaches targets shares."""
    options = [
        click.option(
            "--target",
            "-t",
            "targets",
            multiple=True,
            metavar="TARGET",
            help="local, snapshot:DIR, mock:NAME, mock:FILE.json, ssh://[user@]host[:port] (repeatable).",
        ),
        click.option("--inventory", "-i", metavar="FILE", help="Ansible inventory (YAML, INI, script or plugin)."),
        click.option(
            "--limit", "-l", metavar="PATTERN", help="Hosts or groups of the inventory, as Ansible's --limit."
        ),
        click.option(
            "--forks", type=click.IntRange(1, 1024), default=32, show_default=True, help="Targets handled at once."
        ),
        click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds per command."),
        click.option(
            "--host-timeout", type=float, default=600.0, show_default=True, help="Seconds for one whole target."
        ),
        click.option(
            "--accept-new-host-keys",
            is_flag=True,
            help="Trust and remember unknown SSH host keys (fresh lab VMs); changed keys are still refused.",
        ),
        click.option("--identity", metavar="KEYFILE", help="SSH private key (else agent, inventory, ~/.ssh)."),
        click.option("--known-hosts", metavar="FILE", help="known_hosts file besides ~/.ssh/known_hosts."),
    ]

    @functools.wraps(f)
    def packed(**kwargs: Any) -> Any:
        reach = Reach(**{name: kwargs.pop(name) for name in Reach.__dataclass_fields__})
        return f(reach=reach, **kwargs)

    for option in reversed(options):
        packed = option(packed)
    return packed


@dataclasses.dataclass
class Reach:
    """Which targets a command works on and how to reach them (the shared options)."""

    targets: tuple[str, ...]
    inventory: str | None
    limit: str | None
    forks: int
    timeout: float
    host_timeout: float
    accept_new_host_keys: bool
    identity: str | None
    known_hosts: str | None

    def jobs(self, default: tuple[str, ...] = ()) -> list[Any]:
        from assessor.assess.fleet import Job
        from assessor.targets import TargetOptions, open_target

        targets = self.targets or (() if self.inventory else default)
        if not targets and not self.inventory:
            raise click.UsageError(
                "give --target (local, snapshot:DIR, mock:NAME, ssh://host, ...) or --inventory FILE"
            )
        if self.limit and not self.inventory:
            raise click.UsageError("--limit selects hosts of an --inventory")
        options = TargetOptions(
            accept_new_host_keys=self.accept_new_host_keys,
            identity=self.identity,
            known_hosts=self.known_hosts,
            host_timeout=self.host_timeout,
        )
        jobs = [Job(spec, open_target(spec, options)) for spec in targets]
        if self.inventory:
            from assessor.targets import inventory as inv

            for host in inv.load(self.inventory, self.limit):
                ssh = host.ssh if host.target.startswith("ssh://") else None
                jobs.append(Job(host.name, open_target(host.target, options, name=host.name, ssh=ssh)))
        return jobs


def _active_tests(text: str) -> tuple[str, ...]:
    from assessor.capture.run import active_command
    from assessor.errors import InputError

    tests = tuple(t.strip() for t in text.split(",") if t.strip())
    for test in tests:
        try:
            active_command(test)
        except InputError as exc:
            raise InputError(f"--with: {exc}") from None
    return tests


@main.command()
@_target_options
@click.option("--profile", "-p", metavar="NAME|FILE", help="Readiness profile (see `gpulab profiles list`).")
@click.option(
    "--check",
    "-c",
    "check_opts",
    multiple=True,
    metavar="ID[:key=value,...]",
    help="Run this check (with parameters); with --profile, adds to or overrides it.",
)
@click.option(
    "--format", "-f", "fmt", type=click.Choice(["table", "json", "junit"]), default="table", show_default=True
)
@click.option("--out", "-o", type=click.Path(file_okay=False), help="Keep each target's snapshot under DIR/<host>/.")
@click.option(
    "--with",
    "active",
    default="",
    metavar="TESTS",
    help="Also run active tests: nccl[:GPUS] (all_reduce_perf, 8 GPUs), dcgm[:LEVEL] (dcgmi diag -r 2).",
)
def assess(
    reach: Reach,
    profile: str | None,
    check_opts: tuple[str, ...],
    fmt: str,
    out: str | None,
    active: str,
) -> None:
    """Assess targets against a readiness profile.

    Exit code 0 when nothing failed or errored, 1 when something did, 2 for bad input,
    130 when interrupted (what finished is still reported).
    """
    import json
    import os
    from pathlib import Path

    from assessor.assess import fleet
    from assessor.assess import profiles
    from assessor.reports import terminal as render
    from assessor.checks import result as results
    from assessor.assess import pipeline as runner

    if profile:
        prof = profiles.load(profile)
    elif check_opts:
        prof = profiles.Profile("checks", "checks given on the command line", ())
    else:
        prof = profiles.everything()
    prof = runner.with_overrides(prof, list(check_opts))
    jobs = reach.jobs()
    bar = fleet.Progress(len(jobs)) if len(jobs) > 1 else None
    try:
        run = fleet.run(
            jobs,
            prof,
            forks=reach.forks,
            timeout=reach.timeout,
            out=Path(out) if out else None,
            progress=bar,
            active=_active_tests(active),
        )
    finally:
        if bar is not None:
            bar.close()
    doc = results.document(run.results, prof.name)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2))
    elif fmt == "junit":
        from assessor.reports import junit

        click.echo(junit.render(doc), nl=False)
    else:
        render.table(run.results, prof)
    if run.interrupted:
        sys.stdout.flush()
        os._exit(130)  # worker threads may still wait on the network: do not wait for them
    sys.exit(results.exit_code(run.results))


@main.command()
@_target_options
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Snapshot directory to write (DIR/<host>/ for several targets).",
)
@click.option(
    "--with",
    "active",
    default="",
    metavar="TESTS",
    help="Also run active tests: nccl[:GPUS], dcgm[:LEVEL] (comma-separated).",
)
def capture(
    reach: Reach,
    out: str,
    active: str,
) -> None:
    """Capture targets' tool outputs into snapshot directories (default target: local)."""
    import datetime
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from assessor import __version__ as version
    from assessor.capture import snapshot
    from assessor.errors import GpulabError
    from assessor.assess.fleet import dir_name

    tests = _active_tests(active)
    jobs = reach.jobs(default=("local",))
    single = len(jobs) == 1
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    def one(job: Any) -> tuple[Any, Any, str | None]:
        try:
            snap = job.target.snapshot(timeout=reach.timeout, active=tests)
        except GpulabError as exc:
            return job, None, str(exc)
        dest = Path(out) if single else Path(out) / dir_name(job.label)
        snapshot.write(snap, dest, {"target": job.target.spec, "gpulab_version": version, "time": stamp})
        return job, snap, None

    failed = False
    with ThreadPoolExecutor(max_workers=reach.forks) as pool:
        for job, snap, error in pool.map(one, jobs):
            if error is not None:
                failed = True
                click.echo(f"{job.label}: error: {error}", err=True)
                continue
            if single:
                for name, source in sorted(snap.sources.items()):
                    note = source.status if source.status == "ok" else f"{source.status}: {source.message or ''}"
                    click.echo(f"{name:24} {note}")
            click.echo(f"{job.label}: snapshot written to {snap.path}")
    sys.exit(1 if failed else 0)


@main.command()
@click.argument("kind", metavar="KIND")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
def parse(kind: str, file: str) -> None:
    """Show the facts gpulab reads from one tool output (FILE, or - for stdin).

    KIND is one of: nvml, nvidia-smi-xml, nvidia-smi-list, nvidia-smi-topo, nvidia-smi-mig-lgi,
    nvidia-smi-mig-lgip, nvidia-smi-mig-lgipp, ibstat, ibv-devinfo, ib-write-bw, lsmod, dmesg,
    systemctl-show, nccl-tests, nccl-debug, dcgmi-diag, driver-version, os-release, uname.
    """
    import json
    from pathlib import Path

    from assessor import parsers
    from assessor.errors import InputError
    from assessor.facts import to_jsonable

    spec = parsers.kind(kind)
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror or exc}") from None
    facts = parsers.parse(spec.name, data.decode("utf-8", "replace"), source=file)
    click.echo(json.dumps({f: to_jsonable(getattr(facts, f)) for f in spec.fields}, indent=2))


@main.group()
def checks() -> None:
    """The check catalogue."""


@checks.command("list")
@click.option("--json", "as_json", is_flag=True)
def checks_list(as_json: bool) -> None:
    """Every check id with its title."""
    from assessor import checks as catalogue

    if as_json:
        import json

        click.echo(json.dumps([{"id": s.id, "title": s.title} for s in catalogue.REGISTRY.values()], indent=2))
        return
    for spec in sorted(catalogue.REGISTRY.values(), key=lambda s: s.id):
        click.echo(f"{spec.id:20} {spec.title}")


@checks.command("show")
@click.argument("check_id", metavar="ID")
def checks_show(check_id: str) -> None:
    """A check's documentation: what it verifies, parameters, facts, what to do on failure."""
    from assessor import checks as catalogue
    from assessor.checks.base import FACT_SOURCES

    spec = catalogue.get(check_id)
    click.echo(f"{spec.id} — {spec.title}\n\n{spec.doc}\n")
    click.echo("Parameters:")
    for p in spec.params:
        click.echo(f"  {p.name} ({p.type}, default {p.default!r}): {p.doc}")
    if not spec.params:
        click.echo("  none")
    click.echo("\nReads:")
    for name in spec.facts:
        click.echo(f"  {name}: from {FACT_SOURCES.get(name, name)}")
    click.echo(f"\nWhen it fails:\n  {spec.remedy}")


@main.group()
def profiles() -> None:
    """Readiness profiles that ship with gpulab."""


@profiles.command("list")
def profiles_list() -> None:
    """Shipped profiles with their descriptions."""
    from assessor.assess import profiles as prof

    for name, path in prof.shipped().items():
        p = prof.load(str(path))
        click.echo(f"{name:16} {len(p.checks):3} checks  {p.description}")


@profiles.command("show")
@click.argument("name")
def profiles_show(name: str) -> None:
    """Print a shipped profile's YAML (a starting point for your own)."""
    from assessor.assess import profiles as prof

    prof.load(name)  # validates, and says which names exist
    path = prof.shipped().get(name)
    from pathlib import Path

    click.echo((path or Path(name)).read_text(encoding="utf-8"), nl=False)


@main.command()
@click.argument("name", type=click.Choice(["results", "lab"]))
def schema(name: str) -> None:
    """Print a published JSON Schema: results (gpulab.results/1) or lab (lab.yaml)."""
    from importlib import resources

    click.echo((resources.files("assessor") / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"), nl=False)


@main.group()
def sim() -> None:
    """The simulator: simulated nodes, tool shims for your PATH, injected faults."""


@sim.command("init")
@click.option("--fixture", default="hgx-h100", show_default=True, help="dgx-a100, hgx-h100, hgx-h200 or pcie-l40s.")
@click.option("--state", "state_path", required=True, type=click.Path(dir_okay=False), help="State file to write.")
@click.option("--host", default=None, help="Host name the simulated node reports.")
@click.option("--force", is_flag=True, help="Overwrite an existing state file.")
def sim_init(fixture: str, state_path: str, host: str | None, force: bool) -> None:
    """Create a simulated node's state file from a fixture."""
    from pathlib import Path

    from assessor.errors import InputError
    from assessor.sim.fixtures import fixture_names, load_fixture
    from assessor.sim.state import save_state

    if fixture not in fixture_names():
        raise InputError(f"unknown fixture {fixture!r} (fixtures: {', '.join(fixture_names())})")
    path = Path(state_path)
    if path.exists() and not force:
        raise InputError(f"{path}: already exists (use --force to start over)")
    save_state(load_fixture(fixture, host=host), path)
    click.echo(f"simulated {fixture} node written to {path}")
    click.echo(f"next: gpulab sim shims ~/.gpulab/bin && export PATH=~/.gpulab/bin:$PATH GPULAB_SIM_STATE={path}")


@sim.command("shims")
@click.argument("directory", type=click.Path(file_okay=False))
def sim_shims(directory: str) -> None:
    """Write executables named like the real tools (nvidia-smi, ibstat, ...) into DIRECTORY.

    Put DIRECTORY first on PATH and set GPULAB_SIM_STATE to a state file: the tools then
    act on that simulated node.
    """
    from assessor.sim.shims import write_shims

    written = write_shims(directory)
    click.echo(f"{len(written)} shims written to {directory}: {' '.join(p.name for p in written)}")


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
        for name, spec in sorted(faults.FAULTS.items()):
            click.echo(f"{name:24} {spec.description}")
        return
    click.echo(faults.inject(state_path, fault, **_fault_options(options)))


@sim.command("repair")
@click.argument("state_path", metavar="STATE", type=click.Path(dir_okay=False))
@click.argument("fault")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="Which device, e.g. ca=mlx5_3.")
def sim_repair(state_path: str, fault: str, options: tuple[str, ...]) -> None:
    """Do the physical work that undoes FAULT: reseat a cable, reboot, replace a GPU.

    On a real node these are hands-on jobs no command does; on a simulated one, ask for them here.
    """
    from assessor.sim import faults

    click.echo(faults.repair(state_path, fault, **_fault_options(options)))


from assessor.cli.labs import lab, progress  # noqa: E402

main.add_command(lab)
main.add_command(progress)
