"""Finding, loading and validating labs: ``labs/<domain>/<lab-id>/{lab.yaml,README.md}``.

Validation has two layers. The JSON Schema (``assessor/schemas/lab.schema.json``) says what shape a
``lab.yaml`` has; the semantic pass checks what a schema cannot: the check ids exist, their parameters
fit, fault and fixture names exist in the simulator, the id agrees with the domain and level, the README
is there. Every problem names the file, the line and the key.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.labs.model import (
    DEFAULT_TICKET_GRADES,
    DOMAIN_PREFIX,
    FaultStep,
    Lab,
    LabCheck,
    LabObjective,
    Partial,
    TicketGrades,
)
from assessor.yamlio import KeyPath, Located

LAB_FILE = "lab.yaml"
README = "README.md"
ENV_COMMAND = "gpulab-env"  # pseudo-command that edits the simulated node's NCCL environment


def labs_root() -> Path:
    """Where the labs are: ``$GPULAB_LABS``, else the checkout's ``labs/``, else the installed package data."""
    env = os.environ.get("GPULAB_LABS")
    if env:
        return Path(env)
    return default_root()


def default_root() -> Path:
    """The labs that ship with gpulab (ignoring ``$GPULAB_LABS``)."""
    from assessor import content

    return content.folder("labs")


def lab_dirs(root: Path) -> list[Path]:
    """Every ``<domain>/<id>/`` directory holding a lab.yaml, sorted."""
    if not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob(f"*/*/{LAB_FILE}"))


@dataclass
class Catalogue:
    """All labs under a root; a broken lab is kept as its error, so the others still list."""

    root: Path
    labs: list[Lab] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)

    def get(self, lab_id: str) -> Lab:
        for lab in self.labs:
            if lab.id == lab_id:
                return lab
        raise unknown_lab(lab_id, [lab.id for lab in self.labs], self.root)


