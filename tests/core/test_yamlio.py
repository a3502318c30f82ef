"""YAML from people is read as plain data, bounded, and every refusal names the file, the line and the key."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from assessor import yamlio
from assessor.cli import main
from assessor.errors import InputError

# A 385-byte alias bomb: 9**7 strings once expanded.
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f"], "abcdefg", strict=True)
)


def refusal(text: str) -> str:
    with pytest.raises(InputError) as err:
        yamlio.load("in.yaml", text=text)
    return str(err.value)


def test_an_alias_bomb_is_refused_quickly_with_its_line() -> None:
    assert len(BOMB) < 400
    message = refusal(BOMB)
    assert message.startswith("in.yaml:") and "aliases" in message


def test_custom_tags_are_refused() -> None:
    message = refusal("check: !!python/object/apply:os.system [id]\n")
    assert message.startswith("in.yaml:1:") and "python/object/apply:os.system" in message and "(key check)" in message


def test_merge_keys_are_refused() -> None:
    assert "merge keys" in refusal("base: &b {points: 1}\ncheck:\n  <<: *b\n")


def test_a_duplicate_key_names_both_lines() -> None:
    message = refusal("id: mig-301\nlevel: 3\nid: mig-302\n")
    assert message.startswith("in.yaml:3:") and "first at line 1" in message and "(key id)" in message


def test_a_non_string_key_is_refused() -> None:
    assert "is not a string" in refusal("checks:\n  1: gpu.count\n")


def test_a_5000_digit_number_is_refused_not_a_traceback() -> None:
    assert "digits" in refusal("points: " + "9" * 5000 + "\n")


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    assert "levels deep" in refusal("a: " + "[" * 500 + "]" * 500 + "\n")


def test_nul_bytes_and_bad_utf8_name_the_line(tmp_path) -> None:
    assert refusal("a: 1\nb: \x00\n").startswith("in.yaml:2:")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputError, match=r"bad.yaml:2: not UTF-8"):
        yamlio.load(bad)


def test_plain_data_loads_with_lines_and_yaml_1_2_floats() -> None:
    doc = yamlio.load("in.yaml", text="a: 2.0944e3\nb: '2e3'\nc:\n  - {d: null, e: true}\n")
    assert doc.data == {"a": 2094.4, "b": "2e3", "c": [{"d": None, "e": True}]}
    assert doc.line(("c", 0, "e")) == 4


def test_an_alias_bomb_in_a_profile_exits_2_with_one_line(tmp_path) -> None:
    profile = tmp_path / "bomb.yaml"
    profile.write_text("name: x\nchecks: [gpu.count]\n" + BOMB)
    result = CliRunner().invoke(main, ["assess", "-t", "mock:hgx-h100", "-p", str(profile)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "bomb.yaml:" in result.stderr and "Traceback" not in result.stderr
