"""Simulated fabric tools of infiniband-diags: ``iblinkinfo``, ``ibnetdiscover``, ``sminfo``, ``ibswitches``
and ``ibhosts``.

They print the layouts of rdma-core's infiniband-diags (``iblinkinfo.c``, ``ibnetdiscover.c``, ``sminfo.c``
and the ``ibswitches``/``ibhosts`` scripts; real outputs in ``tests/data/corpus/iblinkinfo`` and
``tests/data/corpus/ibnetdiscover``) from the fabric :mod:`assessor.sim.fabric` derives around the node: its
own HCAs, the leaves and spines they are cabled to, and the unit's other nodes on those leaves. The tools only
read. Departures, listed in docs/FIDELITY.md: ``ibnetdiscover FILE`` prints the topology instead of writing FILE
(redirect it, as most people do); ``ibnetdiscover -g/-s/-f`` and ``iblinkinfo -p`` are accepted and print the
plain layout (no chassis grouping, no ``s=.. w=.. v=..``, no HOQ/VL stall columns).
"""

from __future__ import annotations

from assessor.sim.fabric import AGGREGATION_NODE, Ca, Fabric, Link, Switch, fabric, ib_ports
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult

# iblinkinfo's speed column (mad_dump_linkspeed / the extended speeds), per IB speed name.
_LANE_TEXT = {
    "SDR": "2.5 Gbps",
    "DDR": "5.0 Gbps",
    "QDR": "10.0 Gbps",
    "FDR10": "10.0 Gbps (FDR10)",
    "FDR": "14.0625 Gbps",
    "EDR": "25.78125 Gbps",
    "HDR": "53.125 Gbps",
    "NDR": "106.25 Gbps",
    "XDR": "212.5 Gbps",
}
_SPEED_ORDER = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")
_VENDOR_ID = 0x2C9
_SWITCH_DEVID = {"MQM9700": 0xD2F0, "MQM8700": 0xCF08, "Q3400": 0xD2F4}
_SM_PRIORITY = 15
_SMINFO_MASTER = 3


def _pid(state: NodeState, salt: str) -> int:
    from assessor.sim.tools.ib import _pid as ib_pid

    return ib_pid(state, salt)


def _bare(guid: str) -> str:
    """``0x00a088c2...`` -> ``a088c2...`` (``%PRIx64``: no prefix, no leading zeros)."""
    return format(int(guid, 16), "x")


def _padded(guid: str) -> str:
    """``%016PRIx64``."""
    return format(int(guid, 16), "016x")


def _pick_port(state: NodeState, ca: str | None, port: int | None) -> tuple[str, int] | str:
    """The local port a diag opens (libibumad: the first Active port, else the first with its link up);
    an error message when there is none or the one asked for cannot be used."""
    hcas = [h for h in state.ib_hcas if ib_ports(h)]
    if ca is not None:
        hcas = [h for h in hcas if h.name == ca]
        if not hcas:
            return f"can't open UMAD port ({ca}:{port or 0})"
    candidates = [(h, p) for h in hcas for p in ib_ports(h) if port is None or p.port == port]
    for wanted in ("Active", None):
        for h, p in candidates:
            if (wanted and p.state == wanted) or (not wanted and p.physical_state == "LinkUp"):
                return h.name, p.port
    return f"can't open UMAD port ({ca or '(null)'}:{port or 0})"


def _options(args: list[str], prog: str, flags: set[str], valued: set[str]) -> tuple[dict[str, str], list[str]] | str:
    """Split ``args`` into options (flags map to "") and positionals; an error line for an unknown option."""
    opts: dict[str, str] = {}
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in valued:
            opts[name] = value if eq else next(it, "")
        elif arg in flags:
            opts[arg] = ""
        elif arg.startswith("-") and arg != "-":
            return f"{prog}: unrecognized option '{arg}'\n"
        else:
            rest.append(arg)
    return opts, rest


