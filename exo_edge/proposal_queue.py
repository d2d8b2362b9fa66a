"""The proposal queue: work that needs a larger model waits here, durably, until one is reachable.

It lives in ``exo_edge`` (docs/architecture.md: the edge package holds the proposal
queue and its drainer); the core's learner only calls ``put`` on whatever queue it
is given, and ``[learning]`` settings are read by
:class:`exo_core.learning.service.LearningSettings`.

On a small device the local model cannot reflect well or judge. The learner
puts such work (``reflect`` a lesson's wording, ``judge`` an eval item) in a
SQLite queue with all its inputs; :func:`drain` sends it in batches to a
route to a larger model (the laptop's server over the LAN, or a hosted model
the person allowed) when one answers, under a monthly cost ceiling.

A ``decide`` job (an abstained decision, ``exo_core/decisions/escalation.py``)
is asked as exod's live larger model asks (:func:`exo_core.decisions.logprobs.logprob_request`:
the chat turns, one token, ``top_logprobs``) and read the same way
(:func:`~exo_core.decisions.logprobs.read_top`), then calibrated with the book
fitted from the ledger's labels and held to the question's threshold by a
:class:`~exo_core.decisions.decider.Decider`: its ``decision`` entry has the
live path's shape, with the option probabilities, and a chosen option only when
the top one reaches the threshold. An engine that sends no log probabilities
gets an abstention with the reason (``no_logprobs``), never a made-up number.
For the signal question a chosen option also gets, in the same transaction,
the verdict or stated rule it teaches
(:func:`exo_core.learning.signal_entry.signal_entry`, the entry exod records
live, at the decision's probability), under ``queue:<key>:verdict`` /
``queue:<key>:rule``.

Exactly-once effects: a job's result is appended to the ledger with the
idempotency key ``queue:<key>``, and the job is marked done only after that.
A drainer killed between the model's answer and the append asks again; one
killed after the append finds the entry and marks the job done without
calling the model. A route that drops mid-batch stops the batch; the
unfinished jobs stay queued.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from exo_core.decisions.calibration import CalibrationBook
from exo_core.decisions.decider import Decider
from exo_core.decisions.escalation import queued_question
from exo_core.decisions.logprobs import logprob_request, read_top
from exo_core.decisions.record import decision_body
from exo_core.decisions.setup import calibration_from_ledger
from exo_core.decisions.uses import SIGNAL
from exo_core.errors import BadBodyError, ModelError, StorageError
from exo_core.learning.reflected import (
    EXPLAIN,
    PICK_TOOL,
    explain_prompt,
    explain_tool,
    read_reflection,
    reflected_proposal,
)
from exo_core.learning.reviewer import LEARNING_SOURCE
from exo_core.learning.signal_entry import SignalEntry, signal_entry
from exo_core.ledger.entry import NewEntry
from exo_core.ledger.ledger import Ledger
from exo_core.seams.decision import Decision, Question
from exo_core.seams.model import (
    ChatMessage,
    ModelRequest,
    ModelTransport,
    TextDelta,
    ToolCallChunk,
    TopTokens,
    UsageChunk,
)

__all__ = ["Job", "ProposalQueue", "DrainReport", "drain", "drained_provider", "prompt_for"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
  inputs TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0,
  created REAL NOT NULL, done_at REAL, result TEXT, cost REAL NOT NULL DEFAULT 0, error TEXT);
CREATE TABLE IF NOT EXISTS spend(month TEXT PRIMARY KEY, cost REAL NOT NULL);
"""
KINDS = ("reflect", "judge", "decide")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """One queued piece of work."""

    id: int
    key: str
    kind: str
    inputs: dict[str, Any]
    state: str
    attempts: int


