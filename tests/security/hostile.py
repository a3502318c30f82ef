"""A set of hostile strings: what a node, a candidate or an inventory can put in a value gpulab shows.

Each piece is something a terminal, a spreadsheet or a Markdown renderer would act on, or something a
reader would not see: :data:`RAW` lists the characters that must never reach an output as they are, and
:data:`SHOWN` the visible form :mod:`assessor.neutralise` gives each (docs/THREAT_MODEL.md).
"""

from __future__ import annotations

ESC_CSI = "\x1b[2J\x1b[31m"  # clear the screen, turn red
OSC_52 = "\x1b]52;c;cHduZWQ=\x07"  # write "pwned" to the reader's clipboard
C1_CSI = "\x9b2J"  # the one-byte CSI
RLO = "\u202e"  # right-to-left override: "gnp.exe" shows as "exe.png"
ZERO_WIDTH = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u061c"
TAG = "\U000e0041"  # an invisible tag character (TAG LATIN CAPITAL LETTER A)
SOFT_HYPHEN = "\u00ad"
FORGED_LINE = "\ngpulab: error: forged line"
URL = "https://evil.example/x"
WWW = "www.evil.example"
FORMULA = '=HYPERLINK("https://evil.example","click")'

# One string holding every piece (a formula first, so a CSV cell starts with it).
HOSTILE = f"{FORMULA} {ESC_CSI}{OSC_52}{C1_CSI} a{RLO}b {ZERO_WIDTH} t{TAG}g s{SOFT_HYPHEN}h {URL} {WWW}{FORGED_LINE}"

RAW = ["\x1b", "\x07", "\x9b", RLO, *ZERO_WIDTH, TAG, SOFT_HYPHEN]
SHOWN = {
    "\x1b": "\\e",
    "\x07": "\\x07",
    "\x9b": "\\x9b",
    RLO: "\\u202e",
    **{c: f"\\u{ord(c):04x}" for c in ZERO_WIDTH},
    TAG: "\\U000e0041",
    SOFT_HYPHEN: "\\xad",
}


def assert_inert(text: str, *, where: str = "") -> None:
    """No raw hostile character is in ``text``."""
    for ch in RAW:
        assert ch not in text, f"{where}: raw U+{ord(ch):04X} in the output"
