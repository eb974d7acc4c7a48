"""The documents' runnable examples, read from the documents themselves: every SQL statement
of a ```sql block, and the command lines of README.md's "Using it" block, so that the
walk-through (tests/integration/test_walkthrough.py) tests each example as written and a
changed example is tested as changed. Pure text work: nothing here talks to a service."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SqlExample:
    """One statement of a ```sql block: where it is and what its comment says it answers."""

    doc: str
    line: int
    title: str
    sql: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}" + (f" ({self.title})" if self.title else "")


@dataclass(frozen=True)
class CommandLine:
    """One command of a shell block: its text with continuations joined and the trailing
    ``# comment`` taken off (kept apart: it often says what the command answers)."""

    line: int
    text: str
    comment: str


def fenced_blocks(text: str, lang: str) -> list[tuple[int, list[str]]]:
    """Each ```lang block's lines, with the 1-based line number of its first line."""
    blocks: list[tuple[int, list[str]]] = []
    inside: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if inside is None and stripped == f"```{lang}":
            inside, start = [], number + 1
        elif inside is not None and stripped == "```":
            blocks.append((start, inside))
            inside = None
        elif inside is not None:
            inside.append(line)
    if inside is not None:
        raise ValueError(f"a ```{lang} block opened at line {start - 1} is never closed")
    return blocks


def split_statements(start: int, lines: list[str]) -> list[tuple[int, str, str]]:
    """A block's statements, each ended by a ``;`` at the end of a line (the documents'
    style; a statement left without one is still one): ``(line, title, sql)``, the title
    being the ``--`` comment lines just before it."""
    out: list[tuple[int, str, str]] = []
    comments: list[str] = []
    body: list[str] = []
    first = 0
    for offset, line in enumerate(lines):
        stripped = line.strip()
        if not body and stripped.startswith("--"):
            comments.append(stripped.lstrip("-").strip())
            continue
        if not body and not stripped:
            comments = []  # a blank line parts a comment from what follows
            continue
        if not body:
            first = start + offset
        body.append(line)
        if stripped.endswith(";"):
            out.append((first, " ".join(comments), "\n".join(body).strip().rstrip(";")))
            comments, body = [], []
    if body:
        out.append((first, " ".join(comments), "\n".join(body).strip().rstrip(";")))
    return out


def sql_examples(path: Path) -> list[SqlExample]:
    """Every statement of every ```sql block of a document, titled by its comment or, when
    it has none, by the nearest heading above it."""
    text = path.read_text()
    doc = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    headings = _headings(text)
    examples = []
    for start, lines in fenced_blocks(text, "sql"):
        for line, title, sql in split_statements(start, lines):
            heading = next((h for n, h in reversed(headings) if n < line), "")
            examples.append(SqlExample(doc, line, title or heading, sql))
    return examples


