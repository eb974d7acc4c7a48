"""Shared pieces of the benchmarks: process memory sampling and result rows."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from supervisor.broker import rss_mb


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_us_per_event(pids: dict[str, int], before: dict[str, float], events: int) -> dict[str, float]:
    """CPU microseconds per event of each named process since ``before`` (``cpu_seconds``)."""
    return {name: round((cpu_seconds(pid) - before[name]) / events * 1e6, 1) for name, pid in pids.items()}


@dataclass
class MemorySampler:
    """Samples RSS of named pids every ``every_s`` seconds in a thread."""

    pids: dict[str, int]
    every_s: float = 0.5
    samples: dict[str, list[float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> MemorySampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for name, pid in self.pids.items():
                self.samples.setdefault(name, []).append(rss_mb(pid))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, dict[str, object]]:
        out = {}
        for name, values in self.samples.items():
            values = [v for v in values if v > 0]
            if not values:
                continue
            quarter = max(1, len(values) // 4)
            out[name] = {
                "peak_mb": round(max(values), 1),
                "mean_mb_by_quarter": [
                    round(statistics.mean(values[i * quarter : (i + 1) * quarter] or values[-1:]), 1)
                    for i in range(4)
                ],
            }
        return out


def git_sha() -> str:
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def append_result(path: Path, row: dict) -> None:
    row = {"git_sha": git_sha(), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **row}
    with path.open("ab") as f:
        f.write(orjson.dumps(row) + b"\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
