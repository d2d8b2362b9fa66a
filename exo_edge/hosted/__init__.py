"""Hosted-provider transports: OpenAI-compatible servers and the Anthropic Messages API.

They implement the core's model-transport seam (:class:`exo_core.seams.model.ModelTransport`)
over HTTP; :class:`exo_core.models.ModelRouter` imports :class:`HostedTransports`
lazily, the way it takes the local GGUF transport from :mod:`exo_edge.local`,
so the core imports none of its transports (docs/architecture.md, "Seams").
"""

from __future__ import annotations

from exo_core.agent.grounding import call_grounding
from exo_core.seams.model import ModelTransport, Timeouts
from exo_edge.chat_run import CallJudge
from exo_edge.hosted.anthropic import AnthropicTransport
from exo_edge.hosted.engine_gate import ENGINE_GATES, EngineGates
from exo_edge.hosted.http import HttpClient
from exo_edge.hosted.openai_compat import OpenAICompatTransport

__all__ = ["HostedTransports", "TRANSPORTS", "HttpClient", "OpenAICompatTransport", "AnthropicTransport"]


# The transport of each of the catalog's hosted kinds (exo_core.models.catalog.HOSTED_KINDS).
TRANSPORTS: dict[str, type[AnthropicTransport] | type[OpenAICompatTransport]] = {
    "openai": OpenAICompatTransport,
    "anthropic": AnthropicTransport,
}


class HostedTransports:
    """Makes the transport of each hosted route; every one shares one HTTP session.

    ``judge`` rules on the tool calls of OpenAI-compatible engines (the laptop
    route) before they run, as it does on the local model's (docs/models.md,
    "Text or a tool call").
    """

    def __init__(
        self, timeouts: Timeouts = Timeouts(), *, judge: CallJudge = call_grounding, gates: EngineGates = ENGINE_GATES
    ) -> None:
        self.client = HttpClient(timeouts)
        self.judge = judge
        self.gates = gates

    def transport(
        self,
        kind: str,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        provider: str,
        judge_calls: bool = False,
        tls_cert: str = "",
        serial: bool = False,
    ) -> ModelTransport:
        """The transport for a provider of ``kind``, one of the catalog's ``HOSTED_KINDS``.

        ``judge_calls`` (the provider's setting) hands an OpenAI-compatible transport the judge;
        ``tls_cert`` pins the engine's certificate; ``serial`` sends through the engine's gate, shared
        by every router of this process (:mod:`exo_edge.hosted.engine_gate`).
        """
        gate = self.gates.gate(base_url) if serial else None
        if kind == "openai":
            judge = self.judge if judge_calls else None
            return OpenAICompatTransport(
                self.client,
                base_url=base_url,
                model=model,
                api_key=api_key,
                provider=provider,
                judge=judge,
                tls_cert=tls_cert,
                gate=gate,
            )
        cls = TRANSPORTS[kind]
        return cls(
            self.client,
            base_url=base_url,
            model=model,
            api_key=api_key,
            provider=provider,
            tls_cert=tls_cert,
            gate=gate,
        )

    async def aclose(self) -> None:
        """Close the shared HTTP session."""
        await self.client.aclose()
