"""Chat templates are bounded: a GGUF's template bomb is refused at ``exo models add`` and stopped at a turn.

Each bomb is a template someone could put in a file's header. The renderer
(:mod:`exo_edge.template_limits`) must stop it by its limits (steps, time,
sizes, cancel) with a typed error, and registration must refuse it, leaving
the registry unchanged. A real template renders exactly as llama-cpp-python's
own formatter renders it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from exo_core.seams.home import ExoHome
from exo_edge.registered import load_registered, register_model
from exo_edge.template_limits import (
    CHECK_LIMITS,
    BoundedChatFormatter,
    TemplateLimitError,
    TemplateLimits,
    UnsafeTemplateError,
    check_template,
)

from .gguf_synth import QWEN_LIKE_TEMPLATE, model_like

ROOT = Path(__file__).resolve().parents[2]
QWEN_HEAD = QWEN_LIKE_TEMPLATE

BOMBS = {
    # loops: counted by the line trace, however empty their bodies
    "10^10 empty loop": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "10^10 loop writing": "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
    "loop over a stored list": (
        "{% set l = range(100000)|list %}{% for a in l %}{% for b in l %}{% endfor %}{% endfor %}"
    ),
    "loop in a macro": "{% macro m() %}{% for i in range(100000) %}{% for j in range(9) %}{% endfor %}{% endfor %}"
    "{% endmacro %}{% for k in range(100000) %}{{ m() }}{% endfor %}",
    # one operation that would build something huge, checked before it runs
    "repeat": "{{ 'x' * 10**10 }}",
    "repeat twice": "{{ 'x' * 100000 * 100000 }}",
    "power": "{{ 2 ** 100000000 }}",
    "ljust": "{{ 'x'.ljust(10**10) }}",
    "center filter": "{{ 'x'|center(10000000000) }}",
    "indent filter": "{{ 'x'|indent(99999999999) }}",
    "percent width": "{{ '%9999999999d' % 1 }}",
    "format width": "{{ '{:>9999999999}'.format(1) }}",
    "join filter": "{{ range(100000)|join('x' * 999999) }}",
    "join method on a generator": "{{ ('x' * 999999).join(range(100000)|map('string')) }}",
    "replace": "{{ ('x' * 999999).replace('x', 'xxxxxxxx') }}",
    # growth step by step: each value is checked as it is read back
    "doubling with ~": "{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "doubling with +": "{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}",
    "doubling with replace": "{% set ns = namespace(s='xx') %}{% for i in range(40) %}"
    "{% set ns.s = ns.s|replace('x', 'xx') %}{% endfor %}",
    # the bomb hidden after a real template
    "after a real template": QWEN_HEAD
    + "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_every_template_bomb_is_stopped_by_a_limit(name: str) -> None:
    with pytest.raises(TemplateLimitError) as info:
        check_template(BOMBS[name])
    assert "chat template" in info.value.message and info.value.code == "template_limit"


def test_the_step_limit_counts_every_iteration_and_stops_at_it() -> None:
    limits = TemplateLimits(steps=10_000, seconds=60.0)
    formatter = BoundedChatFormatter(BOMBS["10^10 empty loop"], limits=limits)
    with pytest.raises(TemplateLimitError, match="more than 10,000 steps"):
        formatter(messages=[])


def test_the_time_limit_stops_a_slow_template() -> None:
    # Each step does allowed but slow work, so time runs out long before the steps do.
    slow = "{% set s = 'x' * 900000 %}{% for i in range(100000) %}{% set t = s|replace('x', 'y') %}{% endfor %}"
    formatter = BoundedChatFormatter(slow, limits=TemplateLimits(steps=10**9, seconds=0.5))
    with pytest.raises(TemplateLimitError, match="longer than 0.5 s"):
        formatter(messages=[])


def test_a_cancel_stops_a_running_render_and_frees_its_thread() -> None:
    formatter = BoundedChatFormatter(BOMBS["10^10 empty loop"], limits=TemplateLimits(steps=10**12, seconds=600.0))
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def render() -> None:
        try:
            formatter(messages=[], cancel=cancel)
        except TemplateLimitError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=render, daemon=True)
    worker.start()
    time.sleep(0.3)
    assert worker.is_alive()  # still looping: only the cancel can end it now
    cancel.set()
    worker.join(timeout=30)
    assert not worker.is_alive() and outcome and "cancelled" in str(outcome[0])


def test_a_real_template_renders_as_llama_cpp_renders_it() -> None:
    jinja2_sandbox = pytest.importorskip("jinja2.sandbox")
    from jinja2 import BaseLoader

    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is in todo.txt? {{ not a template }}"},
        {"role": "assistant", "content": "It says: buy milk."},
    ]
    reference = (
        jinja2_sandbox.ImmutableSandboxedEnvironment(loader=BaseLoader(), trim_blocks=True, lstrip_blocks=True)
        .from_string(QWEN_LIKE_TEMPLATE)
        .render(messages=messages, add_generation_prompt=True, eos_token="</s>", bos_token="<s>")
    )
    ours = BoundedChatFormatter(QWEN_LIKE_TEMPLATE, eos_token="</s>", bos_token="<s>")(messages=messages)
    assert ours.prompt == reference and ours.stop == ["</s>"]
    check_template(QWEN_LIKE_TEMPLATE)  # a real template passes the registration check
    assert CHECK_LIMITS.steps < TemplateLimits().steps


@pytest.mark.parametrize(
    "template",
    [
        BOMBS["10^10 empty loop"],
        BOMBS["after a real template"],
        BOMBS["repeat"],
        # Only a plain compile (llama-cpp-python's, at model load) would fold this constant, in a branch never run.
        QWEN_HEAD + "{% if false %}{{ 'x'|center(4000000000) }}{% endif %}",
    ],
    ids=["loop", "loop after a real template", "repeat", "constant folded at load"],
)
def test_models_add_refuses_a_template_bomb_and_registers_nothing(tmp_path: Path, template: str) -> None:
    home = ExoHome(tmp_path / "home")
    gguf = model_like(template=template).write(tmp_path / "bomb.gguf")
    with pytest.raises(UnsafeTemplateError) as info:
        register_model(home, gguf, name="bomb")
    assert str(gguf) in info.value.message and "chat template is refused" in info.value.message
    assert load_registered(home) == {}


def test_exo_models_add_says_why_it_refused(tmp_path: Path) -> None:
    gguf = model_like(template=BOMBS["after a real template"]).write(tmp_path / "bomb.gguf")
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_MODEL", "EXO_MODELS_MAIN")}
    env.update({"PYTHONPATH": str(ROOT), "EXO_HOME": str(tmp_path / "home")})
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "models", "add", str(gguf)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unsafe_template" in done.stderr and "rendering a sample conversation" in done.stderr, done.stderr
