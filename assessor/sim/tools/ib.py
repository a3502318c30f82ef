"""Simulated InfiniBand tools: ``ibstat``, ``ibstatus``, ``ibv_devinfo`` and perftest's ``ib_write_bw``,
``ib_read_bw``, ``ib_send_bw``, ``ib_write_lat``, ``ib_read_lat`` and ``ib_send_lat``.

They print the layouts of infiniband-diags, rdma-core and perftest (see ``corpus/ibstat``,
``corpus/ibstatus``, ``corpus/ibv_devinfo``, ``corpus/perftest``) from the HCAs and ports of
the node state. The tools only read: a port's state, rate and LIDs are whatever the state (or a
fault) says, including the values a real Down or unconfigured port shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from assessor.sim.state import IbHcaState, IbPortState, NodeState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.nccl import dmabuf_supported

# sysfs numbering of port states and physical states (ibstatus prints "4: ACTIVE").
_STATE_NUMBERS = {"Down": 1, "Initializing": 2, "Armed": 3, "Active": 4, "ActiveDefer": 5}
_PHYS_NUMBERS = {
    "Sleep": 1,
    "Polling": 2,
    "Disabled": 3,
    "PortConfigurationTraining": 4,
    "LinkUp": 5,
    "LinkErrorRecovery": 6,
    "PhyTest": 7,
}
# libibverbs enum names (ibv_devinfo "PORT_ACTIVE (4)", "LINK_UP (5)").
_VERBS_STATES = {"Down": "PORT_DOWN", "Initializing": "PORT_INIT", "Armed": "PORT_ARMED", "Active": "PORT_ACTIVE"}
_VERBS_PHYS = {
    "Sleep": "SLEEP",
    "Polling": "POLLING",
    "Disabled": "DISABLED",
    "PortConfigurationTraining": "PORT_CONFIGURATION_TRAINING",
    "LinkUp": "LINK_UP",
    "LinkErrorRecovery": "LINK_ERROR_RECOVERY",
    "PhyTest": "PHY_TEST",
}
# IB speed name -> (per-lane Gb/s as ibv_devinfo -v prints it, verbs enum)
_SPEEDS = {
    "SDR": (2.5, 1),
    "DDR": (5.0, 2),
    "QDR": (10.0, 4),
    "FDR10": (10.0, 8),
    "FDR": (14.0, 16),
    "EDR": (25.0, 32),
    "HDR": (50.0, 64),
    "NDR": (100.0, 128),
    "XDR": (200.0, 256),
}
_WIDTH_ENUMS = {"1X": 1, "2X": 16, "4X": 2, "8X": 4, "12X": 8}
_MELLANOX_VENDOR_ID = "0x02c9"


def _rate(value: float) -> str:
    """400.0 -> ``400``; 2.5 -> ``2.5`` (ibstat prints the rate without a fraction when it has none)."""
    return f"{value:g}"


def _lanes(width: str) -> int:
    try:
        return int(width.rstrip("Xx"))
    except ValueError:
        return 4


def port_speed(port: IbPortState) -> str:
    """The speed name of a port: the state's, else the one whose lane rate gives the port rate."""
    if port.speed:
        return port.speed
    per_lane = port.rate_gbps / max(_lanes(port.width), 1)
    for name, (lane, _) in _SPEEDS.items():
        if abs(lane - per_lane) < 0.01 and name != "FDR10":
            return name
    return "SDR"


def _cap_mask(port: IbPortState) -> str:
    if port.capability_mask:
        return port.capability_mask
    # What ConnectX firmware reports: a full IB port mask, or the RoCE one (corpus/ibstat/02).
    return "0xa751e848" if port.link_layer == "InfiniBand" else "0x00010000"


def _select(state: NodeState, names: list[str]) -> tuple[list[IbHcaState], str | None]:
    """The HCAs named (all when none is), or the first unknown name."""
    if not names:
        return list(state.ib_hcas), None
    chosen = []
    for name in names:
        hca = next((h for h in state.ib_hcas if h.name == name), None)
        if hca is None:
            return [], name
        chosen.append(hca)
    return chosen, None


def _pid(state: NodeState, salt: str) -> int:
    """A deterministic process id for messages that print one."""
    import hashlib  # here: OpenSSL's start-up costs every shim call otherwise

    return 1000 + int(hashlib.sha256(f"{state.host}:{salt}".encode()).hexdigest()[:6], 16) % 4_000_000


# ---- ibstat ----------------------------------------------------------------------------------


