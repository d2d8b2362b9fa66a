"""Rebuildable views: state computed from the ledger, never the other way round.

A view is computed by a :class:`ViewBuilder` from an **empty state** by
replaying every entry of every segment in arrival order. ``rebuild`` never
reads the view's current file (a rebuild on top of current state would keep
whatever was written outside the ledger), and never skips a segment (a
rebuild that read only the main chain would silently drop a synced fork).

Views are written as canonical JSON files under ``<store>/indexes/ledger/``,
so deleting them and rebuilding gives byte-identical files. Later issues
register more builders (taste, beliefs' weights, use counts) in
:data:`DEFAULT_VIEWS` or their own :class:`ViewRegistry`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Protocol

from exo_core.errors import ConflictError, NotFoundError, StorageError
from exo_core.ledger.canonical import canonical_json
from exo_core.ledger.entry import StoredEntry
from exo_core.ledger.ledger import Ledger

__all__ = [
    "ViewBuilder",
    "ViewRegistry",
    "KindSummaryView",
    "RefIndexView",
    "DEFAULT_VIEWS",
    "views_dir",
    "rebuild_views",
    "render_views",
]


class ViewBuilder(Protocol):
    """Builds one view from scratch. ``fresh()`` must not read any stored view."""

    name: str

    def fresh(self) -> Any:
        """A new, empty state."""
        ...

    def apply(self, state: Any, entry: StoredEntry) -> None:
        """Fold one entry into ``state`` (entries arrive in causal arrival order)."""
        ...

    def render(self, state: Any) -> bytes:
        """The view's file bytes; must be deterministic for equal states."""
        ...


class KindSummaryView:
    """Counts per kind (with first and last time), per scope and per segment."""

    name = "kind_summary"

    def fresh(self) -> dict[str, Any]:
        """An empty summary."""
        return {"entries": 0, "kinds": {}, "scopes": Counter(), "segments": Counter()}

    def apply(self, state: dict[str, Any], entry: StoredEntry) -> None:
        """Count ``entry``."""
        state["entries"] += 1
        row = state["kinds"].setdefault(entry.kind, {"count": 0, "first_ts": entry.ts, "last_ts": entry.ts})
        row["count"] += 1
        row["first_ts"] = min(row["first_ts"], entry.ts)
        row["last_ts"] = max(row["last_ts"], entry.ts)
        state["scopes"][entry.scope] += 1
        state["segments"][str(entry.seg)] += 1

    def render(self, state: dict[str, Any]) -> bytes:
        """Canonical JSON of the summary plus a newline."""
        return canonical_json({"view": self.name, **state}, field=self.name) + b"\n"


class RefIndexView:
    """Backlinks: for each referenced entry id, the ids that refer to it (arrival order),
    and for each judged entry its verdicts (the learning loop's main input)."""

    name = "ref_index"

    def fresh(self) -> dict[str, dict[str, list[Any]]]:
        """Empty backlink and verdict maps."""
        return {"backlinks": {}, "verdicts": {}}

    def apply(self, state: dict[str, dict[str, list[Any]]], entry: StoredEntry) -> None:
        """Record ``entry``'s refs (and its verdict, if it is one)."""
        for ref in entry.refs:
            state["backlinks"].setdefault(ref, []).append(entry.id)
        if entry.kind == "verdict":
            verdict = {"id": entry.id, "verdict": entry.body["verdict"]}
            state["verdicts"].setdefault(entry.body["judged"], []).append(verdict)

    def render(self, state: dict[str, dict[str, list[Any]]]) -> bytes:
        """Canonical JSON of the index plus a newline."""
        return canonical_json({"view": self.name, **state}, field=self.name) + b"\n"


class ViewRegistry:
    """Named view builders; names are unique and become file names."""

    def __init__(self, builders: Iterable[ViewBuilder] = ()) -> None:
        self._builders: dict[str, ViewBuilder] = {}
        for builder in builders:
            self.register(builder)

    def register(self, builder: ViewBuilder) -> None:
        """Add ``builder``; a second builder with the same name is a ConflictError."""
        if not builder.name.isidentifier():
            raise ConflictError(f"view name {builder.name!r} must be an identifier (it names a file)")
        if builder.name in self._builders:
            raise ConflictError(f"a view named {builder.name!r} is already registered")
        self._builders[builder.name] = builder

    def names(self) -> list[str]:
        """Registered view names in registration order."""
        return list(self._builders)

    def select(self, only: Collection[str] | None) -> list[ViewBuilder]:
        """The builders named in ``only`` (all when None); unknown names raise NotFoundError."""
        if only is None:
            return list(self._builders.values())
        unknown = sorted(set(only) - set(self._builders))
        if unknown:
            raise NotFoundError(f"no view named {', '.join(unknown)}; known: {', '.join(self._builders)}")
        return [self._builders[name] for name in self._builders if name in only]


DEFAULT_VIEWS = ViewRegistry([KindSummaryView(), RefIndexView()])


def views_dir(store_dir: str | Path) -> Path:
    """Where ledger views live in a store: ``<store>/indexes/ledger``."""
    return Path(store_dir) / "indexes" / "ledger"


def render_views(
    ledger: Ledger, *, registry: ViewRegistry = DEFAULT_VIEWS, only: Collection[str] | None = None
) -> dict[str, bytes]:
    """Compute views in memory: one replay of every entry, all segments, from empty states."""
    builders = registry.select(only)
    states = [builder.fresh() for builder in builders]
    for entry in ledger.entries():
        for builder, state in zip(builders, states, strict=True):
            builder.apply(state, entry)
    return {builder.name: builder.render(state) for builder, state in zip(builders, states, strict=True)}


def rebuild_views(
    ledger: Ledger, out_dir: str | Path, *, registry: ViewRegistry = DEFAULT_VIEWS, only: Collection[str] | None = None
) -> dict[str, Path]:
    """Recompute views from an empty state and write ``<out_dir>/<name>.json``."""
    from exo_core.atomic import atomic_write_bytes  # the store package imports this one
    from exo_core.private_files import private_dir

    out = Path(out_dir)
    rendered = render_views(ledger, registry=registry, only=only)
    try:
        private_dir(out)
    except OSError as exc:
        raise StorageError(f"cannot write ledger views to {out}: {exc.strerror or exc}") from exc
    for name, data in rendered.items():
        # 0600: views are derived from the private ledger. A crash leaves the old file or the new one.
        atomic_write_bytes(out / f"{name}.json", data, mode=0o600)
    return {name: out / f"{name}.json" for name in rendered}
