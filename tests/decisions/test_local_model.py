"""The local decision provider with the real Gemma 3 270M GGUF (skipped when it is not fetched)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from exo_core.decisions import PANEL, SIGNAL, Decider
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta
from exo_edge.decide_local import LocalDecisionProvider, answer_words, render_prompt

pytestmark = pytest.mark.model


def _model_path():  # type: ignore[no-untyped-def]
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    path = locate_model_file(find_manifest("gemma-3-270m").primary_file.name)
    if path is None:
        pytest.skip("the local model is not fetched on this machine (run `exo models fetch`)")
    return path


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalDecisionProvider]:
    from exo_edge.llama_transport import LlamaSettings, LlamaTransport
    from exo_edge.manifest import find_manifest

    path = _model_path()
    manifest = find_manifest("gemma-3-270m")
    assert manifest.prompt is not None
    transport = LlamaTransport(
        LlamaSettings(model_path=path, prompt=manifest.prompt, n_ctx=1024, n_threads=2, name=manifest.name)
    )
    yield LocalDecisionProvider(transport, timeout=60.0)  # a loaded test machine must not time it out
    asyncio.run(transport.aclose())


def test_the_prompt_names_or_letters_the_options_and_keeps_a_stable_head() -> None:
    head, tail = render_prompt(SIGNAL, "No,\n  it was   Tuesday.")
    assert "- correction:" in head and "- other:" in head and "\nAnswer: correction\n" in head
    assert head.count("\nAnswer: ") == len(SIGNAL.examples)
    assert tail == "\n\nMessage: No, it was Tuesday.\nAnswer:"
    assert render_prompt(SIGNAL, "something else")[0] == head
    lettered, _ = render_prompt(SIGNAL, "x", style="letters")
    assert "A. correction:" in lettered and "C. neither:" in lettered and "\nAnswer: A\n" in lettered
    assert answer_words(PANEL) == ["none", "diff", "file", "taste", "history", "table"]


@pytest.mark.parametrize("question", [SIGNAL, PANEL], ids=lambda q: q.mechanism)
async def test_one_forward_pass_gives_a_probability_for_every_option(provider: LocalDecisionProvider, question) -> None:  # type: ignore[no-untyped-def]
    probabilities = await provider.probabilities(question, "Could you show me what you changed in the notes?")
    assert set(probabilities) == set(question.options)
    assert sum(probabilities.values()) == pytest.approx(1.0)
    assert all(0.0 < p < 1.0 for p in probabilities.values())
    assert provider.last is not None and provider.last.mass > 0.2  # the answer words are where the model looks
    assert provider.last.evaluated < 25  # the message only: the head was evaluated once and kept


async def test_heads_are_kept_and_generation_shares_the_model(provider: LocalDecisionProvider) -> None:
    first = await provider.probabilities(SIGNAL, "You spelled her name wrong.")
    assert provider.last is not None and provider.last.reused > 100 and provider.last.evaluated < 20
    await provider.probabilities(PANEL, "Show me the file.")  # another question replaced the cache
    again = await provider.probabilities(SIGNAL, "You spelled her name wrong.")
    assert provider.last.restored and provider.last.evaluated < 20  # its head was put back, not evaluated
    assert again == pytest.approx(first, abs=1e-6)
    request = ModelRequest(
        messages=(ChatMessage("user", "What is the capital of France?"),), max_tokens=8, temperature=0.0
    )
    text = "".join([c.text async for c in provider.transport.stream(request) if isinstance(c, TextDelta)])
    assert text.strip()  # generation works on the shared model after decisions
    after = await provider.probabilities(SIGNAL, "You spelled her name wrong.")
    assert provider.last.restored and after == pytest.approx(first, abs=1e-6)


async def test_letters_style_reads_the_option_letters(provider: LocalDecisionProvider) -> None:
    lettered = LocalDecisionProvider(provider.transport, style="letters", timeout=60.0)
    probabilities = await lettered.probabilities(SIGNAL, "You spelled her name wrong.")
    assert set(probabilities) == set(SIGNAL.options) and lettered.name == "local:gemma-3-270m:letters"
    assert lettered.last is not None and lettered.last.mass > 0.2


async def test_through_the_decider(provider: LocalDecisionProvider) -> None:
    decision = await Decider([provider]).decide(PANEL, "Hmm, what about the blue one?")
    assert decision.provider == provider.name == "local:gemma-3-270m"
    assert set(decision.raw) == set(PANEL.options) and not decision.failures


async def test_warming_a_question_reads_its_head_before_the_first_decision(provider: LocalDecisionProvider) -> None:
    fresh = LocalDecisionProvider(provider.transport, timeout=60.0)
    await fresh.warm(SIGNAL)
    await fresh.probabilities(SIGNAL, "Keep it short from here.")
    assert fresh.last is not None and fresh.last.head == "cached" and fresh.last.evaluated < 20


def test_exo_decide_with_the_local_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys

    from exo_testkit import ROOT

    _model_path()
    (tmp_path / "config.toml").write_text("[decisions]\nlocal_timeout = 30\n")  # a busy test machine
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "decide",
            "signal",
            "Hmm, that one felt a bit stiff",  # the rules abstain on it: the model decides
            "--json",
            "--providers",
            "local",
            "--home",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["provider"] == "local:gemma-3-270m" and not result["failures"]
    assert set(result["raw"]) == {"correction", "rule", "neither"}
