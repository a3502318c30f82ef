"""Every command gpulab itself recommends runs on the simulator.

The commands come from where a candidate reads them: the remedies and hints of the checks
(``assessor/checks/*.py``), the lab READMEs (code spans and code blocks) and the lab hints
(``lab.yaml``), and the simulator's own messages (``gpulab sim``). Each is run against a fresh
node of a fixture through :func:`assessor.sim.tools.run_tool`; none may be answered as an unknown
program or an invalid option. A refusal the real tool would give on a healthy node (``mig -lgi``
with MIG off) is fine: the command was understood.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import TOOLS, Session, ToolResult, run_tool

ROOT = Path(__file__).resolve().parents[2]

# Programs a recommendation may start with that the simulator is meant to answer.
_SIMULATED = set(TOOLS) | {"reboot", "shutdown", "kill", "rmmod", "lspci", "ibdev2netdev"}

# Tools gpulab names that no simulator answers yet: a real node (or the fabric's own tools) is needed.
# Each is named in the report of the simulator issue; keep this list short and explicit.
_NOT_SIMULATED = {
    "ibdiagnet",  # fabric-wide diagnostics from a node with a subnet manager view
    "sminfo",
    "ip",
    "nvidia-mig-parted",
    "grep",
    "gpulab",  # gpulab's own CLI, not a node tool
    "gpulab-env",
}

# How the tools say "I do not know this": the words each prints for an unknown option or sub-command.
_REFUSAL_MARKERS = (
    "Invalid combination of input arguments",
    "command not found",
    "invalid option",
    "unrecognized option",
    "Unknown operation",
    "unknown subsystem",
    "Usage:",
    "usage:",
    "is not a valid field to query",
    "Unknown command verb",
)


@dataclass(frozen=True)
class Recommendation:
    command: str
    source: str  # where gpulab says it
    fixture: str = "hgx-h100"


# ---------------------------------------------------------------- where gpulab recommends commands


def _strings_of(node: ast.AST) -> list[str]:
    """The string constants in an expression (implicit concatenation is one constant; f-strings give their text)."""
    out = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.append(sub.value)
    return out


def _names_a_hint(target: ast.expr) -> bool:
    """An assignment to HINT/REMEDY constants or to hint/hints/remedy variables."""
    if not isinstance(target, ast.Name):
        return False
    return "HINT" in target.id or "REMEDY" in target.id or target.id in ("hint", "hints", "remedy")


def check_texts() -> list[tuple[str, str]]:
    """(text, source) of every remedy and hint the checks give."""
    texts = []
    for path in sorted((ROOT / "assessor" / "checks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg in ("remedy", "hint", "fail_hint"):
                value: ast.AST = node.value
            elif isinstance(node, ast.Assign) and any(_names_a_hint(t) for t in node.targets):
                value = node.value
            else:
                continue
            texts += [(s, path.name) for s in _strings_of(value)]
    return texts


def _lab_dirs() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "labs").glob("*/*/lab.yaml"))


def lab_texts() -> list[tuple[str, str, str]]:
    """(text, source, fixture) from each lab's README code spans and blocks and its lab.yaml hints."""
    out = []
    for lab in _lab_dirs():
        spec = yaml.safe_load((lab / "lab.yaml").read_text(encoding="utf-8")) or {}
        fixture = spec.get("fixture") or "hgx-h100"
        readme = (lab / "README.md").read_text(encoding="utf-8")
        blocks = re.findall(r"```[a-z]*\n(.*?)```", readme, flags=re.S)
        prose = re.sub(r"```[a-z]*\n.*?```", "", readme, flags=re.S)
        out += [(span, f"{lab.name}/README.md", fixture) for span in re.findall(r"`([^`\n]+)`", prose)]
        out += [(line, f"{lab.name}/README.md", fixture) for block in blocks for line in block.splitlines()]
        for check in (spec.get("grading") or {}).get("checks") or []:
            if check.get("hint"):
                out.append((str(check["hint"]), f"{lab.name}/lab.yaml", fixture))
    return out


def sim_message_texts() -> list[tuple[str, str]]:
    """What ``gpulab sim`` prints that names a command (the next steps after init, fault texts)."""
    texts = []
    # The CLI is one module on older trees and a package (assessor/cli/sim.py ...) on newer ones.
    paths = sorted((ROOT / "assessor" / "cli").glob("*.py"))
    paths += [ROOT / "assessor" / "sim" / "faults.py", ROOT / "assessor" / "sim" / "shim.py"]
    for path in paths:
        if path.is_file():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            texts += [(s, str(path.relative_to(ROOT))) for s in _strings_of(tree)]
    return texts


# ---------------------------------------------------------------- from prose to a command line

