"""Powermeter (Mendler-Dünner et al., NeurIPS 2024): Figures 3-6, 8 and 9, in the paper's
layout, from ``POST /v1/reports/experiment`` answers and the views ``page_composition`` and
``install_profiles`` (``sources.powermeter`` names each request).

Every CSV is long: one row per number drawn, with the report key it came from, so a test
(or a reader) can find each one in the report.
"""

from __future__ import annotations

from typing import Any

from figures import caption
from figures.bars import SWAP, arm_label, estimate, grouped, no_data, same_y
from figures.render import BLUE, GREY, ORANGE, RED, Figure, new_figure
from figures.sources import ADS_SUBSET, FIGURE6_SPLITS, QUINTILES, focus_engine

REPORT_COLUMNS = ["engine", "subset", "baseline", "arm", "key", "value", "ci_low", "ci_high"]
"""A report figure's CSV: the selection, the arm, the report's key (``ctr_c1``, ``beta_c1``,
``ad``) and its value with the 95% interval, as the report gave them."""
ELEMENTS = (("organic", "search"), ("ad", "Ads"), ("shopping_box", "Boxes"))
FIGURE4_ARMS = (("control", BLUE), ("hide_box", ORANGE), ("hide_ads_box", GREY))
NO_UNITS = "no units in this selection"


def _row(report: dict[str, Any] | None, arm: str, rows: str = "arms") -> dict[str, Any] | None:
    if report is None:
        return None
    source = report["box_subset"]["arms"] if rows == "box" else report[rows]
    return next((r for r in source if r["arm"] == arm), None)


def _record(
    report: dict[str, Any], arm: str, key: str, rows: str = "arms", baseline: str | None = None
) -> list[Any]:
    """One CSV row: the report's value of ``key`` for ``arm`` with its interval."""
    asked = report["request"]
    base = baseline or (report["box_subset"]["baseline"] if rows == "box" else report["baseline"])
    return [asked["engine"], asked["subset"], base, arm, key, *estimate(_row(report, arm, rows), key)]


def _figure3_panel(fig_axes: Any, report: dict[str, Any], arm: str, rows: list[list[Any]]) -> None:
    top, bottom = fig_axes
    ranks = range(1, report["request"]["ranks"] + 1)
    labels = [str(i) for i in ranks]
    control, swapped = _row(report, "control"), _row(report, arm)
    grouped(
        top, labels,
        [("control", BLUE, [estimate(control, f"ctr_c{i}") for i in ranks]),
         (arm_label(arm), ORANGE,
          [estimate(swapped, f"ctr_c{i}") for i in ranks])],
    )  # fmt: skip
    top.set_ylabel("click probability")
    top.legend(loc="upper right", frameon=False)
    grouped(bottom, labels, [(arm, ORANGE, [estimate(swapped, f"delta_c{i}") for i in ranks])])
    bottom.set_ylabel("performativity gap")
    bottom.set_xlabel("search result")
    item = int(SWAP.match(arm).group(1)) if SWAP.match(arm) else 1  # type: ignore[union-attr]
    delta, beta = (estimate(swapped, f"{k}_c{item}")[0] for k in ("delta", "beta"))
    bottom.set_title(f"δ{item} = {_num(delta)}, β = {_num(beta)}")
    for arm_name in ("control", arm):
        for i in ranks:
            rows.append(_record(report, arm_name, f"ctr_c{i}"))
    for name in ("delta", "beta"):
        rows += [_record(report, arm, f"{name}_c{i}") for i in ranks]


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:.2f}"


def figure3(study: str, engine: str, report: dict[str, Any] | None, arms: list[str]) -> Figure:
    """Per swap arm the engine registered: CTR of c1..c6 against control (top) and the gaps
    δ_i (bottom), δ and β of the swapped-down item in the title."""
    swaps = [a for a in arms if SWAP.match(a)] or ["swap_1_2"]
    fig = new_figure(2.4 * len(swaps) + 0.6, 4.2)
    axes = fig.subplots(2, len(swaps), squeeze=False, sharey="row")
    rows: list[list[Any]] = []
    for col, arm in enumerate(swaps):
        if report is None or _row(report, arm) is None:
            no_data(axes[0][col], NO_UNITS)
            no_data(axes[1][col], NO_UNITS)
            continue
        _figure3_panel((axes[0][col], axes[1][col]), report, arm, rows)
    same_y(*axes[0])
    same_y(*axes[1], room=0.1)
    fig.suptitle(f"all {engine.capitalize()} queries")
    text = (
        caption.experiment(study, [report], ["control", *swaps]) if report else f"Study {study}: {NO_UNITS}."
    )
    return Figure(
        f"figure3_{engine}",
        f"Figure 3 ({engine}): CTR and performativity gap of c1-c6",
        text,
        fig,
        REPORT_COLUMNS,
        rows,
    )


