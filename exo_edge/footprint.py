"""The footprint audit (``exo bench footprint``): does Exo fit the small board?

exod (and the device client, when this tree has it) run a scripted conversation
— a voice question, an approval by button, an answer spoken — under a memory
limit (512 MB by default) and pinned to one core. Reported against DESIGN.md §7:

* ``startup_s``: ``exo serve`` start to a healthy ``GET /health`` (under the limit).
* ``idle_rss_mb``: exod's RSS after it has idled (no turn yet; models load lazily).
* ``peak_rss_mb``: the sum over every process of the run of its own peak RSS
  (``VmHWM``, read while it runs) — an upper bound of their simultaneous peak,
  which is reported too (``peak_rss_concurrent_mb``, sampled every 50 ms), as is
  the memory cgroup's own peak when a cgroup enforces the limit.
* ``model_loaded``: the local GGUF file was mapped into exod (``/proc/PID/maps``).
* disk use of the installation (virtual environment, sources, model files) and
  of a store holding 10,000 nodes.

How the limit is enforced, in order of preference (the one used is reported as
``limit.method``): ``systemd-run --scope -p MemoryMax=`` when systemd runs the
machine; else a memory cgroup (v2, then v1) made beside the caller's own, which
every process of the run joins before it executes; else ``prlimit --as`` (a
virtual-address limit: looser in meaning, stated as such). One core: ``taskset
-c CPU`` (or ``sched_setaffinity`` without util-linux).

With ``--json`` the result printed starts with ``completed``, ``idle_rss_mb``,
``peak_rss_mb``, ``startup_s`` and ``model_loaded``; more keys follow.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Limit", "FootprintResult", "choose_limit", "run_footprint", "main"]

REPO = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
IDLE_BUDGET_MB = 80.0
PEAK_BUDGET_MB = 512.0
SCRIPT = [
    {"text": "Tomorrow looks dry and mild. Take a light jacket for the morning.", "delay": 0.01, "chunk": 8},
    {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "rm notes.txt"}}]},
    {"text": "Deleted it."},
    {"text": "Paris is the capital of France."},
]
QUESTIONS = ("What is the weather like tomorrow?", "Please delete my notes file, notes.txt.",
             "What is the capital of France?")


@dataclass(frozen=True, slots=True)
class Limit:
    """How the memory limit is enforced: a command prefix, and the cgroup when there is one."""

    method: str
    memory_mb: int
    prefix: tuple[str, ...]
    cgroup: Path | None = None
    cgroup_version: int = 0
    note: str = ""

    def peak_mb(self) -> float | None:
        """The cgroup's own peak memory (includes page cache), when known."""
        if self.cgroup is None:
            return None
        name = "memory.peak" if self.cgroup_version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.cgroup / name).read_text().split()[0]) / MB
        except (OSError, ValueError, IndexError):
            return None

    def oom_kills(self) -> int | None:
        """Processes the kernel killed for exceeding the limit (None without a cgroup)."""
        if self.cgroup is None:
            return None
        name = "memory.events" if self.cgroup_version == 2 else "memory.oom_control"
        try:
            for line in (self.cgroup / name).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return 0

    def limit_hits(self) -> int | None:
        """Times usage reached the limit and the kernel had to reclaim (cgroup v1 ``failcnt``; v2 ``max``)."""
        if self.cgroup is None:
            return None
        try:
            if self.cgroup_version == 2:
                for line in (self.cgroup / "memory.events").read_text().splitlines():
                    if line.startswith("max "):
                        return int(line.split()[1])
                return 0
            return max(int((self.cgroup / n).read_text()) for n in ("memory.failcnt", "memory.memsw.failcnt")
                       if (self.cgroup / n).exists())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Delete the cgroup (after every process in it has exited)."""
        if self.cgroup is not None and self.cgroup.is_dir():
            try:
                self.cgroup.rmdir()
            except OSError as exc:
                print(f"footprint: could not remove cgroup {self.cgroup}: {exc.strerror}", file=sys.stderr)


def _mounts() -> list[tuple[str, str, str]]:
    with open("/proc/mounts", encoding="utf-8") as fh:
        return [(p[1], p[2], p[3]) for p in (line.split() for line in fh) if len(p) >= 4]


def _own_cgroup(version: int) -> str | None:
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if version == 2 and hid == "0" and controllers == "":
                return path
            if version == 1 and "memory" in controllers.split(","):
                return path
    return None


def _join_prefix(cgroup: Path) -> tuple[str, ...]:
    # The shell moves itself into the cgroup, then becomes the command: nothing runs outside it.
    return ("sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs"))


def _try_cgroup(version: int, memory_mb: int) -> Limit | None:
    own = _own_cgroup(version)
    if own is None:
        return None
    for mount, fstype, options in _mounts():
        if version == 2 and fstype == "cgroup2":
            base = Path(mount + own)
        elif version == 1 and fstype == "cgroup" and "memory" in options.split(","):
            base = Path(mount + own)
        else:
            continue
        group = base / f"exo-footprint-{os.getpid()}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            if version == 2:
                (group / "memory.max").write_text(f"{memory_mb * MB}\n")
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0\n")
            else:
                (group / "memory.limit_in_bytes").write_text(f"{memory_mb * MB}\n")
                swap = group / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(f"{memory_mb * MB}\n")
        except OSError:
            group.rmdir()
            continue
        return Limit(f"cgroup{'2' if version == 2 else '1'}", memory_mb, _join_prefix(group), group, version,
                     f"memory cgroup {group} (limit {memory_mb} MB, no swap)")
    return None


def choose_limit(memory_mb: int, prefer: str = "auto") -> Limit:
    """The strongest memory limit this machine allows (see the module docstring)."""
    if prefer in ("auto", "systemd-run") and Path("/run/systemd/system").is_dir() and shutil.which("systemd-run"):
        probe = subprocess.run(["systemd-run", "--scope", "-q", "-p", "MemoryMax=64M", "true"],
                               capture_output=True, timeout=30)
        if probe.returncode == 0:
            return Limit("systemd-run", memory_mb, ("systemd-run", "--scope", "-q", "-p", f"MemoryMax={memory_mb}M",
                                                    "-p", "MemorySwapMax=0", "--"),
                         note=f"systemd-run --scope -p MemoryMax={memory_mb}M")
    if prefer in ("auto", "cgroup"):
        for version in (2, 1):
            limit = _try_cgroup(version, memory_mb)
            if limit is not None:
                return limit
    if prefer in ("auto", "prlimit") and shutil.which("prlimit"):
        return Limit("prlimit", memory_mb, ("prlimit", f"--as={memory_mb * MB}", "--"),
                     note="prlimit --as: a virtual address-space limit (no cgroup available); "
                          "stricter than RSS for mmapped files and thread stacks")
    return Limit("none", memory_mb, (), note="no way to limit memory here: measured without a limit")


def _pin_prefix(cpu: int) -> tuple[tuple[str, ...], str]:
    if shutil.which("taskset"):
        return ("taskset", "-c", str(cpu)), f"taskset -c {cpu}"
    return (), f"sched_setaffinity({{{cpu}}})"


# --------------------------------------------------------------------------- processes and memory


def _status_kb(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0])
    except OSError:
        return {}
    return out


def _descendants(roots: Sequence[int]) -> set[int]:
    """``roots`` and every process below them (from ``/proc/*/stat``)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = {r for r in roots if r in parents}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


class MemorySampler:
    """Samples RSS of every process under the given roots every ``interval`` seconds (own thread)."""

    def __init__(self, interval: float = 0.05) -> None:
        self.roots: list[int] = []
        self.peaks_kb: dict[int, int] = {}
        self.split_kb: dict[int, tuple[int, int]] = {}  # sampled peak RssAnon, RssFile (mapped files: the model)
        self.names: dict[int, str] = {}
        self.concurrent_kb = 0
        self.watch: tuple[int, str] | None = None  # (pid, file name): was the file ever mapped into pid?
        self.watch_seen = False
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="footprint-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add_root(self, pid: int) -> None:
        with self._lock:
            self.roots.append(pid)

    def sample(self) -> None:
        with self._lock:
            roots = list(self.roots)
        total = 0
        for pid in _descendants(roots):
            status = _status_kb(pid)
            if not status:
                continue
            total += status.get("VmRSS", 0)
            with self._lock:
                if pid not in self.names:
                    self.names[pid] = _comm(pid)
                self.peaks_kb[pid] = max(self.peaks_kb.get(pid, 0), status.get("VmHWM", 0))
                anon, file = self.split_kb.get(pid, (0, 0))
                self.split_kb[pid] = (max(anon, status.get("RssAnon", 0)), max(file, status.get("RssFile", 0)))
        with self._lock:
            self.concurrent_kb = max(self.concurrent_kb, total)
            watch = self.watch if not self.watch_seen else None
        if watch is not None and _maps_has(*watch):
            self.watch_seen = True

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()


def _health(sock: Path) -> bool:
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


# --------------------------------------------------------------------------- what is present


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
        from exo_core.home import ExoHome
        from exo_edge.manifest import find_manifest  # type: ignore[import-not-found]
        from exo_edge.paths import locate_model_file  # type: ignore[import-not-found]

        model_file = locate_model_file(find_manifest("gemma-3-270m").primary_file.name, ExoHome(home))
        reason = "" if model_file else "the local model is not fetched (exo models fetch)"
    if want_model == "local" and model_file is None:
        raise SystemExit(f"footprint: --model local, but {reason}")
    spec = "local" if model_file is not None else "scripted"
    device_reason = ""
    if want_device == "off":
        device_reason = "device client left out (--device off)"
    else:
        for module, why in (("device.runner", "the device client (device/) is not in this tree"),
                            ("exo_core.cli.device_cmd", "`exo device` is not in this tree"),
                            ("gpiozero", "gpiozero is not installed"), ("PIL", "Pillow is not installed")):
            if importlib.util.find_spec(module) is None:
                device_reason = why
                break
        if not device_reason and shutil.which("espeak-ng") is None:
            device_reason = "espeak-ng is not installed (it speaks the question and the answers)"
    if want_device == "on" and device_reason:
        raise SystemExit(f"footprint: --device on, but {device_reason}")
    return Parts(spec, model_file, reason, not device_reason, device_reason)


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True, slots=True)
class FootprintResult:
    """What one audit measured (``as_json`` puts the five agreed keys first)."""

    completed: bool
    idle_rss_mb: float | None
    peak_rss_mb: float | None
    startup_s: float | None
    model_loaded: bool
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The result as one JSON object."""
        head = {"completed": self.completed, "idle_rss_mb": self.idle_rss_mb, "peak_rss_mb": self.peak_rss_mb,
                "startup_s": self.startup_s, "model_loaded": self.model_loaded}
        return {**head, **self.details}


class _Run:
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


def _maps_has(pid: int, suffix: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return any(line.rstrip().endswith(suffix) for line in fh)
    except OSError:
        return False


async def _client_conversation(run: _Run, sock: Path, turn_timeout: float) -> dict[str, Any]:
    """The conversation through the protocol, as the device client would drive it (no device here)."""
    from exo_core.client import ExoClient

    seen: dict[str, Any] = {"approvals": 0, "questions": 0, "answers": []}
    async with ExoClient.for_socket(sock, client_name="exo-footprint") as client:
        session = (await client.request("session.create", {"title": "footprint"}))["session"]
        session_id = session["id"] if isinstance(session, dict) else session
        for question in QUESTIONS:
            turn = (await client.request("turn.send", {"session": session_id, "text": question}))["turn_id"]
            text: list[str] = []

            async def follow() -> dict[str, Any]:
                async for event in client.events(session=session_id):
                    if event.type == "message.delta":
                        text.append(str(event.body.get("text", "")))
                    elif event.type == "approval.requested":
                        seen["approvals"] += 1
                        await client.request("approval.respond", {"request_id": event.body["request_id"],
                                                                  "decision": "allow"})
                    elif event.type == "question.asked":
                        seen["questions"] += 1
                        answer: dict[str, Any] = {"question_id": event.body["question_id"]}
                        answer.update({"option": 1} if event.body.get("options") else {"text": "yes"})
                        await client.request("question.answer", answer)
                    elif event.type == "turn.completed" and event.body.get("turn_id") == turn:
                        return dict(event.body)
                raise RuntimeError("the event stream ended before turn.completed")

            done = await asyncio.wait_for(follow(), turn_timeout)
            answer = "".join(text).strip()
            seen["answers"].append(answer[:200])
            run.step(f"turn: {question}", done.get("error") in (None, "") and done.get("stop_reason") != "error",
                     stop=done.get("stop_reason"), answer=answer[:80])
    return seen


def _device_conversation(run: _Run, turn_timeout: float, scripted: bool) -> dict[str, Any]:
    """The conversation through ``exo device --mock``: spoken question, button approval, spoken answers."""
    voice = run.tmp / "voice"
    voice.mkdir()
    wavs = []
    for i, question in enumerate(QUESTIONS[:2]):
        wav = voice / f"q{i + 1}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(wav), question.lower().rstrip("?.")],
                       check=True, capture_output=True, timeout=60)
        wavs.append(wav)
    reply = voice / "reply.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(reply), "yes, the first one"],
                   check=True, capture_output=True, timeout=60)
    journal: list[dict[str, Any]] = []
    lock = threading.Lock()
    started = time.perf_counter()
    err = open(run.tmp / "device.err", "wb")
    proc = run.spawn([sys.executable, "-m", "exo_core.cli", "device", "--home", str(run.home), "--mock",
                      "--frames", str(run.tmp / "frames"), "--audio-out", str(run.tmp / "spoken"),
                      "--playback-speed", "6", "--log-level", "WARNING"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)

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
            got = wait(lambda r: r.get("ev") == "answered" or r.get("type") in ("approval.requested", "question.asked"),
                       m, turn_timeout)
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
        run.step(f"device: answer {i + 1} shown", answered is not None,
                 text=((answered or {}).get("text") or "")[:80])
        spoken = wait(lambda r: r.get("ev") == "spoken", m, turn_timeout)
        run.step(f"device: answer {i + 1} spoken", spoken is not None)
    if scripted:
        run.step("device: approval card allowed, file deleted",
                 out["approvals"] == 1 and not (run.workspace / "notes.txt").exists())
    elif not out["approvals"]:
        out["approval_note"] = "the local model answered without asking to act: no approval was exercised"
    dead = [{"cmd": " ".join(map(str, p.args))[-60:], "status": p.returncode} for p in run.procs if p.poll() is not None]
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


def _du_mb(path: Path) -> float:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_blocks * 512
        except OSError:
            continue
    return round(total / MB, 1)


def store_with_nodes(folder: Path, count: int) -> dict[str, Any]:
    """A fresh store holding ``count`` nodes (realistic size: a summary and a paragraph each); its disk use."""
    from exo_core.ledger import create_signing_key
    from exo_core.store import Link, Node, init_store

    signer = create_signing_key(folder / "keys")
    store = init_store(folder / "store", owner_key_ids=[signer.key_id])
    domains = ("work", "people", "taste", "self")
    t0 = time.perf_counter()
    for i in range(count):
        domain = domains[i % len(domains)]
        store.write_node(Node(
            id=f"{domain}/n-{i:05d}", title=f"Belief {i}", type="fact", domain=domain,
            summary=f"Belief {i}: a short sentence the pack can quote.", load_when=f"{domain} topic {i % 97}",
            confidence="medium", stability="durable", valid_from="2025-01-01",
            links=(Link("see-also", f"{domain}/INDEX"),),
            body="\nWhat was observed, when, and why it matters; about sixty words of plain prose "
                 "that a person or the reviewer wrote down for this belief.\n" * 3))
    write_s = time.perf_counter() - t0
    return {"nodes": count, "disk_mb": _du_mb(store.root), "write_s": round(write_s, 2),
            "files": sum(1 for _ in store.root.rglob("*.md"))}


def install_disk(model_file: Path | None) -> dict[str, Any]:
    """Disk use of what a device installs: the virtual environment, Exo's sources, the model files."""
    venv = Path(sys.prefix)
    sources = sum(_du_mb(REPO / d) for d in ("exo_core", "exo_edge", "device", "store_template", "models")
                  if (REPO / d).is_dir())
    out: dict[str, Any] = {"venv_mb": _du_mb(venv), "venv": str(venv), "sources_mb": round(sources, 1)}
    if model_file is not None:
        out["models_mb"] = _du_mb(model_file.parent)
    out["total_mb"] = round(out["venv_mb"] + out["sources_mb"] + out.get("models_mb", 0.0), 1)
    out["note"] = "the venv here also holds the test tools; image/build.sh reports a device's own size"
    return out


def run_footprint(args: argparse.Namespace, log: Callable[[str], None]) -> FootprintResult:
    """One audit run (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="exo-fp-", dir=args.tmp))
    limit = choose_limit(args.memory_mb, args.limit)
    pin, pin_note = _pin_prefix(args.cpu)
    run = _Run(tmp, limit, pin, args.cpu, log)
    details: dict[str, Any] = {"limit": {"method": limit.method, "memory_mb": limit.memory_mb, "note": limit.note},
                               "cpu": {"pinned": args.cpu, "how": pin_note},
                               "budgets": {"idle_rss_mb": IDLE_BUDGET_MB, "peak_rss_mb": PEAK_BUDGET_MB}}
    completed = False
    idle = peak = startup = None
    model_loaded = False
    try:
        run.workspace.mkdir()
        (run.workspace / "notes.txt").write_text("old notes\n")
        subprocess.run([sys.executable, "-m", "exo_core.cli", "init", "--home", str(run.home)], env=child_env(),
                       check=True, capture_output=True, timeout=120)
        parts = detect_parts(run.home, args.model, args.device)
        details["model"] = {"spec": parts.model_spec, "file": str(parts.model_file) if parts.model_file else None,
                            "why_not_local": parts.model_reason or None}
        details["device"] = {"included": parts.device, "why_not": parts.device_reason or None}
        log(f"footprint: limit {limit.note}; {pin_note}; model {parts.model_spec}"
            f"{'' if parts.model_file else ' (' + parts.model_reason + ')'}; device "
            f"{'on' if parts.device else 'off (' + parts.device_reason + ')'}")
        script = tmp / "script.json"
        script.write_text(json.dumps({"replies": SCRIPT}))
        spec = "local" if parts.model_spec == "local" else f"scripted:{script}"
        run.sampler.start()
        sock = run.home / "run" / "exod.sock"
        exod_err = open(tmp / "exod.err", "wb")
        t0 = time.perf_counter()
        exod = run.spawn([sys.executable, "-m", "exo_core.cli", "serve", "--home", str(run.home), "--model", spec,
                          "--workspace", str(run.workspace), "--log-level", "WARNING"],
                         stdout=subprocess.DEVNULL, stderr=exod_err)
        while not (sock.exists() and _health(sock)):
            if exod.poll() is not None or time.perf_counter() - t0 > args.start_timeout:
                break
            time.sleep(0.005)
        if not run.step("exod healthy under the limit", exod.poll() is None and _health(sock)):
            details["exod_stderr"] = (tmp / "exod.err").read_text(errors="replace")[-2000:]
            return FootprintResult(False, None, None, None, False, details)
        startup = round(time.perf_counter() - t0, 3)
        if parts.model_file is not None:
            run.sampler.watch = (exod.pid, parts.model_file.name)
        time.sleep(args.idle)
        idle_kb = _status_kb(exod.pid).get("VmRSS")
        idle = round(idle_kb / 1024, 1) if idle_kb else None
        if parts.device:
            details.update(_device_conversation(run, args.turn_timeout, parts.model_spec == "scripted"))
        else:
            details["conversation"] = asyncio.run(_client_conversation(run, sock, args.turn_timeout))
            approvals = details["conversation"]["approvals"]
            if parts.model_spec == "scripted":
                run.step("approval requested and allowed", approvals == 1 and not (run.workspace / "notes.txt").exists(),
                         approvals=approvals)
            else:
                details["conversation"]["approval_note"] = (
                    "the local model asked to act" if approvals else
                    "the local model answered without asking to act: no approval was exercised")
        run.sampler.sample()
        model_loaded = run.sampler.watch_seen  # seen mapped at any sample, even if exod died later
        completed = all(s["ok"] for s in run.steps) and exod.poll() is None
        if parts.model_spec == "local" and not model_loaded:
            run.step("local model mapped into exod", False)
            completed = False
    except (OSError, subprocess.SubprocessError, RuntimeError, asyncio.TimeoutError) as exc:
        run.step("run", False, error=f"{type(exc).__name__}: {exc}")
    finally:
        run.sampler.sample()
        run.stop_all()
        run.sampler.stop()
        oom = limit.oom_kills()
        details["limit_hits"] = limit.limit_hits()
        cg_peak = limit.peak_mb()
        limit.remove()
        details["oom_kills"] = oom
        details["cgroup_peak_mb"] = round(cg_peak, 1) if cg_peak is not None else None
        details["steps"] = run.steps
        details["processes"] = [{"pid": pid, "peak_rss_mb": round(kb / 1024, 1),
                                 "peak_anon_mb": round(run.sampler.split_kb.get(pid, (0, 0))[0] / 1024, 1),
                                 "peak_file_mb": round(run.sampler.split_kb.get(pid, (0, 0))[1] / 1024, 1),
                                 "cmd": run.sampler.names.get(pid, "?")}
                                for pid, kb in sorted(run.sampler.peaks_kb.items()) if kb]
        if run.sampler.peaks_kb:
            peak = round(sum(run.sampler.peaks_kb.values()) / 1024, 1)
        details["peak_rss_concurrent_mb"] = round(run.sampler.concurrent_kb / 1024, 1)
        shutil.rmtree(tmp, ignore_errors=True)
    if oom:
        completed = False
    if args.nodes:
        with tempfile.TemporaryDirectory(prefix="exo-fp-store-", dir=args.tmp) as store_tmp:
            details["store_disk"] = store_with_nodes(Path(store_tmp), args.nodes)
    details["install_disk"] = install_disk(Path(details["model"]["file"]) if details.get("model", {}).get("file")
                                           else None)
    details["within_budgets"] = {
        "idle": idle is not None and idle < IDLE_BUDGET_MB,
        "peak": peak is not None and peak < PEAK_BUDGET_MB,
    }
    details["machine"] = machine_facts()
    return FootprintResult(completed, idle, peak, startup, model_loaded, details)


def machine_facts() -> dict[str, Any]:
    """The machine a result was measured on (how busy it was, too)."""
    import platform

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            cpu = next((line.partition(":")[2].strip() for line in fh
                        if line.lower().startswith(("model name", "hardware"))), cpu)
    except OSError:
        cpu = platform.processor() or cpu
    return {"nproc": os.cpu_count(), "cpu_model": cpu, "arch": platform.machine(), "kernel": platform.release(),
            "python": platform.python_version(), "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def report(data: dict[str, Any]) -> str:
    """The result as a short Markdown report (what docs/benchmarks.md shows)."""
    lim, model, dev = data["limit"], data.get("model", {}), data.get("device", {})
    rows = [
        ("completed", data["completed"], "the whole conversation under the limit"),
        ("start-up (s)", data["startup_s"], "exo serve to a healthy /health"),
        ("idle RSS, exod (MB)", data["idle_rss_mb"], f"budget {IDLE_BUDGET_MB:.0f}"),
        ("peak RSS, sum over processes (MB)", data["peak_rss_mb"], f"budget {PEAK_BUDGET_MB:.0f}"),
        ("peak RSS, concurrent sample (MB)", data.get("peak_rss_concurrent_mb"), "sampled every 50 ms"),
        ("cgroup peak incl. page cache (MB)", data.get("cgroup_peak_mb"), lim["method"]),
        ("OOM kills / limit reached", f"{data.get('oom_kills')} / {data.get('limit_hits')}", "kills fail the run"),
        ("model loaded", data["model_loaded"], model.get("why_not_local") or model.get("file") or ""),
        ("device client", dev.get("included"), dev.get("why_not") or ""),
    ]
    store, disk = data.get("store_disk"), data.get("install_disk", {})
    if store:
        rows.append((f"store with {store['nodes']:,} nodes on disk (MB)", store["disk_mb"], f"{store['files']:,} files"))
    rows.append(("install: venv + sources + models (MB)", disk.get("total_mb"),
                 f"venv {disk.get('venv_mb')}, sources {disk.get('sources_mb')}, models {disk.get('models_mb', 0)}"))
    lines = [f"limit: {lim['note']}; cpu: {data['cpu']['how']}", "", "| measure | value | against |",
             "|---|---:|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["", "| process | peak RSS (MB) | sampled peak anonymous (MB) | sampled peak file-backed (MB) |",
              "|---|---:|---:|---:|"]
    lines += [f"| `{p['cmd'][:70]}` | {p['peak_rss_mb']} | {p.get('peak_anon_mb', '-')} | {p.get('peak_file_mb', '-')} |"
              for p in data.get("processes", [])]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``exo bench footprint``."""
    parser = argparse.ArgumentParser(prog="exo bench footprint", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--markdown", type=Path, default=None, metavar="RESULTS",
                        help="run nothing: print a results file as the Markdown report")
    parser.add_argument("--model", choices=("auto", "local", "scripted"), default="auto",
                        help="auto: the local model when fetched, else the scripted model")
    parser.add_argument("--device", choices=("auto", "on", "off"), default="auto",
                        help="auto: run the device client when this tree and machine have it")
    parser.add_argument("--memory-mb", type=int, default=512, help="memory limit for every process (default 512)")
    parser.add_argument("--limit", choices=("auto", "systemd-run", "cgroup", "prlimit"), default="auto")
    parser.add_argument("--cpu", type=int, default=0, help="the one core to run on (default 0)")
    parser.add_argument("--nodes", type=int, default=10_000, help="nodes in the store whose disk use is measured")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds exod idles before idle RSS is read")
    parser.add_argument("--turn-timeout", type=float, default=300.0)
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="500 nodes, short idle; writes no results file")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default benchmarks/results/footprint.json in a checkout)")
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the temporary home (keep the path short)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``exo bench footprint``: exit 0 when the run completed, 1 when it did not."""
    args = build_parser().parse_args(argv)
    if args.markdown is not None:
        print(report(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    if args.quick:
        args.nodes = min(args.nodes, 500)
        args.idle = min(args.idle, 0.5)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through run_footprint's cleanup (processes, cgroup)

    signal.signal(signal.SIGTERM, terminated)
    result = run_footprint(args, log)
    data = result.as_json()
    out = args.out
    if out is None and not args.quick and (REPO / "benchmarks" / "results").is_dir():
        out = REPO / "benchmarks" / "results" / "footprint.json"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(data))
    else:
        print(report(data))
        if out is not None:
            print(f"\nwrote {out}")
    return 0 if result.completed else 1


if __name__ == "__main__":
    raise SystemExit(main())
