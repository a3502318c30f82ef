"""The path a grade takes through the lab modules: which ``assessor.labs`` modules a `gpulab lab grade` enters,
in what order, and how often it goes back to a module it had already left.

    .venv/bin/python bench/grade_path.py [--lab mig-101] [--hosts 3] [--all-calls]

Three grades are traced, each in-process through the CLI (click's test runner) on simulated nodes in state
files made for the run: one node (``--target mock:FILE.json``), a cohort (``--inventory``, every host's
``gpulab_target`` a state file, ``--forks 1`` so the capture pool's one thread runs the hosts in turn and the
path is the same every run) and a design lab (``--answer FILE``). Each lab is started first, and loaded once
before the trace so its validation stamp exists: the traced grade is what a grade costs on a warm checkout.

What is counted: a module of ``assessor.labs`` (a subpackage, ``design`` or ``drivers``, counts as one) is
*entered* when one of its functions is called from code outside it: from the CLI, or from another module of
``assessor.labs`` (the nearest one on the call stack; calls within a module, methods and properties of the data
classes, comprehensions and module-level code are not entries). Work a module hands to a thread pool is that
module's own: a pool thread's first call is no entry. The *path* is the sequence of entries, consecutive
entries into one module merged; a *return* is an entry into a module the path had already entered and left.
The path is split where the command first prints (or first puts a grade in words to print it): the *pass*
(finding the lab, capturing, resolving, evaluating, recording, keeping the gradebook) and the *print* stage.
``--all-calls`` lists the functions entered at each step.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PACKAGE = "assessor.labs"
# where the print stage starts: the first line printed, or the first grade put in words for printing
PRINTING = {
    ("click.utils", "echo"),
    ("rich.console", "print"),
    ("assessor.labs.cohort", "grade_summary"),
    ("assessor.labs.gradebook", "verdict"),
}


def _component(module: str) -> str | None:
    """``capture`` for assessor.labs.capture, ``design`` for anything under assessor.labs.design; None outside."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    return module.removeprefix(PACKAGE).lstrip(".").split(".")[0] or "labs"


def _is_entry_point(code: Any) -> bool:
    """A module's function or a closure in one; not a method, a comprehension, a dunder or module-level code."""
    if code.co_name.startswith(("<", "__")):
        return False
    qualname: str = getattr(code, "co_qualname", code.co_name)
    return "." not in qualname.split(".<locals>")[0]


class Tracer:
    """Records each entry into an ``assessor.labs`` module while active, from any thread, and the index of the
    first entry made after the command first printed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.printed_at: int | None = None
        self._lock = threading.Lock()

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if self.printed_at is None and (module, frame.f_code.co_name) in PRINTING:
            with self._lock:
                self.printed_at = len(self.calls)
            return
        component = _component(module)
        if component is None or not _is_entry_point(frame.f_code):
            return
        caller = frame.f_back
        while caller is not None and _component(caller.f_globals.get("__name__", "")) is None:
            caller = caller.f_back
        if caller is None and threading.current_thread() is not threading.main_thread():
            return  # a pool thread running its module's own work
        if caller is not None and _component(caller.f_globals.get("__name__", "")) == component:
            return  # a call within the module
        with self._lock:
            self.calls.append((component, getattr(frame.f_code, "co_qualname", frame.f_code.co_name)))

    def __enter__(self) -> Tracer:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def path_of(calls: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Consecutive calls in one module merged: (module, the functions called there in that step)."""
    steps: list[tuple[str, list[str]]] = []
    for module, function in calls:
        if steps and steps[-1][0] == module:
            steps[-1][1].append(function)
        else:
            steps.append((module, [function]))
    return steps


def returns(steps: list[tuple[str, list[str]]]) -> int:
    """Steps into a module already entered earlier in the path."""
    seen: set[str] = set()
    count = 0
    for module, _ in steps:
        if module in seen:
            count += 1
        seen.add(module)
    return count


Figures = tuple[int, int, int, int]  # modules entered, steps, returns in the pass, returns in all


