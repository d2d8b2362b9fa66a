"""An example for every ``exo`` command, shown at the end of its ``--help``.

Kept in one table so a new command's missing example is one test failure away
(``tests/cli/test_cli_help.py``), and so the examples read as one consistent set.
Imports only argparse, like every command module, so ``exo --help`` stays fast.
"""

from __future__ import annotations

import argparse

__all__ = ["EXAMPLES", "add_examples", "command_paths"]

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("exo init && exo chat", "exo serve --tcp 0.0.0.0:8765"),
    "init": ("exo init", "EXO_HOME=/tmp/exo-try exo init", "exo init --board standard"),
    "serve": ("exo serve", "exo serve --tcp 0.0.0.0:8765", "exo serve --stdio"),
    "chat": ("exo chat", "exo chat --connect http://HOST:8765 --token-file token"),
    "pair": ("exo pair", "exo pair --connect http://HOST:8765"),
    "search": ("exo search dentist appointment", "exo search --json invoice"),
    "history": ("exo history import chat-export.json",),
    "history import": ("exo history import chat-export.json",),
    "history summarize": ("exo history summarize",),
    "history status": ("exo history status",),
    "protocol": ("exo protocol export",),
    "protocol export": ("exo protocol export",),
    "store": ("exo store verify", "exo store export /media/usb/me"),
    "store lint": ("exo store lint", "exo store lint --strict"),
    "store export": ("exo store export /media/usb/me",),
    "store import": ("exo store import /media/usb/me",),
    "store verify": ("exo store verify", "exo store verify /media/usb/me"),
    "store sync": ("exo store sync ~/.exo/store /media/usb/me",),
    "store resolve": ("exo store resolve", "exo store resolve people/sister.md --keep both --current theirs"),
    "store ingest": ("exo store ingest notes ~/notes", "exo store ingest bookmarks bookmarks.html"),
    "store rebuild-items": ("exo store rebuild-items",),
    "store enrol": ("exo store enrol 3f9a1c2b7d4e5f60",),
    "store trust": ("exo store trust", "exo store trust --forget-head"),
    "onboard": ("exo onboard",),
    "ledger": ("exo ledger verify", "exo ledger log"),
    "ledger verify": ("exo ledger verify",),
    "ledger log": ("exo ledger log --tail 20", "exo ledger log --reverse --kind verdict", "exo ledger log --json"),
    "ledger show": ("exo ledger show 42",),
    "ledger rebuild": ("exo ledger rebuild",),
    "gate": ("exo gate check -- git push origin main",),
    "gate set": ("exo gate set my-policy.toml", "exo gate set my-policy.toml --yes --home /var/lib/exo/home"),
    "gate check": (
        "exo gate check -- git push origin main",
        'exo gate check --tool write_file --args \'{"path": "/etc/hosts", "content": "x"}\'',
    ),
    "models": ("exo models fetch", "exo models add ~/Downloads/Qwen3-0.6B-Q4_K_M.gguf", "exo models list"),
    "models fetch": ("exo models fetch", "exo models fetch --board laptop", "exo models fetch gemma-3-270m"),
    "models add": (
        "exo models add ~/Downloads/Qwen3-0.6B-Q4_K_M.gguf",
        "exo models add model.gguf --name my-model --sha256 "
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "models list": ("exo models list",),
    "models serve": (
        "exo models serve",
        "exo models serve model.gguf --port 8081 --key-env EXO_LAPTOP_KEY --print-config",
    ),
    "device": ("exo device", "exo device --mock --size 128x64"),
    "recall": ("exo recall 'where does my sister live'",),
    "bench": ("exo bench retrieval --json", "exo bench footprint"),
    "bench retrieval": ("exo bench retrieval --locomo locomo10.json --longmemeval longmemeval_s.json --json",),
    "bench footprint": ("exo bench footprint --json",),
    "bench answers": ("exo bench answers --board standard --json",),
    "bench stress": ("exo bench stress --kill-cycles 40 --fuzz 20000 --idle 2000",),
    "bench laptop": ("exo bench laptop --json", "exo bench laptop --quick"),
    "bench laptop-link": ("exo bench laptop-link --json", "exo bench laptop-link --quick --model 0.5b"),
    "bench learning": ("exo bench learning --json", "exo bench learning --sessions 6 --drafts 6 --seeds 7"),
    "bench generation": ("exo bench generation --json",),
    "bench learning-e2e": ("exo bench learning-e2e --only taste --asks 2", "exo bench learning-e2e --json"),
    "bench decisions": ("exo bench decisions",),
    "bench answers-base": ("exo bench answers-base --quick",),
    "bench board-ctx": ("exo bench board-ctx --quick --json",),
    "bench context": ("exo bench context --quick --out /tmp/context.json",),
    "bench decision-models": ("exo bench decision-models --quick --no-model",),
    "bench decisions-http": ("exo bench decisions-http --markdown",),
    "bench decisions-neighbours": ("exo bench decisions-neighbours --markdown",),
    "bench decisions-pool": ("exo bench decisions-pool --markdown",),
    "bench decisions-prompt": ("exo bench decisions-prompt --markdown",),
    "bench decisions-rule-history": ("exo bench decisions-rule-history --quick --json",),
    "bench decisions-sources": ("exo bench decisions-sources --markdown",),
    "bench signal-asks": ("exo bench signal-asks", "exo bench signal-asks --quick --json"),
    "bench exod-tools": ("exo bench exod-tools --quick --model qwen2.5-coder-0.5b-instruct",),
    "bench fetch": ("exo bench fetch --quick",),
    "bench gate": ("exo bench gate --quick --json",),
    "bench sandbox": ("exo bench sandbox", "exo bench sandbox --quick --json"),
    "bench latency": ("OMP_WAIT_POLICY=PASSIVE exo bench latency --json", "exo bench latency --quick"),
    "bench hub": ("exo bench hub --quick",),
    "bench ledger": ("exo bench ledger --quick --out /tmp/ledger.json",),
    "bench llama-memory": ("exo bench llama-memory --quick",),
    "bench models": ("exo bench models --quick --skip-quality",),
    "bench retrieval-scale": ("exo bench retrieval-scale --quick",),
    "bench startup": ("exo bench startup --quick --json",),
    "bench store": ("exo bench store --quick",),
    "bench stt-memory": ("exo bench stt-memory --quick",),
    "bench voice": ("exo bench voice --quick",),
    "learn": ("exo learn review", "exo learn metrics"),
    "learn review": ("exo learn review",),
    "learn queue": ("exo learn queue",),
    "learn drain": ("exo learn drain",),
    "learn metrics": ("exo learn metrics --days 7",),
    "learn climb": ("exo learn climb",),
    "learn reject": ("exo learn reject taste/tone",),
    "learn rebuild": ("exo learn rebuild",),
    "decide": ("exo decide signal 'No, shorter please.' --json",),
}


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse keeps subcommands nowhere else
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def command_paths(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every parser under ``parser`` by its command path (``""`` for ``exo`` itself, ``"ledger verify"``)."""
    paths = {prefix: parser}
    for name, child in _children(parser).items():
        paths.update(command_paths(child, f"{prefix} {name}".strip()))
    return paths


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Append each command's examples to its ``--help`` (an epilog, kept as written)."""
    for path, command in command_paths(parser).items():
        examples = EXAMPLES.get(path)
        if not examples:
            continue
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        lines = "\n".join(f"  {example}" for example in examples)
        label = "example" if len(examples) == 1 else "examples"
        command.epilog = f"{label}:\n{lines}"
