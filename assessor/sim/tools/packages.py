"""Simulated ``dpkg``, ``apt``/``apt-get``, ``dkms`` and ``modinfo`` over the node's package database.

They print what the real ones print (``dpkg -l``'s table, apt's summary and the maintainer scripts' lines,
``dkms status`` in dkms' ``module/version, kernel, arch: state`` form) and change the node as
:mod:`assessor.sim.packages` describes. Nothing is downloaded: apt installs from the node's repository list,
and a package not in it is "Unable to locate package". apt acts without asking (as with ``-y``).
"""

from __future__ import annotations

import fnmatch

from assessor.sim import packages as pk
from assessor.sim.package_db import Package, PackageDb
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult

_DPKG_HEADER = (
    "Desired=Unknown/Install/Remove/Purge/Hold\n"
    "| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend\n"
    "|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)\n"
)
_LOCK = (
    "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?\n"
)
_APT_HEAD = "Reading package lists... Done\nBuilding dependency tree... Done\nReading state information... Done\n"


def _shown_name(p: Package) -> str:
    """Multi-arch libraries show their architecture: ``libnvidia-compute-535-server:amd64``."""
    return f"{p.name}:{p.arch}" if p.name.startswith("lib") and p.arch != "all" else p.name


# ---- dpkg ----------------------------------------------------------------------------------------


def dpkg(args: list[str], session: Session) -> ToolResult:
    """``dpkg -l [PATTERN...]``, ``dpkg -s PKG``, ``dpkg -P|--purge PKG...``, ``dpkg -r|--remove PKG...``."""
    if not args:
        return ToolResult(
            2,
            "",
            "dpkg: error: need an action option\n\n"
            "Type dpkg --help for help about installing and deinstalling packages [*];\n",
        )
    action, rest = args[0], args[1:]
    if action in ("-l", "--list"):
        return _dpkg_list(pk.package_db(session.read()), rest)
    if action in ("-s", "--status"):
        return _dpkg_status(pk.package_db(session.read()), rest)
    if action in ("-P", "--purge", "-r", "--remove"):
        if session.euid != 0:
            return ToolResult(2, "", "dpkg: error: requested operation requires superuser privilege\n")
        return _apt_like(session, "purge" if action in ("-P", "--purge") else "remove", rest, dpkg_only=True)
    return ToolResult(2, "", f"dpkg: error: unknown option {action}\n")


def _dpkg_list(db: PackageDb, patterns: list[str]) -> ToolResult:
    rows = sorted(db.installed, key=lambda p: p.name)
    err = []
    if patterns:
        picked = []
        for pattern in patterns:
            hits = [p for p in rows if fnmatch.fnmatchcase(p.name, pattern.split(":", 1)[0])]
            if not hits:
                err.append(f"dpkg-query: no packages found matching {pattern}\n")
            picked += [p for p in hits if p not in picked]
        rows = sorted(picked, key=lambda p: p.name)
    if not rows:
        return ToolResult(1, "", "".join(err))
    names = [_shown_name(p) for p in rows]
    w1 = max(len("Name"), *(len(n) for n in names))
    w2 = max(len("Version"), *(len(p.version) for p in rows))
    w3 = max(len("Architecture"), *(len(p.arch) for p in rows))
    w4 = max(len("Description"), *(len(p.description) for p in rows))
    out = [
        _DPKG_HEADER,
        f"||/ {'Name':<{w1}} {'Version':<{w2}} {'Architecture':<{w3}} Description\n",
        f"+++-{'=' * w1}-{'=' * w2}-{'=' * w3}-{'=' * w4}\n",
    ]
    out += [
        f"{p.status}  {n:<{w1}} {p.version:<{w2}} {p.arch:<{w3}} {p.description}\n"
        for p, n in zip(rows, names, strict=True)
    ]
    return ToolResult(1 if err else 0, "".join(out), "".join(err))