class ProposalQueue:
    """A durable FIFO of jobs in one SQLite file (synchronous=FULL: a put survives a SIGKILL)."""

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # exod's reviewer puts from a worker thread: the connection may cross threads, one call at a time.
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=10, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the proposal queue {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            with self._lock:
                return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"proposal queue {self.path}: {exc}") from exc

    def put(self, kind: str, inputs: dict[str, Any], *, key: str) -> bool:
        """Queue a job once per ``key``; False when that key was already queued (or done)."""
        if kind not in KINDS:
            raise BadBodyError(f"unknown job kind {kind!r}; kinds: {', '.join(KINDS)}", field="kind")
        before = self._run("SELECT count(*) FROM jobs WHERE key=?", (key,))[0][0]
        self._run(
            "INSERT OR IGNORE INTO jobs(key, kind, inputs, created) VALUES (?, ?, ?, ?)",
            (key, kind, json.dumps(inputs, sort_keys=True), self.clock()),
        )
        return before == 0

    def pending(self, limit: int = 100) -> list[Job]:
        """Queued jobs, oldest first."""
        rows = self._run(
            "SELECT id, key, kind, inputs, state, attempts FROM jobs WHERE state='queued' ORDER BY id LIMIT ?", (limit,)
        )
        return [Job(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def finish(self, job: Job, result: str, cost: float) -> None:
        """Mark ``job`` done with its ledger entry id, and add its cost to this month's spend."""
        month = self.month()
        try:
            with self._lock, self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "UPDATE jobs SET state='done', done_at=?, result=?, cost=? WHERE id=?",
                    (self.clock(), result, cost, job.id),
                )
                self._db.execute(
                    "INSERT INTO spend(month, cost) VALUES (?, ?) ON CONFLICT(month) "
                    "DO UPDATE SET cost = cost + excluded.cost",
                    (month, cost),
                )
        except sqlite3.Error as exc:
            raise StorageError(f"proposal queue {self.path}: {exc}") from exc

    def failed_attempt(self, job: Job, error: str) -> None:
        """Count a failed try; the job stays queued."""
        self._run("UPDATE jobs SET attempts = attempts + 1, error=? WHERE id=?", (error[:500], job.id))

    def give_up(self, job: Job, error: str) -> None:
        """Set ``job`` aside for good (state ``failed``, with why): it can never be asked, so it must not hold
        up the jobs behind it. ``exo learn status`` counts it; nothing deletes it."""
        self._run("UPDATE jobs SET state='failed', attempts = attempts + 1, error=? WHERE id=?", (error[:500], job.id))

    def counts(self) -> dict[str, int]:
        """Jobs per state."""
        return {r[0]: r[1] for r in self._run("SELECT state, count(*) FROM jobs GROUP BY state")}

    def month(self) -> str:
        """This month as ``YYYY-MM`` (UTC)."""
        return _dt.datetime.fromtimestamp(self.clock(), tz=_dt.UTC).strftime("%Y-%m")

    def spent(self, month: str | None = None) -> float:
        """Cost spent in ``month`` (default this month)."""
        rows = self._run("SELECT cost FROM spend WHERE month=?", (month or self.month(),))
        return float(rows[0][0]) if rows else 0.0


@dataclass(frozen=True, slots=True)
class DrainReport:
    """One drain: jobs done by a model call, jobs found already done, why it stopped, what it cost, and jobs
    set aside because their stored inputs make no request (:meth:`ProposalQueue.give_up`)."""

    done: int
    already: int
    stopped: str
    cost: float
    set_aside: int = 0


def prompt_for(job: Job) -> ModelRequest:
    """The larger model's request for ``job``."""
    i = job.inputs
    if job.kind == "reflect" and EXPLAIN in i:  # an edit the catalog cannot explain (exo_core/learning/reflected.py)
        # A selection, not a sentence: the line's number through a required tool whose schema an engine
        # can enforce (llama_cpp.server turns it into a grammar); the learner derives the lesson from it.
        system, user = explain_prompt(i)
        return ModelRequest(
            messages=(ChatMessage("system", system), ChatMessage("user", user)),
            tools=(explain_tool(i),),
            tool_choice=PICK_TOOL,
            max_tokens=24,
            temperature=0.0,
            role=str(i.get("role", "aux")),
        )
    if job.kind == "reflect":
        system = (
            "You write one lesson about a person's taste as a single positive sentence: "
            "'Wants Y, not X, because Z.' Use only the evidence given. One line, no preamble."
        )
        user = f"Current wording: {i['claim']}\nEvidence:\n" + "\n".join(
            f"- {e.get('verdict')}: draft {e.get('draft', '')!r} -> {e.get('text', '')!r}" for e in i["evidence"]
        )
    elif job.kind == "decide":  # an abstained decision (exo_core/decisions/escalation.py)
        # As the live larger model is asked: the chat turns over the redacted message, one token, top_logprobs.
        return logprob_request(queued_question(i), str(i["state"]), role=str(i.get("role", "decision")))
    else:
        system = "Score how well the reply meets the criterion, from 0 to 1. Answer with the number only."
        user = f"Criterion: {i['criterion']}\nReply: {i['reply']}"
    return ModelRequest(
        messages=(ChatMessage("system", system), ChatMessage("user", user)),
        max_tokens=120,
        temperature=0.2,
        role=str(i.get("role", "aux")),
    )


def _done_in_ledger(ledger: Ledger, key: str) -> str | None:
    rows = ledger.query("SELECT CAST(id AS BLOB) FROM entries WHERE idem=?", (f"queue:{key}",))
    return bytes(rows[0][0]).decode("ascii") if rows else None


def _record(ledger: Ledger, job: Job, text: str) -> str:
    idem = f"queue:{job.key}"
    if job.kind == "reflect" and EXPLAIN in job.inputs:
        return _record_explained(ledger, job, text, idem)
    if job.kind == "reflect":
        claim = text.strip().splitlines()[0].strip() if text.strip() else ""
        body = {
            "target": job.inputs["target"],
            "revises": job.inputs["proposal"],
            "claim": claim,
            "source": LEARNING_SOURCE,
            "by": "reflection",
        }
        return ledger.append("proposal", body, refs=(job.inputs["proposal"],), idem=idem).id
    found = re.search(r"[01](?:\.\d+)?", text)
    score = min(1.0, float(found.group())) if found else 0.0
    body = {
        "decider": "judge",
        "item": str(job.inputs["item"]),
        "sample": int(job.inputs.get("sample", 0)),
        "score": score,
    }
    return ledger.append("decision", body, idem=idem).id


def _record_explained(ledger: Ledger, job: Job, text: str, idem: str) -> str:
    """The larger model's lesson for an unexplained edit: a proposal citing the person's edit, or, when its
    answer is unusable (no line chosen, or a line whose marker the correction does not support), a
    ``decision`` whose ``reason`` label says why (decision entries hold labels, never raw text).

    Never a lesson on the model's word alone: the proposal's only evidence is the person's edit, and the
    lesson book recomputes its stance from the texts (docs/learning.md §6)."""
    verdict = str(job.inputs[EXPLAIN])
    read = read_reflection(text, job.inputs)
    if read.why:
        body = {
            "decider": "reflection",
            "item": verdict,
            "kept": "no",
            "reason": read.why,
            "source": LEARNING_SOURCE,
        }
        return ledger.append("decision", body, refs=(verdict,), idem=idem).id
    proposal = reflected_proposal(read.claim, read.marker, verdict)
    return ledger.append("proposal", proposal, refs=(verdict,), idem=idem).id


def drained_provider(route: str | None) -> str:
    """The provider name a drained decision is recorded and calibrated under: ``<route>:chat``, the name exod's
    live larger model has on the same route (docs/decisions.md §7a: the same request and reading give the same
    numbers, so one calibration serves both); ``queue:chat`` when the drain is not told its route."""
    return f"{route or 'queue'}:chat"


class _Answered:
    """The larger model's streamed answer to a queued decision as a provider, so a :class:`Decider` calibrates
    and thresholds it exactly as a live decision is: the options' shares of its first ``top`` tokens, or
    :class:`~exo_core.decisions.logprobs.NoLogprobs` when the engine sent none."""

    timeout = 60.0  # never reached: the answer is already here

    def __init__(self, name: str, top: TopTokens | None) -> None:
        self.name = name
        self.top = top

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        return read_top(question, self.top, provider=self.name)


async def _record_decide(
    ledger: Ledger, job: Job, top: TopTokens | None, *, provider: str, calibration: CalibrationBook, seconds: float
) -> str:
    """The larger model's answer to a queued decision: a ``decision`` entry referring to the device's one.

    The body is a live decision's (:func:`~exo_core.decisions.record.decision_body`: the state's hash, the
    raw and the used probabilities, ``chosen`` only at or above the threshold, the failure when the engine
    gave no probabilities) plus ``source: queue``; ``escalate`` is null, as the queue was where it went. A
    signal decision also appends, in the same transaction, the verdict or rule it teaches
    (:func:`_signal_follow_up`), so a retried drain records it exactly once with the decision."""
    question = queued_question(job.inputs)
    state = str(job.inputs["state"])
    decided = await Decider([_Answered(provider, top)], calibration=calibration).decide(question, state, record=False)
    decision = replace(decided, seconds=seconds, escalate=None)
    for name, reason in decision.failures:
        log.warning(
            "queued %s decision %s: %s gave no option probabilities (%s), so it is recorded as an abstention; "
            "a learning route to an engine that returns top_logprobs (llama-cpp-python's server) answers it",
            question.mechanism,
            job.key,
            name,
            reason,
        )
    body = {**decision_body(question, state, decision), "source": "queue"}
    refs = (str(job.inputs["entry"]),) if job.inputs.get("entry") else ()
    entries = [NewEntry("decision", body, refs, idem=f"queue:{job.key}")]
    follow = _signal_follow_up(ledger, job, decision)
    if follow is not None:
        entries.append(NewEntry(follow.kind, follow.body, follow.refs, idem=f"queue:{job.key}:{follow.kind}"))
    return ledger.append_many(entries)[0].id


def _signal_follow_up(ledger: Ledger, job: Job, decision: Decision) -> SignalEntry | None:
    """What a drained signal decision teaches (the same entry exod records live), or ``None``.

    Only for the signal question with the session in its context, and only for a chosen option (at its
    probability, as the live path records it); a correction's draft must be an entry of this ledger (else
    the append would fail and the job would block the queue for good)."""
    i = job.inputs
    context = i.get("context")
    if i.get("mechanism") != SIGNAL.mechanism or not isinstance(context, dict) or not context.get("session"):
        return None
    chosen = decision.chosen
    if chosen is None:
        return None
    draft = context.get("draft")
    if draft is not None:
        draft = str(draft)
        if not ledger.query("SELECT 1 FROM entries WHERE id=?", (draft,)):
            log.warning("a queued signal's draft %s is not in this ledger; no verdict is recorded for it", draft)
            draft = None
    probability = float(decision.probabilities[chosen])
    return signal_entry(chosen, str(i["state"]), session=str(context["session"]), draft=draft, probability=probability)


async def drain(
    queue: ProposalQueue,
    transport: ModelTransport,
    ledger: Ledger,
    *,
    batch: int = 8,
    ceiling: float = 1.0,
    route: str | None = None,
    calibration: CalibrationBook | None = None,
) -> DrainReport:
    """Send up to ``batch`` queued jobs to ``transport``; stop at the first failure or at the ceiling.

    ``route`` is the route ``transport`` answers on (a queued decision is recorded as
    :func:`drained_provider`'s name for it); ``calibration`` is what a queued decision is calibrated with
    (default: the book fitted from ``ledger``'s labelled decisions, once per drain, when a ``decide`` job is met).
    A route that fails (an HTTP error, a 429, a dropped stream) leaves its job queued; an answer without log
    probabilities is the job's answer: an abstention that says so."""
    done = already = set_aside = 0
    cost = 0.0
    book = calibration
    for job in queue.pending(batch):
        found = _done_in_ledger(ledger, job.key)
        if found is not None:
            queue.finish(job, found, 0.0)
            already += 1
            continue
        if queue.spent() >= ceiling:
            return DrainReport(done, already, "ceiling", cost, set_aside)
        try:
            request = prompt_for(job)
        except (KeyError, TypeError, ValueError, BadBodyError) as exc:
            # a row written by an older version or edited by hand: no answer can ever be asked for it
            reason = f"its stored inputs make no request ({type(exc).__name__}: {exc})"
            log.warning("queued %s job %s is set aside: %s", job.kind, job.key, reason)
            queue.give_up(job, reason)
            set_aside += 1
            continue
        text, used, top = [], 0.0, None
        started = time.monotonic()
        try:
            async for chunk in transport.stream(request):
                if isinstance(chunk, TextDelta):
                    text.append(chunk.text)
                elif isinstance(chunk, ToolCallChunk):  # a required tool's answer (a reflection's line)
                    text.append(json.dumps(chunk.call.arguments))
                elif isinstance(chunk, TopTokens) and top is None:  # a decision's first token (logprob_request)
                    top = chunk
                elif isinstance(chunk, UsageChunk):
                    used = chunk.cost
        except ModelError as exc:
            queue.failed_attempt(job, str(exc))
            return DrainReport(done, already, f"route unavailable: {exc}", cost, set_aside)
        if job.kind == "decide":
            if book is None:
                book = calibration_from_ledger(ledger)
            seconds = time.monotonic() - started
            result = await _record_decide(
                ledger, job, top, provider=drained_provider(route), calibration=book, seconds=seconds
            )
        else:
            result = _record(ledger, job, "".join(text))
        queue.finish(job, result, used)
        done += 1
        cost += used
    return DrainReport(done, already, "empty" if not queue.pending(1) else "batch", cost, set_aside)
