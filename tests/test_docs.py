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


PAPER_ARMS = {
    "a0": "control",
    "a1": "swap_1_2",
    "a2": "swap_1_3",
    "a3": "swap_2_3",
    "a4": "hide_ads_box",
    "a5": "hide_ads_box_swap_1_2",
    "a6": "hide_box",
}
"""The Powermeter paper's Table 1 (and §4.2): a4 hides the box and the ads, a5 is a4 with
swap 1-2, a6 hides the box only (its §5.2 text swaps a4 and a6)."""
SPOKEN_ARMS = {"hide box": "hide_box", "hide box+ads": "hide_ads_box", "hide ads/box": "hide_ads_box"}
_ARM_LABEL = re.compile(r"\b(a[0-6]) \(`?([a-z_0-9]+|hide box\+ads|hide ads/box|hide box)`?[,)]")
_LABELLED_ARM = re.compile(r"`([a-z_0-9]+)` \((a[0-6])\)")


def test_the_docs_name_the_papers_arms_as_its_table_1() -> None:
    """Every "a4 (`hide_ads_box`)" or "`hide_box` (a6)" in the docs names the arm Table 1
    gives that label (docs/reproducing.md had a4 and a6 reversed), and no document calls the
    project's intervals the paper's error bars (the paper says only "bootstrap over 200
    resamples")."""
    wrong = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        pairs = [(a, SPOKEN_ARMS.get(n, n)) for a, n in _ARM_LABEL.findall(text)]
        pairs += [(a, n) for n, a in _LABELLED_ARM.findall(text)]
        wrong += [
            f"{path.name}: {a} is not {n}"
            for a, n in pairs
            if n in PAPER_ARMS.values() and PAPER_ARMS[a] != n
        ]
        if "as the paper's error bars" in text:
            wrong.append(f"{path.name}: the paper's error bars")
    assert not wrong, wrong
