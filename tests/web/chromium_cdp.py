"""Drive a real headless Chromium over the DevTools protocol (aiohttp websockets, no extra dependency)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One headless Chromium with one page, driven like a person would (real clicks and keys)."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 820) -> None:
        assert CHROMIUM, "chromium is not installed"
        self.profile = profile
        self.size = (width, height)
        self.proc: subprocess.Popen[bytes] | None = None
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.console: list[str] = []

    async def start(self) -> "Chromium":
        self.profile.mkdir(parents=True, exist_ok=True)
        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
            f"--window-size={self.size[0]},{self.size[1]}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split("\n")[0])
        self._http = aiohttp.ClientSession()
        async with self._http.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json(content_type=None)
        page = next(t for t in targets if t["type"] == "page")
        self._ws = await self._http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.size[0], "height": self.size[1], "deviceScaleFactor": 1, "mobile": False},
        )
        return self

    async def _read(self) -> None:
        assert self._ws is not None
        async for msg in self._ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            elif data.get("method") == "Runtime.consoleAPICalled":
                self.console.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in data["params"]["args"])
                )
            elif data.get("method") == "Runtime.exceptionThrown":
                self.console.append("exception: " + json.dumps(data["params"]["exceptionDetails"])[:500])

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._ws is not None
        msg_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        await self._ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def eval(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error in {expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}; console: {self.console[-5:]}")
            await asyncio.sleep(0.05)

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", {"url": url})
        await self.wait_for("document.readyState === 'complete'")

    async def click(self, selector: str) -> None:
        """A real mouse click at the element's centre."""
        where = await self.wait_for(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e || e.disabled) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return r.width ? [r.x + r.width / 2, r.y + r.height / 2] : null; })()"
        )
        x, y = where
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            )

    async def type(self, selector: str, text: str, *, replace: bool = True) -> None:
        """Focus an input and type into it (replacing its text)."""
        await self.click(selector)
        if replace:
            await self.eval(f"document.querySelector({json.dumps(selector)}).select()")
        await self.send("Input.insertText", {"text": text})

    async def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent",
                {
                    "type": kind,
                    "key": "Enter",
                    "code": "Enter",
                    "windowsVirtualKeyCode": 13,
                    "text": "\r" if kind == "keyDown" else "",
                },
            )

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._http is not None:
            await self._http.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
