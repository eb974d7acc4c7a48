"""Which answers each paper's figures need, and how they are gathered: each request once.

A ``Need`` is one request to the service (a report or a read-only statement of the views
the ``report`` commands read). ``gather`` asks each through an ``ask`` function (the CLI's
HTTP call, or the board's own compute) and returns the answers by key, each with the
request it answered (``request``): captions read the selection from it. A subset the
service does not know (400) is asked again as its ``fallback`` (and the answer says so); a
selection without units (404) is ``None``: its panel says "no units" instead of failing
the whole run. A statement whose rows the report finishes in Python (``report autocomplete
--section compare``) names its ``tables``: they are computed as the report computes them and
answered by their own names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from analytics.reports.autocomplete import AutocompleteQuery, computed
from analytics.reports.personalization import sections
from schemas.sql import quote

REPORT = "/v1/reports/experiment"
SQL = "/v1/sql"
REPORT_OPTIONS = {"ranks": 6, "seed": 0, "intervals": "bootstrap"}
"""What every figure's report asks beyond its selection: the paper's six positions, the
CLI's seed (so the figures equal ``report experiment``), one-look bootstrap intervals."""
FIGURE6_SPLITS = ("ads_or_box", "no_ads_no_box", "ssr_c1_c2", "no_ssr_c1_c2")
QUINTILES = tuple(f"no_ads_no_box_n_candidates_q{k}" for k in range(1, 6))
ADS_SUBSET, ADS_FALLBACK = "ads", "ads_no_box"


class Refused(Exception):
    """The service refused a request: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


@dataclass(frozen=True)
class Need:
    key: str
    path: str
    body: tuple[tuple[str, Any], ...]
    fallback: Need | None = None
    tables: tuple[str, ...] = ()
    """A statement whose rows the report finishes in Python (``report autocomplete``'s
    ``computed``): the answers are these tables, by name, instead of ``key``."""

    @property
    def asked(self) -> dict[str, Any]:
        return dict(self.body)


Ask = Callable[[str, dict[str, Any]], Any]
AsyncAsk = Callable[[str, dict[str, Any]], Awaitable[Any]]


def report(experiment_id: str, engine: str, subset: str = "all", baseline: str = "control") -> Need:
    body = {"experiment_id": experiment_id, "engine": engine, "subset": subset, "baseline": baseline}
    key = f"{engine}/{subset}" + ("" if baseline == "control" else f"@{baseline}")
    return Need(key, REPORT, tuple({**body, **REPORT_OPTIONS}.items()))


def sql(key: str, statement: str, tables: tuple[str, ...] = ()) -> Need:
    return Need(key, SQL, (("sql", statement),), tables=tables)


def focus_engine(config: dict[str, Any]) -> str:
    """The engine of Figures 4-6 (the paper's are Google's): google if registered."""
    return "google" if "google" in config["engines"] else str(config["engines"][0])


def powermeter(config: dict[str, Any]) -> list[Need]:
    """Figure 3 per engine; Figures 4-6 on the focus engine's subsets; Figure 8's pages and
    Figure 9's profiles from the analyst views (the service has no report of its own for them)."""
    exp, engine = config["experiment_id"], focus_engine(config)
    needs = [report(exp, e) for e in config["engines"]]
    ads = report(exp, engine, ADS_SUBSET)
    needs.append(Need(ads.key, ads.path, ads.body, fallback=report(exp, engine, ADS_FALLBACK)))
    needs.append(report(exp, engine, "box", "hide_box"))
    needs += [report(exp, engine, s) for s in (*FIGURE6_SPLITS, *QUINTILES)]
    needs.append(sql("pages", pages_sql(exp)))
    needs.append(sql("age", profiles_sql(exp, "age_band")))
    needs.append(sql("languages", profiles_sql(exp, "arrayJoin(search_languages)")))
    return needs


def pages_sql(experiment_id: str) -> str:
    """``auditstream report pages``'s statement (view ``page_composition``)."""
    return (
        "SELECT engine, pages_of, pages, round(share_with_ads, 4) AS share_with_ads, "
        "round(share_with_box, 4) AS share_with_box, round(share_with_ssr, 4) AS share_with_ssr, "
        "round(share_with_ssr_at_2, 4) AS share_with_ssr_at_2 FROM page_composition "
        f"WHERE experiment_id = {quote(experiment_id)} ORDER BY engine, pages_of"
    )


def profiles_sql(experiment_id: str, column: str) -> str:
    """Installs per answer of the onboarding form (view ``install_profiles``, consented ones;
    an unanswered question is '(no answer)')."""
    return (
        f"SELECT ifNull(toString({column}), '(no answer)') AS answer, count() AS installs "
        f"FROM install_profiles WHERE experiment_id = {quote(experiment_id)} AND consent = 'given' "
        "GROUP BY answer ORDER BY answer"
    )


