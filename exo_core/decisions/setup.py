"""Building a :class:`~exo_core.decisions.decider.Decider` from an Exo home's ``config.toml``.

::

    [decisions]
    providers = ["rules-only"]            # the person's order: "local", "hosted", "rules-only"
    local_timeout = 0.5                    # seconds
    hosted_timeout = 2.0
    toolsets = false                       # narrow each turn's tools with the toolset decision
    larger = ""                            # where an abstention goes first: "" = the first `main` route
                                           # off the device (the laptop's engine), "none", or a route
    larger_timeout = 10.0                  # seconds for the larger model's answer (at most 300: no reply waits on it)
    defer_below = 0.9                      # with the larger model reachable, a device model's decision below this
                                           # probability goes to it (0 = never; docs/decisions.md §7a)
    ask_person = true                      # a signal on a reply to a draft may be asked (question.asked)
    ask_timeout = 120.0                    # seconds the question stays open before it is queued instead
    show_draft = false                     # show the models the draft a signal answers (off: see the benchmark)
    neighbours = []                        # models shown each signal message's nearest pool examples instead of
                                           # the fixed ones: "local", "larger" (docs/decisions.md §3)
    signal_examples = ""                   # that pool: "" = the one that ships with Exo, or a JSON-lines file
                                           # (a path; relative = under the home)

``local`` is the local GGUF model (the edge's, :mod:`exo_core.edge`; skipped with a warning when
the runtime is not installed), ``hosted`` the router's ``decision`` role,
``rules-only`` the cue-word provider. The models named in ``neighbours`` are shown each signal message's
nearest examples from ``signal_examples`` (:mod:`exo_core.decisions.neighbours`) when the edge has a
sentence embedder; without one they keep the question's fixed examples. Calibration is rebuilt from the store's
ledger: its decisions and their labels.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.clock import Clock
from exo_core.decisions.calibration import MIN_SAMPLES, CalibrationBook
from exo_core.decisions.decider import Decider
from exo_core.decisions.logprobs import HOSTED, LogprobProvider
from exo_core.decisions.neighbours import DEFAULT_SIGNAL_POOL, ExamplePool, NeighbourExamples, NeighbourProvider
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.decisions.record import labelled_samples
from exo_core.decisions.starters import load_starters
from exo_core.decisions.uses import SIGNAL, chosen_toolsets, toolset
from exo_core.edge import EdgeKit, edge_or_installed
from exo_core.errors import ConfigError
from exo_core.seams.decision import DecisionProvider
from exo_core.seams.home import ExoHome
from exo_core.seams.model import ModelTransport
from exo_core.seams.recorder import Recorder

if TYPE_CHECKING:
    from exo_core.ledger.ledger import Ledger

__all__ = [
    "PROVIDER_KINDS",
    "NEIGHBOUR_MODELS",
    "DecisionSettings",
    "build_providers",
    "with_neighbours",
    "calibration_from_store",
    "calibration_from_ledger",
    "build_decider",
    "ToolsetNarrowing",
]

PROVIDER_KINDS = ("local", "hosted", "rules-only")
NEIGHBOUR_MODELS = ("local", "larger")  # who may be shown the message's nearest examples
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DecisionSettings:
    """The ``[decisions]`` table."""

    # Rules-only by default: on the labelled set it beats the 270M base model (docs/benchmarks.md).
    providers: tuple[str, ...] = ("rules-only",)
    local_timeout: float = 0.5
    hosted_timeout: float = 2.0
    toolsets: bool = False
    local_model: str = "gemma-3-270m"
    # A GGUF file (in the models folder, or a path) to decide with instead of the manifest
    # ``local_model``: for a model whose manifest is not installed (docs/decisions.md §8).
    local_file: str = ""
    # Where an abstention goes (docs/decisions.md §7a): "" is the first route of the `main` role that is
    # not on this device (the laptop's engine, `main = ["laptop:...", "local:..."]`); "none" turns it off.
    larger: str = ""
    larger_timeout: float = 10.0
    # With the larger model reachable, a device model's decision below this probability goes to it; the device's
    # stands when it abstains (docs/decisions.md §7a). 0.9: chosen on the fit data leaving one source out, by a
    # criterion fixed before the run (docs/studies/signal-decisions.md, "The device model defers").
    defer_below: float = 0.9
    ask_person: bool = True
    ask_timeout: float = 120.0
    # Show the signal decision's models the draft the message answers (docs/decisions.md §3). Off: on the
    # fit set it did not make either model right more often once calibrated (docs/studies/signal-decisions.md).
    show_draft: bool = False
    # Who is shown each signal message's nearest pool examples (docs/decisions.md §3). None by default: for the
    # laptop's 1.5B over HTTP, chosen on the fit data leaving one source out (docs/studies/signal-decisions.md),
    # they were right on 172 of 221 leftovers against the fixed examples' 170, a tie, at 5.7 s a decision
    # against 0.83 s; for the 0.5B they take seconds against a 0.5 s timeout.
    neighbours: tuple[str, ...] = ()
    # The pool they are chosen from: "" is the pool that ships with Exo.
    signal_examples: str = ""

    def signal_pool(self, home: ExoHome) -> Path:
        """The example pool's file (a relative path is under the home)."""
        if not self.signal_examples:
            return DEFAULT_SIGNAL_POOL
        path = Path(self.signal_examples).expanduser()
        if path.is_absolute():
            return path
        return home.root / path

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> DecisionSettings:
        """Read and check ``config["decisions"]``; defaults when absent."""
        table = config.get("decisions", {})
        defaults = cls()
        if not isinstance(table, Mapping):
            raise ConfigError("config.toml: [decisions] must be a table")
        unknown = set(table) - set(cls.__slots__)
        if unknown:
            raise ConfigError(
                f"config.toml: [decisions] has unknown key {sorted(unknown)[0]!r}; known: {', '.join(cls.__slots__)}"
            )
        providers = table.get("providers", defaults.providers)
        if not isinstance(providers, (list, tuple)) or any(p not in PROVIDER_KINDS for p in providers):
            raise ConfigError(f"config.toml: decisions.providers must list some of {', '.join(PROVIDER_KINDS)}")
        out = {
            "providers": tuple(providers),
            "toolsets": table.get("toolsets", False),
            "local_model": table.get("local_model", defaults.local_model),
            "local_file": table.get("local_file", defaults.local_file),
            "larger": table.get("larger", defaults.larger),
            "ask_person": table.get("ask_person", defaults.ask_person),
            "show_draft": table.get("show_draft", defaults.show_draft),
            "signal_examples": table.get("signal_examples", defaults.signal_examples),
            "neighbours": table.get("neighbours", defaults.neighbours),
        }
        if not isinstance(out["signal_examples"], str):
            raise ConfigError('config.toml: decisions.signal_examples must be a JSON-lines file path, or ""')
        shown = out["neighbours"]
        if not isinstance(shown, (list, tuple)) or any(n not in NEIGHBOUR_MODELS for n in shown):
            raise ConfigError(f"config.toml: decisions.neighbours must list some of {', '.join(NEIGHBOUR_MODELS)}")
        out["neighbours"] = tuple(shown)
        if not isinstance(out["larger"], str):
            raise ConfigError('config.toml: decisions.larger must be a route "provider:model", "none" or ""')
        if not isinstance(out["ask_person"], bool):
            raise ConfigError("config.toml: decisions.ask_person must be true or false")
        if not isinstance(out["show_draft"], bool):
            raise ConfigError("config.toml: decisions.show_draft must be true or false")
        if not isinstance(out["local_file"], str):
            raise ConfigError("config.toml: decisions.local_file must be a GGUF file name or path")
        if not isinstance(out["toolsets"], bool):
            raise ConfigError("config.toml: decisions.toolsets must be true or false")
        if not isinstance(out["local_model"], str) or not out["local_model"]:
            raise ConfigError("config.toml: decisions.local_model must name a model manifest")
        for key, most in (
            ("local_timeout", 30),
            ("hosted_timeout", 30),
            ("larger_timeout", 300),
            ("ask_timeout", 3600),
        ):
            value = table.get(key, getattr(defaults, key))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
                raise ConfigError(f"config.toml: decisions.{key} must be a number of seconds in (0, {most}]")
            out[key] = float(value)
        defer = table.get("defer_below", defaults.defer_below)
        if isinstance(defer, bool) or not isinstance(defer, (int, float)) or not 0 <= defer <= 1:
            raise ConfigError("config.toml: decisions.defer_below must be a probability in [0, 1] (0: never defer)")
        out["defer_below"] = float(defer)
        return cls(**out)


