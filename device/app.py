"""The device client: buttons, screen and voice around one link to exod.

:class:`DeviceApp` owns the screen state and reacts to three sources, all on
the event loop: events from the core (through :class:`~device.link.Link`),
button gestures (from gpiozero threads via :class:`~device.buttons.ButtonBoard`)
and finished recordings. The flows (docs/architecture.md, "The flows"; docs/device.md, "Flows"):

1. *Ask*: hold talk, speak, release. The recording is trimmed to the voiced
   part, transcribed off the loop, and sent as ``turn.send``; the answer
   streams onto the screen and is spoken sentence by sentence as it arrives.
   A follow-up within ``follow_up_seconds`` continues the same session.
2. *Approve*: ``approval.requested`` shows a card; allow / deny answer it
   (hold allow: allow always). Any screen may answer first; the card goes
   when ``approval.resolved`` arrives.
3. *Answer*: ``question.asked`` shows numbered options and is spoken; a
   spoken option ("two", "the second one", "Tuesday") or next + allow answers.

Notable moments are written to ``journal`` as JSON objects (``--mock``
prints them as lines, and the voice benchmark reads their timings).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from device.answers import parse_option
from device.audio import to_16k, trim_silence
from device.buttons import ButtonBoard, Edge, Gesture, GestureDecoder
from device.layouts import ScreenSpec, render, theme_for
from device.link import Link, Pending
from device.mic import Microphone
from device.screen import Screen
from device.settings import BUTTONS, DeviceConfig
from device.speech import SentenceSplitter, Speaker
from device.state import Notice, ScreenState, apply_event, layout_of
from device.stt import SpeechToText
from device.tts import AudioOutput, TextToSpeech
from exo_core.client import ExoClient
from exo_core.errors import ExoError
from exo_core.protocol import Event

__all__ = ["DeviceApp", "capabilities_for"]

log = logging.getLogger(__name__)

Journal = Callable[[dict[str, Any]], None]


def capabilities_for(spec: ScreenSpec, *, voice_in: bool, voice_out: bool) -> dict[str, Any]:
    """The ``hello`` capabilities of a device with screen ``spec``."""
    theme = theme_for(spec)
    # can_draw stays False: the device draws its own layouts but not the model's panels, so the core
    # sends a ui.panel as a card of at most screen_rows short lines (exo_core.engine.shaping).
    return {
        "screen_columns": theme.columns(spec),
        "screen_rows": theme.rows(spec),
        "screen_pixels": [spec.width, spec.height],
        "can_draw": False,
        "voice_in": voice_in,
        "voice_out": voice_out,
        "buttons": list(BUTTONS),
    }


class DeviceApp:
    """One device: see the module docstring."""

    def __init__(
        self,
        config: DeviceConfig,
        client: ExoClient,
        *,
        screen: Screen,
        mic: Microphone,
        stt: SpeechToText,
        tts: TextToSpeech,
        output: AudioOutput,
        pin_factory: Any = None,
        session: str | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.screen = screen
        self.mic = mic
        self.stt = stt
        self.state = ScreenState()
        self.session = session
        self.pin_factory = pin_factory
        self.buttons: ButtonBoard | None = None
        self._journal = journal or (lambda record: None)
        self._edges: asyncio.Queue[Edge] = asyncio.Queue(maxsize=64)
        self._decoder = GestureDecoder(self._on_gesture, double_seconds=config.double_press_seconds)
        self._splitter = SentenceSplitter()
        self.speaker = Speaker(tts, output, on_state=self._on_speaking, on_spoken=self._on_spoken)
        self.link = Link(
            client,
            on_event=self._on_event,
            on_state=self._on_link,
            on_refused=self._on_refused,
            on_delivered=self._on_delivered,
            on_connected=self._on_connected,
            outbox_limit=config.outbox_limit,
            max_age=config.outbox_max_age_seconds,
        )
        self._last_turn_end = 0.0
        self._running_turn: str | None = None
        self._turn_started_at: float | None = None
        # A free-text answer heard but not yet confirmed: (question id, text).
        self._readback: tuple[str, str] | None = None
        self._recording_since: float | None = None
        self._notice_timer: asyncio.TimerHandle | None = None
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._work: set[asyncio.Task[Any]] = set()
        self.last_answer = ""

    # -- lifecycle ------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set."""
        loop = asyncio.get_running_loop()
        self.buttons = ButtonBoard(self.config, loop, self._edges, factory=self.pin_factory)
        self.speaker.start()
        self._tasks = [
            asyncio.create_task(self._render_loop(), name="device-render"),
            asyncio.create_task(self._edge_loop(), name="device-buttons"),
            asyncio.create_task(self.link.run(), name="device-link"),
            asyncio.create_task(asyncio.to_thread(self.stt.warm), name="device-stt-warm"),
            asyncio.create_task(self._elapsed_loop(), name="device-elapsed"),
        ]
        self._refresh()
        stopper = asyncio.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait({stopper, self._tasks[2]}, return_when=asyncio.FIRST_COMPLETED)
            if self._tasks[2] in done:
                self._tasks[2].result()  # a fatal link error (wrong token, old core) surfaces here
        finally:
            stopper.cancel()
            await self.close()

    async def close(self) -> None:
        """Stop tasks, speech and buttons; draw the last frame."""
        self._decoder.cancel()
        for task in [*self._tasks, *self._work]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._work, return_exceptions=True)
        await self.speaker.close()
        if self.buttons is not None:
            self.buttons.close()
        self.mic.cancel()
        await asyncio.to_thread(self.stt.close)
        self._draw()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    # -- screen ---------------------------------------------------------------

    def _set(self, state: ScreenState) -> None:
        if state != self.state:
            self.state = state
            self._refresh()

    def _refresh(self) -> None:
        self._dirty.set()

    async def _render_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            self._draw()
            await asyncio.sleep(0.03)  # bursts of deltas share a frame

    def _draw(self) -> None:
        spec = self.screen.spec
        layout = layout_of(self.state)
        meta = {
            "link": self.state.link,
            "activity": self.state.activity,
            "pending": self.state.pending,
            "phase": self.state.phase,
            "elapsed": self.state.elapsed,
        }
        self.screen.show(render(self.state, spec), layout=layout, meta=meta)
        self._journal({"ev": "frame", "layout": layout, **meta})

    async def _elapsed_loop(self) -> None:
        """While a turn runs, count its seconds on the status line (a slow model must look alive)."""
        while True:
            await asyncio.sleep(0.25)
            if not self.state.phase or self._turn_started_at is None:
                continue
            seconds = int(time.monotonic() - self._turn_started_at)
            if seconds != self.state.elapsed:
                self._set(self.state.with_(elapsed=seconds))

    def _notice(self, text: str, kind: str = "info", *, speak: bool = False, title: str = "") -> None:
        self._set(self.state.with_(notice=Notice(text, kind, title)))
        if speak and self.config.speak_notices:
            self.speaker.say(text)
        if self._notice_timer is not None:
            self._notice_timer.cancel()
        current = self.state.notice
        self._notice_timer = asyncio.get_running_loop().call_later(
            self.config.notice_seconds, lambda: self._clear_notice(current)
        )

    def _clear_notice(self, notice: Notice | None) -> None:
        if self.state.notice is notice:
            self._set(self.state.with_(notice=None))

    # -- link callbacks ---------------------------------------------------------

    def _on_link(self, link_state: str) -> None:
        self._journal({"ev": "link", "state": link_state, "pending": len(self.link.outbox)})
        self._set(self.state.with_(link=link_state, pending=len(self.link.outbox)))

    async def _on_connected(self, client: ExoClient, hello: dict[str, Any]) -> None:
        if self.session is None:
            return
        # After a core restart: close a half-finished tool round and expire approvals nobody waits for,
        # so a press kept while the core was away is judged against the truth.
        try:
            result = await client.request("session.resume", {"session": self.session})
        except ExoError as exc:
            if exc.code == "not_found":
                self.session = None
                return
            raise
        self._journal({"ev": "resumed", **{k: v for k, v in result.items() if isinstance(v, (int, str, type(None)))}})

    def _on_refused(self, pending: Pending, reason: str) -> None:
        self._journal({"ev": "refused", "label": pending.label, "reason": reason})
        self._notice(f"Not sent: {pending.label}. {reason}", "warning")

    def _on_delivered(self, pending: Pending, result: Any) -> None:
        self._journal({"ev": "delivered", "label": pending.label})

    async def _on_event(self, event: Event) -> None:
        body = event.body
        mine = self.session is not None and event.session == self.session
        before = self.state
        state = apply_event(self.state, event, self.session)
        if event.type == "turn.started" and mine:
            self._running_turn = str(body.get("turn_id"))
            self._turn_started_at = time.monotonic()
            self._splitter.reset()
        elif event.type == "message.delta" and mine and self.config.speak_answers:
            for sentence in self._splitter.feed(str(body.get("text", ""))):
                self.speaker.say(sentence)
        elif event.type == "message.completed" and mine and body.get("role") == "assistant" and state.answer:
            if self.config.speak_answers:
                for sentence in self._splitter.flush():
                    self.speaker.say(sentence)
            if not state.answer.endswith("\n"):
                state = state.with_(answer=state.answer + "\n")
        elif event.type == "turn.completed" and mine:
            self._running_turn = None
            self._turn_started_at = None
            self._last_turn_end = time.monotonic()
            self.last_answer = state.answer.strip()
            self._journal({"ev": "answered", "text": self.last_answer, "stop": body.get("stop_reason")})
        elif event.type == "question.asked" and state.question is not None and state.question != before.question:
            q = state.question
            if not q.quiet:
                spoken = q.text + " " + " ".join(f"Option {n}: {o}." for n, o in enumerate(q.options, 1))
                self.speaker.say(spoken)
        elif event.type == "approval.requested" and state.approval is not None and before.approval is None:
            self.speaker.say(f"Allow {state.approval.summary}?")
        elif event.type in ("notice", "taste.updated", "ui.panel") and state.notice is not None:
            self._notice(state.notice.text, state.notice.kind, speak=True, title=state.notice.title)
            state = self.state
        if self.speaker.speaking and state.activity in ("idle", "thinking") and mine:
            state = state.with_(activity="speaking")
        record: dict[str, Any] = {"ev": "event", "seq": event.seq, "type": event.type, "mine": mine}
        if event.type.startswith(("approval.", "question.")) or event.type in ("notice", "taste.updated", "ui.panel"):
            record["body"] = body
        self._journal(record)
        self._set(state)

    # -- speech callbacks -------------------------------------------------------

    def _on_speaking(self, speaking: bool) -> None:
        if speaking:
            self._set(self.state.with_(activity="speaking"))
        elif self.state.activity == "speaking":
            self._set(self.state.with_(activity="thinking" if self._running_turn else "idle"))

    def _on_spoken(self, sentence: str, at: float) -> None:
        self._journal({"ev": "spoken", "text": sentence, "at": at})

    # -- buttons ----------------------------------------------------------------

    async def _edge_loop(self) -> None:
        while True:
            edge = await self._edges.get()
            self._decoder.feed(edge)

    def _on_gesture(self, gesture: Gesture) -> None:
        self._journal({"ev": "button", "button": gesture.button, "kind": gesture.kind})
        name, kind = gesture.button, gesture.kind
        if kind == "down":
            if self.speaker.stop():
                self._journal({"ev": "speech_stopped"})
            if name == "talk":
                self.mic.start()
                self.stt.prepare()  # a Whisper child loads while the person speaks
                self._recording_since = time.monotonic()
                self._set(self.state.with_(activity="listening", notice=None))
            return
        if name == "talk":
            waiting_for_person = self.state.question is not None or self.state.approval is not None
            if kind == "long" and self._running_turn is not None and not waiting_for_person:
                # Holding TALK while an answer runs means "stop, I want to say something": the turn
                # is interrupted at once and the recording goes on for the next question. A turn
                # waiting on a question or an approval is not interrupted: the person is answering it.
                self._interrupt("talk held")
            elif kind == "release":
                self._spawn(self._heard())
            elif kind == "press":  # a tap: too short to be speech
                self.mic.cancel()
                self._set(self.state.with_(activity="thinking" if self._running_turn else "idle"))
            return
        handler = getattr(self, f"_{name}_{kind}", None)
        if handler is not None:
            handler()

    def _allow_press(self) -> None:
        self._decide("allow")

    def _allow_long(self) -> None:
        self._decide("allow_always")

    def _deny_press(self) -> None:
        if self._readback is not None:
            self._readback = None  # not what was said: the question stays open for another try
            self._set(self.state.with_(notice=None))
            return
        if self.state.approval is not None:
            self._decide("deny")
        elif self.state.question is not None:
            self._set(self.state.with_(questions=self.state.questions[1:]))  # hidden here; still open elsewhere
        else:
            self._set(self.state.with_(notice=None))

    def _deny_long(self) -> None:
        self._interrupt("deny held")

    def _interrupt(self, why: str) -> None:
        """Stop the running answer: speech now, the turn through the core."""
        if self.session is None:
            return
        session = self.session
        self.speaker.stop()
        self._journal({"ev": "interrupt", "why": why})
        self._spawn(self.link.submit("stop", lambda c: c.request("turn.interrupt", {"session": session})))

    def _next_press(self) -> None:
        q = self.state.question
        if q is not None and q.options:
            moved = dataclasses.replace(q, selected=(q.selected + 1) % len(q.options))
            self._set(self.state.with_(questions=(moved,) + self.state.questions[1:]))
            return
        rows = theme_for(self.screen.spec).rows(self.screen.spec)
        self._set(self.state.with_(scroll=self.state.scroll + max(1, rows - 1)))

    def _next_long(self) -> None:
        self._set(self.state.with_(scroll=0))

    def _next_double(self) -> None:
        if self.last_answer:
            for sentence in self._splitter.feed(self.last_answer + "\n\n"):
                self.speaker.say(sentence)
            for sentence in self._splitter.flush():
                self.speaker.say(sentence)

    def _decide(self, decision: str) -> None:
        readback = self._readback
        question = self.state.question
        on_top = self.state.approval is None and question is not None
        if readback is not None and on_top and question is not None and question.question_id == readback[0]:
            self._readback = None
            if decision == "allow":
                self._answer(readback[0], None, readback[1], readback[1])
            self._set(self.state.with_(notice=None))
            return
        approval = self.state.approval
        if approval is not None:
            rid = approval.request_id
            self._spawn(
                self.link.submit(
                    f"{decision.replace('_', ' ')} '{approval.summary}'",
                    lambda c: c.request("approval.respond", {"request_id": rid, "decision": decision}),
                )
            )
            return
        q = self.state.question
        if q is not None and q.options and decision == "allow":
            self._answer(q.question_id, q.selected + 1, None, q.options[q.selected])
            return
        if self.state.notice is not None:
            self._set(self.state.with_(notice=None))

    def _answer(self, question_id: str, option: int | None, text: str | None, label: str) -> None:
        body: dict[str, Any] = {"question_id": question_id}
        if option is not None:
            body["option"] = option
        else:
            body["text"] = text
        self._journal({"ev": "answer", "question_id": question_id, "option": option, "text": text})

        async def send(client: Any) -> Any:
            try:
                return await client.request("question.answer", body)
            except ExoError as exc:
                if exc.code in ("conflict", "not_found"):
                    # The question has closed (expired, answered elsewhere): its card goes; the notice says so.
                    self._set(
                        self.state.with_(
                            questions=tuple(q for q in self.state.questions if q.question_id != question_id)
                        )
                    )
                raise

        self._spawn(self.link.submit(f"answer '{label}'", send))

    # -- voice in -----------------------------------------------------------------

    async def _heard(self) -> None:
        audio = self.mic.stop()
        self._set(self.state.with_(activity="transcribing"))
        started = time.monotonic()
        question = self.state.question
        hint = ", ".join(question.options) if question is not None and question.options else None
        speech = trim_silence(to_16k(audio))
        if len(speech.samples):
            transcript = await asyncio.to_thread(self.stt.transcribe, speech, hint)
        else:
            transcript = None
            await asyncio.to_thread(self.stt.close)  # nothing said: a prepared engine gives its memory back
        text = transcript.text.strip() if transcript is not None else ""
        self._journal(
            {
                "ev": "heard",
                "text": text,
                "seconds": round(time.monotonic() - started, 3),
                "audio_seconds": round(audio.seconds, 3),
                "speech_seconds": round(speech.seconds, 3),
            }
        )
        idle = "thinking" if self._running_turn else "idle"
        if not text:
            self._set(self.state.with_(activity=idle))
            self._notice("Sorry, I did not catch that. Hold TALK and try again.", "info")
            return
        question = self.state.question
        if question is not None:
            option = parse_option(text, question.options)
            if option is not None:
                self._set(self.state.with_(activity=idle))
                self._answer(question.question_id, option, None, question.options[option - 1])
                return
            if question.allow_text or not question.options:
                # Free text is read back before it is sent: a misheard name must not reach the store
                # (docs/device.md, "Answering by voice"). ALLOW sends it; TALK again replaces it.
                self._readback = (question.question_id, text)
                self._set(self.state.with_(activity=idle))
                self._journal({"ev": "readback", "question_id": question.question_id, "text": text})
                self._notice(f'Heard "{text}". ALLOW sends it; hold TALK to say it again.', "info", title="Check")
                self.speaker.say(f"I heard: {text}. Press allow to send it.")
                return
            self._set(self.state.with_(activity=idle))
            self._notice(f'Heard "{text}". Say a number from 1 to {len(question.options)}.', "info", speak=True)
            return
        await self._send_turn(text)

    async def _send_turn(self, text: str) -> None:
        follow_up = self.session is not None and (
            self._running_turn is not None or time.monotonic() - self._last_turn_end <= self.config.follow_up_seconds
        )
        mode = "queue" if self._running_turn is not None else "send"
        self._set(self.state.with_(heard=text, answer="", scroll=0, activity="thinking"))

        async def send(client: ExoClient) -> Any:
            if not follow_up or self.session is None:
                created = await client.request("session.create", {"title": "device"})
                self.session = str(created["session"]["id"])
            result = await client.request("turn.send", {"session": self.session, "text": text, "mode": mode})
            self._journal(
                {
                    "ev": "sent",
                    "text": text,
                    "session": self.session,
                    "follow_up": follow_up,
                    "turn_id": result.get("turn_id"),
                }
            )
            return result

        await self.link.submit(f"ask '{text[:30]}'", send)
