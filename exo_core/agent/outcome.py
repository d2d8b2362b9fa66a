"""What a turn's end means to the person, in words, with what to do about it.

Every screen (the device, ``exo chat``, the terminal client, the web page) shows the same
explanation, so it is made once, here, and travels in ``turn.completed`` as ``hint``
(docs/protocol.md). A turn that answered needs none; a turn that ended with nothing to show,
or failed, says what happened and which setting or command changes it.
"""

from __future__ import annotations

__all__ = ["explain_turn_end"]

_CONTEXT_WORDS = ("n_ctx", "context window", "context length", "prompt has")
_UNREACHABLE_WORDS = ("unreachable", "connect", "timed out", "timeout", "refused", "no route", "unavailable")


def explain_turn_end(reason: str, error: str | None, *, answer: str, acted: bool) -> str | None:
    """The hint for a turn that ended with ``reason``; ``None`` when the answer speaks for itself.

    ``answer`` is the final text shown; ``acted`` says whether any tool ran in the turn (a turn
    that only acted may end without words and still have done what was asked).
    """
    if reason == "end":
        if answer.strip() or acted:
            return None
        return (
            "The model returned an empty answer. Ask again in other words; if it keeps happening, "
            "choose another model (`exo models list`, then [models.roles] main in config.toml)."
        )
    if reason == "interrupted":
        return "Stopped. What was already written is kept; ask again to continue."
    if reason == "iteration_cap":
        return "Stopped after too many tool rounds without an answer. Ask for one step at a time."
    if reason == "crashed":
        return "The core stopped during this turn. Send the message again (session.resume continues it)."
    return _explain_error(error or "")


def _explain_error(error: str) -> str:
    code, _, message = error.partition(": ")
    lowered = message.lower()
    if any(word in lowered for word in _CONTEXT_WORDS):
        return (
            "The conversation no longer fits the model's context window. Start a new session (/new), "
            "or raise n_ctx under [models.local] in config.toml if the board has the memory."
        )
    if code == "bad_config":
        return f"The model is not set up: {message}"
    file_missing = "missing" in lowered and "model" in lowered
    if "exo models fetch" in lowered or file_missing:
        return "The local model file is missing. Run `exo models fetch` (or scripts/setup.sh), then ask again."
    if code in ("model_error", "model_retry", "unavailable") and any(word in lowered for word in _UNREACHABLE_WORDS):
        return (
            "The model is unreachable. Check that its server runs, or change [models.roles] main in "
            "config.toml; the local model answers when the larger one is away."
        )
    if code in ("model_error", "model_retry"):
        return f"The model failed: {message or code}. Ask again; if it repeats, try another model in config.toml."
    if code == "internal":
        return "Something went wrong inside the core (its log has the details). Ask again."
    return f"The turn failed ({code}). {message}".strip()