def ibstat(args: list[str], session: Session) -> ToolResult:
    """``ibstat [-l | -s | -p] [CA [port]]``: adapters and ports from the state.

    As infiniband-diags' ibstat.c: ``-s`` prints the CA headers without ports; ``CA PORT`` prints
    ``CA: 'name'`` and that port's block unindented; a port the CA does not have is a warning then a panic.
    """
    state = session.read()
    flags = {a for a in args if a.startswith("-")}
    positional = [a for a in args if not a.startswith("-")]
    if flags - {"-l", "--list_of_cas", "-s", "--short", "-p", "--port_list"}:
        bad = sorted(flags)[0]
        return ToolResult(255, "", f"ibstat: invalid option -- '{bad.lstrip('-')}'\n")
    pid = _pid(state, "ibstat")
    if not state.ib_hcas:
        # The sysfs class directory is empty (no RDMA driver loaded).
        return ToolResult(255, "", f"ibpanic: [{pid}] main: can't list IB device names: No such file or directory\n")
    hcas, unknown = _select(state, positional[:1])
    if unknown is not None:
        return ToolResult(255, "", f"ibpanic: [{pid}] main: '{unknown}' IB device can't be found: Success\n")
    if flags & {"-p", "--port_list"}:
        return ToolResult(0, "".join(f"{p.port_guid or h.node_guid}\n" for h in hcas for p in h.ports))
    if flags & {"-l", "--list_of_cas"}:
        return ToolResult(0, "".join(f"{h.name}\n" for h in hcas))
    short = bool(flags & {"-s", "--short"})
    port_number: int | None = None
    if len(positional) > 1:
        # strtol(argv[1], NULL, 0): a number, in any base C accepts; anything else reads as port 0.
        try:
            port_number = int(positional[1], 0)
        except ValueError:
            port_number = 0
    out: list[str] = []
    for hca in hcas:
        if port_number is not None and not short:
            port = next((p for p in hca.ports if p.port == port_number), None)
            if port is None:
                return ToolResult(
                    255,
                    "".join(out),
                    f"ibwarn: [{pid}] ca_stat: CA: '{hca.name}' has no port number {port_number} - max "
                    f"({len(hca.ports)})\nibpanic: [{pid}] main: stat of IB device '{hca.name}' failed: Success\n",
                )
            out.append(f"CA: '{hca.name}'\n")
            out += _port_block(hca, port, alone=True)
            continue
        out.append(f"CA '{hca.name}'\n")
        out.append(f"\tCA type: {hca.ca_type}\n")
        out.append(f"\tNumber of ports: {len(hca.ports)}\n")
        out.append(f"\tFirmware version: {hca.firmware}\n")
        out.append(f"\tHardware version: {hca.hw_version}\n")
        out.append(f"\tNode GUID: {hca.node_guid}\n")
        out.append(f"\tSystem image GUID: {hca.sys_image_guid}\n")
        if short:
            continue
        for port in hca.ports:
            out += _port_block(hca, port, alone=False)
    return ToolResult(0, "".join(out))


def _port_block(hca: IbHcaState, port: IbPortState, *, alone: bool) -> list[str]:
    """ibstat's port_dump: indented under its CA, or flush left when the port was asked for alone."""
    head, pre = ("", "") if alone else ("\t", "\t\t")
    return [
        f"{head}Port {port.port}:\n",
        f"{pre}State: {port.state}\n",
        f"{pre}Physical state: {port.physical_state}\n",
        f"{pre}Rate: {_rate(port.rate_gbps)}\n",
        f"{pre}Base lid: {port.base_lid}\n",
        f"{pre}LMC: {port.lmc}\n",
        f"{pre}SM lid: {port.sm_lid}\n",
        f"{pre}Capability mask: {_cap_mask(port)}\n",
        f"{pre}Port GUID: {port.port_guid or hca.node_guid}\n",
        f"{pre}Link layer: {port.link_layer}\n",
    ]


# ---- ibstatus --------------------------------------------------------------------------------


def _gid(hca: IbHcaState, port: IbPortState) -> str:
    """The default GID: the link-local prefix and the port GUID, in eight groups of four."""
    guid = (port.port_guid or hca.node_guid).removeprefix("0x").rjust(16, "0")
    groups = ["fe80", "0000", "0000", "0000"] + [guid[i : i + 4] for i in range(0, 16, 4)]
    return ":".join(groups)


def ibstatus(args: list[str], session: Session) -> ToolResult:
    """``ibstatus [CA...]``: the sysfs view of each port (numbers before the state words)."""
    state = session.read()
    hcas, unknown = _select(state, [a for a in args if not a.startswith("-")])
    if unknown is not None:
        # The script globs /sys/class/infiniband/NAME and finds nothing.
        return ToolResult(
            1, "", f"ls: cannot access '/sys/class/infiniband/{unknown}/ports': No such file or directory\n"
        )
    blocks = []
    for hca in hcas:
        for port in hca.ports:
            state_no = _STATE_NUMBERS.get(port.state, 0)
            phys_no = _PHYS_NUMBERS.get(port.physical_state, 0)
            blocks.append(
                f"Infiniband device '{hca.name}' port {port.port} status:\n"
                f"\tdefault gid:\t {_gid(hca, port)}\n"
                f"\tbase lid:\t {port.base_lid:#x}\n"
                f"\tsm lid:\t\t {port.sm_lid:#x}\n"
                f"\tstate:\t\t {state_no}: {port.state.upper()}\n"
                f"\tphys state:\t {phys_no}: {port.physical_state}\n"
                f"\trate:\t\t {_rate(port.rate_gbps)} Gb/sec ({port.width} {port_speed(port)})\n"
                f"\tlink_layer:\t {port.link_layer}\n"
            )
    return ToolResult(0, "\n".join(blocks))


