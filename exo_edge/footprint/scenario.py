"""What the audit runs: exod, the device client, and the scripted conversation they hold.

The conversation is flows 1-3: a question spoken by espeak-ng into a WAV file
and transcribed by the device, an approval card allowed with the mock allow
button, answers shown and spoken. Without a device client the same three
turns go through the protocol directly. :func:`detect_parts` says which parts
this tree and machine have, with the reason for each one left out.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo_edge.footprint.budgets import file_cached_mb, major_faults
from exo_edge.footprint.limits import Limit
from exo_edge.footprint.sampling import MemorySampler

__all__ = [
    "REPO",
    "SCRIPT",
    "QUESTIONS",
    "NOTES",
    "Parts",
    "detect_parts",
    "home_model_name",
    "child_env",
    "health",
    "Run",
    "client_conversation",
    "device_conversation",
]

REPO = Path(__file__).resolve().parent.parent.parent
SCRIPT = [
    {"text": "Tomorrow looks dry and mild. Take a light jacket for the morning.", "delay": 0.01, "chunk": 8},
    {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "rm notes"}}]},
    {"text": "Deleted it."},
    {"text": "Paris is the capital of France."},
]
# The second question is worded for the voice path: Whisper (tiny.en) hears espeak-ng's "notes.txt" as
# "note start DFC", "my notes file" as "my note style", and "please delete the file called notes" as "... the
# file call notes" (then the 0.5B invents path/to/file.txt); "delete the file called notes" comes through word for
# word (2026-12-02), and names the workspace's file as a file for the judge (exo_core.agent.grounding, rule 4).
QUESTIONS = (
    "What is the weather like tomorrow?",
    "Delete the file called notes.",
    "What is the capital of France?",
)
NOTES = "notes"  # the workspace file that question names


def health(sock: Path) -> bool:
    """Whether exod answers ``GET /health`` on its Unix socket with ``ok``."""
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(str(sock))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        return False
    finally:
        s.close()
    try:
        return json.loads(data.partition(b"\r\n\r\n")[2]).get("ok") is True
    except ValueError:
        return False


def child_env() -> dict[str, str]:
    """Environment for the run's processes: this checkout first on the path, no inherited home."""
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_HOME", "EXO_TOKEN", "EXO_MODEL")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass(frozen=True, slots=True)
class Parts:
    """Which parts of the run this tree and machine have, with the reason for each missing one."""

    model_spec: str
    model_file: Path | None
    model_reason: str
    device: bool
    device_reason: str


def detect_parts(home: Path, want_model: str, want_device: str) -> Parts:
    """The local model when its runtime and file are present (else the scripted model), and the device
    client when ``device.runner``, ``exo device``, gpiozero, Pillow and espeak-ng are all present."""
    model_file: Path | None = None
    reason = ""
    if want_model == "scripted":
        reason = "scripted model chosen (--model scripted)"
    elif importlib.util.find_spec("llama_cpp") is None:
        reason = "llama-cpp-python is not installed (scripts/install_edge.sh)"
    elif importlib.util.find_spec("exo_edge.local") is None:
        reason = "exo_edge.local (the local model provider) is not in this tree"
    else:
        model_file, reason = _home_model_file(home)
    if want_model == "local" and model_file is None:
        raise SystemExit(f"footprint: --model local, but {reason}")
    spec = "local" if model_file is not None else "scripted"
    device_reason = ""
    if want_device == "off":
        device_reason = "device client left out (--device off)"
    else:
        for module, why in (
            ("device.runner", "the device client (device/) is not in this tree"),
            ("exo_core.cli.device_cmd", "`exo device` is not in this tree"),
            ("gpiozero", "gpiozero is not installed"),
            ("PIL", "Pillow is not installed"),
        ):
            if importlib.util.find_spec(module) is None:
                device_reason = why
                break
        if not device_reason and shutil.which("espeak-ng") is None:
            device_reason = "espeak-ng is not installed (it speaks the question and the answers)"
    if want_device == "on" and device_reason:
        raise SystemExit(f"footprint: --device on, but {device_reason}")
    return Parts(spec, model_file, reason, not device_reason, device_reason)


def home_model_name(home: Path) -> str | None:
    """The local model the home's ``main`` role answers with (``[models.roles] main``, its first ``local:``)."""
    from exo_core.seams.home import ExoHome

    models = ExoHome(home).config().get("models", {})
    roles = models.get("roles", {}) if isinstance(models, dict) else {}
    routes = roles.get("main", []) if isinstance(roles, dict) else []
    if isinstance(routes, str):
        routes = [routes]
    for route in routes:
        if isinstance(route, str) and route.startswith("local:"):
            return route.partition(":")[2]
    return None


