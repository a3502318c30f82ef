"""Reading an inventory with ansible-core's own manager: a source no plugin understands is an error (not
Ansible's warning and zero hosts), and reading one changes nothing else in the process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.targets.inventory import load


def test_a_source_no_inventory_plugin_understands_is_an_error_and_leaves_ansible_settings_as_they_were(
    tmp_path: Path,
) -> None:
    from ansible import constants

    before = (constants.INVENTORY_UNPARSED_IS_FAILED, constants.INVENTORY_ANY_UNPARSED_IS_FAILED)
    env_before = {k: v for k, v in os.environ.items() if k.startswith("ANSIBLE_")}
    bad = tmp_path / "hosts.yml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(InputError, match=r"hosts\.yml"):
        load(str(bad))
    good = tmp_path / "good.yml"
    good.write_text("all:\n  hosts:\n    n1: {gpulab_target: 'mock:hgx-h100'}\n")
    assert [h.name for h in load(str(good))] == ["n1"]
    assert before == (constants.INVENTORY_UNPARSED_IS_FAILED, constants.INVENTORY_ANY_UNPARSED_IS_FAILED)
    assert {k: v for k, v in os.environ.items() if k.startswith("ANSIBLE_")} == env_before


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ansible-core's inventory manager is asked to read from now on."""
    from ansible.inventory import manager

    reads: list[str] = []
    real = manager.InventoryManager.__init__

    def counted(self: object, *args: object, **kwargs: object) -> None:
        reads.append(str(kwargs.get("sources")))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(manager.InventoryManager, "__init__", counted)
    return reads


def test_looking_up_every_host_of_a_cohort_reads_the_inventory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assessor.targets.inventory import find_host

    path = tmp_path / "cohort.yml"
    path.write_text("all:\n  hosts:\n" + "".join(f"    n{i}: {{gpulab_target: 'mock:hgx-h100'}}\n" for i in range(50)))
    reads = _counting_reads(monkeypatch)
    found = [find_host(str(path), f"n{i}").name for i in range(50)]
    assert found == [f"n{i}" for i in range(50)]
    assert len(reads) == 1
    with pytest.raises(InputError, match="no host named n50"):
        find_host(str(path), "n50")
    assert len(reads) == 1


def test_an_inventory_or_its_group_vars_changed_since_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("ansible_user: root\n")
    reads = _counting_reads(monkeypatch)
    assert load(str(path))[0].target == "ssh://root@10.0.0.1"
    path.write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.2, ansible_port: 2222}\n")
    assert load(str(path))[0].target == "ssh://root@10.0.0.2:2222"
    (tmp_path / "group_vars" / "all.yml").write_text("ansible_user: ops\n")
    assert load(str(path))[0].target == "ssh://ops@10.0.0.2:2222"
    assert load(str(path))[0].target == "ssh://ops@10.0.0.2:2222"
    assert len(reads) == 3


def test_a_host_taken_from_a_read_inventory_is_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
    load(str(path))[0].ssh["host"] = "changed"
    assert load(str(path))[0].ssh["host"] == "10.0.0.1"
