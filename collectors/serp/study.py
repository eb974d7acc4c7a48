"""A personalization study (Hannak et al.), declared in a TOML file and validated before anything runs.

Format (``collectors/serp/examples/study.toml`` is a complete example)::

    [study]
    id = "hannak-login"        # letters, digits, _ . : = -; round ids are "<id>-r0000", ...
    engine = "google"          # google or bing
    spacing = "11m"            # slot to slot; Hannak waited 11 minutes, past the ~10-minute carry-over
    start = 2025-01-06T09:00:00Z   # optional first slot (default: just after the first run starts)
    days = 7                   # optional: the query list once a day for 7 days (see `period`)
    rounds = 240               # optional: at most this many rounds; with neither, each query runs once
    period = "1d"              # optional, with `days`: how often the list starts over (default one day)
    round_timeout = "9m"       # optional: a round's deadline after its slot (default 80% of spacing)
    fetch_timeout = "30s"      # optional: one attempt's limit (always cut at the round deadline)
    retries = 2                # optional: attempts after a failed one (no answer, 5xx), in the round
    retry_backoff = "2s"       # optional: first pause between attempts (doubles)
    max_start_delay = "30s"    # optional: how late a slot may start (default 10% of spacing, at most 30 s)
    fetcher = "http"           # http (aiohttp) or browser (Playwright + Chromium; extra "browser")
    consent = "reject"         # browser only: accept, reject or leave (default) a consent wall
    skew_tolerance = "5s"      # optional: rounds whose profiles sent or loaded further apart are flagged
                               # (default 10% of spacing, at most 5 s)
    url_params = { hl = "en" } # optional: extra parameters on every search URL
    history_step = "10s"       # optional: start to start of two history steps (default 10 s)

    [[queries]]                # run in this order, one per round, cycling
    text = "urban outfitters"
    category = "places"
    preceded_by = "hawaii"     # carry-over studies only: the pair's first query (see below)

    [[profiles]]               # one control, one control_twin (configured like the control), treatments
    id = "control"
    role = "control"           # treatment | control | control_twin
    user_agent = "Mozilla/5.0 ..."
    language = "en-US"         # Accept-Language
    proxy = "http://10.0.0.2:3128"   # optional: http://, https:// or socks5:// (user:pass@ allowed)
    cookies = { NID = "..." }  # optional: set for the engine's host before the first query
    cookies_file = "cookies/control.txt"  # optional: Netscape cookies.txt, e.g. an exported login
    clear_cookies = false      # true: forget cookies after every query (a "no cookies" profile)
    viewport = "1366x768"      # optional, browser only: window size in CSS pixels
    timezone = "America/New_York"  # optional, browser only: IANA time zone the pages see

    [[profiles]]
    id = "logged-in"
    role = "treatment"
    treatment = "logged_in"    # feature and value, e.g. "location=Boston"; "" for the controls

    [[profiles]]               # a history profile (the paper's search, click and browsing history)
    id = "golfer"
    role = "treatment"
    treatment = "search_history=golf"
    [[profiles.history]]       # steps run before each pass through the queries
    search = "golf clubs"
    click = 1                  # optional: then click organic result 1 (or the first whose URL has a text)
    [[profiles.history]]
    wait = "2m"                # the next step starts 2 minutes after the previous one
    [[profiles.history]]
    visit = "https://www.example.com/golf"

    [[profiles]]               # a carry-over profile: searches each query's preceded_by 5 min before it
    id = "wait-5m"
    role = "treatment"         # labelled treatment = "carry_over:wait=300s" unless it says otherwise
    carry_over_wait = "5m"

Durations are seconds (a number) or a number with ms, s, m, h or d. Times are slots
on a fixed grid from ``start`` (see ``schedule``): a slow round never delays the next.
The control_twin must match the control in everything but its id and proxy (user agent,
language, cookie clearing, viewport, time zone, history).

History steps are timed backwards from the slot of each pass's first round (``steps``):
steps start ``history_step`` apart, or a ``wait`` apart where one follows a step, and the
first query comes one ``spacing`` after the last step (so the history carries over into
no measured query) unless a trailing ``wait`` says otherwise. With more than one pass the
history must fit between the last round of a pass and the next pass (give ``days``). A
carry-over profile searches the round query's ``preceded_by`` its ``carry_over_wait``
before every slot; the wait must fit in ``spacing - round_timeout``, and every query then
needs a ``preceded_by``. A ``cookies_file`` is read when the
study is loaded, so a malformed line stops it before anything runs (see ``cookies``).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from collectors.common.exceptions import CrawlConfigError
from collectors.serp.consent import Action
from collectors.serp.cookies import read_cookies
from collectors.serp.engines import SERP_ENGINES

ROUND_DIGITS = 4
TWIN_FIELDS = ("user_agent", "language", "clear_cookies", "viewport", "timezone", "history")
"""What the control_twin must share with the control (its proxy differs: another address)."""
LATER_PROFILE = ("viewport", "timezone", "history", "carry_over_wait")
"""Profile settings added after studies were saved: in the fingerprint only when set."""
MAX_ID = 64
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any) -> Any:
    """``"11m"`` -> 660.0; numbers are seconds; anything else is left for pydantic to reject."""
    if isinstance(value, str):
        m = _DURATION.match(value)
        if not m:
            raise ValueError(
                f"a duration is a number of seconds or e.g. '500ms', '30s', '11m', '1d': {value!r}"
            )
        return float(m[1]) * _UNITS[m[2]]
    return value


Seconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]


def carry_over_treatment(wait: float) -> str:
    """The treatment label of a carry-over profile: ``carry_over:wait=300s``."""
    return f"carry_over:wait={wait:g}s"


Ident = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:=-]{0,63}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


QueryText = Annotated[str, StringConstraints(min_length=1, max_length=512)]
PageUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s/]+(/\S*)?$", max_length=2048)]


class Query(_Strict):
    text: QueryText
    category: Annotated[str, StringConstraints(max_length=64)] = ""
    preceded_by: QueryText | None = None
    """Carry-over studies: query A of the pair (A, B = ``text``), searched by each carry-over
    profile its ``carry_over_wait`` before the round's slot."""

    @model_validator(mode="after")
    def _a_pair_of_two(self) -> Query:
        if self.preceded_by is not None and self.preceded_by.strip().lower() == self.text.strip().lower():
            raise ValueError(f"query {self.text!r} cannot be preceded by itself")
        return self