def report(title: str, tracer: Tracer, all_calls: bool) -> Figures:
    split = len(tracer.calls) if tracer.printed_at is None else tracer.printed_at
    passing, printing = path_of(tracer.calls[:split]), path_of(tracer.calls[split:])
    whole = path_of(tracer.calls)
    print(f"== {title}")
    print("   pass:  " + " -> ".join(m for m, _ in passing))
    print("   print: " + " -> ".join(m for m, _ in printing))
    if all_calls:
        for module, functions in whole:
            print(f"     {module}: {', '.join(dict.fromkeys(functions))}")
    figures = (len({m for m, _ in whole}), len(whole), returns(passing), returns(whole))
    print(
        f"   modules entered: {figures[0]}; steps: {figures[1]}; returns to a module already left: "
        f"{figures[2]} in the pass, {figures[3]} in all"
    )
    return figures


def invoke(args: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from assessor.cli import main

    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def traced(args: list[str], ok: tuple[int, ...] = (0, 1)) -> Tracer:
    with Tracer() as tracer:
        code, output = invoke(args)
    if code not in ok:
        raise SystemExit(f"gpulab {' '.join(args)}: exit {code}\n{output}")
    return tracer


def run(lab_id: str, n_hosts: int, all_calls: bool) -> dict[str, Figures]:
    from assessor.labs.loader import find_lab
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    work = Path(tempfile.mkdtemp(prefix="gpulab-grade-path-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))
    db = ["--db", str(work / "attempts.db")]
    lab = find_lab(lab_id)  # warms the validation stamp: the traced grades load a validated lab
    find_lab("design-501")
    fixture = lab.fixture or "hgx-h100"
    out: dict[str, Figures] = {}

    # one node
    node = work / "node.json"
    save_state(load_fixture(fixture, host="node01"), node)
    code, output = invoke(["lab", "start", lab_id, "-t", f"mock:{node}", "--candidate", "ada", *db])
    if code != 0:
        raise SystemExit(f"lab start: exit {code}\n{output}")
    calls = traced(["lab", "grade", lab_id, "-t", f"mock:{node}", "--candidate", "ada", *db])
    out["single"] = report(f"lab grade {lab_id} -t mock:node.json (one node)", calls, all_calls)

    # a cohort of simulated nodes
    lines = ["all:", "  hosts:"]
    for i in range(n_hosts):
        state = work / f"sim{i + 1:02d}.json"
        save_state(load_fixture(fixture, host=f"sim{i + 1:02d}"), state)
        lines.append(f"    sim{i + 1:02d}: {{gpulab_target: 'mock:{state}', gpulab_candidate: c{i + 1}}}")
    inventory = work / "inv.yml"
    inventory.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, output = invoke(["lab", "start", lab_id, "-i", str(inventory), "--forks", "1", *db])
    if code != 0:
        raise SystemExit(f"cohort lab start: exit {code}\n{output}")
    calls = traced(["lab", "grade", lab_id, "-i", str(inventory), "--forks", "1", *db])
    out["cohort"] = report(f"lab grade {lab_id} -i inv.yml ({n_hosts} hosts, --forks 1)", calls, all_calls)

    # a design lab, graded from its reference answer
    answer = work / "answer.yaml"
    design = find_lab("design-501")
    answer.write_text((design.path / (design.solution_answer or "")).read_text(encoding="utf-8"), encoding="utf-8")
    invoke(["lab", "start", "design-501", "--candidate", "ada", *db])
    calls = traced(["lab", "grade", "design-501", "--answer", str(answer), "--candidate", "ada", *db])
    out["design"] = report("lab grade design-501 --answer FILE (a design lab)", calls, all_calls)
    return out


def main(argv: list[str] | None = None, *, runner: Callable[..., Any] = run) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", default="mig-101", help="the node lab to grade (default mig-101)")
    parser.add_argument("--hosts", type=int, default=3, help="hosts in the cohort (default 3)")
    parser.add_argument("--all-calls", action="store_true", help="list the functions called in each step")
    args = parser.parse_args(argv)
    figures = runner(args.lab, args.hosts, args.all_calls)
    print()
    print("grade      modules  steps  returns (pass)  returns (all)")
    for name, (modules, steps, in_pass, in_all) in figures.items():
        print(f"{name:<10} {modules:>7}  {steps:>5}  {in_pass:>14}  {in_all:>13}")


if __name__ == "__main__":
    main()
