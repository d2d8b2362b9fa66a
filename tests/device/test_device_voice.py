"""Voice in and out with real engines: espeak-ng speech, trimming, Whisper / PocketSphinx, the speaker queue."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from device.audio import Audio, read_wav, to_16k, trim_silence, write_wav
from device.speech import SentenceSplitter, Speaker, speakable
from device.stt import open_stt, stt_available
from device.tts import EspeakTTS, FileOutput
from exo_core.errors import MalformedMessageError, StorageError
from voicekit import needs_espeak, needs_sox, sox_stat, speak, wer


@needs_espeak
def test_trim_keeps_the_speech_and_drops_the_silence(tmp_path: Path) -> None:
    speech = to_16k(read_wav(speak(tmp_path / "q.wav", "what time is it")))
    rng = np.random.default_rng(1)
    noise = lambda s: (rng.normal(0, 30, int(s * 16000))).astype(np.int16)
    padded = Audio(np.concatenate([noise(1.5), speech.samples, noise(2.0)]), 16000)
    trimmed = trim_silence(padded)
    assert speech.seconds - 0.3 < trimmed.seconds < speech.seconds + 0.6
    assert trim_silence(Audio(noise(2.0), 16000)).seconds == 0.0
    assert trim_silence(Audio.silence(1.0)).seconds == 0.0


def test_wav_round_trip_and_bad_files(tmp_path: Path) -> None:
    tone = Audio((np.sin(np.arange(22050) / 10) * 8000).astype(np.int16), 22050)
    back = read_wav(write_wav(tmp_path / "t.wav", tone))
    assert back.rate == 22050 and np.array_equal(back.samples, tone.samples)
    assert abs(to_16k(tone).seconds - 1.0) < 0.01
    (tmp_path / "bad.wav").write_bytes(b"RIFF....nonsense")
    with pytest.raises(MalformedMessageError):
        read_wav(tmp_path / "bad.wav")
    with pytest.raises(StorageError):
        read_wav(tmp_path / "missing.wav")


def test_sentences_are_cut_as_they_stream() -> None:
    splitter = SentenceSplitter()
    pieces = ["Tomorrow looks d", "ry and mild. Take a li", "ght jacket", " for the morning. It w", "ill be cool"]
    out = [s for piece in pieces for s in splitter.feed(piece)]
    assert out == ["Tomorrow looks dry and mild.", "Take a light jacket for the morning."]
    assert splitter.flush() == ["It will be cool"]
    assert (
        speakable("Run `ls` and see [the docs](http://x).\n```\ncode\n```")
        == "Run ls and see the docs. (code shown on screen)"
    )
    long = SentenceSplitter().feed("word " * 80)
    assert long and all(len(s) <= 220 for s in long)


@needs_espeak
@needs_sox
async def test_speaker_speaks_in_order_and_a_press_cuts_it_off(tmp_path: Path) -> None:
    output = FileOutput(tmp_path / "spoken", speed=1.0)
    states: list[bool] = []
    speaker = Speaker(EspeakTTS(), output, on_state=states.append)
    speaker.start()
    speaker.say("The first sentence is short.")
    speaker.say("The second sentence is a good deal longer than the first one was, and keeps going.")
    speaker.say("A third that should never be heard.")
    while len(output.written) < 2:
        await asyncio.sleep(0.02)
    assert speaker.stop() is True
    await asyncio.sleep(0.2)
    assert len(output.written) == 2 and states == [True, False]
    first = sox_stat(output.written[0])
    assert first["Length (seconds)"] > 1.0 and first["RMS amplitude"] > 0.01
    await speaker.close()


@needs_espeak
@pytest.mark.parametrize("engine", ["whisper", "pocketsphinx"])
def test_speech_to_text_engines(tmp_path: Path, engine: str) -> None:
    if not stt_available(engine):
        pytest.skip(f"{engine} is not installed")
    stt = open_stt(engine)
    text = "what is the weather like tomorrow"
    audio = trim_silence(to_16k(read_wav(speak(tmp_path / "q.wav", text, voice="en-us", speed=150))))
    result = stt.transcribe(audio)
    assert result.engine == engine and result.seconds > 0
    limit = 0.2 if engine == "whisper" else 0.8
    assert wer(text, result.text) <= limit, result.text
    assert stt.transcribe(Audio.silence(0.05)).text == "" or engine == "pocketsphinx"


def _rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} for {pid}")


def _gone(pid: int, within: float = 60.0) -> bool:
    import os
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # reaped already
        if done == pid:
            return True
        time.sleep(0.05)
    return False


@needs_espeak
def test_whisper_runs_in_a_child_that_exits_and_takes_its_memory_with_it(tmp_path: Path) -> None:
    import os

    from device.stt import WhisperSTT
    from device.stt_worker import WhisperProcessSTT

    if not stt_available("whisper"):
        pytest.skip("whisper is not installed")
    assert isinstance(open_stt("whisper", keep_loaded=True), WhisperSTT)
    stt = open_stt("whisper")
    assert isinstance(stt, WhisperProcessSTT)
    text = "what is the weather like tomorrow"
    audio = trim_silence(to_16k(read_wav(speak(tmp_path / "q.wav", text, voice="en-us", speed=150))))
    before = _rss_mb(os.getpid())
    stt.warm()  # checks the packages; loads nothing here
    stt.prepare()
    pid = stt.child_pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    result = stt.transcribe(audio)
    assert wer(text, result.text) <= 0.2, result.text
    assert stt.child_pid is None and not Path(f"/proc/{pid}/status").exists()
    # the model's memory was the child's: it peaked far above what this process grew by
    assert stt.last_peak_rss_mb is not None and stt.last_peak_rss_mb > 100
    assert _rss_mb(os.getpid()) - before < 30
    again = stt.transcribe(audio, hint="yes, no")  # no prepare: a child is started on demand
    assert wer(text, again.text) <= 0.2, again.text


def test_a_prepared_whisper_child_that_hears_nothing_exits_on_its_own() -> None:
    from device.stt_worker import WhisperProcessSTT

    if not stt_available("whisper"):
        pytest.skip("whisper is not installed")
    stt = WhisperProcessSTT(idle_seconds=0.5)
    stt.prepare()
    pid = stt.child_pid
    assert pid is not None
    assert _gone(pid), "the idle child should have exited"
    stt.close()
    stt.prepare()
    pid = stt.child_pid
    stt.close()  # at shutdown a waiting child is ended
    assert pid is not None and stt.child_pid is None and _gone(pid, 5.0)


def test_the_whisper_child_refuses_a_bad_request() -> None:
    import json
    import os
    import subprocess
    import sys

    if not stt_available("whisper"):
        pytest.skip("whisper is not installed")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "device.stt_worker", "--idle", "30"],
        input=b"not json\n",
        capture_output=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 1
    assert json.loads(done.stdout.decode().splitlines()[-1])["error"].startswith("bad request")
