"""The extension's test build in a real Chromium marks what the parser finds (issue 14, Done-means 1).

Every real fixture page is served as ``https://www.google.com/search?...`` (or Bing's)
from a local TLS server; the unpacked test build (``--test-marks``) identifies the
elements with the exported rulebook and marks them. The marked organic results must be
the ones ``auditstream parse serp`` finds, in the same order, on every page, without the
person having enrolled (marking sends nothing).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from collectors.serp.parser import decode, parse_serp
from collectors.serp.urls import normalize_url
from ingest.api_keys import KeyFile
from tests.chromium import chromium
from tests.fakes.engine_host import (
    BUILD_STORED,
    MARKS,
    READY,
    build_extension,
    chromium_args,
    engine_host,
    extension_worker,
    search_url,
)
from tests.serp_labels import BASE, labels

pytestmark = pytest.mark.integration
PAGES = {lab.name: (lab.engine, lab.html()) for lab in labels()}


def test_the_test_build_marks_the_parsers_organic_results_on_every_real_page(tmp_path: Path) -> None:
    _, key = KeyFile(tmp_path / "data" / "keys.json").create("extension", ("ingest",))
    extension = build_extension(
        tmp_path / "ext", "http://127.0.0.1:9", key, "marks", tmp_path / "data", check=False
    )

    async def run() -> dict[str, list[dict]]:
        marks = {}
        texts = {name: decode(html) for name, (_, html) in PAGES.items()}
        async with engine_host(texts) as port, chromium(chromium_args(str(extension), port)) as browser:
            async with extension_worker(browser) as worker:  # the build options are in storage
                await worker.evaluate(BUILD_STORED)
            async with browser.tab() as tab:
                for name, (engine, _) in PAGES.items():
                    await tab.navigate(search_url(engine, name), until="Page.domContentEventFired")
                    await tab.evaluate(READY)
                    marks[name] = await tab.evaluate(MARKS)
        return marks

    marks = asyncio.run(run())
    wrong = []
    for name, (engine, html) in PAGES.items():
        parsed = parse_serp(engine, html)
        expected = [c.url for c in parsed.components if c.type == "organic"]
        organic = [m for m in marks[name] if m["type"] == "organic"]
        ranks = [m["rank"] for m in organic]
        found = [{normalize_url(h, BASE[engine]) for h in m["hrefs"]} for m in organic]
        if ranks != list(range(1, len(expected) + 1)) or not all(
            u in f for u, f in zip(expected, found, strict=False)
        ):
            wrong.append((name, expected, [sorted(f) for f in found]))
        ads = sum(1 for c in parsed.components if c.type == "ad")
        if ads != sum(1 for m in marks[name] if m["type"] == "ad"):
            wrong.append((name, "ads", ads))
    assert not wrong, "\n".join(map(str, wrong))
    total = sum(len([m for m in v if m["type"] == "organic"]) for v in marks.values())
    print(f"\nthe test build marked the parser's {total} organic results in order on {len(PAGES)} real pages")
