"""``SkillsConfig``: the ``plugin_config["skills"]`` table of an agent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SkillsConfig"]


class SkillsConfig(BaseModel):
    """Configuration of the ``skills`` plugin for one agent.

    Every field has a default, so an agent can enable the plugin with no
    table at all (it then sees the skill packs of installed distributions
    and anything registered on the plugin object).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[str] = Field(
        default_factory=list,
        description="Folders to read skills from: a skill folder, or a folder of skill "
        "folders. Relative paths are relative to the working directory.",
    )
    packs: bool = Field(
        default=True,
        description="Also read skill packs that installed distributions publish through "
        "the register_skills hook.",
    )
    catalog_max_entries: int = Field(default=100, ge=1, description="Most skills listed.")
    catalog_max_bytes: int = Field(
        default=8192, ge=256, description="UTF-8 size budget of the whole catalog text."
    )
    narrow_tools: bool = Field(
        default=True,
        description="While skills that declare allowed-tools are active, show only those "
        "tools plus the skill tools.",
    )
    max_reference_bytes: int = Field(
        default=64 * 1024, ge=1, description="references/ text beyond this is truncated."
    )
    max_asset_bytes: int = Field(
        default=1024 * 1024, ge=1, description="assets/ files larger than this are refused."
    )
    enable_scripts: bool = Field(
        default=False, description="Contribute the skill_script tool (off by default)."
    )
    script_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    max_script_output_bytes: int = Field(
        default=16 * 1024, ge=1, description="Bytes of stdout and of stderr kept, each."
    )
    max_script_args: int = Field(default=32, ge=0)
    max_script_arg_bytes: int = Field(default=4096, ge=1)
