"""Text hygiene shared by every text parser: what people paste around a tool's output.

Real captures reach gpulab through launchers, terminals, logs and chat windows, each adding
something of its own to the lines:

- launcher prefixes: Open MPI ``--tag-output`` (``[1,0]<stdout>:``), a bare rank tag
  (``[0] ``), Slurm ``srun --label`` (``0: ``), NCCL's ``hostname:pid:tid`` prefix;
- log prefixes: the kernel's ``[  123.456]``, an ISO timestamp, syslog's
  ``Mar  3 12:00:01 host kernel:`` and ``dmesg -x``'s ``kern  :warn  :``;
- shell prompts and the command echoed after them (``root@host:/# nvidia-smi -L``,
  ``(env) [root@gpu3 ~]# ibstat``, ``$ ibstat``), markdown fences (three backticks) and
  ``> `` quoting, and excerpt marks (``...``, ``[...]``, ``<snip>``);
- a prompt of any other shell or host (ESXi's ``[root@localhost:~] nvidia-smi mig -lgi``,
  ``[gpu6000 ~]# nvidia-smi -q``, zsh's ``gpu6000% nvidia-smi``): whatever ends in a prompt character
  (``$ # % > ] ❯ ➜``) and is followed by the command of a tool gpulab reads;
- shell-trace lines (``+ ibstat`` from ``set -x``) and the debug lines libibumad writes
  before ibstat's own output (``ibwarn: [168988] umad_init: ...``).

:func:`clean_lines` removes them and keeps one output line per input line (a removed line
becomes empty), so a ParseError still names the line of the file the user has. It is pure
and linear: every pattern is anchored at the start of a line and has no nested repetition.

A prefix that could be part of the output itself (``0: `` starts a legitimate line of some
tools) is only removed when most lines carry it, as a launcher adds it to every line.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError

# --- prefixes a launcher adds to every line it forwards ------------------------------------
# Runs of tags are stripped in one match (each tag starts with "[": no backtracking between them).
_OMPI_TAG = re.compile(r"(?:\[\d{1,6},\d{1,6}\]<(?:stdout|stderr|stddiag)>:[ \t]?)+")
_RANK_TAG = re.compile(r"(?:\[\d{1,6}\][ \t]?)+")
_SLURM_LABEL = re.compile(r"[ \t]{0,6}\d{1,6}: ")
# "gpu-node-3:4187:4187 [0] NCCL INFO ...": host, pid, tid, then NCCL's own device tag.
_NCCL_PREFIX = re.compile(r"[A-Za-z0-9][\w.-]{0,253}:\d{1,10}:\d{1,10} (?=\[\d{1,4}\] NCCL )")
# A bare rank tag in the middle of a line, where two ranks' output interleaved in one row.
_INNER_RANK_TAG = re.compile(r"(?<=\s)\[\d{1,6}\](?=\s)")

# --- log prefixes -----------------------------------------------------------------------------
_KERNEL_TIME = re.compile(r"\[\s{0,12}\d{1,10}\.\d{1,9}\]\s?")
_ISO_TIME = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?: [\w.-]{1,253} kernel:)?\s"
)
_SYSLOG = re.compile(r"[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d [\w.-]{1,253} kernel: ?")
# dmesg -x ("kern  :warn  : [ 12.3] ..."), optionally after a host ("gpu3: kern: warning: ...").
_DMESG_FACILITY = re.compile(r"(?:[\w.-]{1,253}:\s{1,4})?kern\s{0,4}:\s{0,4}[a-z]{1,8}\s{0,4}:\s?")

# --- lines that are not output at all --------------------------------------------------------
# user@host:dir$ cmd, user@host:dir# cmd, [user@host dir]# cmd, an optional "(venv) " before,
# "user@host dir# cmd" (no colon), "[nix-shell:~/dir]$ cmd", "bash-5.1# cmd", zsh's "➜ cmd", and a bare "$ cmd".
# "# cmd" alone is not a prompt: nccl-tests prints "#" header lines.
_PROMPT = re.compile(
    r"^(?:\([\w.-]{1,64}\)\s?)?"
    r"(?:[\w.-]{1,64}@[\w.-]{1,253}:[^\s#$]{0,512}[#$]|\[[\w.-]{1,64}@[\w.-]{1,253} [^\]]{0,512}\][#$]"
    r"|[\w.-]{1,64}@[\w.-]{1,253} [^\s#$]{1,512}[#$]|\[[\w.-]{1,64}:[^\]\s]{0,512}\][#$]"
    r"|bash-[\d.]{1,8}[#$]|\$|➜|❯)"
    r"(?:\s|$)"
)
# A command echoed without a prompt ("nvidia-smi nvlink -s" pasted above its output): the tool's
# name followed by options and sub-command words only, never a sentence.
_TOOLS = r"(?:nvidia-smi|ibstat|ibstatus|ibv_devinfo|dcgmi|lsmod|dmesg|systemctl|journalctl|uname|docker|dpkg|dkms)"
# ... and the same command piped through a filter ("lsmod | grep nvidia", "nvidia-smi -q | grep -A2 Fabric").
_BARE_COMMAND = re.compile(
    rf"^(?:sudo\s+)?{_TOOLS}"
    r"(?:\s+(?:-{1,2}[\w=,.:-]{1,64}|[a-z]{1,12}|\d{1,4}))*\s*(?:\|[^\n]{0,300})?$"
)
# Any prompt, then one of those commands: the prompt is what ends in a prompt character before it.
_PROMPTED_COMMAND = re.compile(rf"^[^\n]{{0,160}}?[$#%>\]❯➜]\s?(?:sudo\s+)?{_TOOLS}(?=[\s|]|$)")
# "+ ibstat" (bash set -x, one "+" per nesting level) and libibumad's debug lines.
_TRACE = re.compile(r"^(?:\+{1,4} \S|ib(?:warn|debug): \[\d{1,10}\] )")
_FENCE = re.compile(r"^\s{0,3}(?:`{3,}|~{3,})[\w+-]{0,32}\s*$")
_EXCERPT_MARKS = frozenset({"...", "…", "[...]", "[…]", "<snip>", "[snip]", "<...>", "(...)", "snip", "---snip---"})
_ELIDED = re.compile(r"^\[\.\.\.[^\]]{0,200}\]$")  # "[... lines elided ...]"
_QUOTE = re.compile(r"> ?")
_CONTENT_LINE = re.compile(r"^[ \t]*\S", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]{0,32}[A-Za-z]")

# Longest number token any tool prints (a 64-bit counter has 20 digits); longer is hostile.
MAX_DIGITS = 40
_LONG_NUMBER = re.compile(rf"\d{{{MAX_DIGITS + 1}}}")
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")

Prefix = re.Pattern[str]
# Prefixes stripped only when most of the lines carry them (they can be output themselves).
_MAJORITY_PREFIXES: tuple[Prefix, ...] = (_SLURM_LABEL, _QUOTE)
# (Every prefix pattern is used with Pattern.match, which anchors it at the line start.)
# Prefixes that no tool output starts with: stripped wherever they are.
_LAUNCHER_PREFIXES: tuple[Prefix, ...] = (_OMPI_TAG, _NCCL_PREFIX, _RANK_TAG)
_LOG_PREFIXES: tuple[Prefix, ...] = (_ISO_TIME, _SYSLOG, _DMESG_FACILITY, _KERNEL_TIME)


def check_input(text: str, *, what: str = "tool output") -> None:
    """ParseError naming the line for input no tool prints: NUL and other control bytes, runs of
    undecodable bytes (U+FFFD), and numbers longer than any counter (``int()`` of 5,000 digits)."""
    if _BINARY.search(text) or text.count("\ufffd") > 2 or _LONG_NUMBER.search(text):
        for number, line in enumerate(text.splitlines(), start=1):
            if _BINARY.search(line) or line.count("\ufffd") > 2:
                raise ParseError(f"binary data, not {what}", line=number)
            if _LONG_NUMBER.search(line):
                raise ParseError(f"a number of more than {MAX_DIGITS} digits is not {what}", line=number)


def decode(data: bytes, *, what: str = "tool output") -> str:
    """``data`` as UTF-8 text; ParseError naming the first line that is not valid UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(f"invalid UTF-8 (byte 0x{data[exc.start]:02x}): not {what}", line=line) from None


