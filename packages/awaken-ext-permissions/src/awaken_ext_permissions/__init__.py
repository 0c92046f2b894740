"""awaken-ext-permissions: allow / deny / ask rules on tool calls for Awaken agents.

Enable the ``permissions`` plugin on an agent (``plugin_ids=["permissions"]``)
and configure rules under ``plugin_config["permissions"]``. Denied calls are
blocked with a model-visible error (and tools denied outright are hidden),
asks suspend the run with ``AwaitReason.TOOL_PERMISSION`` until a human
approves or denies, optionally remembering the answer for the thread or the
profile. See the package README for the rule language and precedence.
"""

from ._arguments import ArgumentViews, Views, normalize_path, split_shell
from ._audit import AUDIT_KEY, AuditScope, audit_command
from ._config import ConditionSpec, PermissionsConfig, RuleSpec
from ._explain import explain
from ._matchers import compile_conditions, compile_tool, glob_regex, resolve_path
from ._model import Behavior, Condition, Operator, Rule, Segment, ToolKind, render_path
from ._parser import (
    RuleSyntaxError,
    make_condition,
    parse_condition,
    parse_path,
    parse_rule,
    parse_rule_line,
)
from ._plugin import MANIFEST, PLUGIN_ID, PermissionsPlugin, deny_message
from ._policy import Policy, Verdict, VerdictSource
from ._remember import REMEMBERED_KEY, call_key, remember_command, remembered

__version__ = "0.1.0"

__all__ = [
    "AUDIT_KEY",
    "MANIFEST",
    "PLUGIN_ID",
    "REMEMBERED_KEY",
    "ArgumentViews",
    "AuditScope",
    "Behavior",
    "Condition",
    "ConditionSpec",
    "Operator",
    "PermissionsConfig",
    "PermissionsPlugin",
    "Policy",
    "Rule",
    "RuleSpec",
    "RuleSyntaxError",
    "Segment",
    "ToolKind",
    "Verdict",
    "VerdictSource",
    "Views",
    "__version__",
    "audit_command",
    "call_key",
    "compile_conditions",
    "compile_tool",
    "deny_message",
    "explain",
    "glob_regex",
    "make_condition",
    "normalize_path",
    "parse_condition",
    "parse_path",
    "parse_rule",
    "parse_rule_line",
    "remember_command",
    "remembered",
    "render_path",
    "resolve_path",
    "split_shell",
]
