"""The packages import downward only (docs/architecture.md draws the layers).

Each top-level package may import the packages listed for it and nothing else of
this project; an import that runs upward or sideways is reported with its file and
line. Imports inside functions count too: a lazy import is still a dependency.
Inside the packages, the sub-package rules of ``SUB_RULES`` hold (a study's read side
and write side never import each other; the worker imports only write sides; ingest
only read sides, except the import), and no module imports itself back through others.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = (
    "core",
    "schemas",
    "analytics",
    "studies",
    "figures",
    "streams",
    "collectors",
    "ingest",
    "supervisor",
    "auditstream",
)
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "schemas": frozenset({"core"}),
    "analytics": frozenset({"core", "schemas"}),
    "studies": frozenset({"core", "schemas", "analytics"}),
    "figures": frozenset({"core", "schemas", "analytics", "studies"}),
    "streams": frozenset({"core", "schemas", "analytics", "studies"}),
    "collectors": frozenset({"core", "schemas", "analytics"}),
    # streams: bulk import only; figures: the board's figure route
    "ingest": frozenset({"core", "schemas", "analytics", "studies", "figures", "streams"}),
    "supervisor": frozenset({"core", "schemas", "ingest"}),
    "auditstream": frozenset(PROJECT) - {"auditstream"},
}
"""What each package may import, besides itself (bench/ and tests/ may import anything)."""

STUDY_ROOT = r"studies\.\w+\.(tables|counting|selection|arrays|looks|answers|quintiles)"
"""The modules at a study package's root: shared by its read and write sides."""
SUB_RULES: list[tuple[str, str, str, str]] = [
    # (importing module, imported module, why) as regular expressions over dotted names
    (
        r"analytics\.stats(\..*)?",
        r"(core\.store|schemas|studies|streams|ingest)(\..*)?",
        "",
        "stats stay pure",
    ),
    (STUDY_ROOT, r"studies\.\w+\.(read|write)(\..*)?", "", "the shared modules sit below both sides"),
    (r"studies\.(\w+)\.read(\..*)?", r"studies\.\w+\.write(\..*)?", "", "a read never writes"),
    (r"studies\.(\w+)\.write(\..*)?", r"studies\.\w+\.read(\..*)?", "", "the write side needs no report"),
    (
        r"streams(\..*)?",
        r"studies\..*",
        r"studies\.\w+\.(write(\..*)?|tables)",
        "the worker imports write sides",
    ),
    (r"ingest(\..*)?", r"streams(\..*)?", "", "ingest: the import's and erasure's write path only"),
    (
        r"ingest(\..*)?",
        r"studies\.\w+\.write(\..*)?",
        "",
        "ingest writes derived rows only for the import",
    ),
    (r"auditstream(\..*)?", r"studies\.\w+\.write(\..*)?", "", "the command line reads"),
]
"""(importer, imported, allowed exceptions among the imported, why): an import of a module
matching ``imported`` by one matching ``importer`` is wrong unless it matches the exception."""
WRITE_IMPORTERS = {
    "ingest.import_routes": "POST /v1/import stores and recomputes through the worker's own write path",
    "ingest.board.looks_job": "the import's and erasure's restore_looks runs where the board computes",
    "ingest.import_chunks": "an import chunk's event types are the families the write path stores",
    "ingest.participants": "erasing a volunteer's rows recomputes through the worker's write path",
}
"""Modules of ingest/ that may import write paths (``WRITE_PATHS``), and why."""
WRITE_PATHS = r"streams\.(bulk_import|erasure)|studies\.\w+\.write(\..*)?"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_files() -> list[Path]:
    return [p for package in PROJECT for p in sorted((ROOT / package).rglob("*.py"))]


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every project module ``path`` imports (``from a.b import c`` counts a.b.c when it is
    a module, else a.b), with its line."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (ROOT / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    ROOT / Path(*sub.split(".")) / "__init__.py"
                ).exists()
                found.append((node.lineno, sub if is_module else node.module))
    return sorted({(line, name) for line, name in found if name.split(".")[0] in PROJECT})


def imported_packages(path: Path) -> list[tuple[int, str]]:
    return [(line, name.split(".")[0]) for line, name in imports_of(path)]


def test_every_package_imports_only_the_layers_below_it() -> None:
    wrong = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []:
            for line, name in imported_packages(path):
                if name != package and name not in allowed:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


def sub_rule_breaks() -> list[str]:
    wrong = []
    for path in project_files():
        importer = module_name(path)
        for line, imported in imports_of(path):
            for source, target, allowed, why in SUB_RULES:
                if not re.fullmatch(source, importer) or not re.fullmatch(target, imported):
                    continue
                if allowed and re.fullmatch(allowed, imported):
                    continue
                if importer in WRITE_IMPORTERS and re.fullmatch(WRITE_PATHS, imported):
                    continue
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported} ({why})")
    return wrong


def test_the_sub_packages_keep_their_rules() -> None:
    """A study's read side never imports its write side (nor back), the worker imports only
    write sides, ingest only read sides (the import excepted), analytics/stats stays pure."""
    wrong = sub_rule_breaks()
    assert not wrong, "\n".join(wrong)


def test_every_rule_names_modules_that_exist() -> None:
    """The rule table is not vacuous: each rule names modules that exist."""
    modules = {module_name(p) for p in project_files()}
    for source, target, _, why in SUB_RULES:
        assert any(re.fullmatch(source, m) for m in modules), why
        assert any(re.fullmatch(target, m) for m in modules), why


def test_no_import_cycles() -> None:
    """No module imports itself back through other modules (lazy imports included)."""
    graph: dict[str, set[str]] = {}
    modules = {module_name(p): p for p in project_files()}
    for name, path in modules.items():
        graph[name] = {m for _, m in imports_of(path) if m in modules and m != name}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    import sys

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


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
