"""Text from the service or the store, made safe to show on the analyst's terminal.

Anything the CLI prints that it did not write itself (a stored suggestion, a column name
chosen in SQL, an experiment id, an error message the server sent) is someone else's
text. Shown as it is, it could

* be read as rich markup: ``[link=https://evil.example/x]click[/link]`` would print as a
  hyperlink and ``[bold red]x[/]`` would lose its brackets and restyle the output;
* drive the terminal: ``ESC]0;...`` retitles the window, ``ESC[2J`` clears the screen,
  ``ESC]8;;...`` makes a hyperlink, and a carriage return overwrites what was printed;
* reorder what is shown: the bidi overrides and isolates (U+202A-U+202E,
  U+2066-U+2069) make a value read differently from what is stored.

So every such value goes through :func:`printable` (controls and bidi overrides become
visible ``\\xNN`` / ``\\uNNNN`` escapes), and then either into a :class:`rich.text.Text`
(:func:`plain`: never parsed as markup, for table cells, headers and titles) or through
:func:`rich.markup.escape` (:func:`markup_safe`: for a value inside a markup string).

Only the terminal renderings are changed: ``--format csv`` prints the stored values
exactly, and ``--format json`` the same values, with the characters JSON leaves raw (DEL,
C1 controls, bidi overrides) written as ``\\uNNNN`` escapes by :func:`json_safe`.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
_VISIBLE = {c: f"\\x{c:02x}" for c in _CONTROLS} | {c: f"\\u{c:04x}" for c in _BIDI}
_VISIBLE_MULTILINE = {c: v for c, v in _VISIBLE.items() if chr(c) not in "\n\t"}
_JSON_RAW = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI)}


def printable(value: object, *, multiline: bool = False) -> str:
    """``value`` as text with every C0 and C1 control character, DEL and bidi override
    replaced by a visible escape (ESC becomes ``\\x1b``, U+202E ``\\u202e``), so it cannot
    move the cursor, restyle or retitle the terminal, or reorder the line.

    ``multiline`` keeps line feeds and tabs (for a message of several lines); a table cell
    or a title keeps them escaped, so one value stays on its own line. A backslash in the
    value is left as it is, so ``\\x1b`` typed into a value looks like an escaped ESC: the
    exact value is in ``--format json``.
    """
    return str(value).translate(_VISIBLE_MULTILINE if multiline else _VISIBLE)


def plain(value: object) -> Text:
    """A table cell, header or title from ``value``: printable, and never read as markup."""
    return Text(printable(value))


def markup_safe(value: object, *, multiline: bool = False) -> str:
    """``value`` to put inside a rich markup string (``f"[yellow]{markup_safe(x)}"``)."""
    return escape(printable(value, multiline=multiline))


def json_safe(text: str) -> str:
    """JSON text (as orjson writes it) with DEL, the C1 controls and the bidi overrides as
    ``\\uNNNN`` escapes. JSON escapes only U+0000-U+001F itself; these characters can only
    stand inside its strings, so the result is the same JSON value, exactly, and a terminal
    shows it without acting on it."""
    return text.translate(_JSON_RAW)