class HistoryStep(_Strict):
    """One step of a profile's history: exactly one of ``search``, ``visit`` or ``wait``.

    ``click`` (with ``search``) then clicks a result of that search's page: an organic
    result's rank (1 = the first), or the first organic result whose URL contains the text.
    """

    search: QueryText | None = None
    click: Annotated[int, Field(ge=1, le=100)] | Annotated[str, StringConstraints(min_length=1)] | None = None
    visit: PageUrl | None = None
    wait: Seconds | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> HistoryStep:
        kinds = [k for k in ("search", "visit", "wait") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                "a history step is one of search = '...', visit = 'https://...' or wait = '5m' "
                f"(got {', '.join(kinds) or 'none'})"
            )
        if self.click is not None and self.search is None:
            raise ValueError("click goes with a search (it clicks a result of that search's page)")
        return self

    @property
    def kind(self) -> str:
        return "search" if self.search is not None else "visit" if self.visit is not None else "wait"


@dataclass(frozen=True)
class PlannedStep:
    """A history step of one round, timed against the round's slot (seconds, negative: before it).

    It starts at ``slot + at`` and must be done by ``slot + until`` (the next step's start,
    or the slot): its fetches are cut there, so the measured query is never delayed.
    """

    kind: Literal["search", "visit"]
    target: str
    """The query searched, or the URL visited."""
    at: float
    until: float
    click: int | str | None = None