def _open(state: NodeState, prog: str, opts: dict[str, str]) -> tuple[Fabric, str, int] | ToolResult:
    """The fabric the chosen local port is on, with that port; a ToolResult with the tool's error otherwise."""
    ca = opts.get("-C") or opts.get("--Ca")
    port_text = opts.get("-P") or opts.get("--Port")
    port = int(port_text) if port_text and port_text.isdigit() else None
    picked = _pick_port(state, ca, port)
    if isinstance(picked, str):
        pid = _pid(state, prog)
        return ToolResult(
            255, f"{prog}: iberror: failed: discover failed\n", f"ibwarn: [{pid}] mad_rpc_open_port: {picked}\n"
        )
    name, number = picked
    storage = state.hca(name).role != "compute"
    return fabric(state, storage=storage), name, number


def _reachable(fab: Fabric) -> tuple[list[Switch], list[Ca]]:
    """What a discovery finds: the switches, and the CAs with a cable to one of them."""
    return fab.switches, [c for c in fab.cas if c.links]


def _speed_text(link: Link) -> str:
    return _LANE_TEXT.get(link.speed, _LANE_TEXT["SDR"])


def _could_be(link: Link, fab: Fabric) -> str:
    """iblinkinfo's ``(width speed)`` note: what both ends support when the link trained below it."""
    slow = link.speed in _SPEED_ORDER and _SPEED_ORDER.index(link.speed) < _SPEED_ORDER.index(fab.speed)
    width = "Could be 4X" if link.width not in ("4X",) and link.state != "Down" else ""
    speed = f"Could be {_LANE_TEXT[fab.speed]}" if slow else ""
    return f"({width} {speed})"


def _link_text(link: Link | None) -> str:
    if link is None or link.state == "Down":
        state, phys = ("Down", "Polling") if link is None else (link.state, link.physical_state)
        return f"(              {state:>6}/{phys:>8})"
    return f"({link.width:>3} {_speed_text(link):>18} {link.state:>6}/{link.physical_state:>8})"


def _remote_text(link: Link | None, fab: Fabric, *, line: bool) -> str:
    if link is None:
        return '           [  ] "" ( )'
    guid = f"0x{_padded(link.peer_port_guid)} " if line else ""
    return f'{guid}{link.peer_lid:6d} {link.peer_port:4d}[  ] "{link.peer_description}" {_could_be(link, fab)}'


def iblinkinfo(args: list[str], session: Session) -> ToolResult:
    """``iblinkinfo [-l] [-d] [--switches-only | --cas-only] [-C CA] [-P PORT]``: every port of the fabric,
    node by node (a header, then one line per port), or one line per port with ``-l``."""
    state = session.read()
    parsed = _options(
        args,
        "iblinkinfo",
        {"-l", "--line", "-d", "--down", "--switches-only", "--cas-only", "-p", "--additional"},
        {"-C", "--Ca", "-P", "--Port"},
    )
    if isinstance(parsed, str):
        return ToolResult(255, "", parsed)
    opts, _ = parsed
    opened = _open(state, "iblinkinfo", opts)
    if isinstance(opened, ToolResult):
        return opened
    fab, _, _ = opened
    line = bool({"-l", "--line"} & set(opts))
    down_only = bool({"-d", "--down"} & set(opts))
    switches, cas = _reachable(fab)
    out: list[str] = []

    def port_lines(
        header: str,
        name: str,
        guid_of: dict[int, str],
        lid_of: dict[int, int],
        ports: range,
        links: dict[int, Link],
        ca: bool,
    ) -> None:
        rows = []
        for number in ports:
            link = links.get(number)
            if down_only and link is not None and link.state != "Down":
                continue
            lid = lid_of.get(number, 0)
            body = f"{lid:6d} {number:4d}[  ] =={_link_text(link)}==>  {_remote_text(link, fab, line=line)}\n"
            guid = guid_of.get(number, "0x0")
            if line:
                rows.append(f'0x{_padded(guid)} "{name:>30}" {body}')
            else:
                rows.append(("      " + (f"0x{_padded(guid)} " if ca else "")) + body)
        if rows and not line:
            out.append(header)
        out.extend(rows)

    nodes: list[Switch | Ca] = []
    if "--cas-only" not in opts:
        nodes += switches
    if "--switches-only" not in opts:
        nodes += cas
    for node in sorted(nodes, key=_discovery_order):
        if isinstance(node, Switch):
            port_lines(
                f"Switch: 0x{_padded(node.guid)} {node.description}:\n",
                node.description,
                {n: node.guid for n in range(1, node.ports + 1)},
                {n: node.lid for n in range(1, node.ports + 1)},
                range(1, node.ports + 1),
                node.links,
                False,
            )
        else:
            port_lines(
                f"CA: {node.description}:\n",
                node.description,
                node.port_guids,
                node.lids,
                range(1, node.ports + 1),
                node.links,
                True,
            )
    return ToolResult(0, "".join(out))