# ---- ibv_devinfo -----------------------------------------------------------------------------


def _colon_guid(guid: str) -> str:
    """``0xa088c20300da6342`` -> ``a088:c203:00da:6342`` (how libibverbs prints a GUID)."""
    digits = guid.removeprefix("0x").rjust(16, "0")
    return ":".join(digits[i : i + 4] for i in range(0, 16, 4))


def _part_id(hca: IbHcaState) -> int:
    if hca.vendor_part_id is not None:
        return hca.vendor_part_id
    digits = "".join(c for c in hca.ca_type if c.isdigit())
    return int(digits) if digits else 0


def _kv(indent: int, key: str, value: object, column: int) -> str:
    """A ``key:<tabs>value`` line padded with tabs to ``column`` as ibv_devinfo does."""
    text = "\t" * indent + f"{key}:"
    width = indent * 8 + len(key) + 1
    tabs = max(1, (column - width + 7) // 8)
    return text + "\t" * tabs + f"{value}\n"


# ``ibv_devinfo -v`` device attributes of a ConnectX (mlx5) HCA, between ``phys_port_cnt`` and the first
# port, as libibverbs prints them for a ConnectX-6 (corpus ibv_devinfo/03, openucx/ucx#9908). ConnectX-7
# reports the same mlx5 limits (max_qp 131072, max_mr_size 2^64-1); the tab runs are devinfo's own.
_MLX5_DEVICE_ATTRIBUTES = (
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
    "\tpage_size_cap:\t\t\t0xfffffffffffff000\n"
    "\tmax_qp:\t\t\t\t131072\n"
    "\tmax_qp_wr:\t\t\t32768\n"
    "\tdevice_cap_flags:\t\t0x21361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\t\t\t\t\tBAD_QKEY_CNTR\n"
    "\t\t\t\t\tAUTO_PATH_MIG\n"
    "\t\t\t\t\tCHANGE_PHY_PORT\n"
    "\t\t\t\t\tPORT_ACTIVE_EVENT\n"
    "\t\t\t\t\tSYS_IMAGE_GUID\n"
    "\t\t\t\t\tRC_RNR_NAK_GEN\n"
    "\t\t\t\t\tMEM_WINDOW\n"
    "\t\t\t\t\tUD_IP_CSUM\n"
    "\t\t\t\t\tXRC\n"
    "\t\t\t\t\tMEM_MGT_EXTENSIONS\n"
    "\t\t\t\t\tMEM_WINDOW_TYPE_2B\n"
    "\t\t\t\t\tMANAGED_FLOW_STEERING\n"
    "\tmax_sge:\t\t\t30\n"
    "\tmax_sge_rd:\t\t\t30\n"
    "\tmax_cq:\t\t\t\t16777216\n"
    "\tmax_cqe:\t\t\t4194303\n"
    "\tmax_mr:\t\t\t\t16777216\n"
    "\tmax_pd:\t\t\t\t8388608\n"
    "\tmax_qp_rd_atom:\t\t\t16\n"
    "\tmax_ee_rd_atom:\t\t\t0\n"
    "\tmax_res_rd_atom:\t\t2097152\n"
    "\tmax_qp_init_rd_atom:\t\t16\n"
    "\tmax_ee_init_rd_atom:\t\t0\n"
    "\tatomic_cap:\t\t\tATOMIC_HCA (1)\n"
    "\tmax_ee:\t\t\t\t0\n"
    "\tmax_rdd:\t\t\t0\n"
    "\tmax_mw:\t\t\t\t16777216\n"
    "\tmax_raw_ipv6_qp:\t\t0\n"
    "\tmax_raw_ethy_qp:\t\t0\n"
    "\tmax_mcast_grp:\t\t\t2097152\n"
    "\tmax_mcast_qp_attach:\t\t240\n"
    "\tmax_total_mcast_qp_attach:\t503316480\n"
    "\tmax_ah:\t\t\t\t2147483647\n"
    "\tmax_fmr:\t\t\t0\n"
    "\tmax_srq:\t\t\t8388608\n"
    "\tmax_srq_wr:\t\t\t32767\n"
    "\tmax_srq_sge:\t\t\t31\n"
    "\tmax_pkeys:\t\t\t128\n"
    "\tlocal_ca_ack_delay:\t\t16\n"
    "\tgeneral_odp_caps:\n"
    "\t\t\t\t\tODP_SUPPORT\n"
    "\t\t\t\t\tODP_SUPPORT_IMPLICIT\n"
    "\trc_odp_caps:\n"
    "\t\t\t\t\tSUPPORT_SEND\n"
    "\t\t\t\t\tSUPPORT_RECV\n"
    "\t\t\t\t\tSUPPORT_WRITE\n"
    "\t\t\t\t\tSUPPORT_READ\n"
    "\t\t\t\t\tSUPPORT_ATOMIC\n"
    "\t\t\t\t\tSUPPORT_SRQ\n"
    "\tuc_odp_caps:\n"
    "\t\t\t\t\tNO SUPPORT\n"
    "\tud_odp_caps:\n"
    "\t\t\t\t\tSUPPORT_SEND\n"
    "\txrc_odp_caps:\n"
    "\t\t\t\t\tSUPPORT_SEND\n"
    "\t\t\t\t\tSUPPORT_WRITE\n"
    "\t\t\t\t\tSUPPORT_READ\n"
    "\t\t\t\t\tSUPPORT_ATOMIC\n"
    "\t\t\t\t\tSUPPORT_SRQ\n"
    "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n"
    "\thca_core_clock:\t\t\t156250kHZ\n"
    "\tdevice_cap_flags_ex:\t\t0x1021361C36\n"
    "\t\t\t\t\tPCI_WRITE_END_PADDING\n"
    "\ttso_caps:\n"
    "\t\tmax_tso:\t\t\t0\n"
    "\trss_caps:\n"
    "\t\tmax_rwq_indirection_tables:\t\t\t0\n"
    "\t\tmax_rwq_indirection_table_size:\t\t\t0\n"
    "\t\trx_hash_function:\t\t\t\t0x0\n"
    "\t\trx_hash_fields_mask:\t\t\t\t0x0\n"
    "\tmax_wq_type_rq:\t\t\t0\n"
    "\tpacket_pacing_caps:\n"
    "\t\tqp_rate_limit_min:\t0kbps\n"
    "\t\tqp_rate_limit_max:\t0kbps\n"
    "\tmax_rndv_hdr_size:\t\t64\n"
    "\tmax_num_tags:\t\t\t127\n"
    "\tmax_ops:\t\t\t32768\n"
    "\tmax_sge:\t\t\t1\n"
    "\tflags:\n"
    "\t\t\t\t\tIBV_TM_CAP_RC\n"
    "\n"
    "\tcq moderation caps:\n"
    "\t\tmax_cq_count:\t65535\n"
    "\t\tmax_cq_period:\t4095 us\n"
    "\n"
    "\tmaximum available device memory:\t131072Bytes\n"
    "\n"
    "\tnum_comp_vectors:\t\t63\n"
)

_PORT_VERBOSE = (  # (key, tabs after the colon) of the verbose port lines before active_width
    ("max_msg_sz", 2),
    ("port_cap_flags", 2),
    ("port_cap_flags2", 1),
    ("max_vl_num", 2),
    ("bad_pkey_cntr", 2),
    ("qkey_viol_cntr", 2),
    ("sm_sl", 3),
    ("pkey_tbl_len", 2),
    ("gid_tbl_len", 2),
    ("subnet_timeout", 2),
    ("init_type_reply", 1),
)


def _port_verbose(hca: IbHcaState, port: IbPortState) -> list[str]:
    values = {
        "max_msg_sz": "0x40000000",
        "port_cap_flags": _cap_mask(port),
        "port_cap_flags2": "0x0032",
        "max_vl_num": "4 (3)",
        "bad_pkey_cntr": "0x0",
        "qkey_viol_cntr": "0x0",
        "sm_sl": 0,
        "pkey_tbl_len": 128,
        "gid_tbl_len": 8 if port.link_layer == "InfiniBand" else 255,
        "subnet_timeout": 18 if port.state == "Active" and port.link_layer == "InfiniBand" else 0,
        "init_type_reply": 0,
    }
    return [f"\t\t\t{key}:" + "\t" * tabs + f"{values[key]}\n" for key, tabs in _PORT_VERBOSE]


def ibv_devinfo(args: list[str], session: Session) -> ToolResult:
    """``ibv_devinfo [-d DEV] [-i PORT] [-l] [-v]``: one ``hca_id`` block per device."""
    state = session.read()
    device: str | None = None
    port_filter: int | None = None
    verbose = False
    list_only = False
    it = iter(args)
    for arg in it:
        if arg in ("-d", "--ib-dev"):
            device = next(it, None)
        elif arg.startswith("--ib-dev="):
            device = arg.split("=", 1)[1]
        elif arg in ("-i", "--ib-port"):
            value = next(it, "")
            if not value.isdigit():
                return ToolResult(255, "", f"Invalid port number: {value}\n")
            port_filter = int(value)
        elif arg in ("-v", "--verbose"):
            verbose = True
        elif arg in ("-l", "--list"):
            list_only = True
        else:
            return ToolResult(255, "", f"ibv_devinfo: invalid option -- '{arg.lstrip('-')}'\n")
    if not state.ib_hcas:
        return ToolResult(255, "", "No IB devices found\n")
    if list_only:
        names = "".join(f"    {h.name}\n" for h in state.ib_hcas)
        return ToolResult(0, f"{len(state.ib_hcas)} HCAs found:\n{names}")
    hcas, unknown = _select(state, [device] if device else [])
    if unknown is not None:
        return ToolResult(255, "", f"IB device '{unknown}' wasn't found\n")
    out: list[str] = []
    for hca in hcas:
        out.append(f"hca_id:\t{hca.name}\n")
        out.append(_kv(1, "transport", "InfiniBand (0)", 40))
        out.append(_kv(1, "fw_ver", hca.firmware, 40))
        out.append(_kv(1, "node_guid", _colon_guid(hca.node_guid), 40))
        out.append(_kv(1, "sys_image_guid", _colon_guid(hca.sys_image_guid), 40))
        out.append(_kv(1, "vendor_id", _MELLANOX_VENDOR_ID, 40))
        out.append(_kv(1, "vendor_part_id", _part_id(hca), 40))
        out.append(_kv(1, "hw_ver", f"0x{hca.hw_version}" if hca.hw_version.isdigit() else hca.hw_version, 40))
        if hca.board_id:
            out.append(_kv(1, "board_id", hca.board_id, 40))
        out.append(_kv(1, "phys_port_cnt", len(hca.ports), 40))
        if verbose:
            out.append("".join(_MLX5_DEVICE_ATTRIBUTES))
        for port in hca.ports:
            if port_filter is not None and port.port != port_filter:
                continue
            out.append(f"\t\tport:\t{port.port}\n")
            verbs_state = _VERBS_STATES.get(port.state, "PORT_NOP")
            out.append(_kv(3, "state", f"{verbs_state} ({_STATE_NUMBERS.get(port.state, 0)})", 48))
            # RoCE ports run at the Ethernet MTU (1024 for a 1500-byte netdev); IB at 4096.
            mtu = "4096 (5)" if port.link_layer == "InfiniBand" else "1024 (3)"
            out.append(_kv(3, "max_mtu", "4096 (5)", 48))
            out.append(_kv(3, "active_mtu", mtu, 48))
            out.append(_kv(3, "sm_lid", port.sm_lid, 48))
            out.append(_kv(3, "port_lid", port.base_lid, 48))
            out.append(_kv(3, "port_lmc", f"0x{port.lmc:02x}", 48))
            out.append(_kv(3, "link_layer", port.link_layer, 48))
            if verbose:
                out += _port_verbose(hca, port)
                speed = port_speed(port)
                lane, speed_enum = _SPEEDS.get(speed, (2.5, 1))
                width_enum = _WIDTH_ENUMS.get(port.width, 2)
                out.append(_kv(3, "active_width", f"{port.width} ({width_enum})", 48))
                out.append(_kv(3, "active_speed", f"{lane:.1f} Gbps ({speed_enum})", 48))
                phys = _VERBS_PHYS.get(port.physical_state, "DISABLED")
                out.append(_kv(3, "phys_state", f"{phys} ({_PHYS_NUMBERS.get(port.physical_state, 3)})", 48))
                out.append(f"\t\t\tGID[  0]:\t\t{_gid(hca, port)}\n")
        out.append("\n")
    return ToolResult(0, "".join(out))


# ---- ib_write_bw -----------------------------------------------------------------------------

_RULE = "-" * 87 + "\n"
_GBITS_TO_MIBS = 1e9 / 8 / 2**20
_SMALL_BW = 0.1  # below this (in the report's unit) perftest prints the row with %.6f figures


def _c_hex(value: int, width: int) -> str:
    """C's ``%#0<width>x``: ``0x80`` for 128 at width 4, but ``0000`` for zero (``#`` adds no 0x to 0)."""
    return f"{value:#0{width}x}" if value else "0" * width


_DEFAULT_SIZE = 65536
_DEFAULT_ITERS = 5000
# A single RC queue pair posts about 2.6 million writes a second (corpus/perftest/01): small
# messages are bound by that message rate, large ones by the link.
_MAX_MSG_RATE_MPPS = 2.64


def write_bw_peak_gbits(state: NodeState, hca: IbHcaState, port: IbPortState, *, gpudirect: bool) -> float:
    """What ``ib_write_bw`` reaches at large messages on this port, Gb/s.

    The fixture's measured value when it has one (a healthy port of that model), never more than the
    port's current rate allows; without GPUDirect the host memory path costs a few per cent.
    """
    line = port.rate_gbps * 0.98  # 64b/66b encoding and headers
    healthy = state.perf.ib_write_bw_gbps
    peak = min(healthy, line) if healthy is not None else line
    return peak if gpudirect else peak * 0.985


def _bw_at(size: int, peak: float) -> float:
    """Bandwidth in Gb/s at one message size: message-rate bound, then link bound."""
    rate_bound = size * 8 * _MAX_MSG_RATE_MPPS / 1000.0
    return 1.0 / (1.0 / peak + 1.0 / rate_bound)


def _perftest_size(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


# perftest's verbs (testsStr in src/perftest_parameters.c) and their defaults (perftest_parameters.h):
# DEF_ITERS 1000, DEF_ITERS_WB 5000 for RDMA_Write BW; inline data 220 B for RDMA_Write latency, 236 B for
# Send latency (RC), 0 for the BW tests; reads print "Outstand reads : 16" and an OUT field instead.
_LAT_INLINE = {"RDMA_Write": 220, "Send": 236}
_OUT_READS = 16
# Latency at 2 bytes, us, over an IB link (corpus/perftest/04: ib_write_lat t_typical 1.87); a read waits for
# its response (about 1.45 x a write, linux-rdma/perftest#131); a send adds the receive completion.
_LAT_BASE_US = {"RDMA_Write": 1.85, "Send": 1.95, "RDMA_Read": 2.7}
_LAT_NOT_INLINE_US = 0.9  # the step at 256 B in corpus/perftest/04, when the message no longer fits inline


def ib_write_bw(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_write_bw`` (client side): header, QP addresses, one result row per size."""
    return _perftest(args, session, "RDMA_Write", latency=False)


def ib_read_bw(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_read_bw``: as ``ib_write_bw``, with ``Outstand reads`` and the OUT field."""
    return _perftest(args, session, "RDMA_Read", latency=False)


def ib_send_bw(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_send_bw``."""
    return _perftest(args, session, "Send", latency=False)


def ib_write_lat(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_write_lat``: the latency header and t_min ... 99.9% percentile rows (corpus 04)."""
    return _perftest(args, session, "RDMA_Write", latency=True)


def ib_read_lat(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_read_lat``."""
    return _perftest(args, session, "RDMA_Read", latency=True)


def ib_send_lat(args: list[str], session: Session) -> ToolResult:
    """perftest ``ib_send_lat``."""
    return _perftest(args, session, "Send", latency=True)


def _lat_row(size: int, iters: int, verb: str, peak_gbits: float) -> str:
    """One ``REPORT_FMT_LAT`` row: min, max, typical, average, stdev, 99 % and 99.9 % percentiles (us)."""
    typical = _LAT_BASE_US[verb] + size * 8 / (peak_gbits * 1e3)
    if verb in _LAT_INLINE and size > _LAT_INLINE[verb]:
        typical += _LAT_NOT_INLINE_US
    t_min, t_max = typical * 0.96, typical * 1.3 + 3.0
    average, stdev, p99 = typical * 1.005, 0.05 + typical * 0.01, typical * 1.08
    return (
        f" {size:<7d} {iters}          {t_min:<7.2f}        {t_max:<7.2f}      {typical:<7.2f}  \t       "
        f"{average:<7.2f}     \t{stdev:<7.2f}\t\t{p99:<7.2f} \t{t_max:<7.2f}\n"
    )


_PERFTEST_PORT = 18515  # perftest's default TCP port for the out-of-band exchange (-p)


@dataclass(frozen=True)
class _FarEnd:
    """The server end of a client run on a peer node: its state, and the HCA and port its server listens on."""

    state: NodeState
    hca: IbHcaState
    port: IbPortState


def _no_server(host: str) -> ToolResult:
    """The client's words when nothing listens at ``host`` (linux-rdma/perftest#228, as that fix prints them)."""
    return ToolResult(
        1,
        "",
        f"Couldn't connect to {host}:{_PERFTEST_PORT}\nUnable to open file descriptor for socket connection\n"
        " Unable to init the socket connection\n",
    )


def _reach(session: Session, state: NodeState, host: str, device: str, port_no: int) -> _FarEnd | ToolResult | None:
    """The far end of a client run against ``host``: a peer node's server (:mod:`assessor.sim.peers`), the
    real tool's failure when the node is on a fabric and nothing answers there, or None for a node alone (its
    far end imagined from the local node, as before peers existed).

    The server is taken to run on the peer's HCA of the same name and port (one rail to its twin), as the
    usual ``ib_write_bw -d mlx5_N`` on both ends does. A server whose port is not Active never started.
    """
    from assessor.sim.peers import is_local, peer_state

    if is_local(state, host):
        return None
    on_fabric, peer = peer_state(session.path, host)
    if not on_fabric:
        return None
    if peer is None:
        from assessor.sim.peers import read_peers

        if host.lower() not in (read_peers(session.path) or {}):
            # getaddrinfo() fails: perftest prints gai_strerror(EAI_NONAME) for the host and port
            return ToolResult(
                1,
                "",
                f"Name or service not known for {host}:{_PERFTEST_PORT}\n"
                "Unable to open file descriptor for socket connection\n Unable to init the socket connection\n",
            )
        return _no_server(host)  # a peer whose state cannot be read: the machine is not there
    far_hca = next((h for h in peer.ib_hcas if h.name == device), None)
    far_port = next((p for p in far_hca.ports if p.port == port_no), None) if far_hca else None
    if far_hca is None or far_port is None or far_port.state != "Active":
        return _no_server(host)
    if not peer.module_loaded("ib_core") or not peer.module_loaded("mlx5_ib"):
        return _no_server(host)
    return _FarEnd(peer, far_hca, far_port)


def _gpu_registers(state: NodeState, use_cuda: str, *, dmabuf: bool) -> bool:
    """Whether ``state`` can give the HCA GPU ``use_cuda``'s memory: the GPU is there, and nvidia_peermem is
    loaded (or, with --use_cuda_dmabuf, DMA-BUF is supported)."""
    if not use_cuda.isdigit() or not any(g.index == int(use_cuda) and not g.lost for g in state.gpus):
        return False
    return dmabuf_supported(state) if dmabuf else state.module_loaded("nvidia_peermem")


def _perftest(args: list[str], session: Session, verb: str, *, latency: bool) -> ToolResult:
    """One perftest client: ``verb`` is perftest's name for it (RDMA_Write, RDMA_Read, Send)."""
    state = session.read()
    device: str | None = None
    port_no = 1
    size = 2 if latency else _DEFAULT_SIZE
    iters = _DEFAULT_ITERS if verb == "RDMA_Write" and not latency else 1000
    sweep = False
    gbits = False
    use_cuda: str | None = None
    use_dmabuf = False
    server: str | None = None
    it = iter(args)
    for arg in it:
        if arg in ("-d", "--ib-dev"):
            device = next(it, None)
        elif arg in ("-i", "--ib-port"):
            port_no = int(next(it, "1") or 1)
        elif arg in ("-s", "--size"):
            parsed = _perftest_size(next(it, ""))
            if parsed is None or parsed < 1:
                return ToolResult(1, "", " Invalid message size\n")
            size = parsed
        elif arg in ("-n", "--iters"):
            iters = int(next(it, str(_DEFAULT_ITERS)) or _DEFAULT_ITERS)
        elif arg in ("-a", "--all"):
            sweep = True
        elif arg in ("-R", "--report_gbits", "--report-gbits"):
            gbits = True
        elif arg == "--use_cuda_dmabuf":
            use_dmabuf = True  # perftest: register the CUDA buffer through DMA-BUF, not nvidia_peermem
        elif arg == "--use_cuda" or arg == "--use-cuda":
            use_cuda = next(it, "0")
        elif arg.startswith("--use_cuda=") or arg.startswith("--use-cuda="):
            use_cuda = arg.split("=", 1)[1]
        elif arg in ("-x", "--gid-index", "-q", "--qp", "-D", "--duration", "-p", "--port", "-m", "--mtu"):
            next(it, None)  # options with a value that do not change the simulated result
        elif arg.startswith("-"):
            continue  # -F, --cpu_util and other flags: accepted, no effect here
        else:
            server = arg
    hca = (
        next((h for h in state.ib_hcas if h.name == device), None)
        if device
        else (state.ib_hcas[0] if state.ib_hcas else None)
    )
    if hca is None:
        name = device or "(first device)"
        return ToolResult(1, "", f" IB device {name} not found\n Unable to find the Infiniband/RoCE device\n")
    port = next((p for p in hca.ports if p.port == port_no), None)
    if port is None:
        return ToolResult(
            1, "", f" Port number {port_no} doesn't exist on {hca.name}\n Couldn't get context for the device\n"
        )
    if port.state != "Active":
        words = {"Down": "Down", "Initializing": "Init", "Armed": "Armed"}
        return ToolResult(
            1,
            "",
            f" Port number {port_no} state is {words.get(port.state, port.state)}\n"
            " Couldn't set the link layer\n Couldn't get context for the device\n",
        )
    far: _FarEnd | None = None
    if server is not None:
        reached = _reach(session, state, server, hca.name, port_no)
        if isinstance(reached, ToolResult):
            return reached
        far = reached
    gpudirect = use_cuda is not None
    if gpudirect:
        gpu_ok = (
            use_cuda is not None
            and use_cuda.isdigit()
            and any(g.index == int(use_cuda) and not g.lost for g in state.gpus)
        )
        if not gpu_ok:
            return ToolResult(1, "", f"Couldn't init CUDA device {use_cuda}\n Couldn't create IB resources\n")
        registers = dmabuf_supported(state) if use_dmabuf else state.module_loaded("nvidia_peermem")
        if not registers:
            # Without nvidia_peermem (or, with --use_cuda_dmabuf, without DMA-BUF) the HCA cannot register
            # GPU memory.
            return ToolResult(
                1,
                f"initializing CUDA\nusing CUDA device {use_cuda}\nallocated {size * 2} bytes of GPU buffer\n",
                "Couldn't allocate MR\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n",
            )
    if far is not None and gpudirect and not _gpu_registers(far.state, use_cuda or "0", dmabuf=use_dmabuf):
        # The server on the peer (started with the same --use_cuda) could not register its GPU buffer and
        # exited after the client connected: the key exchange finds the socket closed.
        return ToolResult(
            1,
            "",
            "ethernet_read_keys: Couldn't read remote address\n Unable to read from socket/rdma_cm\n"
            "Failed to exchange data between server and clients\n",
        )
    peak = write_bw_peak_gbits(state, hca, port, gpudirect=gpudirect)
    if far is not None:
        # East-west: the slower of the two ends sets the pace.
        peak = min(peak, write_bw_peak_gbits(far.state, far.hca, far.port, gpudirect=gpudirect))
    sizes = [2**k for k in range(1, 24)] if sweep else [size]
    link = "IB" if port.link_layer == "InfiniBand" else "Ethernet"
    unit = "Gb/sec" if gbits else "MB/sec"
    out = [_RULE, f"                    {verb} {'Latency' if latency else 'BW'} Test\n"]
    out.append(f" Dual-port       : OFF\t\tDevice         : {hca.name}\n")
    out.append(" Number of qps   : 1\t\tTransport type : IB\n")
    out.append(" Connection type : RC\t\tUsing SRQ      : OFF\n")
    out.append(" PCIe relax order: ON\n")
    out.append(" ibv_wr* API     : ON\n")
    if server is not None:
        out.append(f" TX depth        : {1 if latency else 128}\n")  # the client's line (corpus 04)
    if not latency:
        out.append(" CQ Moderation   : 100\n")
    out.append(f" Mtu             : {'4096' if link == 'IB' else '1024'}[B]\n")
    out.append(f" Link type       : {link}\n")
    if link == "Ethernet":
        out.append(" GID index       : 3\n")
    if verb == "RDMA_Read":
        out.append(f" Outstand reads  : {_OUT_READS}\n")
    else:
        out.append(f" Max inline data : {_LAT_INLINE.get(verb, 0) if latency else 0}[B]\n")
    out.append(" rdma_cm QPs\t : OFF\n")
    out.append(" Data ex. method : Ethernet\n")
    out.append(_RULE)
    import hashlib

    seed = int(hashlib.sha256(f"{state.host}:{hca.name}".encode()).hexdigest()[:8], 16)
    local_lid = port.base_lid
    out_field = f" OUT {_OUT_READS:#04x}" if verb == "RDMA_Read" else ""
    out.append(
        f" local address: LID {_c_hex(local_lid, 4)} QPN {seed % 0xFFFF:#06x} PSN {seed % 0xFFFFFF:#08x}{out_field} "
        f"RKey {seed % 0xFFFFF:#08x} VAddr {0x7F0000000000 + seed % 0xFFFFFFF * 0x1000:#016x}\n"
    )
    remote_lid = local_lid + 1 if server not in (None, "localhost", "127.0.0.1") else local_lid
    remote_seed = seed >> 3
    if far is not None:
        remote_lid = far.port.base_lid
        remote_seed = int(hashlib.sha256(f"{far.state.host}:{far.hca.name}".encode()).hexdigest()[:8], 16)
    if link == "Ethernet":
        remote_lid = 0  # RoCE has no LIDs: both ends print 0000
    out.append(
        f" remote address: LID {_c_hex(remote_lid, 4)} QPN {remote_seed % 0xFFFF:#06x} "
        f"PSN {(remote_seed >> 2) % 0xFFFFFF:#08x}{out_field} "
        f"RKey {(remote_seed >> 4) % 0xFFFFF:#08x} VAddr {0x7F0000000000 + (seed >> 2) % 0xFFFFFFF * 0x1000:#016x}\n"
    )
    out.append(_RULE)
    if latency:
        out.append(
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
            "99% percentile[usec]   99.9% percentile[usec] \n"
        )
        out.extend(_lat_row(s, iters, verb, peak) for s in sizes)
        sizes = []
    else:
        out.append(f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]\n")
    for s in sizes:
        average = _bw_at(s, peak)
        top = average * 1.0004
        msg_rate = average * 1000.0 / (8 * s)
        if not gbits:
            # Gb/s -> perftest's MB/sec, which is MiB/s: in corpus/perftest/03, 8 B x 2.556366 Mpps
            # is 20.45e6 B/s and the row says 19.50 MB/sec (20.45e6 / 2**20).
            top, average = top * _GBITS_TO_MIBS, average * _GBITS_TO_MIBS
        if gbits and average < _SMALL_BW:
            # perftest switches to six decimals (and plain spaces) when the bandwidth is tiny
            out.append(
                f" {s:<7d}    {iters:<10d}     {top:<7.6f}            {average:<7.6f}            {msg_rate:<7.6f}\n"
            )
        else:
            out.append(f" {s:<10d} {iters:<10d}       {top:<7.2f}            {average:<7.2f}\t\t   {msg_rate:<7.6f}\n")
    out.append(_RULE)
    text = "".join(out)
    if server is None:
        # Without a peer the real tool is the server side: it waits, then prints only the header.
        banner = (
            "\n************************************\n"
            "* Waiting for client to connect... *\n"
            "************************************\n"
        )
        return ToolResult(0, banner + text.split(" #bytes", 1)[0] + _RULE)
    return ToolResult(0, text)