def _headings(text: str) -> list[tuple[int, str]]:
    """The Markdown headings with their line numbers (a ``#`` line inside a fence is code)."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        fenced ^= line.strip().startswith("```")
        if not fenced and line.startswith("#"):
            out.append((number, line.lstrip("#").strip()))
    return out


def documented_sql(root: Path = ROOT) -> list[SqlExample]:
    """The SQL examples of ``schemas/clickhouse/README.md`` and ``docs/*.md``."""
    paths = [root / "schemas" / "clickhouse" / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [example for path in paths for example in sql_examples(path)]


def _code_and_comment(line: str) -> tuple[str, str]:
    """A shell line split at its comment: a ``#`` that starts a word outside quotes."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def command_lines(text: str, heading: str = "## Using it") -> list[CommandLine]:
    """The commands of the first ```sh block after ``heading``: a line ending in ``\\``
    continues on the next, and a line that is only a comment adds to the command above."""
    lines = text.splitlines()
    try:
        at = lines.index(heading)
    except ValueError:
        raise ValueError(f"no {heading!r} heading") from None
    blocks = fenced_blocks("\n".join(lines[at:]), "sh")
    if not blocks:
        raise ValueError(f"no ```sh block after {heading!r}")
    start, block = blocks[0]
    start += at
    commands: list[CommandLine] = []
    parts: list[str] = []
    comments: list[str] = []
    first = 0
    for offset, raw in enumerate(block):
        code, comment = _code_and_comment(raw)
        if not code.strip():
            if comment and commands and not parts:
                last = commands[-1]
                commands[-1] = CommandLine(last.line, last.text, f"{last.comment} {comment}".strip())
            continue
        if not parts:
            first = start + offset
        continues = code.endswith("\\")
        parts.append(code.removesuffix("\\").strip())
        comments += [comment] if comment else []
        if not continues:
            commands.append(CommandLine(first, " ".join(parts), " ".join(comments)))
            parts, comments = [], []
    if parts:
        raise ValueError(f"the command at line {first} ends in a continuation")
    return commands


_ALTERNATIVES = re.compile(r"^[\w.-]+(?:\|[\w.-]+)+$")


def expand(text: str) -> list[list[str]]:
    """A command's words (shell quoting), once per alternative when a word lists them as
    ``table|json|csv`` (the documents' way of saying "one of": a shell would read a pipe)."""
    words = shlex.split(text)
    runs: list[list[str]] = [[]]
    for word in words:
        options = word.split("|") if _ALTERNATIVES.match(word) else [word]
        runs = [[*run, option] for run in runs for option in options]
    return runs


@dataclass(frozen=True)
class Skip:
    """A line the walk-through does not run, why, and the ``auditstream`` command it runs in
    its place to make the data the later lines read (none when nothing later needs it)."""

    match: str
    reason: str
    stand_in: str = ""


SKIPPED = (
    Skip(
        ". .venv/bin/activate",
        "the walk-through runs `auditstream` in the interpreter that runs the tests, the "
        "environment the line would activate",
    ),
    Skip(
        "auditstream crawl autocomplete",
        "fetches suggestions from Google and Bing, on a schedule until stopped: tests reach no "
        "outside network; simulated rounds of its study stand in",
        "simulate autocomplete --study mystudy --rounds 3 --api-key $MYKEY",
    ),
    Skip(
        "crawl serp --study collectors/serp/examples/study.toml",
        "fetches result pages through the example's placeholder proxies: simulated rounds of "
        "its study (`id` in the file) stand in",
        "simulate personalization --study hannak-login-location --rounds 8 --api-key $MYKEY",
    ),
    Skip(
        "crawl serp --study collectors/serp/examples/carry-over.toml",
        "fetches result pages through placeholder proxies; no later line reads its rounds",
    ),
)
"""The lines of "Using it" that cannot run in a test; each entry names exactly one line, so a
line that changed or went away fails ``stale``."""

SCALED = {
    "simulate extension --experiment": {"--events": "2000", "--rate": "0"},
}
"""Lines run with smaller numbers than written, option by option: 20,000 events at 2,000 a
second are 10 s of sending and a minute of storing on two cores, where 2,000 sent at once
give every later report of the experiment rows to show."""

PLACEHOLDERS = {
    "INSTALL_ID": "an install of the experiment the lines registered",
    "export.jsonl.gz": "a gzipped JSON-lines file of simulated events, made in the working directory",
    "study.parquet": "a Parquet file of other simulated events, made there too",
    "body.json": "a Google psy-ab answer (tests/fixtures/autocomplete), copied there",
}
"""The words of "Using it" that stand for the reader's own ids and files, and what the
walk-through puts in their place."""


def matching(match: str, commands: list[CommandLine], word: bool = False) -> list[CommandLine]:
    """The commands whose text holds ``match`` (with ``word``, as one of its words)."""
    return [c for c in commands if match in (shlex.split(c.text) if word else c.text)]


def stale(matches: list[str], commands: list[CommandLine], word: bool = False) -> list[str]:
    """The entries of a table that do not name exactly one command: a line was changed or
    removed under them (or an entry is too loose), and the table must follow."""
    return [m for m in matches if len(matching(m, commands, word)) != 1]


def scaled(words: list[str], text: str) -> list[str]:
    """``words`` with the options ``SCALED`` changes for this line's text."""
    out = list(words)
    for match, values in SCALED.items():
        if match not in text:
            continue
        for option, value in values.items():
            at = out.index(option)  # ValueError: the line lost the option; stale, and loud
            out[at + 1] = value
    return out


def options(words: list[str]) -> dict[str, str]:
    """``--name value`` pairs of a command's words (a flag without a value maps to '')."""
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            following = words[i + 1] if i + 1 < len(words) else ""
            out[word] = "" if following.startswith("--") else following
    return out


SHARES = re.compile(r"^(?:ctr|ctr_c\d+|share|share_.*|cdf)$")
BOUNDS = (("ci_low", "ci_high"), ("lo", "hi"), ("cs_low", "cs_high"), ("delta_ci_low", "delta_ci_high"))


def answer_problems(rows: list[dict[str, object]]) -> list[str]:
    """What a documented query's rows say that cannot be: a share (``ctr``, ``share``,
    ``cdf``) outside [0, 1], or an interval's low bound above its high one. Undefined
    values (NULL, NaN) are no problem: a cell with no units has no CTR."""

    def number(value: object) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            return None
        return float(value)

    problems = []
    for row in rows:
        for column, value in row.items():
            share = number(value)
            if SHARES.match(column) and share is not None and not 0.0 <= share <= 1.0:
                problems.append(f"{column} = {value} is no share ({row})")
        for low, high in BOUNDS:
            a, b = number(row.get(low)), number(row.get(high))
            if a is not None and b is not None and a > b:
                problems.append(f"{low} > {high} ({row})")
    return problems
