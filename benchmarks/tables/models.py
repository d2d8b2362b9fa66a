"""§10 and §12-14 of docs/benchmarks.md: the local model's paths and answers, the laptop's engine,
tool decisions with the chat model, and generation speed.

From ``models.json`` (``bench_models.py``), ``answers.json`` (``bench_answers.py``), ``laptop.json``
(``bench_laptop.py``), ``exod_tools_<model>*.json`` (``bench_exod_tools.py``), ``generation.json`` and
``generation_matrix.json`` (``bench_generation.py``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import fixed, frac, md_table, times

__all__ = [
    "models_paths",
    "models_memory",
    "answers_cleanup",
    "laptop_models",
    "exod_tools_parts",
    "exod_tools_rerun",
    "generation",
    "generation_matrix",
]

_PATHS = (
    ("direct", "direct llama-cpp-python (baseline)"),
    ("transport", "LlamaTransport"),
    ("router", "router → transport"),
    ("sse", "SSE over loopback"),
)


def models_paths(data: dict[str, Any]) -> list[str]:
    """§10: tokens per second and time to first token of each path, against llama-cpp-python directly."""
    rows = []
    for run in data["runs"]:
        for path, label in _PATHS:
            median = run["median"][path]
            ratio = run["ratio_to_direct"][path]
            rows.append(
                [
                    run["threads"],
                    label,
                    fixed(median["tok_s"], 1),
                    fixed(median["ttft"] * 1000, 1),
                    fixed(ratio["tok_s"], 3),
                    fixed(ratio["ttft"], 3),
                ]
            )
    headers = ["threads", "path", "tok/s", "TTFT ms", "tok/s ÷ direct", "TTFT ÷ direct"]
    return md_table(headers, rows, align="rlrrrr")


def _prefix_reuse(reuse: dict[str, Any]) -> str:
    cold = fixed(reuse["cold_prompt_s"] * 1000, 0)
    warm = fixed(reuse["warm_prompt_s"] * 1000, 0)
    tokens = f"{reuse['reused_tokens']} of {reuse['prompt_tokens']} tokens reused"
    return f"{cold} → {warm} ms ({tokens}), ×{reuse['speedup']:.2f}"


def models_memory(data: dict[str, Any]) -> list[str]:
    """§10: load time, memory, prefix reuse (cold prompt as the baseline) and interrupt latency."""
    headers = [
        "threads",
        "load s",
        "RSS loaded MB",
        "RSS end MB",
        "RSS + int8 embedder MB",
        "prefix reuse: cold → warm prompt (baseline: cold)",
        "interrupt ms",
    ]
    rows = []
    for run in data["runs"]:
        rows.append(
            [
                run["threads"],
                fixed(run["load_s"], 1),
                fixed(run["rss_mb_loaded"], 1),
                fixed(run["rss_mb_end"], 1),
                fixed(run["rss_mb_with_int8_embedder"], 1),
                _prefix_reuse(run["prefix_reuse"]),
                fixed(run["interrupt_ms"], 1),
            ]
        )
    return md_table(headers, rows, align="rrrrrlr")


_ANSWER_SETS = (("tuning", "tuning"), ("heldout", "held-out"))
_ASKED = (("plain", "plain"), ("tools_offered", "tools offered"))


def answers_cleanup(data: dict[str, Any]) -> list[str]:
    """§10: right and flawed answers before and after the clean-up, per set and with tools offered or not."""
    rows = []
    for key, name in _ANSWER_SETS:
        for asked, label in _ASKED:
            before = data["sets"][key][asked]["before"]
            after = data["sets"][key][asked]["after"]
            rows.append(
                [
                    f"{name} ({before['of']})",
                    label,
                    f"{before['correct']} → {after['correct']}",
                    f"{before['flawed']} → {after['flawed']}",
                ]
            )
    return md_table(["set", "asked", "correct before → after", "flawed before → after"], rows, align="llrr")


def laptop_models(data: dict[str, Any]) -> list[str]:
    """§12: each model on ``llama_cpp.server``: answers, tool calls, speed against the 0.5B, memory."""
    headers = [
        "model",
        "general",
        "right calls",
        "stays text",
        "first piece, cold (s)",
        "first piece, warm, median (s)",
        "tokens/s, median",
        "x 0.5B",
        "server peak RSS",
    ]
    models = data["models"]
    baseline = models["0.5b"]["tokens_per_s_median"]
    best_calls = max(model["tool_calls_right"] for model in models.values())
    rows = []
    for size in sorted(models, key=lambda size: float(size.rstrip("b")), reverse=True):
        model = models[size]
        calls = frac(model["tool_calls_right"], model["tool_calls_total"])
        if model["tool_calls_right"] == best_calls:
            calls = f"**{calls}**"
        rows.append(
            [
                f"Qwen2.5-Coder {size.upper()} Instruct",
                frac(model["general_right"], model["general_total"]),
                calls,
                frac(model["stays_text"], model["stays_text_total"]),
                fixed(model["first_piece_cold_s"], 1),
                fixed(model["first_piece_s_median"], 1),
                fixed(model["tokens_per_s_median"], 1),
                times(model["tokens_per_s_median"] / baseline),
                f"{fixed(model['server_peak_rss_mb'], 0)} MB",
            ]
        )
    return md_table(headers, rows)


_TOOL_PARTS = (
    ("dev", "dev (tuning, all tools)"),
    ("exod all", "**exod all (held out)**"),
    ("exod core+shell", "exod core+shell (held out)"),
    ("exod shell", "exod shell only (held out)"),
    ("bench", "bench_models' three tools"),
)


def exod_tools_parts(data: dict[str, Any]) -> list[str]:
    """§13: right calls and stayed text with the chat model, per offer of tools (held out: the exod parts)."""
    rows = []
    for key, label in _TOOL_PARTS:
        part = data["parts"][key]
        right = frac(part["right_call"], part["of_requests"])
        text = frac(part["stayed_text"], part["of_questions"])
        if key == "exod all":
            right = f"**{right}**"
            text = f"**{text}**"
        rows.append([label, right, part["any_call"], text])
    return md_table(["part", "right call", "any call", "stayed text"], rows)


def _calls_and_text(part: dict[str, Any]) -> str:
    return f"{frac(part['right_call'], part['of_requests'])}, {frac(part['stayed_text'], part['of_questions'])}"


def exod_tools_rerun(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """§13: the whole-call ranking against the run before it, on the parts it reran."""
    rows = [
        [
            "dev (tuning): right call / stayed text",
            _calls_and_text(before["parts"]["dev"]),
            _calls_and_text(after["parts"]["dev"]),
        ],
        [
            "**exod all (held out): right call / stayed text**",
            f"**{_calls_and_text(before['parts']['exod all'])}**",
            f"**{_calls_and_text(after['parts']['exod all'])}**",
        ],
    ]
    return md_table(["part", "before (2026-12-01 run above)", "after (whole-call ranking)"], rows)


def exod_tools_asked(before: dict[str, Any], after_dev: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """§13: the person's verbs as candidates and intent, against main's code in the same session, per set."""
    rows = [
        [
            "dev (tuning): right call / stayed text",
            _calls_and_text(before["parts"]["dev"]),
            _calls_and_text(after_dev["parts"]["dev"]),
        ],
        [
            "**exod all (held out): right call / stayed text**",
            f"**{_calls_and_text(before['parts']['exod all'])}**",
            f"**{_calls_and_text(after['parts']['exod all'])}**",
        ],
        [
            "**clean set (new, held out): right call / stayed text**",
            f"**{_calls_and_text(before['parts']['clean'])}**",
            f"**{_calls_and_text(after['parts']['clean'])}**",
        ],
    ]
    return md_table(["part", "before (main's code)", "after (the person's verbs)"], rows)


def generation(data: dict[str, Any]) -> list[str]:
    """§14: tokens per second through exod against llama-cpp-python directly, per thread count."""
    headers = [
        "threads",
        "direct tokens/s",
        "exod tokens/s",
        "**exod / direct**",
        "direct first token",
        "exod first token",
    ]
    rows = []
    for run in data["runs"]:
        rows.append(
            [
                run["threads"],
                fixed(run["direct"]["tokens_per_s"], 2),
                fixed(run["exod"]["tokens_per_s"], 2),
                f"**{fixed(run['exod_over_direct_tokens_per_s'], 2)}**",
                f"{fixed(run['direct']['first_token_s'], 2)} s",
                f"{fixed(run['exod']['first_token_s'], 2)} s",
            ]
        )
    return md_table(headers, rows, align="rrrrrr")


def _times_baseline(value: float) -> str:
    if value == 1.0:
        return "1.0"
    return fixed(value, 2)


def generation_matrix(data: dict[str, Any]) -> list[str]:
    """§14: threads x wait policy x batch size, each a fresh process, against the first (baseline) run."""
    headers = [
        "threads",
        "OMP_WAIT_POLICY",
        "n_batch",
        "decode tok/s",
        "x baseline",
        "first token (250-token prompt)",
        "x baseline",
        "load (1 min)",
    ]
    runs = data["runs"]
    first = runs[0]
    rows = []
    for index, run in enumerate(runs):
        batch = str(run["n_batch"])
        same = (run["threads"], run["omp"], run["n_batch"]) == (first["threads"], first["omp"], first["n_batch"])
        if index > 0 and same:
            batch = f"{batch} (again, last)"
        rows.append(
            [
                run["threads"],
                run["omp"],
                batch,
                fixed(run["tokens_per_s"], 2),
                _times_baseline(run["tokens_per_s_x_baseline"]),
                f"{fixed(run['first_token_s'], 1)} s",
                _times_baseline(run["first_token_s_x_baseline"]),
                fixed(run["loadavg_1m"], 1),
            ]
        )
    return md_table(headers, rows, align="rlrrrrrr")


BOARD_MODELS = {"standard": "Qwen2.5-Coder 0.5B", "small": "Gemma 3 270M", "laptop": "Qwen2.5-Coder 1.5B"}
"""The model each board profile's home runs (DESIGN §5), as the answer tables name it."""


def store_answers(data: dict[str, Any]) -> list[str]:
    """§15: answers from the store through ``exo chat``, per half and in all (``exo bench answers``)."""

    def line(label: str, part: dict[str, Any], strong: bool = False) -> list[str]:
        cells = [
            f"{frac(part['right'], part['of'])} ({fixed(part['percent'], 1)} %)",
            frac(part["store"]["right"], part["store"]["of"]),
            frac(part["general"]["right"], part["general"]["of"]),
            frac(part["file"]["right"], part["file"]["of"]),
        ]
        if strong:
            cells = [f"**{cell}**" for cell in cells]
        return [label, *cells, str(part["general_with_tool_call"]), str(part["turn_errors"])]

    halves = data["halves"]
    rows = [
        line(f"open half ({halves['open']['of']})", halves["open"]),
        line(f"held-out half ({halves['heldout']['of']})", halves["heldout"]),
        line(f"**all ({data['all']['of']})**", data["all"], strong=True),
    ]
    model = BOARD_MODELS.get(data["board"], data["board"])
    headers = [f"`{data['board']}` ({model})", "right", "store", "general", "file"]
    return md_table([*headers, "general with a tool call", "turn errors"], rows)