def clean_lines(text: str, *, log_prefixes: bool = True) -> list[str]:
    """The lines of ``text`` with paste and launcher noise removed, one per input line.

    ``log_prefixes=False`` keeps kernel-log timestamps (the dmesg parser reads them itself).
    Raises ParseError (with the line) for binary data and absurdly long numbers.
    """
    check_input(text)
    lines = text.splitlines()
    # Whole-text searches (in C) decide which per-line work is needed at all, so a file of a
    # million lines with nothing to clean costs one pass.
    if "\x1b" in text:
        lines = [_ANSI.sub("", line) for line in lines]
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    content = len(_CONTENT_LINE.findall(text))
    majority = [p for p in _MAJORITY_PREFIXES if _most_lines_match(text, p, content)]
    prefixes = (*majority, *_LAUNCHER_PREFIXES, *(_LOG_PREFIXES if log_prefixes else ()))
    alternation = "|".join(f"(?:{p.pattern})" for p in prefixes)
    any_prefix = re.compile(alternation)
    strip = re.search(f"^(?:{alternation})", text, re.MULTILINE) is not None
    inner = log_prefixes and _INNER_RANK_TAG.search(text) is not None
    if not strip and not inner and _NOISE_CANDIDATE.search(text) is None:
        return lines  # nothing on any line to clean
    # Prompts of other shapes are looked for line by line only where the text holds one at all.
    prompted = _PROMPTED_ANYWHERE.search(text) is not None
    out: list[str] = []
    for line in lines:
        if strip and any_prefix.match(line):
            line = _strip_prefixes(line, prefixes)
        if line and _is_noise(line, prompted=prompted):
            out.append("")
            continue
        if inner and "[" in line:
            line = _INNER_RANK_TAG.sub("", line)
        out.append(line)
    return out


