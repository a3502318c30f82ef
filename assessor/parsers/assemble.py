"""From a snapshot to node facts: parse every source, keep what failed as a problem.

A broken source never ends the run: its fact fields get an entry in ``facts.problems``
(so the checks that need them say ``error``) while every other source still counts.

When two files give the same field, the better one (the table's priority) is taken. For a few
fields the lesser file still adds what only it knows, and ``facts.notes`` says where they
disagreed: a ``systemctl status`` paste beside ``systemctl show`` (the journal's reason for a
failed unit; show's states win), ``nvidia-smi mig -lgipp`` beside ``-lgip`` (the placements).
A source that is a cut or filtered excerpt says so in ``facts.partial`` and in the notes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from assessor.capture.snapshot import Snapshot, Source, known_files
from assessor.capture.sources import by_priority
from assessor.errors import ParseError
from assessor.facts import DriverInfo, NodeFacts, Service

# Fields assembly handles itself rather than copying them from the first source that has them.
_OWN_FIELDS = frozenset({"host", "problems", "sources", "partial", "notes", "gpus_attached"})


def nvml_failure(text: str) -> str | None:
    """The driver-level failure nvidia-smi printed instead of its output, if that is what ``text`` is."""
    from assessor.parsers._nvsmi import failure_message

    if text.lstrip().startswith("<"):
        return None
    message = failure_message(text)
    return message.splitlines()[0] if message else None


def facts_from_snapshot(snap: Snapshot) -> NodeFacts:
    from assessor.parsers import KINDS, parse

    facts = NodeFacts(host=snap.host)
    carried: dict[str, str] = {}
    # Fields whose better source is present but broken: a lesser source must not paper over it
    # (a truncated nvidia-smi -q -x is an error for the GPU checks even when nvidia-smi -L lists the GPUs).
    blocked: set[str] = set()
    kinds = known_files()
    # When two files feed the same field, the first one that parses wins (the table's priority).
    order = by_priority(list(snap.sources))
    for name in order:
        source = snap.sources[name]
        spec = KINDS[kinds[name]]
        problem = _capture_problem(source)
        if source.text is not None and name.startswith("nvidia-smi"):
            failure = nvml_failure(source.text)
            if failure:
                _merge_driver(facts, DriverInfo(nvml_error=failure))
                problem = f"{name}: nvidia-smi failed: {failure}"
        if problem is None and source.text is not None:
            reconcile = [(f, _RECONCILE[f]) for f in spec.fields if f in _RECONCILE and getattr(facts, f) is not None]
            # /proc/driver/nvidia/version is the one source that says open or proprietary kernel module
            # (GPUDirect RDMA through DMA-BUF needs the open one): read it even when NVML gave the version.
            open_flag_unknown = spec.name == "driver-version" and (
                facts.driver is None or facts.driver.open_kernel_module is None
            )
            if _already_known(facts, spec.fields) and not reconcile and not open_flag_unknown:
                continue  # a higher-priority source (nvml.json) gave all of it
            try:
                partial = parse(spec.name, source.text, source=name)
            except ParseError as exc:
                if reconcile:
                    continue  # the better source already gave the field; this one adds nothing
                problem = str(exc)
            except Exception as exc:  # a parser bug: that source is unusable, the run goes on
                problem = f"{name}: could not be parsed ({type(exc).__name__}: {exc}); please report it with the file"
            else:
                for field_name, reconciler in reconcile:
                    if getattr(partial, field_name) is not None and field_name not in blocked:
                        reconciler(facts, partial, name)
                _merge(facts, partial, name, blocked)
                for field_name, text in partial.problems.items():
                    if facts.sources.get(field_name) == name:
                        carried.setdefault(field_name, f"{name}: {text}")
                continue
        if problem is not None:
            for field_name in spec.fields:
                if getattr(facts, field_name) is None and field_name != "driver":
                    facts.problems.setdefault(field_name, problem)
                    if source.status != "missing":
                        blocked.add(field_name)
    # A filled field keeps only the problem its own source reported (the NVML collector: a GPU that is
    # lost among those that answer).
    for field_name in list(facts.problems):
        if getattr(facts, field_name) is not None:
            del facts.problems[field_name]
    facts.problems.update(carried)
    _true_indices(facts, snap, kinds)
    if facts.ib_ports is None and "ib_ports" not in facts.problems and facts.ib_devices is not None:
        # No ibstat: ibv_devinfo's ports stand in (a broken ibstat stays an error above, never replaced).
        from assessor.parsers.ibv_devinfo import ports_of

        origin = facts.sources.get("ib_devices", "ibv_devinfo.txt")
        if not facts.ib_devices or any(d.ports for d in facts.ib_devices):
            facts.ib_ports = ports_of(facts.ib_devices)
            facts.sources["ib_ports"] = origin
        else:
            # An excerpt (ibv_devinfo -v cut before its port sections) says nothing about the ports.
            names = ", ".join(d.hca_id for d in facts.ib_devices[:4])
            why = f"{origin} lists {names} without a port section (an excerpt): port states unknown"
            facts.partial["ib_ports"] = why
            facts.notes.append(why)
    return facts


def _reconcile_services(facts: NodeFacts, partial: NodeFacts, source: str) -> None:
    """Units of a lesser source beside those already read: new units join, known ones keep their states.

    A ``systemctl status`` or ``journalctl -u`` paste adds the reason its journal lines give for a failed
    unit; where it says another state than the better source (``systemctl show``), the note says so.
    """
    have = {s.name: s for s in facts.services or ()}
    first = facts.sources.get("services", "the first source")
    for other in partial.services or ():
        mine = have.get(other.name)
        if mine is None:
            (facts.services or []).append(other)
            have[other.name] = other
            continue
        if other.active_state and mine.active_state and other.active_state != mine.active_state:
            facts.notes.append(
                f"{other.name}: {first} says {_state(mine)}, {source} says {_state(other)}; {first} is used "
                "(systemctl show gives the unit's state when it was captured)"
            )
            continue
        if mine.reason is None and other.reason and mine.active_state != "active":
            mine.reason = other.reason
        for attr in ("result", "exec_main_status", "unit_file_state", "sub_state"):
            if getattr(mine, attr) is None and getattr(other, attr) is not None:
                setattr(mine, attr, getattr(other, attr))


def _state(service: Service) -> str:
    sub = f" ({service.sub_state})" if service.sub_state and service.sub_state != service.active_state else ""
    return f"{service.active_state}{sub}"


def _add_placements(facts: NodeFacts, partial: NodeFacts, source: str) -> None:
    """``nvidia-smi mig -lgipp``'s placements joined to the ``-lgip`` profiles of the same GPU and id."""
    from assessor.parsers.nvidia_smi_mig import merge_placements

    if facts.mig_profiles is not None and partial.mig_profiles:
        facts.mig_profiles = merge_placements(facts.mig_profiles, partial.mig_profiles)


