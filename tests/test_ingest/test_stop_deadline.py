"""A stop that hangs ends at the deadline with every stack in the log; a clean one stays clean."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from tests.helpers import free_port, http, wait_for

APP = textwrap.dedent(
    """
    import asyncio, sys
    from aiohttp import web
    from ingest import stop_deadline

    async def hangs(app):
        yield
        await stop_deadline.stage("a stage that hangs", asyncio.Event().wait)

    async def ok(request):
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    if sys.argv[2] == "hang":
        app.cleanup_ctx.append(hangs)
    stop_deadline.arm(app, deadline_s=1.0)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
    """
)


def _run(mode: str) -> tuple[int, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", APP, str(port), mode], stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: http("GET", f"http://127.0.0.1:{port}/", timeout=2).status == 200, 30, "app up")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode, err


def test_a_hanging_stop_is_cut_at_the_deadline_with_the_stacks() -> None:
    code, err = _run("hang")
    assert code == 1
    assert "Thread" in err and "most recent call first" in err


def test_a_clean_stop_is_not_cut() -> None:
    code, err = _run("clean")
    assert code == 0, err
    assert "most recent call first" not in err
