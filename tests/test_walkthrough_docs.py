"""The walk-through's reading of the documents (tests/walkthrough_docs.py): what it takes for a
command and a statement, and that its tables still name lines README.md has. The walk-through
itself, against a service, is tests/integration/test_walkthrough.py."""

from __future__ import annotations

import pytest

from tests.walkthrough_docs import (
    PLACEHOLDERS,
    ROOT,
    SCALED,
    SKIPPED,
    CommandLine,
    answer_problems,
    command_lines,
    documented_sql,
    expand,
    fenced_blocks,
    options,
    scaled,
    sql_examples,
    stale,
)

BROKEN = ROOT / "tests" / "fixtures" / "walkthrough" / "broken.md"

USING = """# Title

## Using it

```sh
first --a 1  # says what it does
          # and more on it
second "quoted # not a comment" \\
     --b 2                            # the comment of a continued line
third 'x'#glued
```

```sh
not --read
```
"""


def test_command_lines_join_continuations_and_keep_comments_apart() -> None:
    assert command_lines(USING) == [
        CommandLine(6, "first --a 1", "says what it does and more on it"),
        CommandLine(8, 'second "quoted # not a comment" --b 2', "the comment of a continued line"),
        CommandLine(10, "third 'x'#glued", ""),
    ]


def test_command_lines_need_the_heading_and_a_closed_block() -> None:
    with pytest.raises(ValueError, match="no '## Using it' heading"):
        command_lines("# Title\n")
    with pytest.raises(ValueError, match="no ```sh block"):
        command_lines("## Using it\n\ntext\n")
    with pytest.raises(ValueError, match="never closed"):
        fenced_blocks("```sql\nSELECT 1;\n", "sql")
    with pytest.raises(ValueError, match="ends in a continuation"):
        command_lines("## Using it\n```sh\nfirst \\\n```\n")


def test_alternatives_are_run_one_by_one_and_quotes_are_kept() -> None:
    assert expand("report --format table|json|csv") == [
        ["report", "--format", "table"],
        ["report", "--format", "json"],
        ["report", "--format", "csv"],
    ]
    assert expand('sql "SELECT a|b" --x') == [["sql", "SELECT a|b", "--x"]]
    assert options(["up", "--port", "8080", "--demo", "--data-dir", "data"]) == {
        "--port": "8080",
        "--demo": "",
        "--data-dir": "data",
    }


def test_each_statement_is_an_example_titled_by_its_comment() -> None:
    examples = sql_examples(BROKEN)
    assert [(e.line, e.title) for e in examples] == [
        (9, "a working example: extension events per arm"),
        (14, "issue 40's broken example: the alias hides the column it sums"),
        (19, "an experiment nobody ran: no rows"),
        (21, "a share above one"),
    ]
    assert examples[1].sql.endswith("ORDER BY arm, original_rank") and ";" not in examples[1].sql
    assert (
        examples[0].where
        == "tests/fixtures/walkthrough/broken.md:9 (a working example: extension events per arm)"
    )


def test_a_statement_without_a_comment_takes_the_heading_above_it() -> None:
    examples = sql_examples(ROOT / "schemas" / "clickhouse" / "README.md")
    titled = {e.title for e in examples}
    assert "`experiment_gap_sequential(...)`" in titled  # no comment of its own
    assert not any(t.startswith("-") or t.startswith("#") for t in titled)


def test_the_documents_examples_are_all_found() -> None:
    examples = documented_sql()
    docs = {e.doc for e in examples}
    assert docs == {"schemas/clickhouse/README.md", "docs/reproducing.md"}
    blocks = sum(
        len(fenced_blocks(path.read_text(), "sql"))
        for path in [ROOT / "schemas" / "clickhouse" / "README.md", *(ROOT / "docs").glob("*.md")]
    )
    assert len(examples) >= blocks  # every block holds at least one statement
    assert all(e.sql.strip() and not e.sql.rstrip().endswith(";") for e in examples)
    titles = [e.title for e in examples]
    assert any(t.startswith("CTR of c1..c3 per arm over a study period") for t in titles)
    assert "CTR of c1 per arm after preprocessing, Google, box subset" in titles


def test_the_walkthroughs_tables_name_lines_the_readme_has() -> None:
    """A skipped, scaled or substituted line that changed fails here, not silently later."""
    commands = command_lines((ROOT / "README.md").read_text())
    assert not stale([s.match for s in SKIPPED], commands)
    assert not stale(list(SCALED), commands)
    assert not stale(list(PLACEHOLDERS), commands, word=True)
    assert all(s.reason for s in SKIPPED)
    changed = [CommandLine(1, "auditstream crawl serp --study other.toml --api-key $MYKEY", "")]
    assert "crawl serp --study collectors/serp/examples/study.toml" in stale(
        [s.match for s in SKIPPED], changed
    )


def test_scaling_changes_only_the_named_options() -> None:
    words = [
        "auditstream",
        "simulate",
        "extension",
        "--experiment",
        "x",
        "--events",
        "20000",
        "--rate",
        "2000",
    ]
    text = " ".join(words)
    assert scaled(words, text)[-4:] == ["--events", "2000", "--rate", "0"]
    assert scaled(["auditstream", "sql", "x"], "auditstream sql x") == ["auditstream", "sql", "x"]
    with pytest.raises(ValueError):
        scaled(words[:5], " ".join(words[:5]))  # the line lost an option the table scales


def test_answers_that_cannot_be_are_named() -> None:
    nan = float("nan")
    assert (
        answer_problems([{"arm": "a", "ctr": 0.4, "ci_low": 0.3, "ci_high": 0.5, "share_with_ads": 1}]) == []
    )
    assert answer_problems([{"ctr": None, "ctr_c1": nan, "lo": nan, "hi": 0.1, "cdf": True}]) == []
    problems = answer_problems([{"ctr_c1": 1.5, "cs_low": 0.2, "cs_high": 0.1, "units": 40}])
    assert (
        len(problems) == 2
        and problems[0].startswith("ctr_c1 = 1.5")
        and problems[1].startswith("cs_low > cs_high")
    )
