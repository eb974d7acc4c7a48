"""Supervised sub-processes (``python -m auditstream <command>``) and readiness polling."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import aiohttp

from supervisor.run_files import write_run_file


@dataclass
class Child:
    """A supervised sub-process running ``python -m auditstream <args>``."""

    name: str
    args: list[str]
    env: dict[str, str]
    log_dir: Path
    run_dir: Path
    restart: bool = True
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    started_at: float = 0.0
    backoff_s: float = 0.5
    inherit_output: bool = False

    async def start(self) -> None:
        if self.inherit_output:
            self.process = await self._spawn(None)
        else:
            # The child keeps its own copy of the log descriptor; ours closes at once,
            # so restarts do not pile up open files in the supervisor.
            with open(self.log_dir / f"{self.name}.log", "ab") as log:  # noqa: ASYNC230
                self.process = await self._spawn(log)
        self.started_at = time.monotonic()
        write_run_file(self.run_dir / f"{self.name}.pid", str(self.process.pid))

    async def _spawn(self, out: IO[bytes] | None) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "auditstream",
            *self.args,
            env=self.env,
            stdout=out,
            stderr=out,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )

    def exited(self) -> int | None:
        return None if self.process is None else self.process.returncode

    async def stop(self, timeout_s: float = 15.0) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        self.forget()

    def forget(self) -> None:
        """Remove the pid file of a process that is gone."""
        with contextlib.suppress(FileNotFoundError):
            (self.run_dir / f"{self.name}.pid").unlink()


async def wait_http(url: str, timeout_s: float, child: Child | None = None) -> None:
    """Poll ``url`` until it answers 200; fail early if ``child`` exits."""
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            if child is not None and child.exited() is not None:
                raise RuntimeError(
                    f"{child.name} exited with code {child.exited()}; see {child.log_dir}/{child.name}.log"
                )
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not become ready within {timeout_s:.0f}s")
