"""An ACP prompt (content blocks) as the text the agent's model reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import (
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

__all__ = ["prompt_text"]


def prompt_text(blocks: Sequence[Any]) -> str:
    """The prompt's text: text blocks as they are, resource links by name and URI, embedded
    text resources in full under their URI. Images, audio and binary resources (not
    advertised in ``promptCapabilities``) are named, not sent."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"<resource uri={resource.uri!r}>\n{resource.text}\n</resource>")
            else:
                parts.append(f"(binary resource {resource.uri} not included)")
        else:
            parts.append(f"({getattr(block, 'type', 'unknown')} content not included)")
    return "\n".join(parts)
