"""awaken-ext-skills: progressively loaded skills for Awaken agents.

Enable the ``skills`` plugin on an agent (``plugin_ids=["skills"]``). Before
each inference the model sees a compact catalog of skills; it activates one
with the ``skill`` tool, which loads the skill's instructions for the rest of
the thread; it reads the skill's files with ``load_skill_resource`` and, when
enabled, runs its scripts with ``skill_script``. See the package README.
"""

from ._catalog import render_catalog
from ._config import SkillsConfig
from ._errors import DuplicateSkillError, SkillError, SkillProblem, SkillWarning
from ._hook import ACTIVE_KEY_PREFIX, CATALOG_KEY, NOTICE_KEY, SkillsHook
from ._paths import PathRefused, confine
from ._plugin import MANIFEST, PLUGIN_ID, SkillsPlugin
from ._registry import PACK_HOOK, SkillRegistry, SkillSource
from ._resources import RESOURCE_AREAS, read_resource
from ._scripts import ScriptLimits, ScriptResult, run_script
from ._skill import InvalidSkillError, Skill, SkillArgument, load_skill
from ._state import ACTIVE_SKILLS, ActiveSkill
from ._tools import RESOURCE_TOOL, SCRIPT_TOOL, SKILL_TOOL
from ._version import __version__

__all__ = [
    "ACTIVE_KEY_PREFIX",
    "ACTIVE_SKILLS",
    "CATALOG_KEY",
    "MANIFEST",
    "NOTICE_KEY",
    "PACK_HOOK",
    "PLUGIN_ID",
    "RESOURCE_AREAS",
    "RESOURCE_TOOL",
    "SCRIPT_TOOL",
    "SKILL_TOOL",
    "ActiveSkill",
    "DuplicateSkillError",
    "InvalidSkillError",
    "PathRefused",
    "ScriptLimits",
    "ScriptResult",
    "Skill",
    "SkillArgument",
    "SkillError",
    "SkillProblem",
    "SkillRegistry",
    "SkillSource",
    "SkillWarning",
    "SkillsConfig",
    "SkillsHook",
    "SkillsPlugin",
    "__version__",
    "confine",
    "load_skill",
    "read_resource",
    "render_catalog",
    "run_script",
]
