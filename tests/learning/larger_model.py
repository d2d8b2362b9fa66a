"""A stand-in for the larger model: a real OpenAI-compatible HTTP server (aiohttp) in its own process.

``python larger_model.py PORT LOG [DELAY]`` serves ``POST /v1/chat/completions`` as an SSE stream.
Each request is appended (and fsynced) to LOG *before* the answer, then the
server waits DELAY seconds, so a test can kill a drainer, or this server,
while a call is in flight. A reflection prompt ("Current wording: X") is
answered with one positive claim; an unexplained edit ("Removed lines:") with a lesson and the
words to avoid (the opening words of the first removed line); a judging prompt with a score. Usage
carries a cost of 0.01 per call.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator

from aiohttp import web

from exo_core.agent.model import Finish, ModelChunk, ModelRequest, TextDelta
from exo_core.learning.features import marker_words


def answer_for(prompt: str) -> str:
    said = re.search(r"They said: (.*)", prompt)
    listed = re.search(r"(?:Removed lines|Draft lines):\n((?:- .*\n?)+)", prompt)
    if listed:
        # A correction the catalog cannot explain: the line the person's words point at (else the first
        # listed one), and its words they named (else its opening words) as the marker.
        lines = [line[2:].strip() for line in listed.group(1).splitlines() if line.startswith("- ")]
        named = marker_words(said.group(1)) if said else set()
        best = max(lines, key=lambda line: len(marker_words(line) & named))
        words = best.split()
        hits = [i for i, w in enumerate(words) if marker_words(w) & named]
        span = words[hits[0] : hits[-1] + 1] if hits else words[:3]
        marker = " ".join(span).rstrip(".,:;!?")
        return f"LESSON: Wants drafts without '{marker}'.\nAVOID: {marker}"
    found = re.search(r"Current wording: (.*)", prompt)
    if found:
        claim = found.group(1).strip().rstrip(".")
        core = claim[len("Wants ") :] if claim.startswith("Wants ") else claim
        return f"Wants {core}, because the person corrected it in their own drafts."
    return "0.8"


class StandIn:
    """The same answers in-process, through the model seam (a ``ModelTransport``) the drain uses."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        prompt = request.messages[-1].content
        self.prompts.append(prompt)
        yield TextDelta(answer_for(prompt))
        yield Finish("end")


def app(log_path: str, delay: float) -> web.Application:
    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"prompt": prompt[:200]}) + "\n")
            log.flush()
            os.fsync(log.fileno())
        await asyncio.sleep(delay)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        text = answer_for(prompt)
        for piece in re.findall(r".{1,24}", text, re.S):
            chunk = {"model": body["model"], "choices": [{"index": 0, "delta": {"content": piece}}]}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {
            "model": body["model"],
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "cost": 0.01},
        }
        await resp.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        await resp.write_eof()
        return resp

    application = web.Application()
    application.router.add_post("/v1/chat/completions", completions)
    return application


if __name__ == "__main__":
    port, log_file = int(sys.argv[1]), sys.argv[2]
    web.run_app(
        app(log_file, float(sys.argv[3]) if len(sys.argv) > 3 else 0.0),
        host="127.0.0.1",
        port=port,
        print=lambda *_: print("ready", flush=True),
        handle_signals=True,
    )
