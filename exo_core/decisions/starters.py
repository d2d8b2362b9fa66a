"""Calibrations that ship with Exo, used until a home has labelled enough decisions of its own (docs/decisions.md §4).

A decision model's raw numbers lean: the laptop's 1.5B with the signal question's fixed examples names the
right option first on 72.9 % of the fit data's leftovers raw and on 86.4 % calibrated (docs/studies/signal-decisions.md,
sixth pass). A fresh home has no labels, so without these its decisions would use the raw numbers and be
worse than every number the benchmark reports. The file ``data/starter_calibrations.json`` holds one Platt
calibration per model, prompt style and mechanism, fitted on the benchmark's fit data (the rules' leftovers of
the labelled set's fit part and the two written fit sets; never the test part or the held-out messages) by
``benchmarks/starter_calibrations.py``, which also checks the shipped file against the results it was fitted on.

A provider is matched by its name without the first part (the route's provider, ``local`` or the catalog's
name for the laptop): ``laptop:qwen2.5-coder-1.5b-instruct:chat`` and ``hosted2:qwen2.5-coder-1.5b-instruct:chat``
both find the starter of ``qwen2.5-coder-1.5b-instruct:chat``. A home's own calibration of that provider
replaces the starter once it has :data:`~exo_core.decisions.calibration.MIN_SAMPLES` labels (below that it
would fit the slope alone and lose the starter's per-option offsets).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from exo_core.decisions.calibration import Calibration, starter_key
from exo_core.errors import ConfigError

__all__ = ["DEFAULT_STARTERS", "BadStarterFile", "load_starters", "starter_key"]

DEFAULT_STARTERS = Path(__file__).resolve().parent / "data" / "starter_calibrations.json"

_loaded: dict[Path, Mapping[tuple[str, str], Calibration]] = {}


class BadStarterFile(ConfigError):
    """The starter calibrations file is not what it should be (the file's fault, named in the message)."""


def load_starters(path: Path = DEFAULT_STARTERS) -> Mapping[tuple[str, str], Calibration]:
    """The starters in ``path`` keyed by ``(starter_key, mechanism)``; read once per process and path.

    :class:`BadStarterFile` names the file and the entry when it cannot be read or an entry is malformed."""
    found = _loaded.get(path)
    if found is not None:
        return found
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadStarterFile(f"cannot read the starter calibrations {path}: {exc}") from exc
    entries = data.get("starters") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise BadStarterFile(f'{path}: expected an object with a "starters" list')
    out: dict[tuple[str, str], Calibration] = {}
    for number, entry in enumerate(entries, 1):
        calibration, keys = _entry(entry, f"{path}: starter {number}")
        for key in keys:
            out[key] = calibration
    _loaded[path] = out
    return out


def _entry(entry: Any, where: str) -> tuple[Calibration, list[tuple[str, str]]]:
    if not isinstance(entry, dict):
        raise BadStarterFile(f"{where}: expected an object")
    mechanism = entry.get("mechanism")
    models = entry.get("models")
    style = entry.get("style")
    offsets = entry.get("offsets")
    slope = entry.get("slope")
    samples = entry.get("samples")
    if not isinstance(mechanism, str) or not isinstance(style, str):
        raise BadStarterFile(f'{where}: "mechanism" and "style" must be strings')
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise BadStarterFile(f'{where}: "models" must list the model names it calibrates')
    if not isinstance(offsets, dict) or not offsets or not all(_number(v) for v in offsets.values()):
        raise BadStarterFile(f'{where}: "offsets" must map each option to a number')
    if not isinstance(slope, (int, float)) or not _number(slope) or slope <= 0:
        raise BadStarterFile(f'{where}: "slope" must be a positive number')
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise BadStarterFile(f'{where}: "samples" must be how many labelled decisions it was fitted on')
    options = tuple(str(o) for o in offsets)
    calibration = Calibration(options, float(slope), tuple(float(offsets[o]) for o in options), samples)
    keys = [(f"{model}:{style}" if style else model, mechanism) for model in models]
    return calibration, keys


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