def figure4(study: str, reports: list[dict[str, Any] | None], titles: list[str]) -> Figure:
    """Click shares of generic results, Ads and Boxes for control, hide box and hide
    box+Ads, one panel per subset (all, with ads, with a box)."""
    fig = new_figure(7.2, 2.6)
    axes = fig.subplots(1, len(reports), sharey=True, squeeze=False)[0]
    rows: list[list[Any]] = []
    for ax, report, title in zip(axes, reports, titles, strict=True):
        ax.set_title(title)
        if report is None:
            no_data(ax, NO_UNITS)
            continue
        series = []
        for arm, colour in FIGURE4_ARMS:
            share = _row(report, arm, "element_shares")
            series.append((arm_label(arm), colour, [estimate(share, e) for e, _ in ELEMENTS]))
            rows += [_record(report, arm, e, "element_shares") for e, _ in ELEMENTS]
        grouped(ax, [label for _, label in ELEMENTS], series)
        ax.set_xlabel("element type")
        ax.legend(frameon=False)
    axes[0].set_ylabel("click probability")
    same_y(*axes)
    present = [r for r in reports if r is not None]
    text = (
        caption.experiment(study, present, [a for a, _ in FIGURE4_ARMS])
        if present
        else f"Study {study}: {NO_UNITS}."
    )
    return Figure("figure4", "Figure 4: share of clicks by element type", text, fig, REPORT_COLUMNS, rows)


FIGURE5_CONDUCTS = (
    ("add Box", "hide_box", "control"),
    ("add Ads/Box", "hide_ads_box", "control"),
    ("swap+add Box", "hide_box", "swap_1_2"),
    ("swap+add Ads/Box", "hide_ads_box", "swap_1_2"),
)
"""The table of Figure 5: (conduct, baseline, arm): β_c1 of the arm against the baseline."""


def figure5(study: str, box: dict[str, Any] | None) -> Figure:
    """Pages with a box: c1..c3 for control, swap 1-2 and hide box (left; the report asked
    with baseline hide_box), and against hide Ads/Box with the hatched swap under hidden
    Ads/Box (right; the report's ``box_subset``); the β table of the four conducts."""
    fig = new_figure(8.6, 2.8)
    left, right, table = fig.subplots(1, 3, gridspec_kw={"width_ratios": [2, 2, 1.6]})
    rows: list[list[Any]] = []
    if box is None:
        for ax in (left, right, table):
            no_data(ax, NO_UNITS)
        return Figure(
            "figure5", "Figure 5: pages with a box", f"Study {study}: {NO_UNITS}.", fig, REPORT_COLUMNS, rows
        )
    ranks = range(1, 4)
    panels = (
        (left, "arms", "hide Box",
         [("hide_box", ORANGE, None), ("control", BLUE, None), ("swap_1_2", RED, None)]),
        (right, "box", "hide Ads/Box",
         [("hide_ads_box", ORANGE, None), ("hide_ads_box_swap_1_2", ORANGE, "//"),
          ("control", BLUE, None), ("swap_1_2", RED, None)]),
    )  # fmt: skip
    for ax, source, title, arms in panels:
        series = [
            (arm_label(arm), colour, [estimate(_row(box, arm, source), f"ctr_c{i}") for i in ranks])
            for arm, colour, _ in arms
        ]
        grouped(ax, [str(i) for i in ranks], series, hatches=[h or "" for _, _, h in arms])
        ax.set_title(title)
        ax.set_xlabel("search result")
        ax.legend(frameon=False, ncols=2, loc="upper right", fontsize=6)
        rows += [_record(box, arm, f"ctr_c{i}", source) for arm, _, _ in arms for i in ranks]
    left.set_ylabel("click probability")
    same_y(left, right)
    cells = []
    for conduct, baseline, arm in FIGURE5_CONDUCTS:
        source = "arms" if baseline == box["baseline"] else "box"
        record = _record(box, arm, "beta_c1", source, baseline)
        rows.append(record)
        cells.append([conduct, f"β = {_num(record[5])}"])
    table.axis("off")
    drawn = table.table(
        cellText=cells,
        colLabels=["Conduct", "Distortion of c1"],
        loc="center",
        cellLoc="left",
        colWidths=[0.62, 0.38],
    )
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(7)
    drawn.scale(1, 1.5)
    text = (
        caption.experiment(study, [box])
        + " Right panel and the table's rows against hide_ads_box: the report's box_subset "
        + f"(baseline {box['box_subset']['baseline']})."
    )
    return Figure(
        "figure5",
        "Figure 5: pages with a box, hiding box and ads, with and without swap 1-2",
        text,
        fig,
        REPORT_COLUMNS,
        rows,
    )


