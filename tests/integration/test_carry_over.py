"""Issue 17: the carry-over experiment (the paper's Figure 3), measured through the whole pipeline.

Each round is a query pair (A, B). The control and its twin search only B at the slot;
each carry-over profile searches A its wait before the slot, then B with the others.
The fake engine plants carry-over: a search that comes less than ``CARRY_S`` after the
same profile searched another query has 60% of its ranks replaced by results of that
query. With waits of 0.3 s and 0.6 s the carry-over is there, with 2 s it has faded,
and ``report personalization`` must say so per wait (its ``by_treatment`` rows, labelled
``carry_over:wait=...``), against the control/twin noise floor. The figures are checked
against a recount from the stored pages, which shares no code with the service.
"""

from __future__ import annotations

import json
import statistics
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.journal import read_journal
from collectors.serp.study import load_study
from tests.fakes.serp_engine import FakeEngineScript, FakeSerpEngine
from tests.fakes.serp_study import study_file
from tests.helpers import Service, wait_for

pytestmark = pytest.mark.integration
STUDY = "carry-over"
CARRY_S = 1.2
WAITS = {"w300": "300ms", "w600": "600ms", "w2000": "2s"}
PAIRS = (  # (B, category, A): B is measured, A searched before it by the carry-over profiles
    ("turing machine", "science", "exam revision"),
    ("mortgage rates", "finance", "beach holidays"),
    ("marathon training", "sports", "pasta recipes"),
    ("election polls", "politics", "jazz concerts"),
    ("solar panels", "home", "chess openings"),
    ("river cruises", "travel", "tax returns"),
)
RANKS = 10


def organic(results: list[dict]) -> tuple[str, ...]:
    return tuple(r["url"] for r in sorted(results, key=lambda r: r["rank"]) if r["type"] == "organic")


def changed(a: tuple[str, ...], b: tuple[str, ...]) -> list[int]:
    return [int((a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)) for i in range(RANKS)]


def test_carry_over_is_reported_per_wait_against_the_noise_floor(tmp_path: Path, service: Service) -> None:
    profiles = [("control", "control", ""), ("twin", "control_twin", "")]
    profiles += [(pid, "treatment", "") for pid in WAITS]  # labelled by their wait
    path, _ = study_file(
        tmp_path,
        study_id=STUDY,
        rounds=len(PAIRS),
        lead_s=2.5,
        spacing='"2500ms"',
        profiles=profiles,
        queries=PAIRS,
        extra='round_timeout = "400ms"\n',
        profile_extra={pid: f'carry_over_wait = "{wait}"\n' for pid, wait in WAITS.items()},
    )
    study = load_study(path)
    label = {p.id: p.treatment for p in study.profiles}
    seconds = {p.id: p.carry_over_wait for p in study.profiles}
    assert label["w300"] == "carry_over:wait=0.3s" and label["w2000"] == "carry_over:wait=2s"
    script = FakeEngineScript(noise=0.05, carry_over_s=CARRY_S, carry_over=0.6, seed=17)
    with FakeSerpEngine(script) as engine:
        args = ["crawl", "serp", "--study", str(path), "--url", service.url, "--api-key", service.api_key]
        args += ["--endpoint", f"google={engine.base_url}", "--data-dir", str(tmp_path / "data")]
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        served = engine.served

    # the plan: every round recorded, each carry-over profile searched A its wait before B's slot
    journal = next((tmp_path / "data").rglob(f"{STUDY}/journal.jsonl"))
    records = sorted((r for r in read_journal(journal) if r["kind"] == "round"), key=lambda r: r["round"])
    assert [r["round"] for r in records] == list(range(len(PAIRS)))
    for r, (_, _, first) in zip(records, PAIRS, strict=True):
        slot = datetime.fromisoformat(r["slot"]).timestamp()
        for p in r["profiles"]:
            assert p["status"] == "ok" and p["planned_at"] == r["slot"]
            if p["profile_id"] not in WAITS:
                assert "history" not in p
                continue
            (step,) = p["history"]
            wait = seconds[p["profile_id"]]
            assert (step["action"], step["target"], step["status"]) == ("search", first, "ok")
            assert datetime.fromisoformat(step["planned_at"]).timestamp() == pytest.approx(
                slot - wait, abs=1e-3
            )
    # what the engine planted: carry-over into B for the short waits only
    carried = {(s.profile, s.query): s.carried_from for s in served if s.query in {b for b, _, _ in PAIRS}}
    for b, _, a in PAIRS:
        assert [carried[p, b] for p in ("control", "twin", "w300", "w600", "w2000")] == ["", "", a, a, ""]

    def compared() -> list[dict]:
        rows = service.sql(f"SELECT state FROM personalization_rounds WHERE study_id = '{STUDY}'")
        return rows if len(rows) == len(PAIRS) and all(r["state"] == "complete" for r in rows) else []

    wait_for(compared, 120, "every round compared")
    args = ["report", "personalization", "--study", STUDY, "--links", "organic", "--format", "json"]
    report = CliRunner().invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])
    assert report.exit_code == 0, report.output
    by_wait = {row["treatment"]: row for row in json.loads(report.output)["by_treatment"]}
    assert set(by_wait) == {label[p] for p in WAITS}

    # a recount from the stored pages
    stored = service.sql(
        f"SELECT round_id, profile_id, results FROM serp_snapshots WHERE study_id = '{STUDY}'"
    )
    pages = {(row["round_id"], row["profile_id"]): organic(row["results"]) for row in stored}
    rounds = [r["round_id"] for r in records]
    noise = statistics.mean(c for r in rounds for c in changed(pages[r, "control"], pages[r, "twin"]))
    figures = {}
    for pid in WAITS:
        share = statistics.mean(c for r in rounds for c in changed(pages[r, "control"], pages[r, pid]))
        row = by_wait[label[pid]]
        assert row["pairs"] == len(PAIRS)
        assert row["changed"] == pytest.approx(share, abs=1e-4) and row["changed_noise"] == pytest.approx(
            noise, abs=1e-4
        )
        assert row["personalization"] == pytest.approx(share - noise, abs=2e-4)
        figures[pid] = row
    print(
        "\ncarry-over per wait (planted: 60% of ranks within 1.2 s): "
        + "; ".join(
            f"{label[p]}: jaccard {f['jaccard']:.2f} vs noise {f['jaccard_noise']:.2f}, "
            f"changed {f['changed']:.2f} vs {f['changed_noise']:.2f}"
            for p, f in figures.items()
        )
    )
    # the report shows the carry-over above the noise floor at the short waits, not at the long one
    for short in ("w300", "w600"):
        assert figures[short]["personalization"] > 0.3
        assert figures[short]["jaccard"] < figures[short]["jaccard_noise"] - 0.2
    assert abs(figures["w2000"]["personalization"]) < 0.1
    assert figures["w2000"]["jaccard"] == pytest.approx(figures["w2000"]["jaccard_noise"], abs=0.1)
