"""Test fixtures for Awaken plugins and tools, shipped as a pytest plugin.

``pip install awaken-testing`` and the ``awaken`` fixture is available in
every test (see :mod:`awaken_testing.plugin`). Outside pytest, build a
:class:`PluginHarness` yourself.
"""

from ._harness import THREAD_ID, PluginHarness, PluginRig, installed_plugin
from ._result import REMOVED, KeyLike, RunResult, key_name

__all__ = [
    "REMOVED",
    "THREAD_ID",
    "KeyLike",
    "PluginHarness",
    "PluginRig",
    "RunResult",
    "installed_plugin",
    "key_name",
]