# A program name followed by ":" or "'" is prose ("gpulab: no verdict", "gpulab's reason", "gpulab:latest").
_PROGRAM = r"(?<![\w/.~=-])(?:sudo\s+)?(?:[A-Z_]+=\S+\s+)*(?:{})(?![\w/.:'-])".format(
    "|".join(re.escape(p) for p in sorted(_SIMULATED | _NOT_SIMULATED, key=len, reverse=True))
)
# Words that end a command written inside a sentence ("nvidia-smi -pm 1 until reboot").
_PROSE = {
    "to", "until", "then", "and", "or", "says", "on", "for", "so", "if", "is", "as", "with", "that", "the",
    "when", "after", "before", "from", "shows", "reports", "every", "must", "needs", "while", "should",
    "lists", "names", "header", "lasts", "cannot", "talks", "reads", "at", "#",
}  # fmt: skip
# Lower-case words that are arguments, not prose: sub-commands, verbs, modules.
_ARGUMENT_WORDS = {
    "mig", "topo", "nvlink", "diag", "discovery", "health", "status", "start", "stop", "restart", "enable",
    "disable", "show", "now", "nvidia", "tail", "list-units", "is-active", "is-enabled",
}  # fmt: skip
_VALUE_OPTIONS = {"-i", "-d", "-r", "-u", "-s", "-e", "-pm", "-mig", "-g", "-b", "-f", "-c", "--id"}
# An option named in prose without its value ("nvidia-smi -pm lasts until...") is typed with this one.
_NAMED_OPTION_VALUE = {"-pm": "1", "-e": "1", "-mig": "1", "-i": "0"}
# Programs that are also English words: a command only where the sentence is not using the word.
_WORD_PROGRAMS = {"reboot", "kill", "shutdown"}
_NAMES_ONLY = {"docker"}  # "restart docker", "docker and containerd": the engine named, not its CLI run bare
# Placeholders and the concrete values a candidate would type for them.
_PLACEHOLDERS = {
    "<unit>": "nvidia-dcgm",
    "<GPU>": "0",
    "<gpuId>": "0",
    "<list>": "0",
    "<bus id>": "18:00.0",
    "<device>": "mlx5_0",
    "<ca>": "mlx5_0",
    "<module>": "nvidia_peermem",
    "<profiles>": "9",
    "<ids or names>": "9",
    "-cgi ...": "-cgi 9",
    "<plugin>": "2",
    "<fault>": "dcgm-stopped",
    "<min>,<max>": "210,1980",  # an H100's lowest and highest graphics clocks (SUPPORTED_CLOCKS)
    "<mem>,<graphics>": "2619,1980",
    "<watts>": "700",
}


def _concrete(command: str) -> str:
    for placeholder, value in _PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    command = re.sub(r"\[[^\]]*\]", "", command)  # optional parts: leave them out
    command = command.replace("...", "").replace("\u2026", "")
    command = re.sub(r"(?<=\S)(?:\|[^\s|]+)+", "", command)  # a|b|c alternatives: the first
    return " ".join(command.split())


def commands_in(text: str) -> list[str]:
    """The command lines a piece of prose names, cut where the sentence goes on, with placeholders filled."""
    found = []
    for match in re.finditer(_PROGRAM, text):
        before = text[: match.start()].split()
        if match.group(0).strip() in _WORD_PROGRAMS and before and before[-1].lower() in _PROSE | {"a", "next"}:
            continue  # "until reboot", "the next reboot": the word, not the command
        rest = _concrete(text[match.start() :])
        # A colon ends a lead-in ("Run: ...") but belongs to a PCI vendor filter ("-d 10de:").
        rest = re.split(r"[;`\n]|\s\|\s|, | \(|\)|(?<!-d 10de): |\. ", rest)[0]
        words: list[str] = []
        for word in rest.split():
            if words and word.lower() in _PROSE:
                break
            after_option = bool(words) and words[-1] in _VALUE_OPTIONS
            if words and re.fullmatch(r"[a-z]+", word) and word not in _ARGUMENT_WORDS and not after_option:
                break
            if words and re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", word):
                break  # a field name the reader is to look for ("lspci -vv LnkSta"), not an argument
            words.append(word)
        command = " ".join(words)
        # A single N means "a GPU index" in gpulab's prose.
        command = re.sub(r"(?<=-i )N\b", "0", command)
        command = re.sub(r"(?<=-r )N\b", "0", command)
        command = command.rstrip(".,")
        last = command.rsplit(" ", 1)[-1]
        if last in _NAMED_OPTION_VALUE and not re.search(r" (?:nvlink|mig) ", command):
            command += " " + _NAMED_OPTION_VALUE[last]
        if command and command not in _NAMES_ONLY:
            found.append(command)
    return found


