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