def personalization(study: str) -> list[Need]:
    """The ``report personalization`` sections the Hannak figures draw."""
    statements = sections(study)
    return [sql(name, statements[name]) for name in PERSONALIZATION_SECTIONS]


PERSONALIZATION_SECTIONS = (
    "overall",
    "by_treatment",
    "by_rank",
    "consistency_days",
    "consistency_category_days",
    "category_cdf",
    "treatment_groups",
    "by_rank_grouped",
    "rank1",
)
AUTOCOMPLETE_TABLES = ("summary", "depth", "degrees", "lengths", "churn", "survival", "nmi")
COMPARE_TABLES = ("degree_correlation", "survival_length", "survival_by_length")
"""``report autocomplete --section compare``: Figure 9's caption (the engines' degree
correlation) and Figure 6's (survival by length)."""


def autocomplete(prefix: str) -> list[Need]:
    """The ``report autocomplete`` tables the RAI figures draw, Figure 9's degrees of the
    association networks (the statement of docs/reproducing.md, per engine) and the compare
    section, each of its statements asked once (survival_length and survival_by_length are
    two tables of one statement's rows)."""
    statements = AutocompleteQuery(prefix).statements()
    return [
        *(sql(name, statements[name]) for name in AUTOCOMPLETE_TABLES),
        sql("associations", associations_sql(prefix)),
        sql("compare_links", statements["degree_correlation"], ("degree_correlation",)),
        sql("compare_survivals", statements["survival_length"], ("survival_length", "survival_by_length")),
    ]


def associations_sql(prefix: str) -> str:
    studies = "SELECT DISTINCT study_id FROM autocomplete_crawl_studies" + (
        f" WHERE startsWith(crawl_id, {quote(prefix)})" if prefix else ""
    )
    pairs = (
        "SELECT DISTINCT engine, source_reduced, target_reduced FROM autocomplete_associations "
        f"WHERE source_reduced != target_reduced AND study_id IN ({studies})"
    )
    return (
        "SELECT engine, degree, k, count() AS ngrams FROM ("
        f"SELECT engine, 'k_in' AS degree, target_reduced AS ngram, count() AS k FROM ({pairs}) "
        "GROUP BY engine, ngram UNION ALL "
        f"SELECT engine, 'k_out' AS degree, source_reduced AS ngram, count() AS k FROM ({pairs}) "
        "GROUP BY engine, ngram) GROUP BY engine, degree, k ORDER BY engine, degree, k"
    )


def gather(needs: list[Need], ask: Ask, done: Callable[[Need], None] | None = None) -> dict[str, Any]:
    """Every need asked once; answers by key (``None``: a selection without units)."""
    answers: dict[str, Any] = {}
    for need in needs:
        _keep(answers, need, _one(need, ask))
        if done is not None:
            done(need)
    return answers


def _keep(answers: dict[str, Any], need: Need, answer: Any) -> None:
    """An answer under its key, or a finished statement's tables under theirs."""
    if need.tables:
        answers.update(answer)
    else:
        answers[need.key] = answer


def _one(need: Need, ask: Ask) -> Any:
    try:
        return _settled(need, ask(need.path, need.asked))
    except Refused as exc:
        if _falls_back(need, exc):
            return _fell_back(need, _one(need.fallback, ask))  # type: ignore[arg-type]
        return None if _no_units(need, exc) else _raise(exc)


async def agather(needs: list[Need], ask: AsyncAsk) -> dict[str, Any]:
    """``gather`` for an asynchronous ``ask`` (the board's compute and store)."""
    answers: dict[str, Any] = {}
    for need in needs:
        _keep(answers, need, await _aone(need, ask))
    return answers


async def _aone(need: Need, ask: AsyncAsk) -> Any:
    try:
        return _settled(need, await ask(need.path, need.asked))
    except Refused as exc:
        if _falls_back(need, exc):
            return _fell_back(need, await _aone(need.fallback, ask))  # type: ignore[arg-type]
        return None if _no_units(need, exc) else _raise(exc)


def _falls_back(need: Need, exc: Refused) -> bool:
    return exc.status == 400 and need.fallback is not None


def _no_units(need: Need, exc: Refused) -> bool:
    return exc.status == 404 and need.path == REPORT


def _raise(exc: Refused) -> Any:
    raise exc


def _fell_back(need: Need, answer: Any) -> Any:
    return None if answer is None else {**answer, "fallback_from": need.asked.get("subset")}


def _settled(need: Need, answer: Any) -> Any:
    """An answer with the request it answered; a statement's rows as dicts (those of a
    statement the report finishes, its tables by name, as ``report autocomplete`` computes them)."""
    if need.path == SQL:
        if need.tables:
            return {t: _records(need, computed(t, answer)) for t in need.tables}
        return _records(need, answer)
    return {**answer, "request": need.asked}


def _records(need: Need, answer: dict[str, Any]) -> dict[str, Any]:
    rows = [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]
    return {"request": need.asked, "rows": rows}