class Profile(_Strict):
    id: Ident
    role: Literal["treatment", "control", "control_twin"]
    treatment: Annotated[str, StringConstraints(max_length=128)] = ""
    user_agent: Annotated[str, StringConstraints(min_length=1, max_length=512)]
    language: Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")] = "en-US"
    proxy: str | None = None
    cookies: dict[str, str] = {}
    cookies_file: Path | None = None
    clear_cookies: bool = False
    viewport: Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{2,3}x[1-9][0-9]{2,3}$")] | None = None
    """``WIDTHxHEIGHT`` in CSS pixels (browser fetcher)."""
    timezone: str | None = None
    """An IANA time zone such as ``Europe/Zurich`` (browser fetcher)."""
    history: Annotated[list[HistoryStep], Field(max_length=1000)] | None = None
    """Steps run before each pass through the query list (see ``history_plan``)."""
    carry_over_wait: Seconds | None = None
    """Carry-over treatment: search the round query's ``preceded_by`` this long before every slot."""

    @model_validator(mode="before")
    @classmethod
    def _carry_over_label(cls, data: Any) -> Any:
        """A carry-over profile is labelled with its wait unless it says otherwise."""
        if (
            isinstance(data, dict)
            and data.get("role") == "treatment"
            and data.get("carry_over_wait") is not None
            and not data.get("treatment")
        ):
            try:
                wait = float(parse_duration(data["carry_over_wait"]))
            except (TypeError, ValueError):
                return data  # the field's own validation says what is wrong
            return {**data, "treatment": carry_over_treatment(wait)}
        return data

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                zoneinfo.ZoneInfo(value)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value!r} (an IANA name, e.g. Europe/Zurich)") from None
        return value

    @field_validator("history")
    @classmethod
    def _no_empty_history(cls, value: list[HistoryStep] | None) -> list[HistoryStep] | None:
        return value or None

    @field_validator("proxy")
    @classmethod
    def _proxy_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^(https?|socks[45])://[^/\s]+/?$", value):
            raise ValueError("proxy must look like http://host:port, https://... or socks5://host:port")
        return value

    @property
    def window(self) -> tuple[int, int] | None:
        """``viewport`` as (width, height)."""
        if self.viewport is None:
            return None
        width, height = self.viewport.split("x")
        return int(width), int(height)

    @model_validator(mode="after")
    def _treatment_matches_role(self) -> Profile:
        if self.role == "treatment" and not self.treatment:
            raise ValueError(f"profile {self.id}: a treatment profile needs treatment = 'feature=value'")
        if self.role != "treatment" and self.treatment:
            raise ValueError(f"profile {self.id}: the {self.role} has no treatment (leave it out)")
        if self.carry_over_wait is not None and self.role != "treatment":
            raise ValueError(f"profile {self.id}: carry_over_wait is for treatment profiles")
        if self.carry_over_wait is not None and self.history:
            raise ValueError(f"profile {self.id}: a carry-over profile has no other history")
        if self.history and self.history[0].wait is not None:
            raise ValueError(f"profile {self.id}: a history starts with a search or a visit, not a wait")
        return self


class StudyHeader(_Strict):
    id: Ident
    engine: str
    spacing: Seconds = 660.0
    start: AwareDatetime | None = None
    days: Annotated[int, Field(ge=1)] | None = None
    rounds: Annotated[int, Field(ge=1)] | None = None
    period: Seconds | None = None
    round_timeout: Seconds | None = None
    fetch_timeout: Seconds = 30.0
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    retry_backoff: Seconds = 2.0
    max_start_delay: Seconds | None = None
    fetcher: Literal["http", "browser"] = "http"
    consent: Action = "leave"
    skew_tolerance: Seconds | None = None
    url_params: dict[str, str] = {}
    history_step: Seconds = 10.0
    """Start to start of two history steps, unless a ``wait`` between them says otherwise."""


