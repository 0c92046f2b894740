"""Run input as messages, refused when no store could keep it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import InvalidInput
from ..messages._message import Message
from ..messages._unicode import first_unencodable

if TYPE_CHECKING:
    from ._runtime import RunInput

__all__ = ["input_messages"]


def input_messages(value: RunInput) -> list[Message]:
    """The messages of a run's input; raise ``InvalidInput`` for text no store can keep."""
    if isinstance(value, str):
        messages = [Message.user(value)]
    elif isinstance(value, Message):
        messages = [value]
    else:
        messages = list(value)
    for i, message in enumerate(messages):
        content = message.content
        if isinstance(content, str) and content.isascii() and not message.metadata:
            continue
        found = first_unencodable(message.model_dump(exclude_defaults=True))
        if found is not None:
            where, index = found
            raise InvalidInput(
                f"run input message {i} holds a lone surrogate at index {index} of {where} "
                f"(not valid Unicode, so no store can keep it); decode the input's bytes "
                f"with errors='replace', or strip the surrogates"
            )
    return messages
