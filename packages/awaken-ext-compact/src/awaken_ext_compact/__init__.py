"""awaken-ext-compact: token-counted summarizing compaction for Awaken agents.

Enable it with ``plugin_ids = ["compact"]``; configure it with
``[plugin_config.compact]`` (see :class:`CompactConfig`). A BEFORE_INFERENCE
hook counts the request with tiktoken (or an estimate when no encoding file
is available offline), and once it nears the model's context window folds
the older messages into a cumulative summary kept in thread state; requests
then carry the summary, the newest user message, the uncovered bridge and
the recent tail. The transcript is never edited. tiktoken is imported on
the first count, and only when compaction could trigger.
"""

from ._compactor import BUILTIN_PROMPT, CompactorError, compactor_prompt, render_message
from ._config import CompactConfig
from ._counter import PER_MESSAGE, PER_NAME, PER_TOOL_CALL, REPLY_PRIMING, TokenCounter
from ._cut import choose_cut, is_safe, safe_at_or_after, safe_at_or_before
from ._encodings import (
    CompactWarning,
    EncodingUnavailable,
    counting_encoding,
    encoding_for_model,
    load_encoding,
    search_dirs,
)
from ._estimate import EstimatedEncoding
from ._hook import CompactHook
from ._index import ThreadTokens
from ._plan import (
    DROPPED_KEY,
    PINNED_KEY,
    SUMMARY_BAND,
    SUMMARY_KEY,
    tool_result_cap,
    usable_input,
)
from ._plugin import PLUGIN_ID, CompactPlugin, compact_bound
from ._state import (
    BACKOFF,
    COUNTS,
    STATS,
    SUMMARY,
    CompactBackoff,
    CompactStats,
    Summary,
    TokenCheckpoint,
)
from ._window import REQUEST_WINDOW, core_supports_replacements, core_supports_request_window

__version__ = "0.1.0"

__all__ = [
    "BACKOFF",
    "BUILTIN_PROMPT",
    "COUNTS",
    "DROPPED_KEY",
    "PER_MESSAGE",
    "PER_NAME",
    "PER_TOOL_CALL",
    "PINNED_KEY",
    "PLUGIN_ID",
    "REPLY_PRIMING",
    "REQUEST_WINDOW",
    "STATS",
    "SUMMARY",
    "SUMMARY_BAND",
    "SUMMARY_KEY",
    "CompactBackoff",
    "CompactConfig",
    "CompactHook",
    "CompactPlugin",
    "CompactStats",
    "CompactWarning",
    "CompactorError",
    "EncodingUnavailable",
    "EstimatedEncoding",
    "Summary",
    "ThreadTokens",
    "TokenCheckpoint",
    "TokenCounter",
    "__version__",
    "choose_cut",
    "compact_bound",
    "compactor_prompt",
    "core_supports_replacements",
    "core_supports_request_window",
    "counting_encoding",
    "encoding_for_model",
    "is_safe",
    "load_encoding",
    "render_message",
    "safe_at_or_after",
    "safe_at_or_before",
    "search_dirs",
    "tool_result_cap",
    "usable_input",
]
