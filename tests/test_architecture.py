"""The packages import downward only (docs/architecture.md draws the layers).

Each top-level package may import the packages listed for it and nothing else of
this project; an import that runs upward or sideways is reported with its file and
line. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("core", "schemas", "analytics", "streams", "collectors", "ingest", "supervisor", "auditstream")
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "schemas": frozenset({"core"}),
    "analytics": frozenset({"core", "schemas"}),
    "streams": frozenset({"core", "schemas", "analytics"}),
    "collectors": frozenset({"core", "schemas", "analytics"}),
    "ingest": frozenset({"core", "schemas", "analytics", "streams"}),  # streams: bulk import only
    "supervisor": frozenset({"core", "schemas", "ingest"}),
    "auditstream": frozenset(PROJECT) - {"auditstream"},
}
"""What each package may import, besides itself (bench/ and tests/ may import anything)."""


def imported_packages(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
    return [(line, name) for line, name in found if name in PROJECT]


def test_every_package_imports_only_the_layers_below_it() -> None:
    wrong = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []:
            for line, name in imported_packages(path):
                if name != package and name not in allowed:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_the_layers_written_in_the_architecture_doc_are_the_checked_ones() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for package, allowed in ALLOWED.items():
        below = ", ".join(f"`{p}/`" for p in PROJECT if p in allowed) or "—"
        row = f"| `{package}/` | {below} |"
        assert row in doc, f"docs/architecture.md should have the row: {row}"


def test_the_command_line_is_a_thin_layer() -> None:
    """No command function (or helper) in auditstream/cli/ over 60 lines: logic lives below."""
    long = []
    for path in sorted((ROOT / "auditstream" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} has {length} lines")
    assert not long, "\n".join(long)