def _dpkg_status(db: PackageDb, names: list[str]) -> ToolResult:
    if not names:
        return ToolResult(2, "", "dpkg-query: error: --status needs at least one package name argument\n")
    out, err = [], []
    for name in names:
        p = pk.row(db, name)
        if p is None:
            err.append(
                f"dpkg-query: package '{name}' is not installed and no information is available\n"
                "Use dpkg --info (= dpkg-deb --info) to examine archive files.\n"
            )
            continue
        status = "install ok installed" if p.status == "ii" else "deinstall ok config-files"
        block = [f"Package: {p.name}", f"Status: {status}", "Priority: optional", f"Architecture: {p.arch}"]
        if pk.branch_of(p.name):
            block.append(f"Source: nvidia-graphics-drivers-{pk.branch_of(p.name)}-server")
        block.append(f"Version: {p.version}")
        if p.depends and p.status == "ii":
            block.append("Depends: " + ", ".join(p.depends))
        block.append(f"Description: {p.description}")
        out.append("\n".join(block) + "\n")
    return ToolResult(1 if err else 0, "\n".join(out), "".join(err))


# ---- apt -----------------------------------------------------------------------------------------


def apt(args: list[str], session: Session) -> ToolResult:
    """``apt|apt-get install|remove|purge|autoremove [-y] [--reinstall] [--purge] PKG...``, ``apt list --installed``."""
    words = [a for a in args if not a.startswith("-")]
    options = {a for a in args if a.startswith("-")}
    if not words:
        return ToolResult(
            1, "", "E: Invalid operation \n" if args else "apt 2.4.11 (amd64)\nUsage: apt [options] command\n"
        )
    verb, names = words[0], words[1:]
    if verb == "list":
        state = session.read()
        return _apt_list(pk.package_db(state), options, names, state.os_release.get("VERSION_CODENAME", "jammy"))
    if verb == "update":
        return ToolResult(0, "Reading package lists... Done\n")
    if verb not in ("install", "reinstall", "remove", "purge", "autoremove", "autopurge"):
        return ToolResult(100, "", f"E: Invalid operation {verb}\n")
    if session.euid != 0:
        return ToolResult(100, "", _LOCK)
    if verb == "reinstall":
        verb, options = "install", options | {"--reinstall"}
    if verb == "autopurge":
        verb, options = "autoremove", options | {"--purge"}
    if verb == "remove" and "--purge" in options:
        verb = "purge"
    return _apt_like(session, verb, names, reinstall="--reinstall" in options, purge_option="--purge" in options)


def _apt_list(db: PackageDb, options: set[str], patterns: list[str], codename: str) -> ToolResult:
    """``apt list [--installed] [PATTERN...]``: ``name/suites version arch [installed,automatic]``."""
    rows = [p for p in db.installed if p.status == "ii"] if "--installed" in options else db.repository
    if patterns:
        rows = [p for p in rows if any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]
    out = ["Listing... Done\n"]
    for p in sorted(rows, key=lambda p: p.name):
        have = pk.installed(db, p.name)
        tag = "" if have is None else (" [installed,automatic]" if have.auto else " [installed]")
        suites = f"{codename}-updates" + (",now" if have is not None else "")
        out.append(f"{p.name}/{suites} {p.version} {p.arch}{tag}\n")
    return ToolResult(0, "".join(out))