def unknown_lab(lab_id: str, known: list[str], root: Path) -> InputError:
    import difflib

    close = difflib.get_close_matches(lab_id, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `gpulab lab list`"
    return InputError(f"no lab {lab_id!r} under {root}{hint}")


def load_catalogue(root: Path | None = None) -> Catalogue:
    """Load every lab under ``root`` (default :func:`labs_root`)."""
    root = root or labs_root()
    cat = Catalogue(root)
    seen: dict[str, Path] = {}
    for directory in lab_dirs(root):
        try:
            lab = load_lab(directory)
        except InputError as exc:
            cat.errors.append(exc)
            continue
        if lab.id in seen:
            cat.errors.append(InputError(f"{directory / LAB_FILE}: lab id {lab.id} also used by {seen[lab.id]}"))
            continue
        seen[lab.id] = directory
        cat.labs.append(lab)
    cat.labs.sort(key=lambda lab: (lab.domain, lab.level, lab.id))
    return cat


def find_lab(lab_id: str, root: Path | None = None) -> Lab:
    """Load the one lab ``lab_id`` (its directory is ``<domain>/<lab_id>``), without loading the others."""
    root = root or labs_root()
    matches = [d for d in lab_dirs(root) if d.name == lab_id]
    if not matches:
        raise unknown_lab(lab_id, [d.name for d in lab_dirs(root)], root)
    return load_lab(matches[0])


@cache
def _schema() -> dict[str, Any]:
    import json
    from importlib import resources

    text = (resources.files("assessor") / "schemas" / "lab.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _bounded(call: Any, path: Path) -> Any:
    """``call()``, a file read within its bound; an OSError (gone, unreadable) as one InputError naming it."""
    try:
        return call()
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def digest(directory: Path) -> str:
    """SHA-256 of lab.yaml's bytes and README.md's bytes: identifies the version of a lab an attempt used.

    Hashed a block at a time within the files' bounds (:mod:`assessor.content`): a 1 GB README is refused,
    never read whole."""
    from assessor.content import MAX_README_BYTES, MAX_YAML_BYTES, digest_file

    h = hashlib.sha256()
    lab_file = directory / LAB_FILE
    _bounded(lambda: digest_file(h, lab_file, limit=MAX_YAML_BYTES, what="a YAML file"), lab_file)
    h.update(b"\0")
    readme = directory / README
    if readme.is_file():
        _bounded(lambda: digest_file(h, readme, limit=MAX_README_BYTES, what="a lab's README"), readme)
    return h.hexdigest()


def read_readme(lab: Lab) -> str:
    """The text of a lab's README, within :data:`assessor.content.MAX_README_BYTES` (InputError naming the
    file and the bound; a byte that is not UTF-8 names its line)."""
    from assessor.content import MAX_README_BYTES, read_text

    path = lab.readme
    text: str = _bounded(lambda: read_text(path, limit=MAX_README_BYTES, what="a lab's README"), path)
    return text


def load_lab(directory: Path | str) -> Lab:
    """Load and validate one lab directory; InputError listing every problem as ``file:line: message (key k)``."""
    from assessor import yamlio

    directory = Path(directory)
    stamp = validated_stamp(directory)
    kept = _kept_data(stamp)
    if kept is not None:
        return _build(kept["lab"], directory, typed=kept["typed"])
    located = yamlio.load(directory / LAB_FILE)
    resolve_references(located)
    if stamp is None or not stamp.exists():
        problems = schema_problems(located)
        if not problems:
            problems = semantic_problems(located, directory)
        if problems:
            raise InputError("\n".join(str(p) for p in problems))
    lab = _build(located.data, directory)
    _keep_data(stamp, {"lab": located.data, "typed": [c.params for c in lab.checks]})
    return lab


def _kept_data(stamp: Path | None) -> dict[str, Any] | None:
    """The lab.yaml's content (its references resolved, ``lab``) and its checks' params as the checks declare
    them (``typed``, :func:`_typed`: a command that only lists labs need not load the check catalogue), kept with
    the proof that this exact folder is valid; None when there is none (no cache, a stamp of an older gpulab, a
    file that is not what gpulab wrote)."""
    import json

    if stamp is None:
        return None
    try:
        text = stamp.read_text(encoding="utf-8")
        data = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("lab"), dict) or not isinstance(data.get("typed"), list):
        return None
    return data


def _keep_data(stamp: Path | None, data: Any) -> None:
    """Keep the validated lab's content with its stamp, so the next command reads it without parsing YAML: only
    content that JSON gives back exactly (YAML's dates or integer keys would come back changed)."""
    import json

    if stamp is None:
        return
    try:
        text = json.dumps(data, sort_keys=True)
        exact = json.loads(text) == data
    except (TypeError, ValueError):
        exact = False
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
        tmp.write_text(text if exact else "", encoding="utf-8")
        os.replace(tmp, stamp)
    except OSError:
        pass  # a read-only home only costs the next command the validation again


def resolve_references(located: Located) -> None:
    """Replace each check parameter written ``ref:NAME[.FAMILY]`` by its reference number, in place.

    Labs, like profiles, name the public reference numbers instead of repeating them
    (assessor/data/references.yaml); an unknown name is an error naming file, line and key.
    """
    from assessor.checks import references

    data = located.data
    if not isinstance(data, dict):
        return
    for section in ("grading", "answer"):
        block = data.get(section)
        checks = block.get("checks") if isinstance(block, dict) else None
        for i, check in enumerate(checks if isinstance(checks, list) else []):
            params = check.get("params") if isinstance(check, dict) else None
            if not isinstance(params, dict):
                continue
            for key, value in params.items():
                if references.is_ref(value):
                    try:
                        params[key] = references.resolve(value)
                    except InputError as exc:
                        raise located.error((section, "checks", i, "params", key), str(exc)) from None


def validated_stamp(directory: Path) -> Path | None:
    """Where the proof that this exact lab folder passed validation is kept; None when there is no cache.

    Validating a lab imports the schema validator, the check catalogue and the simulator (most of a
    second for the shipped labs); its verdict depends only on the folder's files and on gpulab itself,
    so it is kept under a key of both. A lab that fails validation is never stamped.
    """
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    if os.environ.get("GPULAB_NO_CACHE"):
        return None
    h = hashlib.sha256(_validator_fingerprint().encode())
    h.update(f"{directory.parent.name}/{directory.name}\0".encode())  # the id and domain must match the folders
    from assessor.content import MAX_README_BYTES, MAX_YAML_BYTES, digest_file

    for file in sorted(p for p in directory.iterdir() if p.is_file()):
        # each file a block at a time, within the bound of its kind: a README or anything else of the folder
        # (playbooks, answers) up to the README's bound, the lab.yaml up to a YAML file's
        limit, what = (MAX_YAML_BYTES, "a YAML file") if file.name == LAB_FILE else (MAX_README_BYTES, "a lab file")
        if file.name == README:
            what = "a lab's README"
        h.update(file.name.encode() + b"\0")
        _bounded(lambda f=file, n=limit, w=what: digest_file(h, f, limit=n, what=w), file)
        h.update(b"\0")
    from assessor.labs.levels import BLUEPRINTS, data_file
    from assessor.labs.objectives import OBJECTIVES

    for name in (BLUEPRINTS, OBJECTIVES):  # what a lab's exam domains and objectives are checked against
        data = data_file(name, directory.parent.parent)
        if data.is_file():
            h.update(name.encode() + b"\0")
            _bounded(lambda f=data: digest_file(h, f, limit=MAX_YAML_BYTES, what="a YAML file"), data)
    return Path(cache_home) / "gpulab" / "labs-valid" / h.hexdigest()


@cache
def _validator_fingerprint() -> str:
    """gpulab's version and the files whose code decides whether a lab is valid."""
    from assessor import __version__

    package = Path(__file__).resolve().parents[1]
    parts = [__version__]
    patterns = (
        "labs/*.py",
        "labs/design/*.py",
        "checks/*.py",
        "data/*.yaml",
        "sim/faults.py",
        "sim/fixtures/*.json",
        "schemas/*.json",
    )
    for pattern in patterns:
        for f in sorted(package.glob(pattern)):
            st = f.stat()
            parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def schema_problems(located: Located) -> list[InputError]:
    """Schema violations, each mapped to the line of the key it is about."""
    import jsonschema

    if not isinstance(located.data, dict):
        return [located.error((), "a lab.yaml is a mapping (id, title, domain, level, ...)")]
    validator = jsonschema.Draft202012Validator(_schema())
    out = []
    errors = sorted(validator.iter_errors(located.data), key=lambda e: located.line(tuple(e.absolute_path)) or 0)
    for err in errors:
        path: KeyPath = tuple(err.absolute_path)
        message = _schema_message(err)
        out.append(located.error(path, message))
    return out


def _schema_message(err: Any) -> str:
    """jsonschema's message, made shorter where it repeats the whole offending value."""
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        return f"unknown key(s) {', '.join(map(str, extra))} (allowed: {', '.join(allowed)})"
    if err.validator == "enum":
        return f"{err.instance!r} is not one of {', '.join(map(str, err.validator_value))}"
    if err.validator == "pattern" and err.absolute_path and err.absolute_path[-1] == "id":
        prefixes = ", ".join(DOMAIN_PREFIX.values())
        return f"id {err.instance!r} must look like <prefix>-<level><nn>, e.g. mig-301 (prefixes: {prefixes})"
    return str(err.message)


def semantic_problems(located: Located, directory: Path) -> list[InputError]:
    """What the schema cannot check: names exist, parameters fit, id agrees with domain and level, files present.

    A lab with variants is checked with each variant's first value filled in.
    """
    out: list[InputError] = _variant_problems(located)
    if out:
        return out
    if located.data.get("variants"):
        located = Located(fill(located.data, first_variant(located.data)), located.file, located.lines)
    data: dict[str, Any] = located.data
    lab_id, domain, level = data["id"], data["domain"], data["level"]
    prefix = DOMAIN_PREFIX[domain]
    if not lab_id.startswith(prefix + "-"):
        out.append(located.error(("id",), f"lab id {lab_id} of domain {domain} must start with {prefix}-"))
    digit = lab_id.rsplit("-", 1)[-1][:1]
    if digit != str(level):
        out.append(located.error(("level",), f"level {level} disagrees with the id {lab_id} (level digit {digit})"))
    if directory.name != lab_id:
        out.append(located.error(("id",), f"lab id {lab_id} must match its directory name {directory.name}"))
    if directory.parent.name != domain:
        out.append(
            located.error(("domain",), f"domain {domain} must match the parent directory {directory.parent.name}")
        )
    readme = directory / README
    if not readme.is_file():
        out.append(InputError(f"{readme}: missing: every lab has a README.md (what the candidate reads)"))
    else:
        from assessor.content import MAX_README_BYTES, read_bytes

        try:
            empty = not read_bytes(readme, limit=MAX_README_BYTES, what="a lab's README").strip()
        except InputError as exc:
            out.append(exc)
        except OSError as exc:
            out.append(InputError(f"{readme}: cannot read: {exc.strerror or exc}"))
        else:
            if empty:
                out.append(InputError(f"{readme}: empty"))
    out += _exam_domain_problems(located)
    out += _objective_problems(located, directory)
    design = data["target"] == "design"
    if not design:
        from assessor.sim.fixtures import fixture_names

        if data["fixture"] not in fixture_names():
            out.append(
                located.error(
                    ("fixture",), f"unknown fixture {data['fixture']!r} (fixtures: {', '.join(fixture_names())})"
                )
            )
    scenario = data.get("scenario") or {}
    for action, rel in (scenario.get("playbooks") or {}).items():
        if not (directory / rel).is_file():
            out.append(located.error(("scenario", "playbooks", action), f"no playbook {rel} in {directory}"))
    solution = data.get("solution") or {}
    for i, step in enumerate(scenario.get("faults") or []):
        problem = _fault_problem(step["fault"])
        if problem:
            out.append(located.error(("scenario", "faults", i, "fault"), problem))
    inside = _typed_inside(scenario)
    for key, commands in (("scenario", scenario.get("commands") or []), ("solution", solution.get("commands") or [])):
        for i, line in enumerate(commands):
            problem = _command_problem(line, typed_inside=inside)
            if problem:
                out.append(located.error((key, "commands", i), problem))
    grading_checks = (data.get("grading") or {}).get("checks") or []
    answer = data.get("answer") or {}
    answer_checks = answer.get("checks") or []
    if grading_checks and answer_checks:
        out.append(located.error(("answer", "checks"), "give the checks once: in grading.checks (or answer.checks)"))
    elif not grading_checks and not answer_checks:
        out.append(located.error(("grading",), "no checks: grading.checks lists what is graded"))
    base: KeyPath = ("grading", "checks") if grading_checks else ("answer", "checks")
    for i, check in enumerate(grading_checks or answer_checks):
        out += _check_problems(located, (*base, i), check, design)
    if (grading_checks or answer_checks) and all(c.get("role") == "guard" for c in grading_checks or answer_checks):
        out.append(located.error(base, "every check is a guard: at least one task check carries the points"))
    ticket = not design and any(str(c.get("id", "")).startswith("design.") for c in grading_checks)
    if design or ticket:
        what = "design labs" if design else "node labs that grade a ticket (a design.* check)"
        for key_path, name in (
            (("answer", "example"), answer.get("example")),
            (("solution", "answer"), solution.get("answer")),
        ):
            if name is None:
                out.append(located.error(key_path[:1], f"{what} name a {key_path[1]} file ({'.'.join(key_path)})"))
            elif not (directory / name).is_file():
                out.append(located.error(key_path, f"{name}: no such file in {directory}"))
    elif data.get("answer") or solution.get("answer"):
        where: KeyPath = ("answer",) if data.get("answer") else ("solution", "answer")
        out.append(
            located.error(where, "an answer file is for design labs, or node labs with a design.* check that reads it")
        )
    if not design and answer_checks:
        problem = "a node lab lists every check, its ticket's too, in grading.checks"
        out.append(located.error(("answer", "checks"), problem))
    grades = answer.get("grades")
    if isinstance(grades, dict):
        limit, penalty = grades.get("limit", 1), grades.get("penalty_percent", 0)
        if penalty * (limit - 1) >= 100:
            out.append(
                located.error(
                    ("answer", "grades", "penalty_percent"),
                    f"with {penalty:g} % off per grade, grade {limit} of {limit} would earn nothing: "
                    "lower penalty_percent or limit",
                )
            )
    return out


def _exam_domain_problems(located: Located) -> list[InputError]:
    from assessor.labs.levels import exam_domain_names

    known = {name.casefold(): name for name in exam_domain_names()}
    out = []
    for i, name in enumerate(located.data["exam_domains"]):
        if name.casefold() not in known:
            import difflib

            close = difflib.get_close_matches(name, list(known.values()), n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else " (see labs/blueprints.yaml)"
            out.append(located.error(("exam_domains", i), f"unknown exam domain {name!r}{hint}"))
    return out


def _objective_problems(located: Located, directory: Path) -> list[InputError]:
    """Each objective the lab names is in the objectives file of its labs tree (labs/objectives.yaml), is named
    once, and belongs to an exam domain the lab lists in ``exam_domains``."""
    names = located.data.get("objectives") or []
    if not names:
        return []
    from assessor.labs import objectives

    try:
        known = objectives.cached(objectives.default_path(directory.parent.parent))
    except InputError as exc:
        return [exc]
    listed = {str(name).casefold() for name in located.data["exam_domains"]}
    out: list[InputError] = []
    seen: set[str] = set()
    for i, text in enumerate(names):
        ref = LabObjective.parse(text)
        found = known.get(ref.id)
        if found is None:
            out.append(located.error(("objectives", i), known.unknown(ref.id)))
        elif ref.id in seen:
            out.append(located.error(("objectives", i), f"objective {ref.id} is named twice"))
        elif found.exam_domain.casefold() not in listed:
            problem = f"{ref.id} is an objective of {found.exam_domain!r}: list that in exam_domains too"
            out.append(located.error(("objectives", i), problem))
        seen.add(ref.id)
    return out


def _fault_problem(name: str) -> str | None:
    try:
        from assessor.sim.faults import CONDITIONS, FAULTS
    except ImportError:  # the simulator's fault module is optional in a partial checkout
        return None
    if name in FAULTS or name in CONDITIONS:  # a condition (a job holding a GPU) sets a scenario up too
        return None
    import difflib

    close = difflib.get_close_matches(name, list(FAULTS), n=2, cutoff=0.5)
    return f"unknown fault {name!r}" + (
        f"; did you mean {' or '.join(close)}?" if close else f" (faults: {', '.join(sorted(FAULTS))})"
    )


def _typed_inside(scenario: dict[str, Any]) -> bool:
    """The scenario runs real daemons in the node (Slurm): its commands are typed in the running node's shell."""
    from assessor.sim.slurm_node import SCENARIO_FAULTS

    faults = [s.get("fault") for s in scenario.get("faults") or [] if isinstance(s, dict)]
    return any(f in SCENARIO_FAULTS for f in faults)


def _command_problem(line: str, *, typed_inside: bool = False) -> str | None:
    from assessor.sim.tools import TOOLS

    try:
        argv = shlex.split(line)
    except ValueError as exc:
        return f"cannot split command {line!r}: {exc}"
    if not argv:
        return "empty command"
    if argv[0] == ENV_COMMAND:
        return env_command_problem(argv)
    if typed_inside:
        return None  # any program of the node, in its shell (sed, scontrol, ...)
    if os.path.basename(argv[0]) not in TOOLS:
        return f"{argv[0]} is not a simulated tool (tools: {', '.join(sorted(TOOLS))}, and {ENV_COMMAND})"
    return None


def env_command_problem(argv: list[str]) -> str | None:
    """Why a ``gpulab-env NAME=VALUE`` / ``gpulab-env -u NAME`` line is malformed, or None."""
    args = argv[1:]
    if len(args) == 2 and args[0] == "-u" and args[1]:
        return None
    if len(args) == 1 and "=" in args[0] and args[0].split("=", 1)[0]:
        return None
    return f"{ENV_COMMAND} takes NAME=VALUE or -u NAME, not {shlex.join(args)!r}"


def _check_problems(located: Located, path: KeyPath, check: dict[str, Any], design: bool) -> list[InputError]:
    from assessor.labs import designs

    out: list[InputError] = []
    check_id: str = check["id"]
    params = check.get("params") or {}
    if design or check_id.startswith("design."):
        if not check_id.startswith("design."):
            return [located.error((*path, "id"), f"design labs are graded by design.* graders, not {check_id}")]
        # in a node lab, a design.* check grades the candidate's ticket for a physical fault
        spec: Any = designs.spec(check_id)
        if spec is None:
            known = ", ".join(designs.ids()) or "none"
            return [located.error((*path, "id"), f"unknown design grader {check_id!r} (graders: {known})")]
    else:
        from assessor import checks

        try:
            spec = checks.get(check_id)
        except InputError as exc:
            return [located.error((*path, "id"), str(exc))]
    role = check.get("role", "task")
    points = check.get("points")
    if role == "guard" and points:
        out.append(
            located.error((*path, "points"), f"{check_id} is a guard: guards carry no points (points: 0), not {points}")
        )
    elif role == "task" and not points:
        out.append(
            located.error((*path, "points"), f"{check_id} is a task check: it carries points (> 0), or say role: guard")
        )
    if role == "guard" and check.get("baseline_ok"):
        out.append(located.error((*path, "baseline_ok"), "baseline_ok is for task checks: a guard earns no points"))
    from assessor.checks import params as param_types

    for name, value in params.items():
        try:
            # a design grader's spec has the same id/params/param() shape as a CheckSpec
            param_types.coerce(spec, name, value)
        except InputError as exc:
            out.append(
                located.error(
                    (*path, "params", name),
                    str(exc).replace("check ", "grader " if check_id.startswith("design.") else "check ", 1),
                )
            )
    checker = getattr(spec, "check_params", None)  # a design grader's checks of the params beyond their types
    if checker is not None and not out:
        for name, problem in checker(params):
            out.append(located.error((*path, "params", name), f"{check_id}: {problem}"))
    numeric = {p.name for p in spec.params if p.type in ("int", "float")}
    for j, rule in enumerate(check.get("partial") or []):
        name = rule["param"]
        value = params.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out.append(
                located.error(
                    (*path, "partial", j, "param"),
                    f"partial credit relaxes {name!r}, so params.{name} must be set to a number",
                )
            )
        elif name not in numeric:
            out.append(located.error((*path, "partial", j, "param"), f"{check_id} parameter {name} is not numeric"))
    return out


def _typed(check_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """Params as the check declares them (an int 228 for a float param becomes 228.0), so partial rules relax
    a float param to 182.4, not to an int."""
    from assessor.checks import params as param_types
    from assessor.labs import designs

    spec: Any
    if check_id.startswith("design."):
        spec = designs.spec(check_id)
    else:
        from assessor import checks

        spec = checks.get(check_id)
    return {name: param_types.coerce(spec, name, value) for name, value in params.items()}


def _answer_grades(grades: dict[str, Any] | None, *, ticket: bool) -> TicketGrades | None:
    """How often the lab grades its answer: ``answer.grades`` when given; else a node lab's ticket the default
    (:data:`~assessor.labs.model.DEFAULT_TICKET_GRADES`), a design lab's answer as often as asked."""
    if grades:
        return TicketGrades(limit=int(grades["limit"]), penalty_percent=float(grades.get("penalty_percent", 0)))
    return DEFAULT_TICKET_GRADES if ticket else None


def _steps(items: list[dict[str, Any]] | None) -> tuple[FaultStep, ...]:
    return tuple(FaultStep(s["fault"], dict(s.get("options") or {})) for s in items or [])


def _build(
    source: dict[str, Any], directory: Path, values: dict[str, Any] | None = None, *, typed: list[Any] | None = None
) -> Lab:
    """The lab of ``source`` with the variant ``values`` (None: the first variant); ``typed``: the params of its
    checks already made as the checks declare them for the first variant (:func:`_typed`, kept with the stamp)."""
    first = values is None
    values = first_variant(source) if values is None else values
    data = {**source, **{k: fill(source[k], values) for k in _VARIANT_KEYS if k in source}} if values else source
    grading = data.get("grading") or {}
    answer = data.get("answer") or {}
    scenario = data.get("scenario") or {}
    solution = data.get("solution") or {}
    raw_checks = grading.get("checks") or answer.get("checks") or []
    if not (
        first and isinstance(typed, list) and len(typed) == len(raw_checks) and all(isinstance(t, dict) for t in typed)
    ):
        typed = [_typed(c["id"], dict(c.get("params") or {})) for c in raw_checks]
    lab_checks = tuple(
        LabCheck(
            id=c["id"],
            params=dict(params),
            points=0.0 if c.get("role") == "guard" else float(c["points"]),
            hint=c["hint"],
            partial=tuple(Partial(p["param"], float(p["factor"]), float(p["credit"])) for p in c.get("partial") or []),
            role=c.get("role", "task"),
            baseline_ok=bool(c.get("baseline_ok", False)),
        )
        for c, params in zip(raw_checks, typed, strict=True)
    )
    return Lab(
        id=data["id"],
        title=data["title"],
        domain=data["domain"],
        level=data["level"],
        exam_domains=tuple(data["exam_domains"]),
        time_limit_min=data["time_limit_min"],
        target=data["target"],
        runs_on=tuple(data["runs_on"]),
        fixture=data.get("fixture"),
        checks=lab_checks,
        pass_percent=float(grading["pass_percent"]),
        path=directory,
        digest=digest(directory),
        warn_counts=bool(grading.get("warn_counts", False)),
        dcgm_level=int(grading.get("dcgm_level", 1)),
        nccl_job=str(grading.get("nccl_job", "user")),
        faults=_steps(scenario.get("faults")),
        commands=tuple(scenario.get("commands") or ()),
        files=dict(scenario.get("files") or {}),
        playbooks=dict(scenario.get("playbooks") or {}),
        solution_commands=tuple(solution.get("commands") or ()),
        solution_files=dict(solution.get("files") or {}),
        solution_answer=solution.get("answer"),
        answer_example=answer.get("example"),
        answer_grades=_answer_grades(
            answer.get("grades"), ticket=any(c.grades_answer for c in lab_checks) and data["target"] != "design"
        ),
        variants={name: tuple(choices) for name, choices in (source.get("variants") or {}).items()},
        variant=dict(values),
        source=source,
        objectives=tuple(LabObjective.parse(text) for text in source.get("objectives") or ()),
    )


# ---- per-candidate variants ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
# the parts of a lab.yaml where a {name} of its variants is filled in
_VARIANT_KEYS = ("scenario", "solution", "grading", "answer")


def fill(value: Any, values: dict[str, Any]) -> Any:
    """``value`` with each ``{name}`` of ``values`` filled in: a string that is just ``{gpu}`` takes the value
    itself (an int stays an int), other strings the value's text; lists and mappings recursively."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    return value


def placeholders(value: Any) -> set[str]:
    """Every ``{name}`` used in ``value`` (strings, lists and mappings)."""
    if isinstance(value, str):
        return set(_PLACEHOLDER.findall(value))
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    return set()


def first_variant(data: dict[str, Any]) -> dict[str, Any]:
    """The values a lab is built with when no candidate is named: each variant's first value."""
    return {name: choices[0] for name, choices in (data.get("variants") or {}).items()}


def pick_variant(lab: Lab, candidate: str) -> dict[str, Any]:
    """The candidate's variant of ``lab``: each value picked by a hash of candidate, lab id and name, so the
    same candidate always gets the same node set-up, and two candidates likely different ones."""
    out = {}
    for name, choices in sorted(lab.variants.items()):
        digest = hashlib.sha256(f"{candidate}\0{lab.id}\0{name}".encode()).digest()
        out[name] = choices[int.from_bytes(digest[:8], "big") % len(choices)]
    return out


def reference_answer(lab: Lab) -> str:
    """The text of the lab's reference answer (a design, or a node lab's ticket), its ``{name}``s filled in
    with the variant ``lab`` was built with."""
    if lab.solution_answer is None:
        raise InputError(f"lab {lab.id} has no reference answer (solution.answer)")
    from assessor.content import MAX_YAML_BYTES, read_text

    path = lab.path / lab.solution_answer
    text: str = _bounded(lambda: read_text(path, limit=MAX_YAML_BYTES, what="a reference answer"), path)
    if not lab.variant:
        return text
    return _PLACEHOLDER.sub(lambda m: str(lab.variant.get(m.group(1), m.group(0))), text)


def with_variant(lab: Lab, values: dict[str, Any] | None) -> Lab:
    """``lab`` built with these variant values (unknown names ignored; missing ones take the first value)."""
    if not lab.variants or not values:
        return lab
    chosen = {**first_variant(lab.source), **{k: v for k, v in values.items() if k in lab.variants}}
    if chosen == lab.variant:
        return lab
    return _build(lab.source, lab.path, chosen)


def _variant_problems(located: Located) -> list[InputError]:
    data: dict[str, Any] = located.data
    declared = set(data.get("variants") or {})
    out = []
    for key in _VARIANT_KEYS:
        unknown = placeholders(data.get(key) or {}) - declared
        for name in sorted(unknown):
            known = ", ".join(sorted(declared)) or "none declared"
            out.append(located.error((key,), f"{{{name}}} is not a variant of this lab (variants: {known})"))
    for name, choices in (data.get("variants") or {}).items():
        if len({type(c) for c in choices}) > 1:
            out.append(located.error(("variants", name), f"the values of variant {name} mix types"))
    return out
