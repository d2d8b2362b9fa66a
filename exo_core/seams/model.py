"""The model seam: what the agent loop asks of any model, local or hosted.

A *model transport* streams one model call as a sequence of chunks. The agent
loop imports only this module; the scripted model (tests), the model router,
the local GGUF provider and hosted providers all implement
:class:`ModelTransport`.

Failure contract: a transport raises :class:`~exo_core.errors.RetryableModelError`
for transient failures (rate limit, 5xx, network) and
:class:`~exo_core.errors.ModelError` for the rest. The loop retries a retryable
error only while no chunk of the call has been shown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "INTERRUPTED_MARK",
    "DEFAULT_TEMPERATURE",
    "ChatMessage",
    "ToolCall",
    "ModelRequest",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallChunk",
    "UsageChunk",
    "Finish",
    "TopTokens",
    "ModelChunk",
    "ModelTransport",
    "ClosableTransport",
    "TokenCounter",
    "ContextWindow",
    "WindowedTransport",
    "WarmingTransport",
    "Timeouts",
]

Role = Literal["system", "user", "assistant", "tool"]
# appended to the text of an assistant answer the person interrupted (see to_chat_messages)
INTERRUPTED_MARK = "\n[interrupted]"
# the temperature of an answer whose request names none, where the model has no recommended sampling here
DEFAULT_TEMPERATURE = 0.7


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a model input.

    ``tool_calls`` is set on assistant messages that asked for tools;
    ``tool_call_id`` on tool messages answering one call.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """A complete, fresh model input (never a growing transcript).

    ``tools`` holds JSON-able tool descriptions (name, description, parameters
    as JSON Schema). ``role`` names the router role (main, aux, decision).
    ``tool_choice`` is ``auto`` (the model decides), ``required`` (it must call
    one of ``tools``), ``none``, or a tool name (it must call that one).
    ``pointed`` holds calls the core found the person's words point to (a read
    of a workspace file they named: :mod:`exo_core.agent.named_files`), already
    grounded; a transport that decides text vs call itself may make the first
    when its model leans to text (docs/models.md, "Text or a tool call").
    Others ignore it. ``top_logprobs`` (0: none) asks the engine for the K most likely tokens at each step of
    the answer, with their log probabilities (:class:`TopTokens`); OpenAI-compatible engines that support
    it send them, every other transport ignores it (a decision read this way abstains without them).
    ``background`` marks work the person is not waiting for (a decision, a queued job): an engine shared
    with the person's turn serves that turn first and may cut a background request off for it.
    """

    messages: tuple[ChatMessage, ...]
    tools: tuple[dict[str, Any], ...] = ()
    max_tokens: int = 512
    # None: the model's own recommended sampling (a local model's manifest, docs/models.md "Sampling"),
    # or DEFAULT_TEMPERATURE for an engine or provider that has no such setting here
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    role: str = "main"
    tool_choice: str = "auto"
    pointed: tuple[ToolCall, ...] = ()
    top_logprobs: int = 0
    background: bool = False

    def temperature_or(self, default: float = DEFAULT_TEMPERATURE) -> float:
        """The temperature this request names, else ``default`` (the model's recommended one)."""
        if self.temperature is None:
            return default
        return self.temperature


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text (shown apart from the answer, if at all)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A complete tool call. Transports assemble partial calls before yielding."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Token counts (and cost, when the provider is priced) for the call.

    ``input_tokens`` counts every prompt token; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the parts of it read from or written to the
    provider's prompt cache (priced at their own rates).
    """

    input_tokens: int
    output_tokens: int
    cost: float = 0.0
    model: str = ""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Finish:
    """The end of the call; ``reason`` is ``end``, ``tool_calls`` or ``length``."""

    reason: str = "end"


@dataclass(frozen=True, slots=True)
class TopTokens:
    """The engine's most likely tokens at one step of the answer, as ``(token text, log probability)``,
    most likely first (sent before that step's text, when the request asked for ``top_logprobs``)."""

    tokens: tuple[tuple[str, float], ...]


ModelChunk = TextDelta | ReasoningDelta | ToolCallChunk | UsageChunk | Finish | TopTokens


@runtime_checkable
class ModelTransport(Protocol):
    """Streams one model call. Implementations must not block the event loop."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Yield the chunks of one call, ending with :class:`Finish`."""
        ...


class TokenCounter(Protocol):
    """Counts tokens the way one model sees them (its tokenizer, or an estimate).

    Both methods may run the tokenizer in a worker thread; neither blocks the event loop.
    """

    async def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text on its own (no template around it)."""
        ...

    async def measure(self, request: ModelRequest) -> int:
        """Prompt tokens of the whole rendered ``request``: template, tools and every message."""
        ...


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """The window a model call must fit in, and how to count for it (docs/context.md).

    ``n_ctx`` is the model's window in tokens (prompt and answer together);
    ``message_overhead`` the tokens its template adds around one message;
    ``margin`` tokens kept free for counting error (0 for the model's own
    tokenizer, more for an estimate); ``exact`` says whether ``counter`` is
    the model's own tokenizer; ``where`` tells a person where ``n_ctx`` is set.
    """

    n_ctx: int
    counter: TokenCounter
    message_overhead: int = 4
    margin: int = 0
    exact: bool = False
    model: str = ""
    where: str = ""


@runtime_checkable
class ClosableTransport(Protocol):
    """An optional capability of a :class:`ModelTransport` (or of one stream): resources to release.

    The router closes its transports' streams and, at shutdown, the transports themselves
    when they declare it (a llama.cpp model, an HTTP session).
    """

    async def aclose(self) -> None:
        """Release what the transport or stream holds."""
        ...


@runtime_checkable
class WindowedTransport(Protocol):
    """An optional capability of a :class:`ModelTransport`: it knows the window of its model.

    The loop and the context engine check for it with ``isinstance`` (it is
    declared here, not probed) and size every input to it; a transport without
    it gets the input unbudgeted, as before.
    """

    async def context_window(self, role: str) -> ContextWindow | None:
        """The window of the model that would serve a call for ``role`` now (``None``: unknown)."""
        ...


@runtime_checkable
class WarmingTransport(Protocol):
    """An optional capability of a :class:`ModelTransport`: it can read a prompt's fixed head ahead of a call.

    ``request`` holds the head's messages (the system prompt) and the tools a call
    will offer; the model reads their state in the background, at once or from a
    saved copy, and gives way to any real call that comes meanwhile. Returns a
    word for the log: what it did (``memory``, ``disk``, ``computed``, ``interrupted``, ...).
    """

    async def warm(self, request: ModelRequest) -> str:
        """Have the state of ``request``'s fixed head ready for the next call."""
        ...


@dataclass(frozen=True, slots=True)
class Timeouts:
    """HTTP timeouts in seconds (see catalog.toml ``[timeouts]``)."""

    connect: float = 5.0
    first_byte: float = 30.0
    idle: float = 60.0
    total: float = 600.0  # one whole answer, however steadily it streams