def clean(text: str, *, log_prefixes: bool = True) -> str:
    """:func:`clean_lines` joined back into one text (same number of lines)."""
    return "\n".join(clean_lines(text, log_prefixes=log_prefixes))


def echoed_commands(text: str) -> list[str]:
    """The commands echoed after shell prompts in ``text`` (``root@h:/# ./all_reduce_perf -g 8``)."""
    commands = []
    for line in text.splitlines():
        stripped = line.strip()
        if (m := _PROMPT.match(stripped)) and stripped[m.end() :].strip():
            commands.append(stripped[m.end() :].strip())
    return commands


def cut_line(text: str, lines: list[str]) -> int:
    """0-based index of a last line cut in half, or -1.

    A capture or paste cut short ends mid-line, without the newline every tool prints after its
    last line; a text that ends with a newline has no cut line, so garbage there is an error.
    """
    if not text or text.endswith(("\n", "\r")):
        return -1
    return last_content_line(lines)


def last_content_line(lines: list[str]) -> int:
    """0-based index of the last non-blank line (-1 when none): the one a cut capture may halve."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            return i
    return -1


def _strip_prefixes(line: str, prefixes: tuple[Prefix, ...]) -> str:
    # Launchers nest (srun label, then an mpirun tag, then NCCL's prefix): strip until none
    # applies. Each pass removes at least one character, so this is linear in the line.
    # Patterns are matched at a moving position (no slicing per step), and carry no "^".
    pos = 0
    changed = True
    while changed and pos < len(line):
        changed = False
        for prefix in prefixes:
            m = prefix.match(line, pos)
            if m and m.end() > pos:
                pos = m.end()
                changed = True
    return line[pos:]


_NOISE_STARTS = frozenset(".…[<(s-`~$➜❯bnidlju+")
# Whether any line at all could be noise (see _is_noise): one search over the whole text.
_NOISE_CANDIDATE = re.compile(
    rf"^[ \t]*[.…\[<(s\-`~$➜❯bnidlju+]|@|[$#%>\]❯➜]\s?(?:sudo\s+)?{_TOOLS}(?=[\s|]|$)", re.MULTILINE
)
# Whether a line names one of the tools at all: the cheap test before the prompt pattern.
_TOOL_NAMED = re.compile(_TOOLS)
# A prompt character, then one of the commands, anywhere in a text.
_PROMPTED_ANYWHERE = re.compile(rf"[$#%>\]❯➜]\s?(?:sudo\s+)?{_TOOLS}(?=[\s|]|$)", re.MULTILINE)


def _is_noise(line: str, *, prompted: bool = True) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in _NOISE_STARTS or "@" in stripped:
        if stripped in _EXCERPT_MARKS or _ELIDED.match(stripped) or _FENCE.match(line):
            return True
        if len(stripped) >= 3 and not stripped.strip(".…"):  # "....", "……"
            return True
        if _PROMPT.match(stripped) or _TRACE.match(stripped):
            return True
        if len(stripped) < 400 and _BARE_COMMAND.match(stripped):
            return True
    # A prompt of another shape before a tool's command: only a short line that names a tool.
    if not prompted or len(stripped) >= 400:
        return False
    return _TOOL_NAMED.search(stripped) is not None and _is_prompted(stripped)


def _is_prompted(stripped: str) -> bool:
    m = _PROMPTED_COMMAND.match(stripped)
    if m is None:
        return False
    prompt = stripped[: m.end()].rstrip()
    # The prompt holds no sentence: at most a few words ("[root@localhost:~]", "(base) gpu3 %").
    return len(prompt.split()) <= 6


def _most_lines_match(text: str, prefix: Prefix, content: int) -> bool:
    """True when more than half of the ``content`` non-blank lines start with ``prefix``."""
    if not content:
        return False
    hits = len(re.findall(f"^(?:{prefix.pattern})", text, re.MULTILINE))
    return hits * 2 > content