def _discovery_order(node: Switch | Ca) -> tuple[int, str]:
    """Nodes in the order the tools list them here: the node's own HCAs, the leaves and spines, the rest."""
    if isinstance(node, Ca):
        return (0 if node.local else 2, node.description)
    return (1, node.name)


def _width(link: Link) -> str:
    return link.width.lower()  # ibnetdiscover's compat width: 4x


def ibnetdiscover(args: list[str], session: Session) -> ToolResult:
    """``ibnetdiscover [-l | -H | -S] [-C CA] [-P PORT]``: the topology file of the fabric (switches, then CAs,
    each with its cabled ports), or the list of nodes."""
    state = session.read()
    parsed = _options(
        args,
        "ibnetdiscover",
        {
            "-l",
            "--list",
            "-H",
            "--Hca_list",
            "-S",
            "--Switch_list",
            "-R",
            "--Router_list",
            "-s",
            "--show",
            "-g",
            "--grouping",
            "-f",
            "--full",
        },
        {"-C", "--Ca", "-P", "--Port", "-y", "--m_key", "-o", "--outstanding_smps"},
    )
    if isinstance(parsed, str):
        return ToolResult(255, "", parsed)
    opts, _ = parsed
    opened = _open(state, "ibnetdiscover", opts)
    if isinstance(opened, ToolResult):
        return opened
    fab, ca_name, port_number = opened
    switches, cas = _reachable(fab)
    listing = {"-l", "--list", "-H", "--Hca_list", "-S", "--Switch_list", "-R", "--Router_list"} & set(opts)
    if listing:
        rows: list[str] = []
        if not {"-S", "--Switch_list", "-R", "--Router_list"} & set(opts):
            for ca in sorted(cas, key=_discovery_order):
                rows.append(
                    f"Ca\t : 0x{_padded(ca.node_guid)} ports {ca.ports} devid 0x{ca.devid:x} "
                    f'vendid 0x{_VENDOR_ID:x} "{ca.description}"\n'
                )
        if not {"-H", "--Hca_list", "-R", "--Router_list"} & set(opts):
            for sw in switches:
                rows.append(
                    f"Switch\t : 0x{_padded(sw.guid)} ports {sw.ports} devid 0x{_devid(sw):x} "
                    f'vendid 0x{_VENDOR_ID:x} "{sw.description}"\n'
                )
        return ToolResult(0, "".join(rows))
    from assessor.sim import clock

    local = state.hca(ca_name)
    port = next(p for p in local.ports if p.port == port_number)
    out = [
        f"#\n# Topology file: generated on {clock.now(state).strftime('%a %b %e %H:%M:%S %Y')}\n#\n",
        f"# Initiated from node {_padded(local.node_guid)} port {_padded(port.port_guid or local.node_guid)}\n",
    ]
    for sw in switches:
        out.append(
            f"\nvendid=0x{_VENDOR_ID:x}\ndevid=0x{_devid(sw):x}\nsysimgguid=0x{_bare(sw.sys_image_guid or sw.guid)}\n"
        )
        out.append(f"switchguid=0x{_bare(sw.guid)}({_bare(sw.guid)})\n")
        out.append(
            f'Switch\t{sw.ports} "S-{_padded(sw.guid)}"\t\t# "{sw.description}" enhanced port 0 lid {sw.lid} lmc 0\n'
        )
        for number in sorted(sw.links):
            link = sw.links[number]
            kind = "S" if link.peer_kind == "switch" else "H"
            far = f'"{kind}-{_padded(link.peer_guid)}"[{link.peer_port}]'
            if link.peer_kind != "switch":
                far += f"({_bare(link.peer_port_guid)}) "
            out.append(
                f'[{number}]\t{far}\t\t# "{link.peer_description}" lid {link.peer_lid} {_width(link)}{link.speed}\n'
            )
    for ca in sorted(cas, key=_discovery_order):
        out.append(f"\nvendid=0x{_VENDOR_ID:x}\ndevid=0x{ca.devid:x}\nsysimgguid=0x{_bare(ca.sys_image_guid)}\n")
        out.append(f"caguid=0x{_bare(ca.node_guid)}\n")
        out.append(f'Ca\t{ca.ports} "H-{_padded(ca.node_guid)}"\t\t# "{ca.description}"\n')
        for number in sorted(ca.links):
            link = ca.links[number]
            out.append(
                f'[{number}]({_bare(ca.port_guids[number])}) \t"S-{_padded(link.peer_guid)}"[{link.peer_port}]'
                f'\t\t# lid {ca.lids.get(number, 0)} lmc 0 "{link.peer_description}" lid {link.peer_lid} '
                f"{_width(link)}{link.speed}\n"
            )
    return ToolResult(0, "".join(out))


