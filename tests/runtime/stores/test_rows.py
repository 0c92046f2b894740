"""``decode_message_rows``, ``lazy_message_rows`` and ``decode_stored_row``: stored rows as
messages or records; a bad row is ``StoreCorrupt`` naming it."""

from __future__ import annotations

import pytest

from awaken_runtime import Message, RunRecord
from awaken_runtime.stores import (
    StoreCorrupt,
    decode_message_rows,
    decode_stored_row,
    lazy_message_rows,
)
from awaken_store_conformance import run_record


def test_rows_decode_in_order_from_text_or_bytes() -> None:
    messages = [Message.user("a"), Message.assistant("b")]
    texts = [m.model_dump_json() for m in messages]
    assert decode_message_rows("db", "thread 't1' message", texts) == messages
    assert decode_message_rows("db", "thread 't1' message", [t.encode() for t in texts]) == messages
    assert decode_message_rows("db", "thread 't1' message", []) == []


def test_text_and_bytes_rows_mixed_decode_in_order() -> None:
    # SQLite hands a BLOB body back as bytes: a row written by another tool can be one.
    messages = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    texts = [m.model_dump_json() for m in messages]
    for mixed in ([texts[0].encode(), texts[1], texts[2]], [texts[0], texts[1].encode(), texts[2]]):
        assert decode_message_rows("db", "thread 't1' message", mixed) == messages
        assert list(lazy_message_rows("db", "thread 't1' message", list(mixed))) == messages


@pytest.mark.parametrize(
    "body", ['{"role": "wizard"}', "not json at all", '{"role": "user", "content": 5}', "[]"]
)
@pytest.mark.parametrize("good_kind", [str, bytes])
def test_a_bad_row_is_corrupt_naming_where_what_and_its_number(body: str, good_kind: type) -> None:
    good = Message.user("ok").model_dump_json()
    if good_kind is bytes:
        good = good.encode()  # type: ignore[assignment]
    with pytest.raises(StoreCorrupt) as info:
        decode_message_rows("my.db", "thread 't1' message", [good, good, body], first=5)
    assert info.value.path == "my.db"
    assert info.value.detail.startswith("thread 't1' message row 7 is not a valid Message (")


def test_two_objects_in_one_row_are_not_two_messages() -> None:
    # Joined for the one-call fast path, '{..},{..}' would read as two rows.
    good = Message.user("ok").model_dump_json()
    with pytest.raises(StoreCorrupt, match="message row 1"):
        decode_message_rows("db", "message", [f"{good},{good}"])


def test_lazy_rows_decode_only_what_is_read_and_name_a_bad_row_from_one() -> None:
    messages = [Message.user(f"m{i}") for i in range(40)]
    rows = [m.model_dump_json() for m in messages]
    rows[3] = '{"role": "wizard"}'  # damaged, far from the end
    lazy = lazy_message_rows("my.db", "thread 't1' message", rows)
    assert len(lazy) == 40 and lazy.undecoded == 40
    assert lazy[-1] == messages[-1]  # a read from the end decodes a tail only
    assert 0 < lazy.undecoded < 40
    assert list(lazy[10:]) == messages[10:]
    with pytest.raises(StoreCorrupt) as info:
        lazy[3]
    assert info.value.path == "my.db"
    assert info.value.detail.startswith("thread 't1' message row 4 is not a valid Message (")


def test_one_stored_row_decodes_from_text_or_bytes() -> None:
    record = run_record("r1", "t1")
    body = record.model_dump_json()
    assert decode_stored_row("db", "run 'r1' record", RunRecord, body) == record
    assert decode_stored_row("db", "run 'r1' record", RunRecord, body.encode()) == record


@pytest.mark.parametrize("body", ['{"run_id": 1}', "not json at all", "[]", "{}", b"\xff"])
def test_a_bad_stored_row_is_corrupt_naming_where_and_what(body: str | bytes) -> None:
    with pytest.raises(StoreCorrupt) as info:
        decode_stored_row("my.db", "run 'r1' record", RunRecord, body)
    assert info.value.path == "my.db"
    assert info.value.detail.startswith("run 'r1' record is not a valid RunRecord (")
    assert info.value.__cause__ is None  # the pydantic error is summarised, not chained
