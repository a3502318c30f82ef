"""The ``gpulab`` command line: a thin layer of click commands over the library.

One module per command family (:mod:`.assess`, :mod:`.catalogue`, :mod:`.sim`, :mod:`.labs`);
the options that say how to reach targets are defined once, in :mod:`.options`. Commands import
what they need inside their body, so ``gpulab --help`` starts at once.
"""

from __future__ import annotations

from typing import Any

import click

from assessor import __version__


class _Group(click.Group):
    """Turns GpulabError into a message (credentials redacted, :func:`assessor.neutralise.message`) and exit 2.

    SIGINT and SIGTERM stop what runs on nodes first (:func:`assessor.targets.guard.stop_on_signals`), then
    end gpulab with one line and 128 + the signal (130 for Ctrl-C).
    """

    def invoke(self, ctx: click.Context) -> Any:
        from assessor.errors import GpulabError
        from assessor.neutralise import message
        from assessor.secrets import redact
        from assessor.targets.guard import stop_on_signals

        try:
            with stop_on_signals():
                return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            click.echo(f"gpulab: interrupted ({exc or 'SIGINT'})", err=True)
            ctx.exit(getattr(exc, "code", 130))
        except GpulabError as exc:
            # the message may quote a node, a file or what the user typed: no credential, no terminal escape,
            # no line of its own that could pass for gpulab's (continuation lines are indented)
            click.echo(message(redact(str(exc)), prefix="gpulab: error: "), err=True)
            ctx.exit(2)
        except click.ClickException as exc:
            # click's own usage errors quote what was typed (a path, an option's value): the same rule
            exc.message = message(redact(exc.message))  # type: ignore[misc]  # Final in the stubs, a plain attribute
            raise


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpulab")
def main() -> None:
    """gpulab: GPU-cluster readiness lab and skills assessor.

    Capture a node's tool outputs, check them against a readiness profile, practise on a
    simulated node. Targets: local, snapshot:DIR, mock:NAME, mock:FILE.json, ssh://[user@]host[:port].
    """


def _register() -> None:
    from assessor.cli import assess, catalogue, exam, k8s, labs, npd, prepare, report, serve, sim, slurm

    for command in (
        assess.assess,
        assess.capture,
        assess.parse,
        catalogue.checks,
        catalogue.profiles,
        catalogue.schema,
        sim.sim,
        labs.lab,
        labs.progress,
        exam.exam,
        prepare.prepare,
        report.report,
        serve.serve,
        k8s.k8s,
        npd.npd,
        slurm.slurm,
    ):
        main.add_command(command)


_register()
