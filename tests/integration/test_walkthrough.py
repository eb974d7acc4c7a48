"""The newcomer's path, run as written (issue 40): README.md's "Using it" block line by line,
then every ```sql example of schemas/clickhouse/README.md and docs/*.md, against the service
the README's own `up` line starts, holding the demo's studies. Lines and statements are read
from the documents (tests/walkthrough_docs.py), so an example that breaks, or stops answering
rows, fails here; a fixture document with broken examples shows that it is caught."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.autocomplete_traffic import CrawlConfig
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import UNLIMITED, Service, free_port, http, wait_for
from tests.walkthrough_docs import (
    PLACEHOLDERS,
    ROOT,
    SCALED,
    SKIPPED,
    CommandLine,
    SqlExample,
    answer_problems,
    command_lines,
    documented_sql,
    expand,
    options,
    scaled,
    sql_examples,
    stale,
)

pytestmark = pytest.mark.integration

README = ROOT / "README.md"
BROKEN = ROOT / "tests" / "fixtures" / "walkthrough" / "broken.md"
EVENTS_FILE = ROOT / "docs" / "examples" / "events.json"
ENV = {**UNLIMITED, "AUDITSTREAM_BATCH_WITHIN_S": "0.1", "AUDITSTREAM_PERSONALIZATION_ROUND_WAIT_S": "4"}
"""The service's settings beside the line's flags: no rate limit the seeding reaches, small
batches, and personalization rounds judged 4 s after their first snapshot instead of 600."""

DEMO = (
    "simulate autocomplete --study demo-ac --rounds 3",
    "simulate personalization --study demo-pers --rounds 8",
    "simulate extension --experiment demo --events 3000 --installs 150 --rate 0",
    "simulate personalization --study hannak-query-set --rounds 8",
)
"""What the service holds before the lines run: the three studies `up --demo` makes (its
`simulate demo`, smaller: 3 autocomplete rounds, 8 personalization rounds, 3,000 events of the
registered experiment `demo`), which the SQL examples read; and the study docs/reproducing.md's
`crawl serp --study collectors/serp/examples/query-set.toml` would make, which its example reads."""

IMPORTED, IMPORTED_EVENTS = "imported", 400
"""The experiment of the files that stand for `export.jsonl.gz` and `study.parquet`, half each."""


@dataclass
class Ran:
    """What one command did: its exit code (for curl, the HTTP status) and what it printed."""

    code: int
    output: str
    stdout: str
    body: Any = None


@dataclass
class Walker:
    """Runs a document's command lines in order, in ``cwd`` (the reader's checkout stand-in),
    and collects what went wrong instead of stopping at the first failure."""

    cwd: Path
    doc: str
    svc: Service | None = None
    key: str = ""
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    experiment: str = ""
    install: str = ""
    failures: list[str] = field(default_factory=list)
    ran: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    seconds: list[tuple[float, int]] = field(default_factory=list)

    def walk(self, commands: list[CommandLine]) -> None:
        for command in commands:
            started = time.monotonic()
            try:
                problems = self.step(command)
            except Exception as exc:  # reported with the other lines' failures
                problems = [f"{type(exc).__name__}: {exc}"]
            self.seconds.append((time.monotonic() - started, command.line))
            self.failures += [f"{self.doc}:{command.line} `{command.text}`: {p}" for p in problems]

    def step(self, command: CommandLine) -> list[str]:
        skip = next((s for s in SKIPPED if s.match in command.text), None)
        if skip is not None:
            self.skipped.append(command.line)
            stand_in = self.substitute(shlex.split(skip.stand_in))
            return self.run_auditstream(stand_in, command) if stand_in else []
        self.ran.append(command.line)
        if command.text.startswith("MYKEY="):
            return self.make_key(command)
        problems = []
        for words in expand(command.text):
            words = self.substitute(scaled(words, command.text))
            if words[:2] == ["auditstream", "up"]:
                problems += self.start(words[2:])
            elif words[0] == "auditstream":
                problems += self.run_auditstream(words[1:], command)
            elif words[0] == "curl":
                problems += self.check(command, self.curl(words[1:]))
            else:
                problems.append("the walk-through runs `auditstream` and `curl` lines only")
        return problems

    def make_key(self, command: CommandLine) -> list[str]:
        """The line itself, in bash: the key it makes is the service's."""
        done = subprocess.run(
            ["bash", "-c", f'{command.text}\nprintf %s "$MYKEY"'],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        self.key = done.stdout
        return self.check(command, Ran(done.returncode, done.stdout + done.stderr, done.stdout))

    def substitute(self, words: list[str]) -> list[str]:
        """The line's words with the walk's key, port, install and files: a path of the checkout
        (``docs/examples/...``) made absolute, since the lines run in ``cwd``."""
        out = []
        for word in words:
            word = word.replace("$MYKEY", self.key).replace(":8080", f":{self.port}")
            word = str(self.port) if word == "8080" else word
            word = self.install_id() if word == "INSTALL_ID" else word
            at = "@" if word.startswith("@") else ""
            path = word.removeprefix("@")
            if "/" in path and not path.startswith("/") and (ROOT / path).is_file():
                word = at + str(ROOT / path)
            out.append(word)
        return out

    def install_id(self) -> str:
        assert self.svc is not None and self.experiment, "INSTALL_ID before any experiment was created"
        self.install = str(
            self.svc.scalar(
                f"SELECT any(install_id) FROM extension_events WHERE experiment_id = '{self.experiment}'"
            )
        )
        assert self.install, f"{self.experiment} has no installs to erase"
        return self.install

    def start(self, args: list[str]) -> list[str]:
        """The `up` line, in the background: the service every later line talks to; then the
        demo's studies (``DEMO``), as the README's first command would have left them."""
        log = open(self.cwd / "up.log", "wb")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "auditstream", "up", *args],
            cwd=self.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ENV},
        )
        data_dir = self.cwd / options(args).get("--data-dir", "data")
        svc = Service(f"http://127.0.0.1:{self.port}", self.key, data_dir, self.process)
        process = self.process

        def ready() -> bool:
            assert process.poll() is None, f"auditstream up exited; see {log.name}"
            fully_up = (data_dir / "run" / "ready").exists()
            return fully_up and http("GET", svc.url + "/readyz", timeout=2).status == 200

        wait_for(ready, 90, "auditstream up to be ready")
        self.svc = svc
        return self.seed()

    def seed(self) -> list[str]:
        from auditstream.cli.simulate import _register_demo_experiment

        assert self.svc is not None
        _register_demo_experiment(self.svc.url, self.key)  # as `simulate demo` does
        problems: list[str] = []
        sent: list[tuple[list[str], str]] = []
        for line in DEMO:
            args = shlex.split(line)
            ran = self.cli([*args, "--api-key", self.key])
            if ran.code == 0:
                sent.append((args, ran.output))
            else:
                problems.append(f"seeding `{line}` exited {ran.code}: {ran.output}")
        for args, output in sent:  # sent first, then waited for: the worker stores one while the next is sent
            self.settle(args, output)
        return problems

    def run_auditstream(self, args: list[str], command: CommandLine) -> list[str]:
        ran = self.cli(args)
        problems = self.check(command, ran)
        if not problems:
            self.settle(args, ran.output)
        return problems

    def cli(self, args: list[str]) -> Ran:
        """``auditstream ARGS`` in this process (one interpreter start, not twenty), in ``cwd``,
        with ``--url`` of the walk's service when the command takes one (the lines rely on
        its default, port 8080)."""
        if args[:2] == ["experiment", "create"]:
            self.experiment = args[2]
        if self.svc is not None and "--url" not in args and takes_url(args):
            args = [*args, "--url", self.svc.url]
        with contextlib.chdir(self.cwd):
            result = CliRunner().invoke(app, args)
        output = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            output += "".join(traceback.format_exception(result.exception))
        return Ran(result.exit_code, output, result.stdout)

    def curl(self, args: list[str]) -> Ran:
        """The curl options the lines use, as curl reads them (``-d @file`` drops newlines)."""
        method, headers, data, url = "", {}, None, ""
        words = iter(args)
        for word in words:
            if word == "-s":
                continue
            if word.startswith("-X"):
                method = word[2:] or next(words)
            elif word == "-H":
                name, _, value = next(words).partition(":")
                headers[name.strip()] = value.strip()
            elif word == "-d":
                value = next(words)
                raw = (self.cwd / value[1:]).read_bytes() if value.startswith("@") else value.encode()
                data = raw.replace(b"\r", b"").replace(b"\n", b"") if value.startswith("@") else raw
            elif word.startswith("-"):
                raise ValueError(f"the walk-through's curl does not take {word}")
            else:
                url = word if "://" in word else "http://" + word
        resp = http(method or ("POST" if data is not None else "GET"), url, data, headers)
        return Ran(resp.status, str(resp.body), str(resp.body), resp.body)

    def check(self, command: CommandLine, ran: Ran) -> list[str]:
        """The line worked (exit 0; an answer 2xx) and, where its comment or its words say what
        it answers, answered that (``CLAIMS``)."""
        curl = command.text.startswith("curl")
        worked = 200 <= ran.code < 300 if curl else ran.code == 0
        if not worked:
            return [f"{'answered' if curl else 'exited'} {ran.code}: {ran.output[-3000:]}"]
        return [
            f"does not answer what it says ({says}): {ran.output[-3000:]}"
            for match, (says, holds) in CLAIMS.items()
            if match in command.text and not holds(ran, self)
        ]

    def settle(self, args: list[str], output: str) -> None:
        """After a simulation: wait until what it sent is stored and counted, so the next
        line reads it whole."""
        if args[:1] != ["simulate"] or self.svc is None:
            return
        svc, given = self.svc, options(args)
        if args[1] == "extension":
            answered = re.search(r"install profiles accepted (\d+)", output)
            profiles = int(answered[1]) if answered else 0
            wait_extension(svc, given["--experiment"], int(given["--events"]), profiles)
        elif args[1] == "autocomplete":
            study, crawls = given["--study"], int(given["--rounds"]) * len(CrawlConfig().roots)
            analysed = f"SELECT count() FROM autocomplete_crawls WHERE study_id = '{study}'"
            wait_for(lambda: svc.scalar(analysed) == crawls, 120, f"{crawls} crawls of {study} analysed")
        elif args[1] == "personalization":
            study, rounds = given["--study"], int(given["--rounds"])
            done = "SELECT countIf(state = 'complete') FROM personalization_rounds WHERE study_id = "
            wait_for(lambda: svc.scalar(f"{done}'{study}'") == rounds, 120, f"{rounds} rounds of {study}")

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)


