"""GGUF files a person registers with ``exo models add``: checked, pinned, chosen for a role by name.

The registry is ``$EXO_HOME/models/registered.toml`` (0600, replaced
atomically, one ``[models."NAME"]`` table per file). Registering reads the
file's GGUF header (:mod:`exo_edge.gguf`), hashes the whole file, and records
its path, sha256, size, architecture, context length and prompt format: the
file's own chat template when it has one, else the completion format with a
warning. ``local:NAME`` routes then resolve to the file
(:func:`exo_edge.local.local_settings`). A file that fails any check leaves
the registry as it was. See docs/models.md ("Registering a GGUF you have").
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from exo_core.errors import ConfigError, ConflictError, UsageError
from exo_core.seams.home import ExoHome
from exo_edge.fetch import sha256_file
from exo_edge.gguf import GGUFHeader, read_gguf_header
from exo_edge.manifest import PromptFormat, load_manifests
from exo_edge.template_limits import refuse_unsafe_template

__all__ = [
    "PinMismatchError",
    "ChangedModelFileError",
    "RegisteredModel",
    "Registration",
    "registry_path",
    "load_registered",
    "find_registered",
    "register_model",
    "completion_format",
]

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
FORMATS = ("chat", "completion")


class PinMismatchError(UsageError):
    """The file's sha256 is not the one the person pinned with ``--sha256``."""

    code = "pin_mismatch"


class ChangedModelFileError(ConfigError):
    """A registered file is missing, or its size is not the registered one: it moved or changed."""

    code = "model_file_changed"


def completion_format() -> PromptFormat:
    """How a registered model without a chat template is prompted: ``Question:``/``Answer:`` turns."""
    return PromptFormat(
        format="completion",
        preamble="Answer each question briefly.",
        stop=("\nQuestion:", "Question:"),
        interrupted="drop",
    )


