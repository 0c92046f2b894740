"""``decode_message_rows``: stored rows as messages; a bad row is ``StoreCorrupt`` naming it."""

from __future__ import annotations

import pytest

from awaken_runtime import Message
from awaken_runtime.stores import StoreCorrupt, decode_message_rows


def test_rows_decode_in_order_from_text_or_bytes() -> None:
    messages = [Message.user("a"), Message.assistant("b")]
    texts = [m.model_dump_json() for m in messages]
    assert decode_message_rows("db", "thread 't1' message", texts) == messages
    assert decode_message_rows("db", "thread 't1' message", [t.encode() for t in texts]) == messages
    assert decode_message_rows("db", "thread 't1' message", []) == []


@pytest.mark.parametrize(
    "body", ['{"role": "wizard"}', "not json at all", '{"role": "user", "content": 5}', "[]"]
)
def test_a_bad_row_is_corrupt_naming_where_what_and_its_number(body: str) -> None:
    good = Message.user("ok").model_dump_json()
    with pytest.raises(StoreCorrupt) as info:
        decode_message_rows("my.db", "thread 't1' message", [good, good, body], first=5)
    assert info.value.path == "my.db"
    assert info.value.detail.startswith("thread 't1' message row 7 is not a valid Message (")


def test_two_objects_in_one_row_are_not_two_messages() -> None:
    # Joined for the one-call fast path, '{..},{..}' would read as two rows.
    good = Message.user("ok").model_dump_json()
    with pytest.raises(StoreCorrupt, match="message row 1"):
        decode_message_rows("db", "message", [f"{good},{good}"])