@cache
def recommendations() -> list[Recommendation]:
    seen: dict[tuple[str, str], Recommendation] = {}
    sources: list[tuple[str, str, str]] = [(t, s, "hgx-h100") for t, s in check_texts()]
    sources += lab_texts()
    sources += [(t, s, "hgx-h100") for t, s in sim_message_texts()]
    for text, source, fixture in sources:
        for command in commands_in(text):
            key = (command, fixture)
            if key not in seen:
                seen[key] = Recommendation(command, source, fixture)
    return sorted(seen.values(), key=lambda r: (r.command, r.fixture))


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    if argv and argv[0] == "sudo":
        argv = argv[1:]
    env = []
    while argv and re.match(r"^[A-Z_][A-Z0-9_]*=", argv[0]):
        env.append(argv.pop(0))
    return (["env", *env] if env else []) + argv


def _program(argv: list[str]) -> str:
    rest = argv[1:] if argv and argv[0] == "env" else argv
    while rest and "=" in rest[0]:
        rest = rest[1:]
    return rest[0] if rest else ""


def refused_as_unknown(result: ToolResult) -> bool:
    """True when a tool answered as to a program or option it does not know."""
    if result.exit_code == 127:
        return True
    out = result.stdout + result.stderr
    return any(marker in out for marker in _REFUSAL_MARKERS)


@cache
def _fresh(fixture: str) -> str:
    from assessor.sim.state import dumps

    return dumps(load_fixture(fixture))


def run_on_fixture(command: str, fixture: str) -> ToolResult:
    import json

    from assessor.sim.state import from_dict

    state = from_dict(json.loads(_fresh(fixture)))
    return run_tool(_argv(command), Session(state=state))


# ---------------------------------------------------------------- the tests


def test_the_extractor_finds_the_commands_gpulab_recommends() -> None:
    commands = {r.command for r in recommendations()}
    # A few that appear in remedies, READMEs and hints (spelled as a candidate types them).
    for expected in (
        "nvidia-smi -q -d ECC",
        "nvidia-smi nvlink -s",
        "dcgmi diag -r 2",
        "nvidia-smi -i 0 -e 1",
        "lspci -d 10de:",
        "ibdev2netdev",
        "journalctl -u nvidia-dcgm",
        "nvidia-smi -q -d ROW_REMAPPER,ECC -i 0",
    ):
        assert expected in commands
    assert len(commands) > 60


def test_commands_in_cuts_a_command_out_of_a_sentence() -> None:
    text = "systemctl enable --now nvidia-persistenced (or nvidia-smi -pm 1 until reboot)"
    assert commands_in(text) == ["systemctl enable --now nvidia-persistenced", "nvidia-smi -pm 1"]
    assert commands_in("`nvidia-smi -i N -e 1`, then reset") == ["nvidia-smi -i 0 -e 1"]
    assert commands_in("dcgmi diag -r 1|2|3") == ["dcgmi diag -r 1"]
    assert commands_in("systemctl status <unit>") == ["systemctl status nvidia-dcgm"]


def test_refused_as_unknown_recognises_each_tool_s_refusal() -> None:
    fresh = Session(state=load_fixture("hgx-h100"))
    assert refused_as_unknown(run_tool(["nvidia-smi", "--no-such-option"], fresh))
    assert refused_as_unknown(run_tool(["no-such-tool"], fresh))
    assert not refused_as_unknown(run_tool(["nvidia-smi", "-L"], fresh))


def _cases() -> list[Recommendation]:
    return [r for r in recommendations() if _program(_argv(r.command)) in _SIMULATED]


@pytest.mark.parametrize("rec", _cases(), ids=lambda r: f"{r.fixture}:{r.command}")
def test_every_recommended_command_runs_on_the_simulator(rec: Recommendation) -> None:
    result = run_on_fixture(rec.command, rec.fixture)
    if " " not in rec.command:
        # A bare program name in prose ("the simulator answers nvidia-smi, dcgmi, ...") names the tool;
        # typed alone, dcgmi or modprobe print their usage as the real ones do. The program must exist.
        assert result.exit_code != 127, f"{rec.command!r} (from {rec.source}) is not simulated"
        return
    assert not refused_as_unknown(result), (
        f"{rec.command!r} (from {rec.source}) is refused on {rec.fixture}: {result.stdout}{result.stderr}"
    )


def test_every_recommended_program_is_simulated_or_named_as_not_simulated() -> None:
    programs = {_program(_argv(r.command)) for r in recommendations()}
    assert programs <= _SIMULATED | _NOT_SIMULATED
