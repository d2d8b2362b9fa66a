"""Finding a local exod, or starting one for the life of a client command."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator

from exo_core.client import ExoClient
from exo_core.errors import BrokenResourceError, ExoError
from exo_core.seams.home import ExoHome

__all__ = ["local_core", "exod_running"]


async def exod_running(home: ExoHome) -> bool:
    """Whether an exod answers ``/health`` on ``home``'s Unix socket."""
    if not home.socket_path.exists():
        return False
    try:
        async with ExoClient(f"unix://{home.socket_path}") as client:
            await client.health()
    except ExoError:
        return False
    return True


@contextlib.asynccontextmanager
async def local_core(
    home: ExoHome, *, model: str | None = None, spawn: bool = True, wait_seconds: float = 60.0
) -> AsyncIterator[str]:
    """Yield the URL of a running local exod, starting one (stopped at exit) if needed."""
    url = f"unix://{home.socket_path}"
    if await exod_running(home):
        yield url
        return
    if not spawn:
        raise BrokenResourceError(f"no exod is running at {home.socket_path}; start one with `exo serve`")
    home.run_dir.mkdir(parents=True, exist_ok=True)
    log_path = home.run_dir / "exod.log"
    cmd = [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(home.root)]
    if model:
        cmd += ["--model", model]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=os.environ.copy())
    try:
        deadline = asyncio.get_running_loop().time() + wait_seconds
        while not await exod_running(home):
            if proc.poll() is not None:
                raise BrokenResourceError(f"exod exited with status {proc.returncode}; see {log_path}")
            if asyncio.get_running_loop().time() > deadline:
                raise BrokenResourceError(f"exod did not become healthy in {wait_seconds:g} s; see {log_path}")
            await asyncio.sleep(0.1)
        yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 15)
            except subprocess.TimeoutExpired:
                proc.kill()