class Study(_Strict):
    """The validated study; derived values (``total_rounds``, ``deadline``, ...) are properties."""

    study: StudyHeader
    queries: Annotated[list[Query], Field(min_length=1)]
    profiles: Annotated[list[Profile], Field(min_length=2)]

    @model_validator(mode="after")
    def _consistent(self) -> Study:
        s = self.study
        if s.engine not in SERP_ENGINES:
            raise ValueError(f"unknown engine {s.engine!r}; known: {', '.join(SERP_ENGINES)}")
        ids = [p.id for p in self.profiles]
        if len(set(ids)) != len(ids):
            raise ValueError(f"profile ids must be distinct: {ids}")
        roles = [p.role for p in self.profiles]
        if roles.count("control") != 1 or roles.count("control_twin") != 1:
            raise ValueError("a study needs exactly one profile with role control and one with control_twin")
        control, twin = self.profile("control"), self.profile("control_twin")
        for name in TWIN_FIELDS:
            if getattr(control, name) != getattr(twin, name):
                raise ValueError(f"the control_twin must be configured like the control: {name} differs")
        if s.consent != "leave" and s.fetcher != "browser":
            raise ValueError(
                f"consent = {s.consent!r} needs fetcher = 'browser' (an HTTP client presses no button)"
            )
        if self.round_timeout >= s.spacing:
            raise ValueError("round_timeout must be shorter than spacing (a round ends before the next)")
        self._history_fits()
        if s.period is not None and s.days is None:
            raise ValueError("period only applies with days")
        if s.days is not None and self.period < len(self.queries) * s.spacing:
            raise ValueError(
                f"{len(self.queries)} queries x spacing {s.spacing:g}s "
                f"do not fit in a period of {self.period:g}s"
            )
        if len(s.id) + 2 + max(ROUND_DIGITS, len(str(self.total_rounds - 1))) > MAX_ID:
            raise ValueError(f"study id too long for round ids '<id>-rNNNN' of at most {MAX_ID} characters")
        return self

    def _history_fits(self) -> None:
        """Carry-over pairs are complete, and every history ends before its round's slot and
        starts after the previous round's deadline (a profile does one thing at a time)."""
        s = self.study
        carry = [p for p in self.profiles if p.carry_over_wait is not None]
        paired = sum(q.preceded_by is not None for q in self.queries)
        if carry and paired != len(self.queries):
            raise ValueError(
                "carry-over profiles (carry_over_wait) need every query to name its pair's first "
                "query (preceded_by = '...')"
            )
        if paired and not carry:
            raise ValueError("preceded_by is searched by carry-over profiles; no profile has carry_over_wait")
        gap = s.spacing - self.round_timeout
        for p in carry:
            assert p.carry_over_wait is not None
            if p.carry_over_wait > gap:
                raise ValueError(
                    f"profile {p.id}: carry_over_wait {p.carry_over_wait:g}s does not fit between a "
                    f"round's deadline and the next slot ({gap:g}s: spacing minus round_timeout; a "
                    "longer spacing or a shorter round_timeout makes room)"
                )
        if self.total_rounds <= len(self.queries):
            return  # one pass: its history runs before the first slot
        room = self.period - (len(self.queries) - 1) * s.spacing - self.round_timeout
        for p in self.profiles:
            if p.history and (lead := self._timeline(p.history)[1]) > room:
                raise ValueError(
                    f"profile {p.id}: its history takes {lead:g}s before each pass through the queries, "
                    f"but passes leave {room:g}s from the last round's deadline to the next pass "
                    "(give days, a longer period, or a shorter history)"
                )

    def _timeline(self, history: list[HistoryStep]) -> tuple[list[tuple[HistoryStep, float]], float]:
        """Each step's start from the history's start, and the history's length up to the slot.

        Steps start ``history_step`` apart, unless waits follow a step: then the next starts
        that long after it. After the last step the slot comes after its trailing waits, or
        one ``spacing`` (the study's gap between queries, so history carries over into no
        measured query)."""
        out: list[tuple[HistoryStep, float]] = []
        t = 0.0
        actions = [i for i, step in enumerate(history) if step.wait is None]
        for n, i in enumerate(actions):
            out.append((history[i], t))
            end = actions[n + 1] if n + 1 < len(actions) else len(history)
            waits = [w.wait for w in history[i + 1 : end] if w.wait is not None]
            if waits:
                t += sum(waits)
            else:
                t += self.study.history_step if n + 1 < len(actions) else self.study.spacing
        return out, t

    def steps(self, profile: Profile, k: int) -> tuple[PlannedStep, ...]:
        """What ``profile`` does before round ``k``'s query: its history before the first round
        of each pass, or a carry-over profile's first query of the pair before every round."""
        if profile.carry_over_wait is not None:
            first = self.queries[k % len(self.queries)].preceded_by
            assert first is not None
            return (PlannedStep("search", first, -profile.carry_over_wait, 0.0),)
        if not profile.history or k % len(self.queries):
            return ()
        timeline, length = self._timeline(profile.history)
        starts = [t - length for _, t in timeline] + [0.0]
        return tuple(
            PlannedStep(
                "search" if step.search is not None else "visit",
                step.search if step.search is not None else str(step.visit),
                starts[i],
                starts[i + 1],
                step.click,
            )
            for i, (step, _) in enumerate(timeline)
        )

    def lead(self, k: int) -> float:
        """Seconds before round ``k``'s slot that its first history step starts (0: none)."""
        return max((-steps[0].at for p in self.profiles if (steps := self.steps(p, k))), default=0.0)

    @property
    def pass_history(self) -> bool:
        """Whether some profile runs a history before each pass (so a pass needs it to have run)."""
        return any(p.history for p in self.profiles)

    def profile(self, role: str) -> Profile:
        return next(p for p in self.profiles if p.role == role)

    @property
    def id(self) -> str:
        return self.study.id

    @property
    def period(self) -> float:
        """Seconds between the starts of two passes through the query list."""
        s = self.study
        if s.days is None:
            return len(self.queries) * s.spacing
        return s.period if s.period is not None else 86400.0

    @property
    def total_rounds(self) -> int:
        s = self.study
        by_days = s.days * len(self.queries) if s.days is not None else None
        if s.rounds is not None:
            return min(s.rounds, by_days) if by_days is not None else s.rounds
        return by_days if by_days is not None else len(self.queries)

    @property
    def round_timeout(self) -> float:
        s = self.study
        return s.round_timeout if s.round_timeout is not None else 0.8 * s.spacing

    @property
    def skew_tolerance(self) -> float:
        """Seconds the profiles of a round may send, or finish loading, apart before it is flagged."""
        s = self.study
        return s.skew_tolerance if s.skew_tolerance is not None else min(0.1 * s.spacing, 5.0)

    @property
    def max_start_delay(self) -> float:
        s = self.study
        return s.max_start_delay if s.max_start_delay is not None else min(0.1 * s.spacing, 30.0)

    def fingerprint(self) -> str:
        """What changes the results: a saved study only resumes with the same fingerprint.

        Cookies are left out (a login's cookies rotate); timeouts, retries and the skew
        tolerance may change. Settings added later count only when set, so a study saved
        before them resumes.
        """
        s = self.study
        doc: dict[str, Any] = {
            "engine": s.engine,
            "spacing": s.spacing,
            "days": s.days,
            "rounds": s.rounds,
            "period": s.period,
            "fetcher": s.fetcher,
            "url_params": s.url_params,
            "queries": [q.model_dump(exclude_none=True) for q in self.queries],
            "profiles": [
                p.model_dump(mode="json", exclude={"cookies", "cookies_file", *_unset(p, LATER_PROFILE)})
                for p in self.profiles
            ],
        }
        if s.consent != "leave":
            doc["consent"] = s.consent
        if self.pass_history:
            doc["history_step"] = s.history_step
        return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _unset(model: BaseModel, names: tuple[str, ...]) -> set[str]:
    return {n for n in names if getattr(model, n) in (None, [])}