COMMAND = typer.main.get_command(app)


def takes_url(args: list[str]) -> bool:
    """Whether the command ``args`` names has a ``--url`` option."""
    command = COMMAND
    for word in args:
        commands = getattr(command, "commands", None)  # a group's sub-commands
        if commands is None:
            break
        command = commands.get(word, command)
    return any("--url" in param.opts for param in command.params)


def wait_extension(svc: Service, experiment: str, events: int, profiles: int) -> None:
    """Every event and onboarding answer of a simulation stored, and the events in every
    table the reports read."""
    study = f"experiment_id = '{experiment}'"
    stored = f"SELECT count() FROM extension_events WHERE {study}"
    wait_for(lambda: svc.scalar(stored) == events, 120, f"{events} events of {experiment} stored")
    answered = f"SELECT count() FROM install_profiles WHERE {study}"
    wait_for(lambda: svc.scalar(answered) >= profiles, 120, f"{profiles} profiles of {experiment} stored")
    first_pages = svc.scalar(f"SELECT countIf(page_index = 0) FROM extension_events WHERE {study}")
    everything = "sum(units) + sum(impressions) + sum(later_units) + sum(later_impressions)"
    first = "sum(units) + sum(impressions)"
    counted = {
        "arrangement_install_day": (everything, "", events),
        "arrangement_install": (everything, "", events),
        "arrangement_install_subset": (everything, " AND subset = 'all'", events),
        "arrangement_replicates_1h": (first, "", first_pages),
        "clicks_by_rank_1m": (first, " AND original_rank = 1", first_pages),
    }

    def counts(query: str, want: int) -> Callable[[], bool]:
        return lambda: bool(svc.scalar(query) == want)

    for table, (sums, where, want) in counted.items():
        query = f"SELECT {sums} FROM {table} WHERE {study}{where}"
        wait_for(counts(query, want), 120, f"{experiment} in {table}")


