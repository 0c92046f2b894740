"""Running the compactor: rendering a span, chunking it, and asking for a summary.

The compactor gets the previous summary and the newly covered span and
returns the new cumulative summary. A configured compactor agent runs as a
sub-run (``ctx.children.run``) on its own child thread; without one, the
built-in summarizer asks the agent's own model, with no tools and the
built-in prompt. A span larger than ``max_compactor_input_tokens`` is fed in
chunks, each folded into the summary before the next.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from awaken_runtime import (
    InferenceParams,
    InferenceRequest,
    InferenceResponse,
    Message,
    PhaseContext,
)

from ._config import CompactConfig
from ._counter import TokenCounter

__all__ = [
    "BUILTIN_PROMPT",
    "CompactorError",
    "SummaryResult",
    "compactor_input",
    "compactor_prompt",
    "render_message",
    "summarize",
]

BUILTIN_PROMPT = """You maintain the running summary of a conversation between a user and an \
AI assistant that uses tools. You receive the previous summary (possibly empty) and the \
messages that follow it. Write the updated summary so it replaces both: keep the user's goals, \
requests and preferences, decisions made, facts and numbers learned (including tool results \
that matter), files, names and identifiers, open questions and unfinished work. Drop chit-chat \
and anything superseded. Write plain prose or terse bullet points in the conversation's \
language, at most {max_tokens} tokens. Output only the summary."""


class CompactorError(RuntimeError):
    """The compactor failed or returned an empty summary."""


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """A new cumulative summary and how many compactor calls it took."""

    text: str
    calls: int


def render_message(message: Message) -> str:
    """One message as plain text for the compactor."""
    text = message.text
    if message.role == "tool":
        head = f"[tool result {message.name or ''}]".replace(" ]", "]")
        return f"{head} {text}"
    parts = [f"[{message.role}] {text}".rstrip()]
    for call in message.tool_calls or ():
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        parts.append(f"[{message.role} calls {call.name}] {arguments}")
    return "\n".join(parts)


def compactor_input(previous: str | None, blocks: Sequence[str]) -> str:
    """The material to summarize: the previous summary and the new messages."""
    return (
        "<previous_summary>\n"
        + (previous or "(none)")
        + "\n</previous_summary>\n\n<new_messages>\n"
        + "\n\n".join(blocks)
        + "\n</new_messages>"
    )


def compactor_prompt(previous: str | None, blocks: Sequence[str], max_tokens: int) -> str:
    """What a compactor agent receives: the instructions, then :func:`compactor_input`."""
    return BUILTIN_PROMPT.format(max_tokens=max_tokens) + "\n\n" + compactor_input(previous, blocks)


def _chunks(messages: Sequence[Message], counter: TokenCounter, budget: int) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    used = 0
    for message in messages:
        block = render_message(message)
        tokens = counter.text(block)
        if tokens > budget:
            head, full = counter.truncate(block, budget)
            block = f"{head}\n[... {full - budget} more tokens omitted]"
            tokens = budget
        if chunks[-1] and used + tokens > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(block)
        used += tokens
    return [c for c in chunks if c]


async def _ask_agent(ctx: PhaseContext, agent_id: str, prompt: str) -> str:
    if ctx.children is None:
        raise CompactorError("this run cannot start sub-runs (no ChildRunner)")
    key = f"compact-{ctx.run.run_id}-{os.urandom(6).hex()}"
    outcome = await ctx.children.run(agent_id, prompt, key=key)
    if outcome.status != "completed":
        raise CompactorError(
            f"compactor agent {agent_id!r} ended {outcome.status}: {outcome.reason or 'no reason'}"
        )
    return outcome.text


async def _ask_model(ctx: PhaseContext, material: str, max_tokens: int) -> str:
    """The built-in summarizer: one inference on the run's own model, no tools.

    It is not a registered agent. With a core whose ``ChildRunner`` has
    ``infer(request)`` that is used; otherwise the parent run's executor is
    called directly (reached through ``ChildRunner.parent``) and the usage is
    added to the run with ``add_usage``.
    """
    request = ctx.request
    runner: Any = ctx.children
    if request is None or runner is None:
        raise CompactorError("the built-in summarizer needs a run that can start sub-runs")
    cap = request.model.max_output_tokens
    if cap is not None:
        max_tokens = min(max_tokens, cap)  # a model rejects more than it can write
    summary_request = InferenceRequest(
        model=request.model,
        messages=[
            Message.system(BUILTIN_PROMPT.format(max_tokens=max_tokens)),
            Message.user(material),
        ],
        tools=[],
        params=InferenceParams(max_output_tokens=max_tokens),
        run_id=ctx.run.run_id,
        step=ctx.run.step,
    )
    infer = getattr(runner, "infer", None)
    if infer is not None:
        answer: InferenceResponse = await infer(summary_request)
        return answer.text
    parent: Any = getattr(runner, "parent", None)
    executor: Any = getattr(getattr(parent, "agent", None), "executor", None)
    if executor is None:
        raise CompactorError(
            "the built-in summarizer cannot reach the run's model; set compactor_agent"
        )
    response: InferenceResponse | None = None
    async for item in executor.stream(summary_request):
        if isinstance(item, InferenceResponse):
            response = item
    if response is None:
        raise CompactorError("the model's stream ended without a response")
    if hasattr(parent, "add_usage"):
        parent.add_usage(response.usage, request.model.cost(response.usage))
    return response.text


async def summarize(
    ctx: PhaseContext,
    config: CompactConfig,
    counter: TokenCounter,
    previous: str | None,
    span: Sequence[Message],
) -> SummaryResult:
    """Fold ``span`` into ``previous``; raises :class:`CompactorError` on failure."""
    summary = previous
    calls = 0
    for blocks in _chunks(span, counter, config.max_compactor_input_tokens):
        calls += 1
        try:
            if config.compactor_agent is not None:
                prompt = compactor_prompt(summary, blocks, config.summary_max_tokens)
                text = await _ask_agent(ctx, config.compactor_agent, prompt)
            else:
                material = compactor_input(summary, blocks)
                text = await _ask_model(ctx, material, config.summary_max_tokens)
        except CompactorError:
            raise
        except Exception as exc:
            raise CompactorError(f"{type(exc).__name__}: {exc}") from exc
        text = text.strip()
        if not text:
            raise CompactorError("the compactor returned an empty summary")
        summary = text
    if summary is None:  # pragma: no cover - span is never empty
        raise CompactorError("nothing to summarize")
    return SummaryResult(summary, calls)