def _home_model_file(home: Path) -> tuple[Path | None, str]:
    """The GGUF file of the home's local ``main`` model, or why there is none."""
    from exo_core.errors import NotFoundError
    from exo_core.seams.home import ExoHome
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    name = home_model_name(home)
    if name is None:
        return None, "the home's [models.roles] main names no local: model (exo init --board)"
    try:
        manifest = find_manifest(name)
    except NotFoundError:
        return None, f"no manifest for the home's local model {name!r} in models/"
    found = locate_model_file(manifest.primary_file.name, ExoHome(home))
    if found is None:
        return None, f"the local model {name} is not fetched (exo models fetch)"
    return found, ""


class Run:
    """State of one audit run: processes, the sampler, the steps done."""

    def __init__(self, tmp: Path, limit: Limit, pin: tuple[str, ...], cpu: int, log: Callable[[str], None]) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.workspace = tmp / "ws"
        self.limit = limit
        self.pin = pin
        self.cpu = cpu
        self.log = log
        self.sampler = MemorySampler()
        self.procs: list[subprocess.Popen[Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.exod_pid: int | None = None  # set once exod runs: whose major faults are counted
        self.model_file: Path | None = None  # the GGUF whose page-cache residency is read at each mark
        self.marks: list[dict[str, Any]] = []  # major faults and residency after idle and after each answer

    def mark(self, after: str) -> None:
        """Note exod's and the cgroup's major faults and the model's cached size (after idle, each answer)."""
        self.marks.append(
            {
                "after": after,
                "exod_major_faults": major_faults(self.exod_pid) if self.exod_pid is not None else None,
                "cgroup_major_faults": self.limit.major_faults(),
                "model_cached_mb": file_cached_mb(self.model_file),
            }
        )

    def spawn(self, cmd: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
        full = [*self.limit.prefix, *self.pin, *cmd]
        preexec = None if self.pin else (lambda: os.sched_setaffinity(0, {self.cpu}))
        proc = subprocess.Popen(full, env=child_env(), cwd=str(self.tmp), preexec_fn=preexec, **kwargs)
        self.procs.append(proc)
        self.sampler.add_root(proc.pid)
        return proc

    def step(self, name: str, ok: bool, **info: Any) -> bool:
        self.steps.append({"step": name, "ok": ok, **info})
        self.log(f"  {'ok  ' if ok else 'FAIL'} {name} {json.dumps(info, default=str) if info else ''}")
        return ok

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)


async def client_conversation(run: Run, sock: Path, turn_timeout: float) -> dict[str, Any]:
    """The conversation through the protocol, as the device client would drive it (no device here)."""
    from exo_core.client import ExoClient

    seen: dict[str, Any] = {"approvals": 0, "questions": 0, "answers": []}
    async with ExoClient.for_socket(sock, client_name="exo-footprint") as client:
        session = (await client.request("session.create", {"title": "footprint"}))["session"]
        session_id = session["id"] if isinstance(session, dict) else session
        for question in QUESTIONS:
            turn = (await client.request("turn.send", {"session": session_id, "text": question}))["turn_id"]
            text: list[str] = []

            async def follow(turn: str, text: list[str]) -> dict[str, Any]:
                async for event in client.events(session=session_id):
                    if event.type == "message.delta":
                        text.append(str(event.body.get("text", "")))
                    elif event.type == "approval.requested":
                        seen["approvals"] += 1
                        await client.request(
                            "approval.respond", {"request_id": event.body["request_id"], "decision": "allow"}
                        )
                    elif event.type == "question.asked":
                        seen["questions"] += 1
                        answer: dict[str, Any] = {"question_id": event.body["question_id"]}
                        answer.update({"option": 1} if event.body.get("options") else {"text": "yes"})
                        await client.request("question.answer", answer)
                    elif event.type == "turn.completed" and event.body.get("turn_id") == turn:
                        return dict(event.body)
                raise RuntimeError("the event stream ended before turn.completed")

            done = await asyncio.wait_for(follow(turn, text), turn_timeout)
            answer = "".join(text).strip()
            seen["answers"].append(answer[:200])
            run.step(
                f"turn: {question}",
                done.get("error") in (None, "") and done.get("stop_reason") != "error",
                stop=done.get("stop_reason"),
                answer=answer[:80],
            )
            run.mark(f"answer {len(seen['answers'])}")
    return seen


def device_conversation(run: Run, turn_timeout: float, scripted: bool) -> dict[str, Any]:
    """The conversation through ``exo device --mock``: spoken question, button approval, spoken answers."""
    voice = run.tmp / "voice"
    voice.mkdir()
    wavs = []
    for i, question in enumerate(QUESTIONS):
        wav = voice / f"q{i + 1}.wav"
        subprocess.run(
            ["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(wav), question.lower().rstrip("?.")],
            check=True,
            capture_output=True,
            timeout=60,
        )
        wavs.append(wav)
    reply = voice / "reply.wav"
    subprocess.run(
        ["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(reply), "yes, the first one"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    journal: list[dict[str, Any]] = []
    lock = threading.Lock()
    started = time.perf_counter()
    err = open(run.tmp / "device.err", "wb")
    proc = run.spawn(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "device",
            "--home",
            str(run.home),
            "--mock",
            "--frames",
            str(run.tmp / "frames"),
            "--audio-out",
            str(run.tmp / "spoken"),
            "--playback-speed",
            "6",
            "--log-level",
            "WARNING",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        bufsize=1,
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            with lock:
                journal.append(record)

    threading.Thread(target=read, name="footprint-device-journal", daemon=True).start()

    def wait(pred: Callable[[dict[str, Any]], bool], since: int, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with lock:
                for record in journal[since:]:
                    if pred(record):
                        return record
            if any(p.poll() is not None for p in run.procs):  # exod or the device died (an OOM kill?)
                return None
            time.sleep(0.02)
        return None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def mark() -> int:
        with lock:
            return len(journal)

    out: dict[str, Any] = {}
    online = wait(lambda r: r.get("ev") == "link" and r.get("state") == "online", 0, 60)
    out["device_startup_s"] = round(time.perf_counter() - started, 3) if online else None
    if not run.step("device: link online", online is not None):
        return out
    out["approvals"] = out["questions"] = 0
    for i, wav in enumerate(wavs):
        m = mark()
        send(f"talk {wav}")
        heard = wait(lambda r: r.get("ev") == "heard", m, turn_timeout)
        run.step(f"device: voice question {i + 1} heard", heard is not None, text=(heard or {}).get("text"))
        # Until the answer: allow each approval card and pick the highlighted option of each question by button.
        answered = None
        for _ in range(6):
            got = wait(
                lambda r: r.get("ev") == "answered" or r.get("type") in ("approval.requested", "question.asked"),
                m,
                turn_timeout,
            )
            if got is None or got.get("ev") == "answered":
                answered = got
                break
            kind = "approvals" if got.get("type") == "approval.requested" else "questions"
            out[kind] += 1
            # Let the device finish speaking the card (a press during speech only stops it).
            wait(lambda r: r.get("ev") == "spoken", m, 30)
            m = mark()
            if kind == "questions" and not got.get("body", {}).get("options"):
                send(f"talk {reply}")  # a free-text question: answered by voice
                run.step("device: question answered by voice", True)
            else:
                send("press allow")
                run.step(f"device: {got['type']} answered by button", True)
        run.step(f"device: answer {i + 1} shown", answered is not None, text=((answered or {}).get("text") or "")[:80])
        if answered is not None and not str(answered.get("text") or "").strip():
            # nothing to speak: waiting for speech would only run out the turn's timeout
            run.step(f"device: answer {i + 1} spoken", False, why="the answer was empty")
        else:
            spoken = wait(lambda r: r.get("ev") == "spoken", m, turn_timeout)
            run.step(f"device: answer {i + 1} spoken", spoken is not None)
        run.mark(f"answer {i + 1}")
    if scripted:
        run.step(
            "device: approval card allowed, file deleted",
            out["approvals"] == 1 and not (run.workspace / NOTES).exists(),
        )
    elif not out["approvals"]:
        out["approval_note"] = "the local model answered without asking to act: no approval was exercised"
    dead = [{"cmd": _command_line(p)[-60:], "status": p.returncode} for p in run.procs if p.poll() is not None]
    if dead:
        run.step("every process alive at the end", False, exited=dead)
    out["device_peak_kb"] = run.sampler.peaks_kb.get(proc.pid)
    send("quit")
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    err.close()
    out["device_exit"] = proc.returncode
    return out


def _command_line(proc: subprocess.Popen[Any]) -> str:
    """The command ``proc`` runs, as one line (a run starts each with a list of arguments)."""
    args = proc.args
    if isinstance(args, str | bytes | os.PathLike):
        return str(args)
    return " ".join(str(arg) for arg in args)
