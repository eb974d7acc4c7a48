"""What ``schemas/clickhouse/README.md`` says about each table, view and column, for the
datasheet of an export (``auditstream export``): the README stays the one description.

A view's text is its ``### `name``` section (prose only: the SQL examples read the
service, and the bold notes there are about querying the views, not about the view), a
bullet that starts with its name, or its row of the "Tables" table; a family's section
("Autocomplete analytics (RAI)", ...) gives the prose before its first bullet. A column's
meaning is the clause that names it in its table's text (``meaning``).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\.\.\.\))?`")
_BULLET = re.compile(r"^\s*- ((?:`[^`]+`(?:, | and | or |\s)*)+):?\s*(.*)$")
_LEAD = re.compile(r"^([A-Z][a-z]+):\s")


def readme() -> str:
    return (resources.files("schemas") / "clickhouse" / "README.md").read_text(encoding="utf-8")


def _paragraphs(lines: list[str]) -> list[str]:
    """Blocks between blank lines, fenced code left out."""
    out, block, fenced = [], list[str](), False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.strip():
            block.append(line)
        elif block:
            out.append("\n".join(block))
            block = []
    if block:
        out.append("\n".join(block))
    return out


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) of each ``##``/``###`` section."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            out.append((line.lstrip("#").strip(), []))
        elif out:
            out[-1][1].append(line)
    return out


def _bullets(paragraph: str) -> list[tuple[list[str], str]]:
    """(names, text) of each bullet of a paragraph that begins with backticked names."""
    items: list[list[str]] = []
    for line in paragraph.splitlines():
        if re.match(r"^\s*- ", line):
            items.append([line])
        elif items:
            items[-1].append(line)
    out = []
    for item in items:
        text = " ".join(part.strip() for part in item)
        match = _BULLET.match(text)
        if match:
            out.append((_NAME.findall(match.group(1)), text.lstrip("- ").strip()))
    return out


@cache
def table_docs() -> dict[str, str]:
    """Each documented name (table, view, family section) with its text."""
    docs: dict[str, str] = {}
    for heading, lines in _sections(readme()):
        paragraphs = _paragraphs(lines)
        names = _NAME.findall(heading) if heading.startswith("`") else []
        if names:  # a view's own section
            prose = [p for p in paragraphs if not p.startswith("**") and not p.lstrip().startswith("- ")]
            for name in names:
                docs.setdefault(name, "\n\n".join(prose))
        elif heading != "Tables":
            intro = []
            for p in paragraphs:
                if p.lstrip().startswith("- "):
                    break
                intro.append(p)
            docs.setdefault(heading, "\n\n".join(intro))
        for p in paragraphs:
            if lead := _LEAD.match(p):
                docs.setdefault(lead.group(1), p)
            for bullet_names, text in _bullets(p):
                for name in bullet_names:
                    docs.setdefault(name, text)
            if heading == "Tables":
                for row in p.splitlines():
                    cells = [c.strip() for c in row.strip().strip("|").split("|")]
                    if len(cells) == 2 and cells[0].startswith("`"):
                        for name in _NAME.findall(cells[0]):
                            docs.setdefault(name, cells[1])
    return docs


def doc_of(names: tuple[str, ...]) -> str:
    """The text of a table documented under ``names`` (a ``_full`` twin: its view's, on the
    untrimmed network)."""
    docs = table_docs()
    parts = []
    for name in names:
        if name in docs:
            parts.append(docs[name])
        elif name.endswith("_full") and name[:-5] in docs:
            parts.append(f"The twin of `{name[:-5]}` on the full (untrimmed) network. " + docs[name[:-5]])
    return "\n\n".join(parts)


def _mentions(flat: str, at: int) -> tuple[list[str], int] | None:
    """The names of a backticked mention at ``at`` (```a, b```: both) and where it ends."""
    match = re.match(r"`([^`]+)`", flat[at:])
    if match is None:
        return None
    return [n.strip() for n in match.group(1).split(",")], at + match.end()


def _sentence_end(flat: str, i: int) -> bool:
    return flat[i] == "." and flat[i + 1 : i + 2] in ("", " ")


def _clause_end(flat: str, start: int, others: set[str], values: bool = False) -> int:
    """Where the words about a column end: a ``;`` or a sentence's end outside brackets,
    a bracket closed that opened before it, or the next column named (with ``values``,
    ```a` = `x` (...) or `y` (...)``, the next comma instead: its values may be names)."""
    depth, i = 0, start
    while i < len(flat):
        char = flat[i]
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (char == ";" or (values and char == ",") or _sentence_end(flat, i)):
            return i
        elif depth == 0 and not values and char == "`" and (found := _mentions(flat, i)) is not None:
            if others.intersection(n.split(" ")[0] for n in found[0]):
                return i
            i = found[1]
            continue
        i += 1
    return len(flat)


def _bracketed(text: str) -> str:
    """The inside of the bracket ``text`` starts with (to its matching close)."""
    depth = 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return text[1:i]
    return text[1:]


def meaning(text: str, column: str, columns: tuple[str, ...]) -> str:
    """What ``text`` says about ``column``: the words after a mention of it, up to the next
    column named, a ``;`` or the sentence's end; a bracket right after it, its inside; a
    mention ```column = ...```, itself. ``''`` when it is only listed."""
    flat = " ".join(text.split())
    others = set(columns) - {column}
    at = flat.find("`")
    while at >= 0 and (found := _mentions(flat, at)) is not None:
        names, end = found
        before, at = flat[:at].rstrip(), flat.find("`", end)
        if names[0].startswith(f"{column} ="):
            return names[0]
        if column not in names or names[-1] != column or before.endswith(("=", "/", " or")):
            continue  # listed with others (the words after are the last one's), or a value
        values = flat[end:].lstrip().startswith("=")
        rest = flat[end : _clause_end(flat, end, others, values)].strip()
        if rest.startswith((",", "and ", "or ")):
            continue  # only listed here
        rest = _bracketed(rest) if rest.startswith("(") else rest
        rest = re.sub(r"(,|\s+and|\s+or)$", "", rest).removeprefix(":").strip()
        if rest:
            return rest[:300] + ("..." if len(rest) > 300 else "")
    return ""
