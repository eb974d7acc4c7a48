"""The popup in a real Chromium through ``auditstream up`` (issue 35, Done-means 2 and 3).

A volunteer joins and searches twice. The popup's "What was sent" shows exactly the JSON the
service received (each event's text as it was in the posted body, newest first). Then the
volunteer presses "Leave and erase what I sent": the extension proves the install is its
own with the secret it made at installation, the popup shows the receipt, and no row of the
install is left in any table, and the study's sums over installs are empty. Another secret is
refused (``not_owner``); the same request again is answered with the same receipt.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app as cli
from collectors.serp.parser import decode
from tests.chromium import chromium
from tests.fakes.engine_host import (
    BUILD_STORED,
    build_extension,
    chromium_args,
    engine_host,
    extension_worker,
)
from tests.helpers import http, own_service, wait_for
from tests.integration.test_erasure import rows_of
from tests.integration.test_extension_e2e import (
    ENROLLED,
    EXPERIMENT,
    GOOGLE_PAGES,
    KEY,
    PAGES,
    POPUP_SHOWN,
    ingest_key,
    join,
    proxy_to,
    query_for,
    register_experiment,
    visit,
)

pytestmark = pytest.mark.integration

ANSWERS = "SELECT count() FROM raw_install_profiles WHERE install_id = '{install}'"
SHOWN = "[...document.querySelectorAll('#sent-list .sent-event')].map(e => e.textContent)"
SENT_ALL = """new Promise(resolve => {
  const check = async () => {
    const box = (await chrome.storage.local.get('outbox')).outbox;
    box.queued === 0 && box.sent + box.rejected >= {n} ? resolve(box) : setTimeout(check, 100);
  };
  check();
})"""
"""In the service worker: resolves once ``{n}`` events have left the outbox and none waits.
An empty outbox alone is not enough: a click's message from the page may still be on its
way to the service worker, and the popup lists events still waiting above those sent."""
ERASED = """new Promise(resolve => {
  const check = () => {
    const text = document.getElementById('erasure').textContent;
    text.startsWith('Erased') || text.startsWith('Erasure refused') ? resolve(text) : setTimeout(check, 100);
  };
  check();
})"""


def posted_events(requests: list[tuple[str, str, bytes]]) -> tuple[list[str], bytes]:
    """Each event posted to /v1/events as compact JSON text, in order, and the bodies."""
    bodies = [body for method, path, body in requests if method == "POST" and path == "/v1/events"]
    texts = [orjson.dumps(event).decode() for body in bodies for event in orjson.loads(body)]
    return texts, b"\n".join(bodies)


def erase_own(url: str, key: str, install_id: str, secret: str) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    body = orjson.dumps({"install_id": install_id, "erasure_key": secret})
    resp = http("POST", url + "/v1/participants/erase-own", body, headers, timeout=120)
    return resp.status, resp.body


@pytest.mark.timeout(600)
def test_the_popup_shows_what_was_sent_and_erases_it(tmp_path: Path) -> None:
    with own_service(tmp_path / "data", KEY) as svc:
        register_experiment(svc)
        key = ingest_key(svc)
        # a build for an experiment the service does not know is refused (Done-means 4)
        args = ["--study-url", svc.url, "--key", key, "--experiment", "not-registered"]
        args += ["--out", str(tmp_path / "refused"), "--data-dir", str(svc.data_dir)]
        refused = CliRunner().invoke(cli, ["extension", "build", *args])
        assert refused.exit_code == 2 and "has no experiment 'not-registered'" in refused.output
        assert not (tmp_path / "refused").exists()
        expected: list[tuple[Any, ...]] = []
        queries: set[str] = set()

        async def session() -> dict[str, Any]:
            page = GOOGLE_PAGES[0]
            async with proxy_to(svc.url) as proxy, engine_host({page: decode(PAGES[page].html())}) as port:
                # in a thread: the build asks the service through the proxy, served by this loop
                study = f"http://127.0.0.1:{proxy.port}"
                extension = await asyncio.to_thread(
                    build_extension, tmp_path / "ext", study, key, EXPERIMENT, svc.data_dir
                )
                async with (
                    chromium(chromium_args(str(extension), port)) as browser,
                    extension_worker(browser) as worker,
                ):
                    await worker.evaluate(BUILD_STORED)
                    extension_id = await worker.evaluate("chrome.runtime.id")
                    await join(browser, extension_id)
                    install = (await worker.evaluate(ENROLLED))["install"]
                    async with browser.tab() as tab:
                        for arm in ("control", "swap_1_2"):
                            query = query_for(install["install_id"], arm, queries)
                            await visit(tab, "google", page, query, arm, expected)
                    await worker.evaluate(SENT_ALL.replace("{n}", str(len(expected) + 1)))  # and the answers
                    popup_url = f"chrome-extension://{extension_id}/popup.html"
                    async with browser.tab() as popup:
                        await popup.navigate(popup_url)
                        await popup.evaluate(POPUP_SHOWN)
                        shown = await popup.evaluate(SHOWN)
                        texts, bodies = posted_events(proxy.requests)
                        # a volunteer leaves long after joining: the answers are stored by then
                        # (sent seconds ago, the service answers not_stored_yet and the
                        # extension asks again after Retry-After)
                        answers = ANSWERS.format(install=install["install_id"])
                        await asyncio.to_thread(wait_for, lambda: svc.scalar(answers) == 1, 60, "answers")
                        before = rows_of(svc, install["install_id"])
                        await popup.evaluate(
                            "window.confirm = () => true; document.getElementById('erase').click()"
                        )
                        shown_receipt = await popup.evaluate(ERASED)
                    erasure = (await worker.evaluate("chrome.storage.local.get('erasure')"))["erasure"]
                    return {
                        "install": install,
                        "shown": shown,
                        "texts": texts,
                        "bodies": bodies,
                        "before": before,
                        "shown_receipt": shown_receipt,
                        "erasure": erasure,
                    }

        got = asyncio.run(session())
        install_id, secret = got["install"]["install_id"], got["install"]["erasure_key"]

        # "What was sent": exactly the JSON the service received, newest first
        assert len(got["shown"]) == len(got["texts"]) == len(expected) + 1  # and the onboarding answers
        assert got["shown"] == list(reversed(got["texts"]))
        assert all(text.encode() in got["bodies"] for text in got["shown"])
        profile = orjson.loads(got["shown"][-1])
        assert profile["type"] == "install_profile"
        assert profile["erasure_key_sha256"] == hashlib.sha256(secret.encode()).hexdigest()
        assert "erasure_key" not in got["bodies"].decode().replace(
            "erasure_key_sha256", ""
        )  # never the secret

        # the erasure: shown in the popup, every row of the install gone, the rest a recount
        assert got["erasure"]["status"] == "done", got["erasure"]
        receipt = got["erasure"]["receipt"]
        assert receipt["requested_by"] == "volunteer"
        stored = got["before"]["raw_extension_events"] + got["before"]["raw_install_profiles"]
        assert stored == len(expected) + 1
        assert receipt["rows_removed"]["raw_extension_events"] == len(expected)
        assert receipt["rows_removed"]["raw_install_profiles"] == 1
        assert got["shown_receipt"].startswith(f"Erased: {receipt['total_rows_removed']} records")
        assert receipt["erasure_id"] in got["shown_receipt"]
        after = rows_of(svc, install_id)
        assert after == dict.fromkeys(after, 0), after
        # the study's only install: its sums over installs are empty now (test_erasure.py checks
        # them against a recount of the installs that stay)
        for view in ("clicks_by_rank_1m", "arrangement_replicates_1h"):
            left = f"SELECT count() FROM {view} WHERE experiment_id = '{EXPERIMENT}' AND units + impressions"
            assert svc.scalar(left) == 0, view

        # only the install's own secret erases; the same request again gets the same receipt
        status, body = erase_own(svc.url, key, install_id, "0" * 64)
        assert (status, body["error"]) == (403, "not_owner")
        status, body = erase_own(svc.url, key, install_id, secret)
        assert status == 200 and body["receipts"][0]["erasure_id"] == receipt["erasure_id"], body
        wait_for(lambda: rows_of(svc, install_id)["raw_extension_events"] == 0, 5, "still nothing stored")