def keys_stored_hashed(ran: Ran, walker: Walker) -> bool:
    key = ran.stdout.strip()
    stored = (walker.cwd / "data" / "keys.json").read_text()
    return len(key) >= 35 and key not in stored and hashlib.sha256(key.encode()).hexdigest() in stored


def erased(ran: Ran, walker: Walker) -> bool:
    assert walker.svc is not None
    left = f"SELECT count() FROM extension_events WHERE install_id = '{walker.install}'"
    receipt = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", ran.output)
    return receipt is not None and walker.svc.scalar(left) == 0


def has(*words: str) -> Callable[[Ran, Walker], bool]:
    return lambda ran, _: all(w.lower() in ran.output.lower() for w in words)


CLAIMS: dict[str, tuple[str, Callable[[Ran, Walker], bool]]] = {
    "MYKEY=$(": ("keys are 35+ characters", lambda ran, _: len(ran.stdout) >= 35),
    "/readyz": ("200 once events are accepted", lambda ran, _: ran.code == 200),
    "-d @docs/examples/events.json": (
        "every event of the example file accepted",
        lambda ran, _: ran.body == {"accepted": len(orjson.loads(EVENTS_FILE.read_bytes())), "rejected": []},
    ),
    "report --api-key": ("units, clicks, CTR per arm and rank", has("units", "clicks", "ctr", "arm", "rank")),
    "experiment create": (
        "registered",
        lambda _, w: (
            w.svc is not None
            and w.svc.scalar(f"SELECT count() FROM experiments WHERE experiment_id = '{w.experiment}'") == 1
        ),
    ),
    "simulate extension": ("every event accepted", has("rejected 0")),
    "--subset box": (
        "CTR, gap, distortion with 95% CIs",
        has("subset box", "CTR", "gap", "distortion", "95%"),
    ),
    "--by-market": ("identification + SRM per market", has("market", "identified", "SRM")),
    "participants erase": ("a volunteer's data, erased (receipt)", erased),
    "--intervals sequential": ("watchable intervals; weighted", has("confidence sequence", "reweighted")),
    "import export.jsonl.gz": (
        "imported, once per event_id",
        lambda _, w: (
            w.svc is not None
            and w.svc.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{IMPORTED}'")
            == IMPORTED_EVENTS
        ),
    ),
    "report timeline": ("per window", has("window")),
    "report autocomplete": ("churn rank x depth, survival, nmi", has("churn", "survival", "nmi")),
    "keys create": ("keys are stored hashed", keys_stored_hashed),
    "schema export": (
        "JSON Schema for client authors",
        lambda _, w: "$defs" in json.loads((w.cwd / "schema" / "event.schema.json").read_text()),
    ),
}
"""What a line's comment (or its words) says it answers, checked beyond its exit code; each
key names exactly one line of "Using it"."""


