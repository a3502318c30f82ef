"""Driver version, os-release and uname parsers."""

from __future__ import annotations

import doctest

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.facts import DriverInfo
from assessor.parsers import system
from tests.support.corpus import read_corpus

PROPRIETARY = """\
NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023
GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)
"""


def driver_of(text: str) -> DriverInfo:
    driver = system.parse_driver_version(text).driver
    assert driver is not None
    return driver


def test_driver_version_proprietary_module() -> None:
    d = driver_of(PROPRIETARY)
    assert (d.version, d.kernel_module_version, d.open_kernel_module) == ("535.129.03", "535.129.03", False)
    assert d.kernel_module == PROPRIETARY.splitlines()[0]
    assert d.cuda_version is None  # the file does not say


def test_driver_version_open_module_from_the_real_load_line() -> None:
    # The dmesg corpus holds the open module's banner; /proc/driver/nvidia/version prints the same text.
    banner = next(
        line
        for line in read_corpus("dmesg_xid/05_xid79_fallen_off_bus_single_and_multiline.txt").splitlines()
        if "Open Kernel Module" in line
    )
    text = "NVRM version: " + banner.split("NVRM: loading ", 1)[1] + "\nGCC version:  gcc version 12.3.0\n"
    d = driver_of(text)
    assert (d.version, d.open_kernel_module) == ("570.158.01", True)


def test_driver_version_aarch64_module() -> None:
    d = driver_of("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  Tue Mar  5 19:15:01 UTC 2024\n")
    assert (d.version, d.open_kernel_module) == ("550.54.15", False)


def test_driver_version_missing_file_says_the_module_is_not_loaded() -> None:
    with pytest.raises(ParseError, match="not loaded"):
        system.parse_driver_version("cat: /proc/driver/nvidia/version: No such file or directory\n")


def test_driver_version_garbage_and_empty_are_errors() -> None:
    with pytest.raises(ParseError):
        system.parse_driver_version("GCC version:  gcc version 11.4.0\n")
    with pytest.raises(ParseError):
        system.parse_driver_version("")


def test_os_release_values_are_unquoted() -> None:
    text = (
        'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
        "ID=ubuntu\nID_LIKE=debian\n# a comment\n\nVERSION_CODENAME='jammy'\n"
        'HOME_URL="https://www.ubuntu.com/"\nNOTE="say \\"hi\\""\n'
    )
    release = system.parse_os_release(text).os_release
    assert release == {
        "PRETTY_NAME": "Ubuntu 22.04.4 LTS",
        "NAME": "Ubuntu",
        "VERSION_ID": "22.04",
        "ID": "ubuntu",
        "ID_LIKE": "debian",
        "VERSION_CODENAME": "jammy",
        "HOME_URL": "https://www.ubuntu.com/",
        "NOTE": 'say "hi"',
    }


def test_os_release_garbage_line_names_its_line() -> None:
    with pytest.raises(ParseError) as err:
        system.parse_os_release('NAME="Ubuntu"\nnot a key value line\n')
    assert err.value.line == 2


def test_os_release_unterminated_quote_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        system.parse_os_release('NAME="Ubuntu\n')
    assert err.value.line == 1


def test_os_release_empty_is_an_error() -> None:
    with pytest.raises(ParseError):
        system.parse_os_release("# only a comment\n")


def test_uname_is_the_stripped_first_line() -> None:
    line = "Linux node01 5.15.0-112-generic #122-Ubuntu SMP Thu May 23 07:48:21 UTC 2024 x86_64 GNU/Linux"
    assert system.parse_uname(f"\n{line}  \nsecond line\n").uname == line


def test_uname_empty_is_an_error() -> None:
    with pytest.raises(ParseError):
        system.parse_uname("  \n")


def test_system_kinds_are_registered() -> None:
    assert parsers.parse("driver-version", PROPRIETARY).driver is not None
    assert parsers.parse("os-release", "ID=rhel\n").os_release == {"ID": "rhel"}
    assert parsers.parse("uname", "Linux x 6.8.0\n").uname == "Linux x 6.8.0"


def test_system_doctests() -> None:
    result = doctest.testmod(system)
    assert result.attempted > 0 and result.failed == 0
