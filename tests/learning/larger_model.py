"""A stand-in for the larger model: a real OpenAI-compatible HTTP server (aiohttp) in its own process.

``python larger_model.py PORT LOG [DELAY]`` serves ``POST /v1/chat/completions`` as an SSE stream.
Each request is appended (and fsynced) to LOG *before* the answer, then the
server waits DELAY seconds, so a test can kill a drainer, or this server,
while a call is in flight. A reflection prompt ("Current wording: X") is
answered with one positive claim; a judging prompt with a score. Usage
carries a cost of 0.01 per call.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys

from aiohttp import web


def answer_for(prompt: str) -> str:
    found = re.search(r"Current wording: (.*)", prompt)
    if found:
        claim = found.group(1).strip().rstrip(".")
        core = claim[len("Wants ") :] if claim.startswith("Wants ") else claim
        return f"Wants {core}, because the person corrected it in their own drafts."
    return "0.8"


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
