"""A stand-in for the larger model: a real OpenAI-compatible HTTP server (aiohttp) in its own process.

``python larger_model.py PORT LOG [DELAY]`` serves ``POST /v1/chat/completions`` as an SSE stream.
Each request is appended (and fsynced) to LOG *before* the answer, then the
server waits DELAY seconds, so a test can kill a drainer, or this server,
while a call is in flight. A reflection prompt ("Current wording: X") is
answered with one positive claim; an unexplained correction (numbered "Lines of the draft:" or
"Deleted lines:") with ``remove`` and the number of the line that shares the most word stems with the
person's words (the first when none does), as a call of the required tool when the request names
one (as an engine that enforces a forced call answers) and as ``{"want": "remove", "line": N}`` text
otherwise; a judging prompt with a score. Usage carries a cost of 0.01 per call.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator

from aiohttp import web

from exo_core.learning.features import stems
from exo_core.seams.model import Finish, ModelChunk, ModelRequest, TextDelta


def answer_for(prompt: str) -> str:
    said = re.search(r"The person said: (.*)", prompt)
    listed = re.search(r"(Lines of the draft|Deleted lines):\n((?:\d+\. .*\n?)+)", prompt)
    if listed:
        # A correction the catalog cannot explain: the line the person's words point at.
        lines = [re.sub(r"^\d+\. ", "", line) for line in listed.group(2).splitlines() if line.strip()]
        named = stems(said.group(1)) if said else set()
        hits = [len(stems(line) & named) for line in lines]
        best = max(range(len(lines)), key=lambda n: hits[n])
        if listed.group(1) == "Deleted lines":
            return json.dumps({"line": best + 1})
        return json.dumps({"want": "remove", "line": best + 1})
    found = re.search(r"Current wording: (.*)", prompt)
    if found:
        claim = found.group(1).strip().rstrip(".")
        core = claim[len("Wants ") :] if claim.startswith("Wants ") else claim
        return f"Wants {core}, because the person corrected it in their own drafts."
    return "0.8"


def _forced_tool(body: dict[str, object]) -> str:
    """The function a request requires (``tool_choice`` naming one), else ""."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return str(choice["function"].get("name", ""))
    return ""


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
        tool = _forced_tool(body)
        if tool:  # the answer as the required call, its arguments streamed in pieces as engines do
            call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": tool, "arguments": ""}}
            deltas = [{"tool_calls": [call]}]
            for piece in re.findall(r".{1,8}", text, re.S):
                deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        else:
            deltas = [{"content": piece} for piece in re.findall(r".{1,24}", text, re.S)]
        for delta in deltas:
            chunk = {"model": body["model"], "choices": [{"index": 0, "delta": delta}]}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {
            "model": body["model"],
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if tool else "stop"}],
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