def build_providers(
    home: ExoHome, settings: DecisionSettings, *, model: ModelTransport | None = None, edge: EdgeKit | None = None
) -> list[DecisionProvider]:
    """The providers in the configured order. ``model`` is the router exod answers with, when it has one;
    ``edge`` makes the local decision model (default: the installed edge's)."""
    from exo_core.models.router import ModelRouter, build_router  # the catalog loads only when decisions are built

    out: list[DecisionProvider] = []
    for kind in settings.providers:
        if kind == "rules-only":
            out.append(RulesOnlyProvider())
        elif kind == "hosted":
            if not isinstance(model, ModelRouter):  # not the router: make one
                model = build_router(home, edge=edge)
            # The option words' probabilities from the engine's top_logprobs; an engine that sends none
            # (Anthropic's API, the local GGUF transport) fails as a provider, and the next one answers.
            out.append(LogprobProvider(model, name=HOSTED, timeout=settings.hosted_timeout))
        else:
            local_decider = edge_or_installed(edge).local_decider
            if local_decider is None:
                log.warning("the local decision model needs exo_edge and llama-cpp-python; skipping it")
                continue
            shared = None
            if isinstance(model, ModelRouter) and model.local is not None and not settings.local_file:
                shared = model.local(settings.local_model)
            try:
                provider = local_decider(
                    home,
                    name=settings.local_model,
                    transport=shared,
                    timeout=settings.local_timeout,
                    model_file=settings.local_file,
                )
            except ImportError:
                log.warning("the local decision model needs exo_edge and llama-cpp-python; skipping it")
                continue
            out.append(with_neighbours(provider, home, settings, model="local", edge=edge))
    return out


