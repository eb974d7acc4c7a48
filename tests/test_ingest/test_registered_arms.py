"""Events of a registered experiment must name its engines and arms (ingest/registered_arms.py)."""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.import_chunks import prepare_chunk
from ingest.registered_arms import unregistered, without_unregistered
from ingest.validation import validate_batch

REGISTRY = {"reg": (frozenset({"google", "bing"}), frozenset({"control", "swap_1_2", "hide_box"}))}


def events(n: int, **changes: Any) -> list[dict[str, Any]]:
    config = TrafficConfig(experiment_id="reg", seed=3, arms=(("control", 1.0), ("swap_1_2", 1.0)))
    return [{**e, **changes} for e in itertools.islice(ExtensionTraffic(config).events(), n)]


def test_an_arm_or_engine_the_registered_experiment_lacks_is_named_by_field() -> None:
    batch = [
        *events(1),
        *events(1, arm="john.smith"),
        *events(1, engine="duckduckgo"),
        *events(1, engine="bing", arm="hide_box"),  # an arm it has; engine_arms is the SRM's job
        *events(1, experiment_id="other", arm="anything"),  # not registered: taken as before
    ]
    models, rejected = validate_batch(batch)
    assert not rejected and len(models) == 5
    assert unregistered(models, REGISTRY) == [(1, "arm"), (2, "engine")]
    assert unregistered(models, {}) == []


def test_refused_events_keep_their_index_in_the_batch_beside_other_rejections() -> None:
    batch = [*events(1), {"type": "click"}, *events(1, arm="x-word"), 7, *events(1)]
    accepted, rejected = without_unregistered(*validate_batch(batch), REGISTRY)
    assert [str(m.event_id) for m in accepted] == [batch[0]["event_id"], batch[4]["event_id"]]  # type: ignore[attr-defined]
    assert [(r.index, r.reason, r.field) for r in rejected] == [
        (1, "missing_field", "schema_version"),
        (2, "unregistered_arm", "arm"),
        (3, "not_an_object", None),
    ]


def test_an_import_chunk_refuses_them_by_line_and_keeps_the_rest() -> None:
    lines = [orjson.dumps(e) for e in [*events(3), *events(1, arm="words-here"), *events(2)]]
    body = b"\n".join(lines)
    plain = prepare_chunk(body)
    assert not plain.rejected and sum(n for _, n in plain.rows.values()) == 6
    checked = prepare_chunk(body, REGISTRY)
    assert [(r.index, r.reason, r.field) for r in checked.rejected] == [(4, "unregistered_arm", "arm")]
    assert sum(n for _, n in checked.rows.values()) == 5 and b"words-here" not in b"".join(
        rows for rows, _ in checked.rows.values()
    )
