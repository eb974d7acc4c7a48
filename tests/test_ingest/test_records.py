"""What ingest hands to Kafka for each accepted event (ingest/handlers._records): the
model's canonical JSON with the server's ``received_at`` added, on its family's topic
with its family's key, whichever path validated it (the twins or the originals)."""

from __future__ import annotations

import orjson

from ingest.handlers import _records
from ingest.validation import validate_batch, validate_body
from schemas.event_types import FAMILY_BY_TYPE
from tests.test_schemas.test_event_twins import samples

RECEIVED_AT = "2026-11-29 13:10:00.123"


def test_each_record_is_the_models_json_with_received_at_on_its_familys_topic() -> None:
    events = list(samples().values())
    body = orjson.dumps(events)
    twins, rejected = validate_body(body, events)
    originals, rejected_too = validate_batch(events)
    assert rejected == rejected_too == [] and len(twins) == len(originals) == len(events)
    for models in (twins, originals):
        records = _records("p", models, RECEIVED_AT)
        for model, (topic, key, value) in zip(models, records, strict=True):
            family = FAMILY_BY_TYPE[model.type]  # type: ignore[attr-defined]
            written = orjson.loads(model.model_dump_json())
            assert orjson.loads(value) == {**written, "received_at": RECEIVED_AT}
            assert value.startswith(model.model_dump_json().encode()[:-1])  # its order kept
            assert topic == family.topic("p") and key == family.key(vars(model))
    assert [v for _, _, v in _records("p", twins, RECEIVED_AT)] == [
        v for _, _, v in _records("p", originals, RECEIVED_AT)
    ]