def figure6(
    study: str, splits: list[dict[str, Any] | None], quintiles: list[dict[str, Any] | None]
) -> Figure:
    """δ_1 and β_1 of swap 1-2 with/without Ads or Box and with/without an SSR between c1 and
    c2 (left, middle), and β_1 per quintile of "About N results" without Ads/Box (right)."""
    fig = new_figure(7.6, 2.6)
    axes = fig.subplots(1, 3)
    rows: list[list[Any]] = []
    for ax, key, label in (
        (axes[0], "delta_c1", "Performativity Gap"),
        (axes[1], "beta_c1", "Algorithmic Distortion"),
    ):
        points = [estimate(_row(r, "swap_1_2"), key) for r in splits]
        grouped(ax, ["yes", "no", "yes", "no"], [("swap 1-2", ORANGE, points)])
        ax.set_xlabel("Ads/Box present?   SSR present?")
        ax.set_ylabel(label)
        ax.set_title(f"{_engine_of([*splits, *quintiles])} queries")
        ax.axvline(1.5, color="grey", linewidth=0.5)
        same_y(ax, room=0.1)
        rows += [_record(r, "swap_1_2", key) for r in splits if r is not None]
    points = [estimate(_row(r, "swap_1_2"), "beta_c1") for r in quintiles]
    grouped(axes[2], ["0-20", "20-40", "40-60", "60-80", "80-100"], [("swap 1-2", ORANGE, points)])
    axes[2].set_xlabel("About N results [percentile]")
    axes[2].set_ylabel("Algorithmic Distortion")
    axes[2].set_title(f"{_engine_of([*splits, *quintiles])} queries no Ads/Box")
    same_y(axes[2], room=0.1)
    rows += [_record(r, "swap_1_2", "beta_c1") for r in quintiles if r is not None]
    present = [r for r in (*splits, *quintiles) if r is not None]
    missing = [
        s for s, r in zip((*FIGURE6_SPLITS, *QUINTILES), (*splits, *quintiles), strict=True) if r is None
    ]
    text = (
        caption.experiment(study, present, ["control", "swap_1_2"])
        if present
        else f"Study {study}: {NO_UNITS}."
    )
    if missing:
        text += f" No units (no bar): {', '.join(missing)}."
    return Figure(
        "figure6", "Figure 6: δ1 and β1 of swap 1-2 across subsets", text, fig, REPORT_COLUMNS, rows
    )


def _engine_of(reports: list[dict[str, Any] | None]) -> str:
    """The engine the reports were asked for, as the paper names it ("Google")."""
    return next((str(r["request"]["engine"]).capitalize() for r in reports if r is not None), "")


PAGE_SHARES = (
    ("share_with_ads", "Ads"),
    ("share_with_box", "Box"),
    ("share_with_ssr", "SSR"),
    ("share_with_ssr_at_2", "SSR at 2"),
)
PAGE_COLOURS = {"google": BLUE, "bing": ORANGE}


def figure8(study: str, pages: dict[str, Any]) -> Figure:
    """Share of first result pages with Ads, a box, an SSR (and an SSR at position 2), per
    engine: pages shown (left) and pages that led to a click (right)."""
    fig = new_figure(6.4, 2.5)
    axes = fig.subplots(1, 2, sharey=True)
    rows = [[r["engine"], r["pages_of"], r["pages"], *(r[k] for k, _ in PAGE_SHARES)] for r in pages["rows"]]
    for ax, pages_of, title in zip(
        axes, ("serp_view", "click"), ("pages shown", "pages that led to a click"), strict=True
    ):
        chosen = [r for r in pages["rows"] if r["pages_of"] == pages_of]
        if not chosen:
            no_data(ax, "no pages")
            continue
        series = [
            (r["engine"], PAGE_COLOURS.get(r["engine"], GREY), [(r[k], None, None) for k, _ in PAGE_SHARES])
            for r in chosen
        ]
        grouped(ax, [label for _, label in PAGE_SHARES], series)
        ax.set_title(title)
        ax.legend(frameon=False)
    axes[0].set_ylabel("share of pages")
    same_y(*axes)
    n = ", ".join(f"{r['engine']} {r['pages']} pages ({r['pages_of']})" for r in pages["rows"])
    text = caption.plain(
        study,
        "Original first result pages, before any arm's change "
        "(view page_composition, as `auditstream report pages`)",
        n or "0",
        "No preprocessing (every recorded page); shares of pages, no intervals",
    )
    columns = ["engine", "pages_of", "pages", *(k for k, _ in PAGE_SHARES)]
    return Figure("figure8", "Figure 8: composition of result pages per engine", text, fig, columns, rows)


