"""The laptop's model engine: llama-cpp-python's own OpenAI-compatible server, started for the person.

A laptop (the ``laptop`` board profile, docs/models.md "Board profiles") serves a larger GGUF
than the device can hold; the device's router sends its ``main`` role there
when it answers and falls back to its local model when it does not
(docs/models.md §3, "The laptop's model"). The engine is an existing one:
``python -m llama_cpp.server`` from llama-cpp-python's ``[server]`` extra,
installed by this project's ``laptop`` extra (docs/dependencies.md). Ollama,
``llama-server`` and vLLM serve the same OpenAI chat-completions API and need
nothing from here but the printed config's ``base_url``.

This module builds the server's command line and environment
(``OMP_WAIT_POLICY=PASSIVE``: with OpenMP's default spinning, 2 threads on a busy
2-core machine generated 8-25x slower), the ``[models]`` config a device needs
to use it, and waits until the server answers. ``exo models serve``, the
engine tests and ``benchmarks/bench_laptop.py`` all start it through here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import ConfigError, NotFoundError, ResourceError
from exo_core.seams.home import ExoHome

__all__ = [
    "SERVER_MODULES",
    "DEFAULT_MODEL",
    "FALLBACK_MODEL",
    "ServeSettings",
    "missing_server_modules",
    "check_installed",
    "resolve_model",
    "server_command",
    "server_env",
    "device_config",
    "wait_ready",
    "start_server",
    "exec_server",
]

# What ``python -m llama_cpp.server`` imports beyond llama-cpp-python itself (its ``[server]`` extra).
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings", "yaml")
# The ``laptop`` profile's model, and the ``standard`` profile's as the device's local fallback
# (docs/models.md, "Board profiles").
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"
FALLBACK_MODEL = "qwen2.5-coder-0.5b-instruct"


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """One server: the model file and the name routes use for it, where it listens, its window and threads."""

    model_path: Path
    alias: str
    host: str = "127.0.0.1"
    port: int = 8080
    n_ctx: int = 4096
    threads: int = 2
    n_batch: int = 256
    key_env: str | None = None  # the variable holding the bearer key the server requires (None: no key)

    @property
    def base_url(self) -> str:
        """The local URL of the server's OpenAI API (``/v1``)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}/v1"


def missing_server_modules() -> list[str]:
    """The server's modules not importable here (empty: ``python -m llama_cpp.server`` can run)."""
    return [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]


def resolve_model(model: str, home: ExoHome | None = None) -> tuple[Path, str]:
    """The GGUF file and its route name for ``model``: a path to a file, or a manifest name.

    A manifest name is found among the fetched files (``exo models fetch NAME``).
    """
    candidate = Path(model).expanduser()
    if candidate.suffix == ".gguf" or os.sep in model:
        if not candidate.is_file():
            raise NotFoundError(f"model file {candidate} does not exist; give the path of a .gguf file")
        return candidate.resolve(), candidate.name.removesuffix(".gguf").removesuffix("-q4_k_m")
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    manifest = find_manifest(model)
    if manifest.kind != "gguf":
        raise ConfigError(f"model {model!r} is a {manifest.kind}, not a GGUF chat model the server can serve")
    name = manifest.primary_file.name
    path = locate_model_file(name, home)
    if path is None:
        raise NotFoundError(
            f"the file {name} of model {model!r} is not on this machine; run `exo models fetch {model}`"
        )
    return path, manifest.name


def server_command(settings: ServeSettings, *, python: str = sys.executable) -> list[str]:
    """The command that runs llama-cpp-python's server for ``settings`` (the GGUF's own chat template)."""
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(settings.model_path),
        "--model_alias",
        settings.alias,
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--n_ctx",
        str(settings.n_ctx),
        "--n_threads",
        str(settings.threads),
        "--n_threads_batch",
        str(settings.threads),
        "--n_batch",
        str(settings.n_batch),
    ]


def server_env(base: Mapping[str, str] | None = None, *, key_env: str | None = None) -> dict[str, str]:
    """The server's environment: ``base`` (default ours) with OpenMP told to sleep, not spin, when idle.

    With ``key_env`` the key in that variable goes to the server as ``API_KEY`` (its settings read it
    from the environment), never on its command line where ``ps`` would show it.
    """
    env = dict(os.environ if base is None else base)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env.pop("API_KEY", None)
    if key_env is not None:
        key = env.get(key_env, "")
        if not key:
            raise ConfigError(f"--key-env {key_env}: the variable is not set; export {key_env}=<a long random key>")
        env["API_KEY"] = key
    return env


def _advertised_host(host: str) -> str:
    """The address a device on the LAN uses: the bind address, or this machine's mDNS name for a wildcard."""
    if host in ("0.0.0.0", "", "::"):
        return socket.gethostname() + ".local"
    return host


def device_config(settings: ServeSettings, *, advertise: str | None = None, fallback: str = FALLBACK_MODEL) -> str:
    """The ``config.toml`` lines that send a device's ``main`` role (and its learning queue) to this server."""
    host = advertise or _advertised_host(settings.host)
    route = f"laptop:{settings.alias}"
    # The device reads the same key from its own variable of that name (docs/models.md §3).
    keys = f'["{settings.key_env}"]' if settings.key_env else "[]"
    return (
        "[models.providers.laptop]\n"
        'kind = "openai"\n'
        f'base_url = "http://{host}:{settings.port}/v1"\n'
        f"key_env = {keys}\n"
        "judge_calls = true\n"
        "\n"
        "[models.roles]\n"
        f'main = ["{route}", "local:{fallback}"]\n'
        "\n"
        "[learning]\n"
        f'route = "{route}"\n'
    )


def wait_ready(base_url: str, *, timeout: float = 120.0, proc: subprocess.Popen[bytes] | None = None) -> list[str]:
    """Wait until ``GET {base_url}/models`` answers; the model ids it lists.

    Raises :class:`ResourceError` when ``proc`` exits first or ``timeout`` passes.
    """
    deadline = time.monotonic() + timeout
    url = base_url.rstrip("/") + "/models"
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ResourceError(f"the model server exited with status {proc.returncode} before it answered {url}")
        try:
            with urllib.request.urlopen(url, timeout=2.0) as resp:
                data = json.loads(resp.read())
            return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.2)
    raise ResourceError(f"the model server did not answer {url} within {timeout:g} s ({last})")


def check_installed() -> None:
    """Raise :class:`ConfigError` naming what to install when the server's modules are missing."""
    missing = missing_server_modules()
    if missing:
        raise ConfigError(
            f"the model server needs {', '.join(missing)}: install this project's laptop extra "
            "(pip install -e '.[laptop]', or scripts/setup.sh) and llama-cpp-python (scripts/install_edge.sh)"
        )


def exec_server(settings: ServeSettings, *, python: str = sys.executable) -> None:
    """Replace this process with the server (``exo models serve``): signals reach the server itself."""
    check_installed()
    command = server_command(settings, python=python)
    os.execve(command[0], command, server_env(key_env=settings.key_env))


def start_server(
    settings: ServeSettings,
    *,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> subprocess.Popen[bytes]:
    """Start the server process (its output to ``log``, else inherited); the caller waits with :func:`wait_ready`."""
    check_installed()
    command = server_command(settings, python=python)
    environment = server_env(env, key_env=settings.key_env)
    if log is None:
        return subprocess.Popen(command, env=environment)
    with open(log, "ab") as out:
        return subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT)
