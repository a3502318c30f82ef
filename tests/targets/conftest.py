from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sshbed import SshBed, sshd_available


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """Five loopback sshd nodes (simulated HGX H100) plus special ones for fault cases."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    root = tmp_path_factory.mktemp("bed")
    bed = SshBed(root).setup(5)
    # a command that hangs, a connection dropped mid-capture, a node without NVIDIA tools
    bed.add_node("hangs", "hgx-h100", extra_bin={"ibstat": "exec sleep 60"})
    bed.add_node("drops", "hgx-h100", extra_bin={"lsmod": "kill -KILL $(cut -d' ' -f4 /proc/$PPID/stat); sleep 5"})
    bed.add_node("bare", "hgx-h100", shims=False)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


@pytest.fixture()
def fresh(bed: SshBed) -> SshBed:
    for node in bed.nodes:
        node.reset()
    return bed
