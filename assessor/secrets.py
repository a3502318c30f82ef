"""Credentials never leave gpulab: what is redacted from every message, table and file it writes.

An inventory may hold ``ansible_password`` (gpulab passes it to Ansible through sshpass's pipe and to
paramiko, and nowhere else); a target may be typed with a password in it (``ssh://user:pw@host``), which is
refused. Whatever quotes such an input (an error, an echo of what the user typed, a parser's complaint about a
broken inventory line) goes through :func:`redact` first.
"""

from __future__ import annotations

import re

MASK = "***"

# Ansible's secret variables as ``key=value`` (INI) or ``key: value`` (YAML); other secret-looking words only as
# ``key=value`` (``password: use a key`` in a sentence is prose, not a secret)
_ANSIBLE_KEYS = r"ansible_(?:ssh_|become_|sudo_)?pass(?:word)?|ansible_ssh_private_key_passphrase|vault_password"
_VALUE = r"(\"[^\"]*\"?|'[^']*'?|[^\s,;}\]]+)"
_KEY_VALUE = re.compile(rf"(?i)\b({_ANSIBLE_KEYS})(\s*[=:]\s*){_VALUE}")
_WORD_VALUE = re.compile(rf"(?i)\b(password|passwd|token|secret)(\s*=\s*){_VALUE}")
# scheme://user:password@host: the password part of a URL's userinfo
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@:\s]*:)([^@/\s]*)(@)")


def redact(text: str) -> str:
    """``text`` with every credential it quotes replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _WORD_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


def has_password(target: str) -> bool:
    """Whether a target spec (``ssh://user:pw@host``) carries a password."""
    return bool(_USERINFO.search(target))