def _apt_like(
    session: Session,
    verb: str,
    names: list[str],
    *,
    reinstall: bool = False,
    purge_option: bool = False,
    dpkg_only: bool = False,
) -> ToolResult:
    with session.update() as state:
        db = pk.stored_db(state)
        try:
            if verb == "install":
                if not names:
                    return ToolResult(0, _APT_HEAD + "0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n")
                plan = pk.plan_install(db, names, reinstall=reinstall)
            elif verb == "autoremove":
                plan = pk.plan_autoremove(db, purge=purge_option)
            else:
                plan = pk.plan_remove(db, names, purge=verb == "purge")
        except pk.AptError as exc:
            head = "" if dpkg_only else _APT_HEAD
            return ToolResult(100, head, f"E: {exc}\n")
        out = [] if dpkg_only else [_APT_HEAD]
        out += [f"{n}\n" for n in plan.notes]
        out += [f"Package '{n}' is not installed, so not removed\n" for n in plan.not_installed]
        new = [p for p in plan.install if pk.row(db, p.name) is None or pk.row(db, p.name).status != "ii"]  # type: ignore[union-attr]
        again = [p for p in plan.install if p not in new]
        if not dpkg_only:
            if plan.remove:
                star = "*" if plan.purge else ""
                out.append("The following packages will be REMOVED:\n")
                out.append("  " + " ".join(f"{p.name}{star}" for p in plan.remove) + "\n")
            if new:
                out.append("The following NEW packages will be installed:\n")
                out.append("  " + " ".join(p.name for p in new) + "\n")
            upgraded = [p for p in again if pk.installed(db, p.name) and pk.installed(db, p.name).version != p.version]  # type: ignore[union-attr]
            reinstalled = len(again) - len(upgraded)
            out.append(
                f"{len(upgraded)} upgraded, {len(new)} newly installed, "
                + (f"{reinstalled} reinstalled, " if reinstalled else "")
                + f"{len([p for p in plan.remove if p.status == 'ii' or plan.purge])} to remove and 0 not upgraded.\n"
            )
        for p in plan.remove:
            if p.status == "ii":
                out.append(f"Removing {p.name} ({p.version}) ...\n")
                out.append(pk.after_remove(state, p))
                _unit_removed(state, pk.unit_of(p))
            if plan.purge:
                out.append(f"Purging configuration files for {p.name} ({p.version}) ...\n")
                db.installed = [q for q in db.installed if q.name != p.name]
            else:
                p.status = "rc"
        for p in plan.install:
            old = pk.row(db, p.name)
            if old is not None:
                db.installed.remove(old)
            out.append(f"Setting up {p.name} ({p.version}) ...\n")
            p.status = "ii"
            if old is not None and old.status == "ii" and not p.auto:
                p.auto = old.auto and p.name not in names
            db.installed.append(p)
        for p in plan.install:  # the scripts run once everything is unpacked
            out.append(pk.after_install(state, p))
            out.append(_unit_installed(state, pk.unit_of(p)))
    return ToolResult(0, "".join(out))


def _unit_installed(state: NodeState, unit: str | None) -> str:
    """A package's unit installed: enabled (its postinst), and nvidia-persistenced started where the driver runs."""
    from assessor.sim.state import ServiceState
    from assessor.sim.tools.system import start_unit

    if unit is None:
        return ""
    service = state.services.get(unit)
    if service is None:
        service = state.services[unit] = ServiceState(active_state="inactive", sub_state="dead")
    service.load_state, service.unit_file_state = "loaded", "enabled"
    out = f"Created symlink /etc/systemd/system/multi-user.target.wants/{unit} → /lib/systemd/system/{unit}.\n"
    if service.active_state != "active" and unit == "nvidia-persistenced.service":
        start_unit(state, unit, service)
    return out


def _unit_removed(state: NodeState, unit: str | None) -> None:
    """A package's unit removed: stopped, and gone (systemctl: not found)."""
    from assessor.sim.tools.system import stop_unit

    service = state.services.get(unit) if unit else None
    if unit is None or service is None:
        return
    stop_unit(state, unit, service)
    service.load_state, service.unit_file_state = "not-found", ""


# ---- dkms ----------------------------------------------------------------------------------------