def make_placeholder_files(cwd: Path) -> None:
    """The files "Using it" names for the reader's own (``PLACEHOLDERS``)."""
    shutil.copy(
        ROOT / "tests" / "fixtures" / "autocomplete" / "google_psyab_charlie_baker.json", cwd / "body.json"
    )
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=IMPORTED, seed=5, installs=40))
    events = list(itertools.islice(traffic.events(), IMPORTED_EVENTS))
    half = IMPORTED_EVENTS // 2
    (cwd / "export.jsonl.gz").write_bytes(gzip.compress(b"\n".join(orjson.dumps(e) for e in events[:half])))
    columns = sorted({k for e in events for k in e})
    pq.write_table(
        pa.Table.from_pylist([{k: e.get(k) for k in columns} for e in events[half:]]), cwd / "study.parquet"
    )


def run_sql(svc: Service, examples: list[SqlExample]) -> list[str]:
    """Each example through ``POST /v1/sql`` (what `auditstream sql` sends): what did not
    answer 200 with rows, or answered what cannot be (``answer_problems``)."""
    failures = []
    for example in examples:
        resp = http(
            "POST",
            svc.url + "/v1/sql",
            orjson.dumps({"sql": example.sql}),
            {"Authorization": f"Bearer {svc.api_key}", "Content-Type": "application/json"},
            timeout=120,
        )
        if resp.status != 200:
            failures.append(f"{example.where}: {resp.status} {resp.body}")
        elif not resp.body["rows"]:
            failures.append(f"{example.where}: no rows")
        else:
            rows = [dict(zip(resp.body["columns"], row, strict=True)) for row in resp.body["rows"]]
            failures += [f"{example.where}: {problem}" for problem in answer_problems(rows)]
    return failures


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walker]:
    """README.md's "Using it", every line run (or skipped, with its stand-in) in order."""
    cwd = tmp_path_factory.mktemp("walkthrough")
    make_placeholder_files(cwd)
    walker = Walker(cwd, "README.md")
    started = time.monotonic()
    try:
        walker.walk(command_lines(README.read_text()))
        slowest = ", ".join(f"line {n} {s:.1f}s" for s, n in sorted(walker.seconds, reverse=True)[:5])
        print(f"\nthe README's lines (with up and its seeding): {time.monotonic() - started:.1f}s; {slowest}")
        yield walker
    finally:
        code = walker.stop()
    assert code == 0, f"auditstream up exited {code}; see {cwd / 'up.log'}"