@dataclass(frozen=True, slots=True)
class RegisteredModel:
    """One registered GGUF file."""

    name: str
    path: Path
    sha256: str
    size: int
    format: str
    architecture: str | None = None
    general_name: str | None = None
    context_length: int | None = None
    added: str = ""

    @property
    def prompt(self) -> PromptFormat:
        """The prompt format: the file's own chat template, or :func:`completion_format`."""
        if self.format == "chat":
            return PromptFormat(format="chat")
        return completion_format()

    def checked_path(self) -> Path:
        """The file's path, after checking it is still there with its registered size."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError as exc:
            raise ChangedModelFileError(
                f"registered model {self.name!r}: {self.path} is gone; put it back or register it again "
                "with `exo models add FILE --name " + self.name + " --replace`"
            ) from exc
        if size != self.size:
            raise ChangedModelFileError(
                f"registered model {self.name!r}: {self.path} has {size} bytes, {self.size} were registered; "
                "the file changed: register it again with `exo models add FILE --name " + self.name + " --replace`"
            )
        return self.path


@dataclass(frozen=True, slots=True)
class Registration:
    """What :func:`register_model` did: the entry, whether it was new, and warnings for the person."""

    model: RegisteredModel
    action: str  # "added" | "replaced" | "present"
    warnings: tuple[str, ...] = ()


def registry_path(home: ExoHome) -> Path:
    """``$EXO_HOME/models/registered.toml``."""
    return home.models_dir / "registered.toml"


def _entry(name: str, data: Any, where: str) -> RegisteredModel:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: [models.{json.dumps(name)}] must be a table")
    path, sha, size, fmt = data.get("path"), data.get("sha256"), data.get("size"), data.get("format")
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{where}: model {name!r} needs a 'path'")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise ConfigError(f"{where}: model {name!r}: 'sha256' must be 64 lowercase hex digits")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ConfigError(f"{where}: model {name!r}: 'size' must be a whole number of bytes")
    if fmt not in FORMATS:
        raise ConfigError(f"{where}: model {name!r}: 'format' must be one of {FORMATS}")
    context = data.get("context_length")
    if context is not None and (isinstance(context, bool) or not isinstance(context, int) or context < 1):
        raise ConfigError(f"{where}: model {name!r}: 'context_length' must be a positive integer")
    optional = {}
    for key in ("architecture", "general_name", "added"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: model {name!r}: {key!r} must be a string")
        optional[key] = value
    return RegisteredModel(
        name=name,
        path=Path(path),
        sha256=sha,
        size=size,
        format=fmt,
        architecture=optional["architecture"],
        general_name=optional["general_name"],
        context_length=context,
        added=optional["added"] or "",
    )


def load_registered(home: ExoHome) -> dict[str, RegisteredModel]:
    """Every registered model of ``home`` by name (empty when none was ever added)."""
    path = registry_path(home)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it or register the files again") from exc
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise ConfigError(f"{path}: [models] must be a table")
    return {name: _entry(name, entry, str(path)) for name, entry in models.items()}


def find_registered(home: ExoHome, name: str) -> RegisteredModel | None:
    """The registered model called ``name``, if there is one."""
    return load_registered(home).get(name)


def _toml_string(text: str) -> str:
    # A JSON string is a TOML basic string, except that TOML also forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _render(models: Mapping[str, RegisteredModel]) -> str:
    lines = ["# GGUF files registered with `exo models add` (docs/models.md). Written by exo.", ""]
    for name in sorted(models):
        m = models[name]
        lines.append(f"[models.{_toml_string(name)}]")
        lines.append(f"path = {_toml_string(str(m.path))}")
        lines.append(f'sha256 = "{m.sha256}"')
        lines.append(f"size = {m.size}")
        lines.append(f'format = "{m.format}"')
        if m.architecture is not None:
            lines.append(f"architecture = {_toml_string(m.architecture)}")
        if m.general_name is not None:
            lines.append(f"general_name = {_toml_string(m.general_name)}")
        if m.context_length is not None:
            lines.append(f"context_length = {m.context_length}")
        lines.append(f"added = {_toml_string(m.added)}")
        lines.append("")
    return "\n".join(lines)


def _write_registry(path: Path, models: Mapping[str, RegisteredModel]) -> None:
    """Replace the registry atomically: a 0600 temporary file in the same folder, fsynced, renamed."""
    text = _render(models)
    tomllib.loads(text)  # what is written must read back; a bug here must not replace a good file
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".registered-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return slug[:64].rstrip("-.") or "model"


def _choose_name(header: GGUFHeader, path: Path, name: str | None) -> str:
    if name is not None:
        if not _NAME.match(name):
            raise UsageError(
                f"model name {name!r} must be 1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        return name
    stem = path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.stem
    return _slug(header.name or stem)


def _file_warnings(header: GGUFHeader) -> list[str]:
    warnings = []
    if header.chat_template is None:
        warnings.append(
            "the file has no chat template (tokenizer.chat_template): registered with the completion "
            "format (Question:/Answer: turns); an instruction-tuned file with a template answers better"
        )
    if header.context_length is None:
        warnings.append("the header names no context length; [models.local] n_ctx is used as it is")
    if header.unknown_tensor_types:
        types = ", ".join(str(t) for t in header.unknown_tensor_types)
        warnings.append(f"tensor types {types} are unknown here, so the file's length could not be checked")
    return warnings


def register_model(
    home: ExoHome,
    file: Path,
    *,
    name: str | None = None,
    sha256: str | None = None,
    replace: bool = False,
    hasher: Callable[[Path], str] = sha256_file,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Registration:
    """Check ``file`` and record it in ``home``'s registry under ``name`` (default: from its header).

    Raises a :class:`~exo_edge.gguf.GGUFError` for a file that is not a
    usable GGUF, :class:`~exo_edge.template_limits.UnsafeTemplateError` for a
    chat template that exceeds its limits, :class:`PinMismatchError` when ``sha256`` is given and
    differs, :class:`ConflictError` when the name is a shipped manifest's or
    already registered to another file (unless ``replace``). Nothing is
    written unless every check passed.
    """
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if not _SHA256.match(sha256):
            raise UsageError(f"--sha256 {sha256!r} must be 64 hex digits (the output of sha256sum)")
    path = Path(os.path.abspath(file.expanduser()))
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"the path {path!r} is not UTF-8; rename the file or its folder") from exc
    header = read_gguf_header(path)
    if header.chat_template is not None:
        refuse_unsafe_template(header.chat_template, where=str(path))
    chosen = _choose_name(header, path, name)
    shipped = {m.name for m in load_manifests()}
    if chosen in shipped:
        raise ConflictError(
            f"{chosen!r} is the name of a shipped model manifest (exo models fetch {chosen}); "
            "choose another with --name"
        )
    size = path.stat().st_size
    digest = hasher(path)
    if sha256 is not None and digest != sha256:
        raise PinMismatchError(
            f"{path} has sha256 {digest}, not the pinned {sha256}: it is not the file you meant, or it was "
            "damaged on the way; nothing was registered"
        )
    if path.stat().st_size != size:
        raise ConflictError(f"{path} changed while it was being hashed; wait for the copy to finish and try again")
    entry = RegisteredModel(
        name=chosen,
        path=path,
        sha256=digest,
        size=size,
        format="chat" if header.chat_template is not None else "completion",
        architecture=header.architecture,
        general_name=header.name,
        context_length=header.context_length,
        added=now().strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    warnings = tuple(_file_warnings(header))
    home.models_dir.mkdir(parents=True, exist_ok=True)
    registry = registry_path(home)
    lock_fd = os.open(home.models_dir / ".registered.lock", os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(lock_fd, "r+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two `exo models add` at once: neither loses the other's entry
        models = load_registered(home)
        old = models.get(chosen)
        if old is not None and old.sha256 == digest and old.path == path:
            return Registration(old, "present", warnings)
        if old is not None and not replace:
            raise ConflictError(
                f"a model named {chosen!r} is already registered ({old.path}); pass --replace to point it at "
                f"{path}, or choose another --name"
            )
        models[chosen] = entry
        _write_registry(registry, models)
    return Registration(entry, "replaced" if old is not None else "added", warnings)
