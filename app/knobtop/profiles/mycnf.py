"""The password a mysql client would take from a my.cnf (a profile's ``{ mycnf = true }``)."""

from __future__ import annotations

_MYCNF_GROUPS = frozenset({"client", "mysql", "client-server", "client-mariadb", "mariadb-client"})
_MYCNF_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'"}
_MYCNF_ESCAPES["\\"] = "\\"


def _strip_cnf_comment(line: str) -> str:
    """Cut an end-of-line ``#`` comment that is outside quotes (as mysys does)."""
    quote = ""
    escape = False
    for i, ch in enumerate(line):
        if ch in "'\"" and not escape:
            if not quote:
                quote = ch
            elif quote == ch:
                quote = ""
        elif not quote and ch == "#":
            return line[:i]
        escape = ch == "\\" and not escape
    return line


def _cnf_value(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        value = value[1:-1]
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append(_MYCNF_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def password_from_mycnf(text: str) -> str | None:
    """The password a mysql client would take from this my.cnf body, or None.

    Reads ``[client]`` and ``[mysql]`` (and MariaDB's client groups); keys ``password`` or
    ``pass`` (``loose-`` prefix allowed); quotes, escapes and ``#``/``;`` comments as mysys
    reads them.  The last setting wins; a bare ``password`` line (prompt) yields None.
    """
    password: str | None = None
    in_group = False
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#;" or line.startswith("!"):
            continue
        if line.startswith("["):
            header = _strip_cnf_comment(line).strip()
            if header.endswith("]"):
                in_group = header[1:-1].strip().lower() in _MYCNF_GROUPS
            continue
        if not in_group:
            continue
        body = _strip_cnf_comment(line)
        key, sep, value = body.partition("=")
        key = key.strip().lower().replace("_", "-")
        key = key.removeprefix("loose-")
        if key not in ("password", "pass"):
            continue
        password = _cnf_value(value) if sep else None
    return password
