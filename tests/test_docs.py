"""The repository explains itself: its docs name files that exist, and nothing cites a
document that lives outside it (the method is ``docs/method.md``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATH = re.compile(
    r"`((?:core|schemas|analytics|studies|streams|collectors|ingest|supervisor|auditstream|bench|"
    r"tests|docs|extension|deploy)/[A-Za-z0-9_./-]+\.(?:py|md|js|sql|toml|json|html|mjs))`"
)


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / line for line in out.splitlines()]


def test_nothing_cites_a_design_document_outside_the_repository() -> None:
    citing = []
    for path in tracked():
        text = path.suffix in {".py", ".md", ".js", ".mjs", ".html", ".toml"} and path.is_file()
        if text and path.name != "test_docs.py" and "DESIGN.md" in path.read_text(errors="replace"):
            citing.append(str(path.relative_to(ROOT)))
    assert not citing, citing


def test_the_method_and_the_architecture_name_files_that_exist() -> None:
    for doc in ("docs/method.md", "docs/architecture.md"):
        missing = sorted({p for p in PATH.findall((ROOT / doc).read_text()) if not (ROOT / p).exists()})
        assert not missing, f"{doc} names {missing}"
