from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, ROOT, read_corpus

__all__ = ["CORPUS", "ROOT", "read_corpus"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real tool outputs kept in tests/data/corpus (tests/data/corpus/SOURCES.md gives each file's source)."""
    return CORPUS


def pytest_configure(config: pytest.Config) -> None:
    """Keep gpulab's caches (validated labs) out of the user's home while the tests run."""
    import os
    import tempfile

    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpulab-test-cache-")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``pytest -n N`` balances the workers by work stealing (``--dist worksteal``) instead of ``load``.

    ``load`` hands each worker large runs of consecutive tests up front and never takes them back, so one
    worker can be left with a run of slow SSH and Ansible tests while the other sits idle. With work stealing
    an idle worker takes half of the tests still queued on the busiest one. An explicit ``--dist`` is kept.
    """
    import os

    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if config.getvalue("dist") != "load" or any(str(a).startswith(("--dist", "-d")) for a in given):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
