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

The engine is a stranger on the LAN (docs/security.md, "The laptop's engine"):

* it never cuts a running answer when another request arrives (``--interrupt_requests False``;
  llama-cpp-python's default ends the running stream with a bare ``[DONE]``);
* it requires a bearer key (:func:`engine_key`: made once, 0600, in the laptop's Exo home), which
  reaches the server through its environment, never its command line, and the device through the
  printed config;
* bound beyond loopback it speaks TLS with a self-signed certificate made once (:func:`engine_tls`)
  whose PEM the printed config pins, so the device trusts that certificate and nothing else.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.errors import ConfigError, NotFoundError, ResourceError
from exo_core.seams.home import ExoHome
from exo_core.seams.link import is_loopback_host, pinned_context

__all__ = [
    "SERVER_MODULES",
    "DEFAULT_MODEL",
    "FALLBACK_MODEL",
    "ServeSettings",
    "TlsFiles",
    "engine_key",
    "engine_tls",
    "is_loopback_host",
    "missing_server_modules",
    "check_installed",
    "resolve_model",
    "server_command",
    "server_env",
    "device_config",
    "wait_ready",
    "pinned_context",
    "key_from_env",
    "start_server",
    "exec_server",
]

# What ``python -m llama_cpp.server`` imports beyond llama-cpp-python itself (its ``[server]`` extra).
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings", "yaml")
# The ``laptop`` profile's model, and the ``standard`` profile's as the device's local fallback
# (docs/models.md, "Board profiles").
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"
FALLBACK_MODEL = "qwen2.5-coder-0.5b-instruct"


# Where ``exo models serve`` keeps the engine's key and certificate, inside the laptop's Exo home.
ENGINE_DIR = "engine"
_MIN_KEY_CHARS = 32


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The engine's certificate and private key (PEM files); the certificate is what devices pin."""

    cert: Path
    key: Path

    def cert_pem(self) -> str:
        """The certificate as PEM text."""
        return self.cert.read_text(encoding="ascii")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """One server: the model file and the name routes use for it, where it listens, its window and threads,
    the bearer key it requires (``None``: none, loopback only) and its TLS files (``None``: plain HTTP)."""

    model_path: Path
    alias: str
    host: str = "127.0.0.1"
    port: int = 8080
    n_ctx: int = 4096
    threads: int = 2
    n_batch: int = 256
    api_key: str | None = field(default=None, repr=False)
    tls: TlsFiles | None = None

    @property
    def base_url(self) -> str:
        """The local URL of the server's OpenAI API (``/v1``)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host}:{self.port}/v1"


def _engine_dir(home: ExoHome) -> Path:
    """``<home>/engine``, made 0700 (and narrowed to 0700 when it exists looser)."""
    folder = home.root / ENGINE_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if stat.S_IMODE(folder.stat().st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def engine_key(home: ExoHome) -> str:
    """The engine's bearer key: ``<home>/engine/api-key``, made (0600, in a 0700 folder) on first use."""
    path = _engine_dir(home) / "api-key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(f"{path} has mode {mode:o}; other users could read it. Run: chmod 600 {path}") from None
        key = path.read_text(encoding="ascii").strip()
        if len(key) < _MIN_KEY_CHARS:
            raise ConfigError(f"{path} holds no usable key; delete it and a new one is made") from None
        return key
    key = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key + "\n")
    return key


def engine_tls(home: ExoHome, names: list[str]) -> TlsFiles:
    """The engine's self-signed certificate for ``names`` (host names and addresses), made once with ``openssl``.

    The files live in ``<home>/engine/`` (key 0600); an existing pair is kept, so devices that pinned the
    certificate keep trusting it. Delete both files to make a new one (and paste the new config on devices).
    """
    folder = _engine_dir(home)
    files = TlsFiles(folder / "tls-cert.pem", folder / "tls-key.pem")
    if files.cert.is_file() and files.key.is_file():
        return files
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ConfigError(
            "serving beyond loopback needs TLS, and making its certificate needs the openssl command "
            "(Debian: apt install openssl); or serve on 127.0.0.1, or pass --no-tls and opt in on the device"
        )
    alt = ",".join(_alt_name(n) for n in dict.fromkeys(names))
    command = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    command += ["-keyout", str(files.key), "-out", str(files.cert), "-days", "3650", "-subj", "/CN=exo laptop engine"]
    command += ["-addext", f"subjectAltName={alt}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise ConfigError(f"openssl could not make the engine's certificate: {done.stderr.strip()[-300:]}")
    os.chmod(files.key, 0o600)
    return files


def _alt_name(name: str) -> str:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return f"DNS:{name}"
    return f"IP:{name.strip('[]')}"


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
    tls_args: list[str] = []
    if settings.tls is not None:
        tls_args = ["--ssl_certfile", str(settings.tls.cert), "--ssl_keyfile", str(settings.tls.key)]
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
        # A new request waits for the running one instead of ending it with a bare [DONE].
        "--interrupt_requests",
        "False",
        *tls_args,
    ]


def server_env(base: Mapping[str, str] | None = None, *, api_key: str | None = None) -> dict[str, str]:
    """The server's environment: ``base`` (default ours) with OpenMP told to sleep, not spin, when idle.

    ``api_key`` goes to the server as ``API_KEY`` (its settings read it from the environment), never on
    its command line where ``ps`` would show it.
    """
    env = dict(os.environ if base is None else base)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env.pop("API_KEY", None)
    if api_key is not None:
        env["API_KEY"] = api_key
    return env


def key_from_env(variable: str, env: Mapping[str, str] | None = None) -> str:
    """The key a person keeps in ``variable`` themselves (``exo models serve --key-env``)."""
    key = (os.environ if env is None else env).get(variable, "")
    if len(key) < 16:
        raise ConfigError(f"--key-env {variable}: the variable is not set or shorter than 16 characters")
    return key


def _advertised_host(host: str) -> str:
    """The address a device on the LAN uses: the bind address, or this machine's mDNS name for a wildcard."""
    if host in ("0.0.0.0", "", "::"):
        return socket.gethostname() + ".local"
    return host


def device_config(settings: ServeSettings, *, advertise: str | None = None, fallback: str = FALLBACK_MODEL) -> str:
    """The ``config.toml`` lines that send a device's ``main`` role (and its learning queue) to this server.

    They carry the engine's key and, with TLS, its certificate to pin: the device's config.toml is
    private (0600) like the rest of its Exo home.
    """
    host = advertise or _advertised_host(settings.host)
    route = f"laptop:{settings.alias}"
    scheme = "https" if settings.tls is not None else "http"
    lines = [
        "[models.providers.laptop]",
        'kind = "openai"',
        f'base_url = "{scheme}://{host}:{settings.port}/v1"',
        "key_env = []",
        "judge_calls = true",
    ]
    if settings.api_key is not None:
        lines.append(f'api_key = "{settings.api_key}"')
    if settings.tls is not None:
        lines.append(f'tls_cert = """\n{settings.tls.cert_pem().strip()}\n"""')
    if not is_loopback_host(host) and settings.tls is None:
        lines.append("# plain HTTP beyond loopback: the device refuses it unless you accept that by name:")
        lines.append('# allow_insecure = ["plain-http"]')
    lines.append("")
    return (
        "\n".join(lines) + "\n"
        "[models.roles]\n"
        f'main = ["{route}", "local:{fallback}"]\n'
        "\n"
        "[learning]\n"
        f'route = "{route}"\n'
    )


def wait_ready(
    base_url: str,
    *,
    timeout: float = 120.0,
    proc: subprocess.Popen[bytes] | None = None,
    api_key: str | None = None,
    cert_pem: str | None = None,
) -> list[str]:
    """Wait until ``GET {base_url}/models`` answers (with ``api_key``, over TLS pinned to ``cert_pem``);
    the model ids it lists.

    Raises :class:`ResourceError` when ``proc`` exits first or ``timeout`` passes.
    """
    deadline = time.monotonic() + timeout
    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    context = pinned_context(cert_pem) if cert_pem else None
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ResourceError(f"the model server exited with status {proc.returncode} before it answered {url}")
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=2.0, context=context) as resp:
                data = json.loads(resp.read())
            return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise ConfigError(f"the model server at {url} refused the key (HTTP {exc.code})") from exc
            last = f"HTTP {exc.code}"
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
    os.execve(command[0], command, server_env(api_key=settings.api_key))


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
    environment = server_env(env, api_key=settings.api_key)
    if log is None:
        return subprocess.Popen(command, env=environment)
    with open(log, "ab") as out:
        return subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT)