def _devid(sw: Switch) -> int:
    model = sw.description.rsplit(":", 1)[-1].split("/")[0]
    return _SWITCH_DEVID.get(model, 0xD2F0)


def ibswitches(args: list[str], session: Session) -> ToolResult:
    """``ibswitches``: one line per switch, as the script cuts them out of ibnetdiscover's topology."""
    return _node_list(args, session, "ibswitches", switches=True)


def ibhosts(args: list[str], session: Session) -> ToolResult:
    """``ibhosts``: one line per CA, as the script cuts them out of ibnetdiscover's topology."""
    return _node_list(args, session, "ibhosts", switches=False)


def _node_list(args: list[str], session: Session, prog: str, *, switches: bool) -> ToolResult:
    state = session.read()
    parsed = _options(args, prog, set(), {"-C", "--Ca", "-P", "--Port", "-t", "--timeout", "-y", "--m_key"})
    if isinstance(parsed, str):
        return ToolResult(255, "", parsed)
    opened = _open(state, "ibnetdiscover", parsed[0])
    if isinstance(opened, ToolResult):
        return opened
    found_switches, cas = _reachable(opened[0])
    if switches:
        rows = [
            f'Switch\t: 0x{_padded(s.guid)} ports {s.ports} "{s.description}" enhanced port 0 lid {s.lid} lmc 0\n'
            for s in found_switches
        ]
    else:
        rows = [
            f'Ca\t: 0x{_padded(c.node_guid)} ports {c.ports} "{c.description}"\n'
            for c in sorted(cas, key=_discovery_order)
        ]
    return ToolResult(0, "".join(rows))


def sminfo(args: list[str], session: Session) -> ToolResult:
    """``sminfo``: the master subnet manager's LID, GUID, activity count, priority and state."""
    state = session.read()
    parsed = _options(args, "sminfo", {"-d", "--debug"}, {"-C", "--Ca", "-P", "--Port", "-t", "--timeout"})
    if isinstance(parsed, str):
        return ToolResult(255, "", parsed)
    opened = _open(state, "sminfo", parsed[0])
    if isinstance(opened, ToolResult):
        return ToolResult(255, "sminfo: iberror: failed: Failed to open '(null)' port '0'\n")
    fab, ca_name, _ = opened
    if not state.sm_present or state.hca(ca_name).role != "compute":
        # No subnet manager answers: the SM port cannot be resolved (its LID is 0).
        return ToolResult(255, "sminfo: iberror: failed: can't resolve sm port (null)\n")
    from assessor.sim import clock

    activity = int(clock.uptime(state) * 4)  # the SM's sweep counter, about four a second
    return ToolResult(
        0,
        f"sminfo: sm lid {fab.sm_lid} sm guid 0x{_bare(fab.sm_guid)}, activity count {activity} "
        f"priority {_SM_PRIORITY} state {_SMINFO_MASTER} SMINFO_MASTER\n",
    )


__all__ = ["AGGREGATION_NODE", "ibhosts", "iblinkinfo", "ibnetdiscover", "ibswitches", "sminfo"]
