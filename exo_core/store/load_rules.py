"""The router: ``INDEX.md`` files whose load rules pin nodes for a request.

The root ``INDEX.md`` lists the domains; each ``<domain>/INDEX.md`` lists its
load rules. Both are plain Markdown so they read well in any editor. A load
rule is one list item under a ``## Load rules`` heading::

    ## Load rules
    - commit message | git commit -> [[taste/commit-style]]
    - travel booking -> [[rules/ask-before-paying]], [[self/home-city]]

Left of ``->`` is the trigger text: alternatives separated by ``|``; an
alternative matches a request that contains all of its words. Right of it are
the node ids it pins. The router holds pointers, never copies (docs/store.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from exo_core.store.errors import StoreFormatError

__all__ = ["LoadRule", "Router", "parse_router", "WIKILINK", "wikilinks"]

WIKILINK = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_RULES_HEADING = re.compile(r"#{2,3}\s+load rules\s*", re.IGNORECASE)
_HEADING = re.compile(r"#{1,6}\s")
_RULE = re.compile(r"[-*]\s+(?P<trigger>.+?)\s+->\s+(?P<targets>.+)")
_WORD = re.compile(r"[\w']+")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)


@dataclass(frozen=True, slots=True)
class LoadRule:
    """One load rule: trigger alternatives and the node ids it pins."""

    trigger: str
    targets: tuple[str, ...]
    line: int

    def matches(self, request: str) -> bool:
        """True when every word of some ``|`` alternative occurs in ``request``."""
        words = {w.lower() for w in _WORD.findall(request)}
        alternatives = ({w.lower() for w in _WORD.findall(alt)} for alt in self.trigger.split("|"))
        return any(alt and alt <= words for alt in alternatives)


@dataclass(frozen=True, slots=True)
class Router:
    """A parsed INDEX.md: its load rules and every ``[[link]]`` with its line."""

    path: Path | None
    rules: tuple[LoadRule, ...]
    links: tuple[tuple[str, int], ...]

    def pins(self, request: str) -> tuple[str, ...]:
        """Node ids pinned for ``request``, in rule order, without repeats."""
        return tuple(dict.fromkeys(target for rule in self.rules if rule.matches(request) for target in rule.targets))


def _uncommented(text: str) -> str:
    # HTML comments hide the links and rules inside them; their newlines stay so line numbers hold.
    return _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)


def wikilinks(text: str) -> list[tuple[str, int]]:
    """Every ``[[target]]`` in ``text`` with its 1-based line, skipping HTML comments and code."""
    found: list[tuple[str, int]] = []
    in_fence = False
    for number, line in enumerate(_uncommented(text).split("\n"), start=1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            found.extend((m.group(1).strip(), number) for m in WIKILINK.finditer(line))
    return found


def parse_router(text: str, *, path: Path | str | None = None) -> Router:
    """Parse an INDEX.md; a malformed load rule raises :class:`StoreFormatError` with its line."""
    rules: list[LoadRule] = []
    in_rules = False
    for number, raw in enumerate(_uncommented(text).split("\n"), start=1):
        line = raw.strip()
        if _HEADING.match(line):
            in_rules = bool(_RULES_HEADING.fullmatch(line))
            continue
        if not in_rules or not line.startswith(("- ", "* ")):
            continue  # prose under the heading explains the rules
        match = _RULE.fullmatch(line)
        if not match:
            raise StoreFormatError(
                "load rule must look like '- trigger words -> [[domain/node]]'", path=path, line=number, rule="router"
            )
        targets = tuple(t for t, _ in wikilinks(match["targets"]))
        if not targets or WIKILINK.sub("", match["targets"]).replace(",", "").strip():  # no text but links and commas
            raise StoreFormatError(
                "a load rule's targets must be [[node ids]] separated by commas", path=path, line=number, rule="router"
            )
        if not _WORD.search(match["trigger"]):
            raise StoreFormatError("a load rule needs trigger words before '->'", path=path, line=number, rule="router")
        rules.append(LoadRule(match["trigger"].strip(), targets, number))
    return Router(Path(path) if path is not None else None, tuple(rules), tuple(wikilinks(text)))