def _format_errors(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "study"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def parse_study(text: str, *, base_dir: Path | None = None, source: str = "study") -> Study:
    """Validate a study document; relative ``cookies_file`` paths are taken from ``base_dir``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CrawlConfigError(f"{source} is not valid TOML: {exc}") from None
    try:
        study = Study.model_validate(doc)
    except ValidationError as exc:
        raise CrawlConfigError(f"{source} is not a valid study:\n{_format_errors(exc)}") from None
    if base_dir is not None:
        profiles = [
            p.model_copy(update={"cookies_file": base_dir / p.cookies_file})
            if p.cookies_file is not None and not p.cookies_file.is_absolute()
            else p
            for p in study.profiles
        ]
        study = study.model_copy(update={"profiles": profiles})
    for p in study.profiles:
        if p.cookies_file is not None and not p.cookies_file.is_file():
            raise CrawlConfigError(f"{source}: profile {p.id}: no cookies file {p.cookies_file}")
        if p.cookies_file is not None:
            try:
                read_cookies(p.cookies_file)
            except CrawlConfigError as exc:
                raise CrawlConfigError(f"{source}: profile {p.id}: {exc}") from None
    return study


def load_study(path: Path) -> Study:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CrawlConfigError(f"cannot read study file {path}: {exc}") from None
    return parse_study(text, base_dir=path.parent, source=str(path))