def dkms(args: list[str], session: Session) -> ToolResult:
    """``dkms status``, ``dkms autoinstall [-k KERNEL]``, ``dkms install|build|remove nvidia/VERSION -k KERNEL``."""
    if not args:
        return ToolResult(4, "", "Error! No action was specified.\n")
    verb = args[0]
    module, version, kernel, everything = _dkms_target(args[1:])
    if verb == "status":
        return _dkms_status(pk.package_db(session.read()), module)
    if verb not in ("autoinstall", "install", "build", "remove", "uninstall"):
        return ToolResult(4, "", f"Error! Unknown action specified: '{verb}'\n")
    if session.euid != 0:
        return ToolResult(1, "", "Error! You must be root to use this command.\n")
    with session.update() as state:
        release = kernel or pk.running_kernel(state)
        db = pk.stored_db(state)
        if verb == "autoinstall":
            ok, text = pk.autoinstall(state, release)
            return ToolResult(0 if ok else 11, text if ok else "", "" if ok else text)
        if module is None or version is None:
            return ToolResult(
                4, "", f"Error! Invalid number of arguments passed.\nUsage: {verb} <module>/<module-version> or\n"
            )
        if (module, version) not in pk.dkms_added(db):
            return ToolResult(
                3, "", f"Error! The module/version combo: {module}-{version}\nis not located in the DKMS tree.\n"
            )
        if verb in ("remove", "uninstall"):
            gone = [
                d
                for d in db.dkms
                if d.module == module and d.version == version and (everything or d.kernel == release)
            ]
            db.dkms = [d for d in db.dkms if d not in gone]
            return ToolResult(
                0,
                "".join(
                    f"Module {module}-{version} for kernel {d.kernel} ({d.arch}).\n"
                    f"Deleting module {module}-{version} completely from the DKMS tree.\n"
                    for d in gone
                ),
            )
        done = next(
            (
                d
                for d in db.dkms
                if d.module == module and d.version == version and d.kernel == release and d.state == "installed"
            ),
            None,
        )
        if done is not None:
            return ToolResult(0, f"Module {module}/{version} already installed on kernel {release}/{done.arch}\n")
        ok, text = pk.dkms_build(state, module, version, release)
        if not ok:
            # nothing was written: the refusal leaves the state as it was
            return ToolResult(1, "", text)
        return ToolResult(0, text)


def _dkms_target(args: list[str]) -> tuple[str | None, str | None, str | None, bool]:
    module = version = kernel = None
    everything = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-k", "--kernelver") and i + 1 < len(args):
            kernel = args[i + 1].split("/", 1)[0]
            i += 1
        elif a in ("-m",) and i + 1 < len(args):
            module = args[i + 1]
            i += 1
        elif a in ("-v",) and i + 1 < len(args):
            version = args[i + 1]
            i += 1
        elif a == "--all":
            everything = True
        elif not a.startswith("-"):
            if "/" in a:
                module, version = a.split("/", 1)
            elif "," in a:
                module, version = (x.strip() for x in a.split(",", 1))
            else:
                module = a
        i += 1
    return module, version, kernel, everything


def _dkms_status(db: PackageDb, module: str | None) -> ToolResult:
    lines = []
    for d in sorted(db.dkms, key=lambda d: (d.module, d.version, d.kernel or "")):
        if module and d.module != module:
            continue
        if d.kernel is None:
            lines.append(f"{d.module}/{d.version}: {d.state}\n")
        else:
            lines.append(f"{d.module}/{d.version}, {d.kernel}, {d.arch}: {d.state}\n")
    return ToolResult(0, "".join(lines))


# ---- modinfo -------------------------------------------------------------------------------------


def modinfo(args: list[str], session: Session) -> ToolResult:
    """``modinfo [-k KERNEL] [-F FIELD] nvidia``: the DKMS-built module of that kernel (the running one)."""
    state = session.read()
    kernel = None
    field = None
    names = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-k",) and i + 1 < len(args):
            kernel = args[i + 1]
            i += 1
        elif a in ("-F", "--field") and i + 1 < len(args):
            field = args[i + 1]
            i += 1
        elif not a.startswith("-"):
            names.append(a.replace("-", "_"))
        i += 1
    if not names:
        return ToolResult(1, "", "modinfo: ERROR: missing module or filename.\n")
    release = kernel or pk.running_kernel(state)
    out = []
    for name in names:
        if not name.startswith("nvidia"):
            return ToolResult(1, "", f"modinfo: ERROR: Module {name} not found.\n")
        if state.packages is None and release == pk.running_kernel(state):
            version = state.driver.version
        else:
            build = pk.module_build(state, release)
            if build is None:
                return ToolResult(1, "", f"modinfo: ERROR: Module {name} not found.\n")
            version = build.version
        ko = name.replace("_", "-")
        fields = [
            ("filename", f"/lib/modules/{release}/updates/dkms/{ko}.ko"),
            ("version", version),
            ("supported", "external"),
            ("license", "Dual MIT/GPL" if state.driver.open_kernel_module else "NVIDIA"),
            ("name", name),
            ("vermagic", f"{release} SMP mod_unload modversions "),
        ]
        if field:
            out += [f"{v}\n" for k, v in fields if k == field]
        else:
            out += [f"{k + ':':<16}{v}\n" for k, v in fields]
    return ToolResult(0, "".join(out))