def figure9(study: str, age: dict[str, Any], languages: dict[str, Any]) -> Figure:
    """The panel's age bands and search languages from the onboarding form."""
    fig = new_figure(6.4, 2.4)
    axes = fig.subplots(1, 2)
    rows: list[list[Any]] = []
    for ax, answer, title in ((axes[0], age, "age"), (axes[1], languages, "search language")):
        ax.set_title(title)
        if not answer["rows"]:
            no_data(ax, "no onboarding answers")
            continue
        labels = [r["answer"] for r in answer["rows"]]
        ax.bar(labels, [r["installs"] for r in answer["rows"]], color=BLUE)
        ax.set_ylabel("installs")
        ax.tick_params(axis="x", rotation=45)
        rows += [[title, r["answer"], r["installs"]] for r in answer["rows"]]
    n = sum(r["installs"] for r in age["rows"])
    text = caption.plain(
        study, "Onboarding answers of consenting installs, latest answer per install (no read route: "
        "`POST /v1/sql` over the view install_profiles); an install names several languages",
        f"{n} installs", "Counts, no intervals",
    )  # fmt: skip
    return Figure(
        "figure9",
        "Figure 9: the panel's age and search languages",
        text,
        fig,
        ["question", "answer", "installs"],
        rows,
    )


def draw(config: dict[str, Any], answers: dict[str, Any]) -> list[Figure]:
    """Every Powermeter figure from ``sources.gather(sources.powermeter(config), ...)``."""
    return [draw_one(name, config, answers) for name in names(config)]


def names(config: dict[str, Any]) -> list[str]:
    """The figures of a registered experiment: Figure 3 per engine, then 4-6, 8 and 9."""
    return [
        *(f"figure3_{e}" for e in config["engines"]),
        "figure4",
        "figure5",
        "figure6",
        "figure8",
        "figure9",
    ]


def _arms_of(config: dict[str, Any], engine: str, report: dict[str, Any] | None) -> list[str]:
    """The arms an engine runs: its ``engine_arms``, else every registered arm, else (an
    experiment with data but no registration) the arms its report has."""
    registered = (config.get("engine_arms") or {}).get(engine) or config["arms"]
    return list(registered or [a["arm"] for a in (report or {}).get("arms", [])])


def _figure4(config: dict[str, Any], answers: dict[str, Any]) -> Figure:
    engine = focus_engine(config)
    ads = answers[f"{engine}/{ADS_SUBSET}"]
    ads_title = "with Ads" if ads is None or not ads.get("fallback_from") else "with Ads, no Box"
    reports = [answers[f"{engine}/all"], ads, answers[f"{engine}/box@hide_box"]]
    name = engine.capitalize()
    titles = [f"{name} queries", f"{name} queries {ads_title}", f"{name} queries with Box"]
    return figure4(config["experiment_id"], reports, titles)


def unregistered(experiment_id: str) -> dict[str, Any]:
    """What the figures assume of an experiment with data but no registration: both engines,
    the arms its reports have (as the board's index lists such an experiment)."""
    return {"experiment_id": experiment_id, "engines": ["google", "bing"], "arms": {}, "engine_arms": {}}


def needed(name: str, config: dict[str, Any]) -> set[str] | None:
    """The answer keys one figure reads (``None``: no such figure), so the board asks only
    those for the one figure it shows."""
    engine = focus_engine(config)
    keys: dict[str, set[str]] = {f"figure3_{e}": {f"{e}/all"} for e in config["engines"]}
    keys["figure4"] = {f"{engine}/all", f"{engine}/{ADS_SUBSET}", f"{engine}/box@hide_box"}
    keys["figure5"] = {f"{engine}/box@hide_box"}
    keys["figure6"] = {f"{engine}/{s}" for s in (*FIGURE6_SPLITS, *QUINTILES)}
    keys["figure8"] = {"pages"}
    keys["figure9"] = {"age", "languages"}
    return keys.get(name)


def draw_one(name: str, config: dict[str, Any], answers: dict[str, Any]) -> Figure:
    """One figure from the answers ``needed`` names."""
    study, engine = config["experiment_id"], focus_engine(config)
    if name.startswith("figure3_"):
        chosen = name.removeprefix("figure3_")
        report = answers[f"{chosen}/all"]
        return figure3(study, chosen, report, _arms_of(config, chosen, report))
    if name == "figure4":
        return _figure4(config, answers)
    if name == "figure5":
        return figure5(study, answers[f"{engine}/box@hide_box"])
    if name == "figure6":
        splits = [answers[f"{engine}/{s}"] for s in FIGURE6_SPLITS]
        return figure6(study, splits, [answers[f"{engine}/{q}"] for q in QUINTILES])
    if name == "figure8":
        return figure8(study, answers["pages"])
    return figure9(study, answers["age"], answers["languages"])
