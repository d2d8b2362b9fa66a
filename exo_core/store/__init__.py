"""The principal store: one portable folder that is the person (docs/store.md).

Public API, one concept per module:

* :mod:`.frontmatter` — the strict YAML subset of node frontmatter;
* :mod:`.node`        — belief nodes and their schema;
* :mod:`.store_toml`  — ``STORE.toml``;
* :mod:`.load_rules`  — ``INDEX.md`` load rules;
* :mod:`.layout`      — where things live; curated versus private files;
* :mod:`.store`       — :class:`Store` (open, nodes, nesting) and :func:`init_store`;
* :mod:`.lint`        — ``exo store lint``;
* :mod:`.leaks`       — secret patterns and redaction;
* :mod:`.ledger_bridge` — the ledger as the store uses it (narrow protocols);
* :mod:`.items`       — ``items.sqlite``, written through the ledger;
* :mod:`.importers`   — bookmarks, Markdown notes, chat exports;
* :mod:`.export_manifest`, :mod:`.transfer`, :mod:`.verify` — export, import, verify;
* :mod:`.sync`        — ``exo store sync`` of two used copies;
* :mod:`.migrate`     — format migrations;
* :mod:`.onboard`     — the onboarding interview's steps (exod asks them: :mod:`exo_core.engine.onboarding`).

The package exports what opening and reading a store takes. Lint, export and
import, verify and sync are imported from their modules (``from
exo_core.store.lint import lint_store``): exod opens its store at start-up and
would otherwise hold them all, idle (docs/benchmarks.md §2).
"""

from exo_core.store.errors import ImportFormatError, StoreFormatError, StoreVersionError
from exo_core.store.items import Item, ItemStore, rebuild_items
from exo_core.store.load_rules import LoadRule, Router
from exo_core.store.node import Link, Node, parse_node, render_node
from exo_core.store.store import PERSON_SCOPE, Store, init_store, template_path
from exo_core.store.store_toml import CURRENT_FORMAT, StoreConfig

__all__ = [
    "CURRENT_FORMAT",
    "StoreConfig",
    "StoreFormatError",
    "StoreVersionError",
    "ImportFormatError",
    "Item",
    "ItemStore",
    "rebuild_items",
    "Node",
    "Link",
    "parse_node",
    "render_node",
    "LoadRule",
    "Router",
    "Store",
    "init_store",
    "template_path",
    "PERSON_SCOPE",
]