def with_neighbours(
    provider: DecisionProvider,
    home: ExoHome,
    settings: DecisionSettings,
    *,
    model: str,
    edge: EdgeKit | None = None,
) -> DecisionProvider:
    """``provider`` (the ``model``: "local" or "larger") shown each signal message's nearest pool examples,
    when ``neighbours`` names it and the edge has an embedder; ``provider`` itself otherwise. Nothing is
    read or embedded here: the pool on the first decision (or warm-up), so a bad pool file fails that
    decision (as a provider failure: the next provider answers), naming the file."""
    if model not in settings.neighbours:
        return provider
    make_embedder = edge_or_installed(edge).embedder
    if make_embedder is None:
        log.info("no sentence embedder in this edge: the signal decision keeps its fixed examples")
        return provider
    embedder = make_embedder(home)
    if embedder is None:
        log.info("no sentence embedder: the signal decision keeps its fixed examples")
        return provider
    pool = ExamplePool(settings.signal_pool(home), SIGNAL)
    return NeighbourProvider(provider, NeighbourExamples(pool, embedder=embedder))


def calibration_from_store(store: Path | None, *, min_samples: int = MIN_SAMPLES) -> CalibrationBook:
    """Calibrations fitted on the labelled decisions in ``store``'s ledger, and the shipped starters that stand
    in until a provider has enough labels (the starters alone when there is no ledger)."""
    if store is None or not (store / "ledger.sqlite").is_file():
        return CalibrationBook(starters=load_starters())
    from exo_core.ledger import Ledger

    with Ledger.open_store(store) as ledger:
        return calibration_from_ledger(ledger, min_samples=min_samples)


def calibration_from_ledger(ledger: Ledger, *, min_samples: int = MIN_SAMPLES) -> CalibrationBook:
    """Calibrations fitted on the labelled decisions in an open ``ledger`` (what the proposal queue's drain
    thresholds a queued decision with: the same book exod's live decisions are calibrated with)."""
    # Decisions first, then their labels in arrival order.
    samples = labelled_samples([*ledger.entries(kind="decision"), *ledger.entries(kind="outcome")])
    return CalibrationBook.fitted(samples, min_samples=min_samples, starters=load_starters())


def build_decider(
    home: ExoHome,
    *,
    store: Path | None = None,
    recorder: Recorder | None = None,
    model: ModelTransport | None = None,
    providers: Sequence[str] | None = None,
    clock: Clock | None = None,
) -> Decider:
    """A decider for ``home``: configured providers (or ``providers``), calibrated on ``store``'s ledger."""
    settings = DecisionSettings.from_config(home.config())
    if providers is not None:
        chosen = DecisionSettings.from_config({"decisions": {"providers": list(providers)}}).providers
        settings = replace(settings, providers=chosen)
    return Decider(
        build_providers(home, settings, model=model),
        calibration=calibration_from_store(store),
        recorder=recorder,
        clock=clock,
    )


class ToolsetNarrowing:
    """The loop's toolset seam: which toolsets to offer this turn (``None``: all of them)."""

    def __init__(self, decider: Decider) -> None:
        self.decider = decider

    async def choose(self, text: str, toolsets: Sequence[str]) -> frozenset[str] | None:
        """Run the toolset decision on the turn's ``text``."""
        return chosen_toolsets(await toolset(self.decider, text, toolsets), toolsets)
