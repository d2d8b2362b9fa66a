"""The command palette (ctrl+p): everything the client can do, found by fuzzy typing."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Entry", "Palette", "fuzzy_score"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One palette entry: what it says and the input line it runs (a ``/`` command)."""

    label: str
    run: str


def fuzzy_score(query: str, text: str) -> int | None:
    """How well ``query``'s letters appear in order in ``text`` (higher is better); ``None`` if not."""
    if not query:
        return 0
    q, t = query.lower(), text.lower()
    score, at, streak = 0, 0, 0
    for ch in q:
        found = t.find(ch, at)
        if found < 0:
            return None
        streak = streak + 1 if found == at else 0
        starts_word = found == 0 or not t[found - 1].isalnum()
        score += 1 + 2 * streak + (3 if starts_word else 0) - min(found - at, 5)
        at = found + 1
    return score


class Palette:
    """An open palette: a query, its matches and the selected one."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.query = ""
        self.selected = 0

    def matches(self, limit: int = 8) -> list[Entry]:
        """The best entries for the query, best first."""
        scored: list[tuple[int, int, Entry]] = []
        for i, e in enumerate(self.entries):
            s = fuzzy_score(self.query, e.label)
            if s is not None:
                scored.append((s, i, e))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [e for _s, _i, e in scored[:limit]]

    def key(self, key: str) -> Entry | None | bool:
        """Handle a key: the chosen entry on enter, ``False`` to close, ``None`` to stay open."""
        if key == "esc" or key == "ctrl+p":
            return False
        if key == "enter":
            found = self.matches()
            return found[min(self.selected, len(found) - 1)] if found else False
        if key == "up":
            self.selected = max(0, self.selected - 1)
        elif key == "down":
            self.selected = min(len(self.matches()) - 1, self.selected + 1)
        elif key == "backspace":
            self.query = self.query[:-1]
            self.selected = 0
        elif len(key) == 1:
            self.query += key
            self.selected = 0
        return None
