"""One rulebook, two runtimes: the exported rules in a real Chromium agree with the parser.

Every real fixture page is parsed by ``collectors/serp/parser.py`` (selectolax) and, as
the same decoded text, by Chromium's own HTML parser (``DOMParser``, scripts off), where
``extension/lib/serp_rules.js`` evaluates the rules exported by ``auditstream rules
export``. Both must find the same organic results in the same order, the same numbers of
top and bottom ads, and the same kinds of boxes.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from selectolax.lexbor import LexborHTMLParser
from typer.testing import CliRunner

from auditstream.cli import app as cli
from collectors.serp.parser import decode, organic_links, parse_serp
from collectors.serp.rulebook import export_rules, load_rules
from tests.chromium import chromium, serve
from tests.serp_labels import labels

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
HAND_MADE = ROOT / "tests" / "fixtures" / "serp"
PAGES = {lab.name: (lab.engine, lab.html()) for lab in labels()} | {
    p.stem: (p.stem.split("_")[0], p.read_bytes())
    for p in sorted(HAND_MADE.glob("*.html"))
    if parse_serp(p.stem.split("_")[0], p.read_bytes()).status == "ok"
}

EVALUATE = """
(async () => {
  const m = await import(location.origin + '/extension/lib/serp_rules.js');
  const out = {};
  for (const [name, engine] of NAMES) {
    const rules = await (await fetch('/rules/' + engine + '.json')).json();
    const html = await (await fetch('/page/' + name)).text();
    const doc = new DOMParser().parseFromString(html, 'text/html');
    const { components, coverage } = m.findComponents(doc, rules);
    out[name] = {
      organic: m.organicResults(doc, rules).map(r => r.link.getAttribute('href')),
      kinds: components.map(c => [c.section, c.type]),
      coverage,
    };
  }
  return out;
})()
"""


def python_view(engine: str, html: bytes) -> dict[str, object]:
    text = decode(html)
    rules = load_rules(engine)
    parsed = parse_serp(engine, html)
    return {
        "organic": [
            link.attributes.get("href") for link, _, _ in organic_links(LexborHTMLParser(text), rules)
        ],
        "kinds": [[c.section, c.type] for c in parsed.components],
        "coverage": parsed.coverage,
    }


def summary(kinds: list[list[str]]) -> tuple[int, int, frozenset[str]]:
    """Top ads, bottom ads, and the kinds of boxes present."""
    count = Counter((section, type_) for section, type_ in kinds)
    boxes = frozenset(t for _, t in kinds if t not in ("organic", "ad"))
    return count["top", "ad"], count["bottom", "ad"], boxes


def test_the_checked_in_rules_are_the_exported_ones() -> None:
    """extension/rules/<engine>.json must be what ``auditstream rules export`` writes now."""
    for engine in ("google", "bing"):
        shipped = json.loads((ROOT / "extension" / "rules" / f"{engine}.json").read_text())
        assert shipped == export_rules(engine), f"run: auditstream rules export --engine {engine} --out ..."


def test_rules_export_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "google.json"
    result = CliRunner().invoke(cli, ["rules", "export", "--engine", "google", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["organic"]["anchor"] == "a[href] h3"
    result = CliRunner().invoke(cli, ["rules", "export", "--engine", "altavista"])
    assert result.exit_code == 2 and "unknown engine" in result.output


def test_python_and_chromium_find_the_same_results_on_every_fixture_page() -> None:
    async def page(request: web.Request) -> web.Response:
        _, html = PAGES[request.match_info["name"]]
        return web.Response(text=decode(html), content_type="text/html")

    async def blank(_: web.Request) -> web.Response:
        return web.Response(text="<!doctype html><title>rules</title>", content_type="text/html")

    async def rules(request: web.Request) -> web.Response:
        return web.json_response(export_rules(request.match_info["engine"]))

    app = web.Application()
    app.router.add_get("/blank.html", blank)
    app.router.add_get("/page/{name}", page)
    app.router.add_get("/rules/{engine}.json", rules)
    app.router.add_static("/extension", ROOT / "extension")

    async def run() -> dict[str, dict]:
        async with serve(app) as base, chromium() as browser:
            names = json.dumps([[name, engine] for name, (engine, _) in PAGES.items()])
            return await browser.evaluate(f"{base}/blank.html", f"const NAMES = {names};" + EVALUATE)

    in_browser = asyncio.run(run())
    disagree = []
    for name, (engine, html) in PAGES.items():
        here, there = python_view(engine, html), in_browser[name]
        for key in ("organic", "coverage"):
            if here[key] != there[key]:
                disagree.append((name, key, here[key], there[key]))
        if summary(here["kinds"]) != summary(there["kinds"]):  # type: ignore[arg-type]
            disagree.append((name, "boxes", summary(here["kinds"]), summary(there["kinds"])))  # type: ignore[arg-type]
    assert not disagree, "\n".join(map(str, disagree))
    print(f"\nPython and Chromium agree on all {len(PAGES)} pages (organic results, ads, boxes, coverage)")
