"""What the person sees from the local base model: answers before and after the clean-up, same run.

    python -m benchmarks.bench_answers [--json] [--sets tuning,heldout]

One Gemma 3 270M transport (``models/gemma-3-270m.toml``) answers every
question twice, once with each prompt format (greedy decoding, so the two
differ only by the format):

* **before**: the manifest's ``[prompt]`` with the answer clean-up off and the
  stop list it had before (``BEFORE_STOP``), interrupted answers kept;
* **after**: the manifest's ``[prompt]`` as it is.

Two question sets: **tuning**, ``bench_models.QUESTIONS`` (the 50 the format
was chosen on), and **heldout**, ``benchmarks/data/heldout_questions.json``
(36 written before the clean-up was tuned: notes, general, conversational).
Each is asked with the person's notes as the pack, plain and with the bench's
three tools offered (``tool_choice="auto"``, as the agent loop asks), scored by
``bench_models``'s own scorer. Beside accuracy it counts the answers a person
would find broken: a stray quote (unmatched, or opening the answer), more than
one sentence (a run-on), or cut at the token limit.

Then the tool part of ``bench_models`` (6 requests that should call a tool, 6
questions that should stay text) in both formats, and **interrupted history**:
each held-out notes question asked after an earlier exchange whose answer the
person interrupted, rendered ``keep`` (partial text plus its mark) and
``drop`` (the exchange left out).

A full run writes $EXO_HOME/bench/answers.json (--update-results: benchmarks/results/).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, write_results
from benchmarks.bench_models import NO_TOOL, PERSON, QUESTIONS, TOOL_REQUESTS, TOOLS, _score
from exo_core.seams.model import (
    INTERRUPTED_MARK,
    ChatMessage,
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallChunk,
)

ROOT = Path(__file__).resolve().parents[1]


HELDOUT = ROOT / "benchmarks" / "data" / "heldout_questions.json"
BEFORE_STOP = ("\nQuestion:", "\n", "<eos>", "<end_of_turn>")  # the manifest's stop list before
MAX_TOKENS = 24  # as bench_models' quality part
PARTIAL = "She says that the"  # the interrupted answer of the interrupted-history part

# a sentence end followed by more text; a period after a title or single letter is no end
_NEXT_SENTENCE = re.compile(r"(?<![A-Z])(?<!\bDr)(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bSt)[.!?][\"”')]*\s+\S")


def flaws(answer: str, finish: str) -> dict[str, bool]:
    """What makes an answer look broken: a stray quote, a second sentence, a cut.

    ``stray_quote`` is an unmatched quote or an answer that opens with a quote
    (``"Hamlet"``: the model quoting its own answer); ``unmatched_quote`` only
    the first, the narrower count of the first recorded run.
    """
    text = answer.strip()
    unmatched = text.count('"') % 2 == 1 or text.count("“") != text.count("”")
    return {
        "stray_quote": unmatched or text.startswith(('"', "“")),
        "unmatched_quote": unmatched,
        "run_on": bool(_NEXT_SENTENCE.search(text)),
        "cut_at_limit": finish == "length",
    }


def load_sets(names: list[str]) -> dict[str, list[tuple[str, tuple[str, ...], str]]]:
    """The question sets by name: (question, accepted answers, kind)."""
    sets: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}
    if "tuning" in names:
        sets["tuning"] = [(q, exp, "notes") for q, exp in QUESTIONS]
    if "heldout" in names:
        data = json.loads(HELDOUT.read_text())["questions"]
        sets["heldout"] = [(d["q"], tuple(d["accept"]), d["kind"]) for d in data]
    return sets


async def ask(
    transport: Any,
    fmt: Any,
    messages: tuple[ChatMessage, ...],
    tools: tuple[dict[str, Any], ...] = (),
    max_tokens: int = MAX_TOKENS,
) -> tuple[str, list[str], str]:
    """One answer with ``fmt``: its text, the tools it called, its finish reason."""
    transport.settings = dataclasses.replace(transport.settings, prompt=fmt)
    req = ModelRequest(messages=messages, tools=tools, temperature=0.0, max_tokens=max_tokens)
    text, calls, finish = "", [], "end"
    async for c in transport.stream(req):
        if isinstance(c, TextDelta):
            text += c.text
        elif isinstance(c, ToolCallChunk):
            calls.append(c.call.name)
        elif isinstance(c, Finish):
            finish = c.reason
    return text, calls, finish


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    flawed = [r for r in rows if any(r["flaws"].values())]
    return {
        "correct": sum(r["correct"] for r in rows),
        "of": len(rows),
        "flawed": len(flawed),
        **{k: sum(r["flaws"][k] for r in rows) for k in ("stray_quote", "unmatched_quote", "run_on", "cut_at_limit")},
        "tool_calls_instead_of_text": sum(bool(r["calls"]) for r in rows),
    }


async def run(set_names: list[str]) -> dict[str, Any]:
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    manifest = find_manifest("gemma-3-270m")
    path = locate_model_file(manifest.primary_file.name)
    if path is None or manifest.prompt is None:
        raise SystemExit("model not fetched: run `exo models fetch` first")
    after = manifest.prompt
    before = dataclasses.replace(
        after, stop=BEFORE_STOP, strip_open_quote=False, sentence_min_words=0, interrupted="keep"
    )
    formats = {"before": before, "after": after}
    transport = LlamaTransport(LlamaSettings(model_path=path, prompt=after, n_threads=2, name=manifest.name))
    t0 = time.perf_counter()
    out: dict[str, Any] = {"formats": {k: dataclasses.asdict(v) for k, v in formats.items()}, "sets": {}}
    for set_name, questions in load_sets(set_names).items():
        result: dict[str, Any] = {}
        for mode, tools in (("plain", ()), ("tools_offered", TOOLS)):
            rows: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            # one format through the whole set, then the other: each call then follows
            # the same previous call in both, so the KV-cache reuse (which can move a
            # greedy choice through rounding) is the same for the two
            for label, fmt in formats.items():
                for q, accept, kind in questions:
                    messages = (ChatMessage("system", PERSON), ChatMessage("user", q))
                    text, calls, finish = await ask(transport, fmt, messages, tools)
                    rows[label].append(
                        {
                            "q": q,
                            "kind": kind,
                            "answer": text.strip(),
                            "calls": calls,
                            "finish": finish,
                            "correct": _score(text, accept) and not calls,
                            "flaws": flaws(text, finish),
                        }
                    )
            result[mode] = {label: {**_summary(r), "answers": r} for label, r in rows.items()}
        out["sets"][set_name] = result
    out["tools_auto"] = {}
    for label, fmt in formats.items():
        right, stayed = 0, 0
        for q, name in [*TOOL_REQUESTS, *((q, None) for q in NO_TOOL)]:
            _, calls, _ = await ask(transport, fmt, (ChatMessage("system", PERSON), ChatMessage("user", q)), TOOLS, 48)
            right += name is not None and calls[:1] == [name]
            stayed += name is None and not calls
        out["tools_auto"][label] = {
            "right_call": right,
            "of_requests": len(TOOL_REQUESTS),
            "stayed_text": stayed,
            "of_questions": len(NO_TOOL),
        }
    if "heldout" in set_names:
        out["interrupted_history"] = await interrupted(transport, after)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    await transport.aclose()
    return out


async def interrupted(transport: Any, fmt: Any) -> dict[str, Any]:
    """Held-out notes questions after an interrupted exchange (a tuning question, half answered)."""
    notes = [(q, a) for q, a, kind in load_sets(["heldout"])["heldout"] if kind == "notes"]
    res: dict[str, Any] = {}
    for mode in ("keep", "drop"):
        f = dataclasses.replace(fmt, interrupted=mode)
        correct, flawed, echoed, rows = 0, 0, 0, []
        for i, (q, accept) in enumerate(notes):
            prev_q = QUESTIONS[i][0]
            partial = PARTIAL  # cut mid-sentence, as an interrupt leaves it
            messages = (
                ChatMessage("system", PERSON),
                ChatMessage("user", prev_q),
                ChatMessage("assistant", partial + INTERRUPTED_MARK),
                ChatMessage("user", q),
            )
            text, calls, finish = await ask(transport, f, messages)
            ok = _score(text, accept) and not calls
            bad = any(flaws(text, finish).values())
            correct += ok
            flawed += bad
            echoed += text.strip().startswith(PARTIAL.rsplit(" ", 1)[0])  # derailed: copies the cut answer
            rows.append({"q": q, "after": prev_q, "answer": text.strip(), "correct": ok})
        res[mode] = {"correct": correct, "of": len(notes), "flawed": flawed, "echoes_partial": echoed, "answers": rows}
    return res


def main() -> int:
    ap = bench_parser(
        "answers-base", __doc__.split("\n")[0], quick_help="the tuning set only; writes nothing unless --out"
    )
    ap.add_argument("--sets", default="tuning,heldout", help="question sets, comma-separated")
    args = ap.parse_args()
    sets = args.sets.split(",")
    if args.quick:
        sets = ["tuning"]
    out = asyncio.run(run(sets))
    out = {
        "command": "exo bench answers-base",
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)},
        **out,
    }
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        for set_name, modes in out["sets"].items():
            for mode, labels in modes.items():
                for label, s in labels.items():
                    print(
                        f"{set_name:8} {mode:13} {label:6} correct {s['correct']}/{s['of']}  "
                        f"flawed {s['flawed']} (stray quote {s['stray_quote']}, of them unmatched "
                        f"{s['unmatched_quote']}, run-on {s['run_on']}, "
                        f"cut {s['cut_at_limit']})  tool calls instead of text "
                        f"{s['tool_calls_instead_of_text']}"
                    )
        for label, t in out["tools_auto"].items():
            print(
                f"tools auto {label:6} right call {t['right_call']}/{t['of_requests']}, "
                f"stayed text {t['stayed_text']}/{t['of_questions']}"
            )
        for mode, r in out.get("interrupted_history", {}).items():
            print(
                f"after an interrupted answer, {mode}: correct {r['correct']}/{r['of']}, "
                f"flawed {r['flawed']}, echoing the cut answer {r['echoes_partial']}"
            )
        print(f"{out['seconds']} s")
    written = write_results("answers", out, out=args.out, quick=args.quick)
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
