"""``exo models add``: registering a GGUF a person has, and routing ``local:NAME`` to it."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from exo_core.errors import ConflictError, NotFoundError, UsageError
from exo_core.seams.home import ExoHome
from exo_edge.gguf import NotGGUFError, TruncatedGGUFError
from exo_edge.local import local_settings
from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file
from exo_edge.registered import (
    ChangedModelFileError,
    PinMismatchError,
    load_registered,
    register_model,
    registry_path,
)

from .gguf_synth import model_like

ROOT = Path(__file__).resolve().parents[2]


def exo(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_MODEL", "EXO_MODELS_MAIN")}
    env.update({"PYTHONPATH": str(ROOT), "EXO_HOME": str(home)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture
def home(tmp_path: Path) -> ExoHome:
    return ExoHome(tmp_path / "home")


def test_registers_a_chat_model_and_routes_local_name_to_it(tmp_path: Path, home: ExoHome) -> None:
    gguf = model_like(name="Tiny Chat 0.1B", context=1024).write(tmp_path / "tiny-chat.gguf")
    done = register_model(home, gguf)
    assert done.action == "added" and not done.warnings
    m = done.model
    assert m.name == "tiny-chat-0.1b"
    assert (m.path, m.format, m.context_length, m.architecture) == (gguf, "chat", 1024, "qwen2")
    assert m.sha256 == hashlib.sha256(gguf.read_bytes()).hexdigest() and m.size == gguf.stat().st_size
    reg = registry_path(home)
    assert stat.S_IMODE(reg.stat().st_mode) == 0o600
    assert load_registered(home) == {m.name: m}
    # a role can name it; n_ctx is capped at the file's trained window
    home.config_path.write_text("[models.local]\nn_ctx = 4096\nn_threads = 1\n")
    settings = local_settings(home, "tiny-chat-0.1b")
    assert settings.model_path == gguf and settings.prompt.format == "chat"
    assert settings.n_ctx == 1024 and settings.name == "tiny-chat-0.1b"
    # adding the same file again changes nothing
    before = reg.read_bytes()
    assert register_model(home, gguf).action == "present"
    assert reg.read_bytes() == before


def test_no_chat_template_is_registered_with_the_completion_format_and_a_warning(tmp_path: Path, home: ExoHome) -> None:
    gguf = model_like(template=None).write(tmp_path / "base.gguf")
    done = register_model(home, gguf, name="base-model")
    assert done.model.format == "completion"
    assert any("no chat template" in w for w in done.warnings)
    prompt = local_settings(home, "base-model").prompt
    assert prompt.format == "completion" and "\nQuestion:" in prompt.stop


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, dict[str, str], type[Exception], str]]:
    good = model_like().write(tmp_path / "good.gguf")
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    full = good.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(full[: len(full) - 40])
    wrong = "0" * 64
    return {
        "text file": (text, {}, NotGGUFError, "not a GGUF"),
        "truncated": (cut, {}, TruncatedGGUFError, "cut short"),
        "wrong pin": (good, {"sha256": wrong}, PinMismatchError, f"not the pinned {wrong}"),
        "malformed pin": (good, {"sha256": "abc"}, UsageError, "64 hex digits"),
        "shipped name": (good, {"name": "gemma-3-270m"}, ConflictError, "shipped model manifest"),
        "bad name": (good, {"name": "Has Spaces"}, UsageError, "must be 1-64 characters"),
    }


@pytest.mark.parametrize("case", ["text file", "truncated", "wrong pin", "malformed pin", "shipped name", "bad name"])
def test_bad_input_is_a_typed_error_and_stores_nothing(tmp_path: Path, home: ExoHome, case: str) -> None:
    kept = model_like(name="Kept").write(tmp_path / "kept.gguf")
    register_model(home, kept)
    before = registry_path(home).read_bytes()
    path, kwargs, error, needle = _bad_inputs(tmp_path)[case]
    with pytest.raises(error) as info:
        register_model(home, path, **kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value)
    assert registry_path(home).read_bytes() == before  # the earlier entry is untouched, nothing half-written
    assert sorted(p.name for p in home.models_dir.iterdir()) == [".registered.lock", "registered.toml"]


def test_a_name_taken_by_another_file_needs_replace(tmp_path: Path, home: ExoHome) -> None:
    first = model_like(name="One").write(tmp_path / "one.gguf")
    second = model_like(name="Two", context=2048).write(tmp_path / "two.gguf")
    register_model(home, first, name="mine")
    with pytest.raises(ConflictError) as info:
        register_model(home, second, name="mine")
    assert "--replace" in info.value.message
    assert load_registered(home)["mine"].path == first
    done = register_model(home, second, name="mine", replace=True)
    assert done.action == "replaced" and load_registered(home)["mine"].context_length == 2048


def test_a_moved_or_changed_file_is_named_when_the_route_is_resolved(tmp_path: Path, home: ExoHome) -> None:
    gguf = model_like().write(tmp_path / "m.gguf")
    register_model(home, gguf, name="m")
    with gguf.open("ab") as fh:
        fh.write(b"more")
    with pytest.raises(ChangedModelFileError) as info:
        local_settings(home, "m")
    assert "register it again" in info.value.message
    gguf.unlink()
    with pytest.raises(ChangedModelFileError):
        local_settings(home, "m")
    with pytest.raises(NotFoundError) as missing:
        local_settings(home, "never-added")
    assert "registered: m" in missing.value.message and "exo models add" in missing.value.message


def test_cli_add_list_and_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gguf = model_like(name="Cli Model").write(tmp_path / "cli.gguf")
    added = exo("models", "add", str(gguf), "--json", home=home)
    assert added.returncode == 0, added.stderr
    out = json.loads(added.stdout)
    assert (out["name"], out["route"], out["format"]) == ("cli-model", "local:cli-model", "chat")
    listed = exo("models", "list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    registered = json.loads(listed.stdout)["registered"]
    assert [(r["name"], r["present"]) for r in registered] == [("cli-model", True)]
    text = tmp_path / "t.txt"
    text.write_text("hello\n")
    refused = exo("models", "add", str(text), home=home)
    assert refused.returncode == 2 and "[not_gguf]" in refused.stderr and str(text) in refused.stderr
    pinned = exo("models", "add", str(gguf), "--name", "other", "--sha256", "f" * 64, home=home)
    assert pinned.returncode == 2 and "[pin_mismatch]" in pinned.stderr
    assert [r["name"] for r in json.loads(exo("models", "list", "--json", home=home).stdout)["registered"]] == [
        "cli-model"
    ]


@pytest.mark.model
def test_the_real_qwen_file_is_read_and_registered(tmp_path: Path) -> None:
    manifest = find_manifest("qwen2.5-coder-0.5b-instruct")
    path = locate_model_file(manifest.primary_file.name)
    if path is None:
        pytest.skip("the Qwen2.5-Coder 0.5B file is not fetched here (exo models fetch qwen2.5-coder-0.5b-instruct)")
    home = tmp_path / "home"
    added = exo("models", "add", str(path), "--json", "--sha256", str(manifest.primary_file.sha256), home=home)
    assert added.returncode == 0, added.stderr
    out = json.loads(added.stdout)
    assert out["format"] == "chat" and out["architecture"] == "qwen2"
    assert out["context_length"] == 32768 == manifest.extra["context_length"]
    assert out["sha256"] == manifest.primary_file.sha256 and out["size"] == manifest.primary_file.size
    from exo_edge.gguf import read_gguf_header

    header = read_gguf_header(path)
    assert header.chat_template is not None and "<tool_call>" in header.chat_template
    assert header.size_checked and header.expected_size == path.stat().st_size


def test_n_ctx_is_capped_at_a_shipped_models_context_length(home: ExoHome) -> None:
    home.root.mkdir(parents=True)
    home.config_path.write_text("[models.local]\nn_ctx = 65536\n")
    for name in ("gemma-3-270m", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"):
        assert local_settings(home, name).n_ctx == 32768 == find_manifest(name).extra["context_length"]
    home.config_path.write_text("[models.local]\nn_ctx = 4096\n")
    assert local_settings(home, "qwen2.5-coder-0.5b-instruct").n_ctx == 4096
