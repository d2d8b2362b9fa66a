"""The seams floor: the types and Protocols every part of Exo shares, and no logic.

Everything above imports its vocabulary from here: the model request and its stream
(:mod:`.model`), the recorder (:mod:`.recorder`), the embedder and the dense index
(:mod:`.embedding`), decision questions and their providers (:mod:`.decision`), the model
providers' failures (:mod:`.failures`), the link to a provider (:mod:`.link`), the Exo home's
layout (:mod:`.home`) and the edge kit with its factory Protocols (:mod:`.edge`). This package
imports nothing of ``exo_core`` but :mod:`exo_core.errors`; ``exo_edge`` and ``device`` reach the
core through it (the layer contracts in ``pyproject.toml``, docs/architecture.md "Layers").
"""

from exo_core.seams.decision import (
    BadProviderOutput,
    ClosingProvider,
    Decision,
    DecisionProvider,
    DraftReadingProvider,
    Question,
    Rule,
    WarmingProvider,
)
from exo_core.seams.edge import EdgeKit, HostedFactory, LocalDecider, LocalFactory, ProposalStore
from exo_core.seams.embedding import VECTOR_FILE, DenseIndex, DenseSync, IdentifiedEmbedder, TextEmbedder
from exo_core.seams.failures import FailureKind, ProviderError, RetryableProviderError
from exo_core.seams.home import ExoHome
from exo_core.seams.model import (
    INTERRUPTED_MARK,
    ChatMessage,
    ClosableTransport,
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    ModelTransport,
    ReasoningDelta,
    TextDelta,
    Timeouts,
    TokenCounter,
    ToolCall,
    ToolCallChunk,
    TopTokens,
    UsageChunk,
    WindowedTransport,
)
from exo_core.seams.recorder import NullRecorder, Recorder

__all__ = [
    # the model request and its stream
    "ChatMessage",
    "ToolCall",
    "ModelRequest",
    "ModelChunk",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallChunk",
    "UsageChunk",
    "Finish",
    "TopTokens",
    "INTERRUPTED_MARK",
    "ContextWindow",
    "Timeouts",
    # transports and their optional capabilities
    "ModelTransport",
    "ClosableTransport",
    "WindowedTransport",
    "TokenCounter",
    "ProviderError",
    "RetryableProviderError",
    "FailureKind",
    # the ledger recorder
    "Recorder",
    "NullRecorder",
    # embeddings
    "TextEmbedder",
    "IdentifiedEmbedder",
    "DenseIndex",
    "DenseSync",
    "VECTOR_FILE",
    # decisions
    "Question",
    "Rule",
    "Decision",
    "DecisionProvider",
    "DraftReadingProvider",
    "WarmingProvider",
    "ClosingProvider",
    "BadProviderOutput",
    # the home and the edge kit
    "ExoHome",
    "EdgeKit",
    "LocalFactory",
    "HostedFactory",
    "LocalDecider",
    "ProposalStore",
]
