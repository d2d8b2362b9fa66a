"""Plugins and slots (docs/plugins.md): folders with ``plugin.yaml`` or ``exo.plugins`` entry points."""

from exo_core.plugins.context import SLOTS, PluginCommand, PluginContext
from exo_core.plugins.host import ENTRY_POINT_GROUP, PluginHost, PluginRecord
from exo_core.plugins.plugin_yaml import PluginManifest, parse_manifest_text, read_manifest

__all__ = [
    "PluginHost",
    "PluginRecord",
    "PluginContext",
    "PluginCommand",
    "PluginManifest",
    "SLOTS",
    "ENTRY_POINT_GROUP",
    "parse_manifest_text",
    "read_manifest",
]
