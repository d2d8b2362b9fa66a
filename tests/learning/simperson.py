"""A simulated person with hidden taste, and a simulated assistant that reads the pack.

The person's taste is a hidden set of rules over the catalog's features
(eight about writing, one guarded about pushing). The assistant drafts
outputs for a mix of tasks, each stylistic feature switched on at random,
except that it follows the pack: an *enforced* lesson switches its feature
off, a *hint* switches it off half the time. The person judges every draft:
accepts it when nothing bothers them, otherwise edits it (fixing what they
noticed, sometimes also changing something they do not care about), says
what it should have been, or rejects it (with a reason half the time). They
miss a violation now and then, state two rules outright over the run, deny
every unasked push, and answer the loop's questions about drafts, never the
guarded one (so it must wait). Everything goes through the real ledger and
the real learner.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from exo_core.learning.features import CATALOG, feature
from exo_core.learning.pack import enforced, hints
from learnkit import DAY, Env

HIDDEN = (
    "preamble",
    "em_dash",
    "bullets_for_comparison",
    "exclamation",
    "emoji",
    "imperial_units",
    "us_dates",
    "sign_off",
)
GUARDED_HIDDEN = ("push",)
DISTRACTORS = ("long", "hedging", "code_unlabelled")
RULES_SAID = {5: "Please never use exclamation marks.", 11: "Use metric units, always."}
_FILLER = ("This section adds background on how the pieces fit together and why each step matters. " * 9).strip()

TASKS = {
    "answer": ("preamble", "em_dash", "exclamation", "emoji", "sign_off", "long", "hedging"),
    "comparison": ("preamble", "bullets_for_comparison", "em_dash", "hedging", "long", "sign_off"),
    "travel": ("preamble", "imperial_units", "us_dates", "em_dash", "exclamation", "emoji", "hedging"),
    "code": ("preamble", "code_unlabelled", "exclamation", "hedging", "sign_off", "em_dash"),
}


def render(task: str, on: frozenset[str]) -> str:
    """The draft of ``task`` with exactly the features in ``on``."""
    parts = []
    if "preamble" in on:
        parts.append("Sure, here is what I found.")
    hedge = "I think " if "hedging" in on else ""
    dash = " \u2014 " if "em_dash" in on else ". "
    if task == "answer":
        parts.append(f"{hedge}the build failed because the cache key changed{dash}clear it with make clean.")
    elif task == "comparison":
        parts.append(f"{hedge}Postgres vs SQLite for the sync server{dash}the short version:")
        if "bullets_for_comparison" in on:
            parts.append("- Postgres: concurrent writers, needs a server\n- SQLite: one file, one writer")
        else:
            parts.append(
                "| option | writers | setup |\n|---|---|---|\n| Postgres | many | server |\n| SQLite | one | a file |"
            )
    elif task == "travel":
        dist = "120 miles" if "imperial_units" in on else "193 km"
        day = "March 3, 2026" if "us_dates" in on else "2026-03-03"
        parts.append(f"{hedge}the drive is {dist}{dash}we leave on {day}.")
    else:
        fence = "```" if "code_unlabelled" in on else "```sh"
        parts.append(f"{hedge}run the tests{dash}then commit.\n{fence}\nmake test\n```")
    if "exclamation" in on:
        parts.append("Good luck!")
    if "emoji" in on:
        parts.append("\U0001f642")
    if "long" in on:
        parts.append(_FILLER)
    if "sign_off" in on:
        parts.append("Hope this helps.")
    return "\n\n".join(parts)


@dataclass
class Stats:
    """Per-session counts of the person's verdicts."""

    corrections: list[int] = field(default_factory=list)
    accepts: list[int] = field(default_factory=list)
    questions_answered: int = 0
    pushes_denied: int = 0

    def per_accept(self, sessions: slice) -> float:
        c, a = sum(self.corrections[sessions]), sum(self.accepts[sessions])
        return c / max(1, a)