# field -> how a lesser source adds to the value a better one gave
_RECONCILE: dict[str, Callable[[NodeFacts, NodeFacts, str], None]] = {
    "services": _reconcile_services,
    "mig_profiles": _add_placements,
}


def _true_indices(facts: NodeFacts, snap: Snapshot, kinds: dict[str, str]) -> None:
    """GPU indices as NVML numbers them, from ``nvidia-smi -L`` when the GPUs came from a source without them.

    ``nvidia-smi -q -x`` and ``-q`` list the GPUs they can read in order and print no index: a GPU lost from
    the bus (``Unable to determine the device handle for GPU6``) would shift every GPU after it down by one.
    ``-L`` prints each GPU's index beside its UUID; where every GPU's UUID is there, its index is taken.
    """
    from dataclasses import replace

    from assessor.parsers import parse

    if not facts.gpus or kinds.get(facts.sources.get("gpus", ""), "") == "nvidia-smi-list":
        return
    listing = next(
        (s for n, s in snap.sources.items() if kinds.get(n) == "nvidia-smi-list" and s.text),
        None,
    )
    if listing is None or listing.text is None:
        return
    try:
        listed = parse("nvidia-smi-list", listing.text, source=listing.file).gpus or []
    except Exception:  # an unreadable -L changes nothing here; its own problem is reported where it is used
        return
    by_uuid = {g.uuid: g.index for g in listed if g.uuid}
    if len(by_uuid) != len(listed) or not all(g.uuid in by_uuid for g in facts.gpus):
        return
    facts.gpus = [replace(g, index=by_uuid[g.uuid]) if g.uuid is not None else g for g in facts.gpus]


def _already_known(facts: NodeFacts, names: tuple[str, ...]) -> bool:
    for name in names:
        if name == "driver":
            if facts.driver is None or facts.driver.version is None or facts.driver.cuda_version is None:
                return False
        elif getattr(facts, name) is None:
            return False
    return True


def _capture_problem(source: Source) -> str | None:
    """Why a source cannot be used, or None. A missing tool is a gap (skip), not a problem."""
    if source.status == "missing":
        return None
    if source.status == "unreadable":
        return source.message or f"{source.file}: cannot read"
    if source.status == "timeout" or (source.status == "failed" and not (source.text or "").strip()):
        detail = source.message or source.stderr or f"exit code {source.exit_code}"
        return f"{source.file}: capture {source.status}: {detail}".strip()
    if source.text is not None and not source.text.strip():
        return f"{source.file}: empty output" + (f" (exit code {source.exit_code})" if source.exit_code else "")
    return None


def _merge(facts: NodeFacts, partial: NodeFacts, source: str, blocked: set[str]) -> None:
    for f in fields(NodeFacts):
        if f.name in _OWN_FIELDS or f.name in blocked:
            continue
        value = getattr(partial, f.name)
        if value is None:
            continue
        if f.name == "driver":
            _merge_driver(facts, value)
            facts.sources.setdefault("driver", source)
        elif getattr(facts, f.name) is None:
            setattr(facts, f.name, value)
            facts.sources[f.name] = source
            if f.name in partial.partial:
                # The source is an excerpt of its tool's output: what it lacks is not known to be absent.
                facts.partial[f.name] = f"{source}: {partial.partial[f.name]}"
                facts.notes.append(facts.partial[f.name])
    if partial.gpus_attached is not None and facts.sources.get("gpus") == source:
        facts.gpus_attached = partial.gpus_attached
    facts.notes.extend(f"{source}: {note}" for note in partial.notes)


def _merge_driver(facts: NodeFacts, extra: DriverInfo) -> None:
    if facts.driver is None:
        facts.driver = DriverInfo()
    for f in fields(DriverInfo):
        if getattr(facts.driver, f.name) is None and getattr(extra, f.name) is not None:
            setattr(facts.driver, f.name, getattr(extra, f.name))