def test_every_line_of_using_it_runs_as_written(walked: Walker) -> None:
    commands = command_lines(README.read_text())
    assert walked.svc is not None, walked.failures
    assert not walked.failures, "\n\n".join(walked.failures)
    assert sorted(walked.ran + walked.skipped) == [c.line for c in commands]
    assert not stale([s.match for s in SKIPPED], commands)
    assert not stale(list(SCALED), commands)
    assert not stale(list(CLAIMS), commands)
    assert not stale(list(PLACEHOLDERS), commands, word=True)


def test_every_documented_sql_example_answers_rows(walked: Walker) -> None:
    assert walked.svc is not None
    examples = documented_sql()
    started = time.monotonic()
    failures = run_sql(walked.svc, examples)
    print(f"\n{len(examples)} SQL examples in {time.monotonic() - started:.1f}s")
    assert not failures, "\n\n".join(failures)


def test_the_two_ctr_examples_of_issue_40_answer_rows(walked: Walker) -> None:
    """They failed with ILLEGAL_AGGREGATION: ``sum(units) AS units`` made ``sum(units)`` in the
    CTR read ``sum(sum(units))``."""
    assert walked.svc is not None
    titles = (
        "CTR of c1..c3 per arm over a study period",
        "CTR of c1 per arm after preprocessing, Google, box subset",
    )
    examples = [e for e in documented_sql() if e.title.startswith(titles)]
    assert len(examples) == 2, examples
    assert not run_sql(walked.svc, examples)


def test_a_broken_example_in_a_document_is_reported(walked: Walker, tmp_path: Path) -> None:
    """The same extraction and runners, on a document with broken examples: each is named by
    its place and what went wrong, and the working ones are not."""
    assert walked.svc is not None
    doc = "tests/fixtures/walkthrough/broken.md"
    failures = run_sql(walked.svc, sql_examples(BROKEN))
    assert len(failures) == 3, failures
    assert (
        failures[0].startswith(f"{doc}:14 (issue 40's broken example")
        and "ILLEGAL_AGGREGATION" in failures[0]
    )
    assert failures[1] == f"{doc}:19 (an experiment nobody ran: no rows): no rows"
    assert failures[2].startswith(f"{doc}:21 (a share above one): ctr = 1.5 is no share")

    walker = Walker(tmp_path, BROKEN.name, svc=walked.svc, key=walked.key, port=walked.port)
    _, failing, foreign = commands = command_lines(BROKEN.read_text())
    walker.walk(commands)
    assert len(walker.failures) == 2, walker.failures
    assert walker.failures[0].startswith(f"broken.md:{failing.line} `auditstream sql")
    assert "exited 1" in walker.failures[0] and "no_such_column" in walker.failures[0]
    assert walker.failures[1].startswith(f"broken.md:{foreign.line} `wget")
    assert "runs `auditstream` and `curl` lines only" in walker.failures[1]
    assert stale([s.match for s in SKIPPED], commands) == [s.match for s in SKIPPED]  # none of its lines