class Simulation:
    """Runs ``sessions`` sessions of ``drafts`` drafts each through the learner."""

    def __init__(self, env: Env, seed: int = 7) -> None:
        self.env = env
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.open_questions: list[str] = []

    def _pack_state(self) -> tuple[set[str], set[str]]:
        book = self.env.learner.book
        now = book.last_ts
        return (
            {l.feature for l in enforced(book, now) if l.feature},
            {l.feature for l in hints(book, now) if l.feature},
        )

    def _draft_flags(self, task: str) -> frozenset[str]:
        strong, soft = self._pack_state()
        on = set()
        for key in TASKS[task]:
            if key in strong or (key in soft and self.rng.random() < 0.5):
                continue
            if self.rng.random() < 0.35:
                on.add(key)
        return frozenset(on)

    def _judge(self, task: str, on: frozenset[str], judged: str, session: str) -> None:
        env, rng = self.env, self.rng
        noticed = {k for k in sorted(on) if k in HIDDEN and rng.random() > 0.1}  # sorted: one run per seed
        noise = [k for k in sorted(on) if k in DISTRACTORS]
        if not noticed:
            if noise and rng.random() < 0.1:
                env.verdict(judged, "edit", session, text=render(task, on - {rng.choice(noise)}))
                self.stats.corrections[-1] += 1
            else:
                env.verdict(judged, "accept", session)
                self.stats.accepts[-1] += 1
            return
        fixed = on - noticed
        if noise and rng.random() < 0.25:
            fixed -= {rng.choice(noise)}
        roll = rng.random()
        self.stats.corrections[-1] += 1
        if roll < 0.7:
            env.verdict(judged, "edit", session, text=render(task, frozenset(fixed)))
        elif roll < 0.85:
            env.verdict(judged, "should_have_been", session, text=render(task, frozenset(fixed)))
        else:
            named = rng.choice(sorted(noticed))
            reason = f"no {feature(named).keywords[0]} please" if rng.random() < 0.5 else ""
            env.verdict(judged, "reject", session, reason=reason)

    def _push(self, session: str) -> None:
        approval = self.env.ledger.append(
            "approval",
            {
                "session": session,
                "tool": "bash",
                "summary": "git push origin main",
                "decision": "deny",
                "request_id": f"req-{session}",
            },
        )
        self.env.ledger.append(
            "action",
            {
                "session": session,
                "tool": "bash",
                "outcome": "ask",
                "arguments": {"command": "git push origin main"},
                "decision": "deny",
            },
            refs=(approval.id,),
        )
        self.stats.pushes_denied += 1

    def _answer(self, session: str) -> None:
        book = self.env.learner.book
        for qid in list(self.open_questions):
            q = book.index[qid].body
            targets = [o[0] for o in q["options"]]
            if any(t.startswith("rules/") for t in targets):
                continue  # the person leaves the guarded question unanswered: it must wait
            pick = next(
                (
                    i
                    for i, t in enumerate(targets, 1)
                    if t and book.lessons.get(t) is None or t and feature_of(t) in HIDDEN
                ),
                len(targets),
            )
            self.env.ledger.append(
                "utterance",
                {"text": q["labels"][pick - 1], "answer_to": qid, "option": pick, "session": session},
                refs=(qid,),
            )
            self.open_questions.remove(qid)
            self.stats.questions_answered += 1

    def run(self, sessions: int = 24, drafts: int = 5) -> Stats:
        env = self.env
        tasks = sorted(TASKS)
        for s in range(sessions):
            session = f"sess-{s:02d}"
            self.stats.corrections.append(0)
            self.stats.accepts.append(0)
            if s in RULES_SAID:
                env.ledger.append("rule", {"text": RULES_SAID[s], "session": session})
            if s % 4 == 2:
                self._push(session)
            for _ in range(drafts):
                task = self.rng.choice(tasks)
                on = self._draft_flags(task)
                judged = env.draft(render(task, on), session)
                self._judge(task, on, judged, session)
                env.clock.advance(600)
                report = env.learner.review()
                self.open_questions += list(report.questions)
                self._answer(session)
            env.clock.advance(DAY - drafts * 600)
        return self.stats


def feature_of(target: str) -> str:
    """The catalog feature whose lesson lives at ``target``."""
    return next((f.key for f in CATALOG if f.target == target), "")
