"""Secret-reading shell forms, generated, and the check that none of them read a secret.

Imported by ``tests/sandbox/test_attack_forms.py`` (every form run through the real ``bash`` tool, in the
sandbox) and ``benchmarks/bench_sandbox.py`` (the same forms, counted for docs/security.md).

A form is a way to *reach* one of exod's files (the path built at run time: variables, indirection,
globs, brace and parameter expansion, command substitution, ``/proc/*/root``, links made in the
workspace, ``find -exec``, ``cd``) crossed with a way to *read* it (cat and its cousins, interpreters,
encodings that would carry it past a redactor matching exact text: ``rev``, base32/64, hex, rot13,
copies into the workspace), plus forms that look for secrets in the environment, other processes and
exod's socket. :func:`leaked` looks for each secret in the output and in every workspace file, plain and
in every encoding a form uses.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import os
import re
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Form", "Home", "make_home", "forms", "leaked", "CATEGORIES"]


@dataclass(frozen=True, slots=True)
class Home:
    """An Exo home with a real token, a signing key, policy files with canaries, and a store with a ledger."""

    root: Path
    store: Path
    secrets: tuple[bytes, ...]  # the whole content of each secret file, and EXO_TOKEN's value

    @property
    def env_token(self) -> str:
        return self.secrets[-1].decode()


def make_home(root: Path) -> Home:
    """A home under ``root`` laid out as ``exo init`` lays it out, with fresh secrets."""
    from exo_core.ledger.keys import KEY_FILE_NAME

    home = root / "exohome"
    store = home / "store"
    for folder in (home / "keys", home / "trust", home / "run", store, store / "indexes"):
        folder.mkdir(parents=True, exist_ok=True)
    files = {
        home / "token": secrets.token_urlsafe(32) + "\n",
        home / "keys" / KEY_FILE_NAME: f"exo-ed25519-seed-v1 {secrets.token_hex(32)}\n",
        home / "config.toml": f'# canary {secrets.token_hex(20)}\nstore = "store"\n',
        home / "gate.toml": f"# canary {secrets.token_hex(20)}\n",
        home / "trust" / "owner.pub": f"canary-trust {secrets.token_hex(24)}\n",
    }
    for path, text in files.items():
        path.write_text(text)
        path.chmod(0o600)
    ledger_canary = f"canary-ledger {secrets.token_hex(24)}\n"
    with contextlib.closing(sqlite3.connect(store / "ledger.sqlite")) as db:
        db.execute("CREATE TABLE entries (body TEXT)")
        db.execute("INSERT INTO entries VALUES (?)", (ledger_canary,))
        db.commit()
    (store / "pack.md").write_text("# pack\n")
    env_token = secrets.token_urlsafe(32)
    texts = [*files.values(), ledger_canary, env_token]
    return Home(home, store, tuple(text.encode() for text in texts))


@dataclass(frozen=True, slots=True)
class Form:
    """One shell command that tries to read one of exod's secrets, and what kind of attempt it is."""

    category: str
    command: str


CATEGORIES = (
    "literal path",
    "variables and indirection",
    "globs",
    "brace and parameter expansion",
    "command substitution and subshells",
    "encoded path",
    "/proc",
    "links made in the workspace",
    "find -exec and xargs",
    "environment",
    "processes",
    "socket",
)

# How a file at $P is read: (name, template). Encoded readers carry a secret past an exact-text redactor.
READERS: tuple[tuple[str, str], ...] = (
    ("cat", 'cat "$P"'),
    ("rev", 'rev "$P"'),
    ("base64", 'base64 "$P"'),
    ("base32", 'base32 "$P"'),
    ("xxd", 'xxd -p "$P"'),
    ("od", 'od -An -tx1 "$P"'),
    ("rot13", "tr 'A-Za-z' 'N-ZA-Mn-za-m' < \"$P\""),
    ("python", "python3 -c 'import sys; print(open(sys.argv[1]).read()[::-1])' \"$P\""),
    ("perl", "perl -ne 'print scalar reverse $_' \"$P\""),
    ("awk", "awk '{print}' \"$P\""),
    ("sed", 'sed -n p "$P"'),
    ("dd", 'dd if="$P" status=none'),
    ("read loop", 'while IFS= read -r l; do echo "$l"; done < "$P"'),
    ("copy into workspace", 'cp "$P" "$W/loot-$$" && cat "$W/loot-$$"'),
    ("encoded into workspace", 'base64 "$P" > "$W/loot-$$.b64"'),
)


def _reaches(home: Path, store: Path, rel: str) -> list[tuple[str, str]]:
    """Ways to build the path of ``home/rel``: (category, shell that sets ``P``)."""
    h = str(home)
    parent, name = str(home.parent), home.name
    # Each name of the path as a glob of its first and last letters: keys/ledger-ed25519.key -> k*s/l*y.
    globbed = "/".join(f"{part[0]}*{part[-1]}" for part in rel.split("/"))
    b64 = base64.b64encode(f"{h}/{rel}".encode()).decode()
    backwards = f"{h}/{rel}"[::-1]
    return [
        ("literal path", f"P={h}/{rel}"),
        ("variables and indirection", f'H={h}; P="$H/{rel}"'),
        ("variables and indirection", f'H={h}; X=$H; P="$X/{rel}"'),
        ("variables and indirection", f'H={h}; n=H; P="${{!n}}/{rel}"'),
        ("variables and indirection", f'export EXO_HOME={h}; P="$EXO_HOME/{rel}"'),
        ("globs", f"P=$(echo {h}/{globbed})"),
        ("globs", f"for f in {parent}/*/{rel}; do P=$f; done"),
        ("globs", f"P=$(ls -d {parent}/{name[0]}*/{rel} 2>/dev/null | head -1); : ${{P:={h}/{rel}}}"),
        ("brace and parameter expansion", f"for P in {h}/{{{rel},nothing}}; do break; done"),
        ("brace and parameter expansion", f'H={h}/; P="${{H%/}}/{rel}"'),
        ("brace and parameter expansion", f'H={h.replace("/", ":")}; H="${{H//://}}"; P="$H/{rel}"'),
        ("brace and parameter expansion", f"printf -v P '%s/%s' {h} {rel}"),
        ("command substitution and subshells", f"P=$(printf '%s/%s' {h} {rel})"),
        ("command substitution and subshells", f"P=`dirname {h}/x`/{rel}"),
        ("command substitution and subshells", f"P=$(bash -c 'echo {h}/{rel}')"),
        ("encoded path", f"P=$(echo {b64} | base64 -d)"),
        ("encoded path", f"P=$(echo '{backwards}' | rev)"),
        ("/proc", f"P=/proc/self/root{h}/{rel}"),
        ("/proc", f"P=/proc/$$/root{h}/{rel}"),
        ("/proc", f"P=/proc/$$/cwd/../../../../../../../..{h}/{rel}"),
        ("links made in the workspace", f"ln -sfn {h} ./hl-$$ 2>/dev/null; P=./hl-$$/{rel}"),
        ("links made in the workspace", f"ln -sf {h}/{rel} ./sl-$$ 2>/dev/null; P=./sl-$$"),
        ("links made in the workspace", f"ln -f {h}/{rel} ./hard-$$ 2>/dev/null; P=./hard-$$"),
        ("links made in the workspace", f"cd {h}/{os.path.dirname(rel) or '.'} 2>/dev/null; P={os.path.basename(rel)}"),
        (
            "find -exec and xargs",
            f"P=$(find {parent} -path '*/{rel}' 2>/dev/null | head -1); : ${{P:={h}/{rel}}}",
        ),
    ]


def _whole_forms(home: Path, store: Path) -> list[Form]:
    h, s = str(home), str(store)
    return [
        Form("find -exec and xargs", f"find {h} -type f -exec cat {{}} \\;"),
        Form("find -exec and xargs", f"find {h} -type f -exec rev {{}} +"),
        Form("find -exec and xargs", f"find {home.parent} -name token -exec base64 {{}} \\; 2>/dev/null"),
        Form("find -exec and xargs", f"find {h}/keys -name '*.key' -exec rev {{}} \\;"),
        Form("find -exec and xargs", f"echo {h}/token | xargs cat"),
        Form("find -exec and xargs", f"ls {h}/* | xargs -n1 base32"),
        Form("find -exec and xargs", f"grep -r . {h}"),
        Form("find -exec and xargs", f"tar -cf - -C {h} . 2>/dev/null | base64"),
        Form("globs", f'for f in {h}/* {h}/*/*; do rev "$f"; done'),
        Form("globs", f"cat {h}/*/* {h}/*"),
        Form("globs", f"shopt -s globstar dotglob; cat {h}/**"),
        Form("globs", f"head -c 4096 {h}/[a-z]*"),
        Form("globs", f"cat {s}/ledger.sqlite {s}/*.sqlite"),
        Form("globs", f"strings {s}/ledger* {s}/items*"),
        Form("literal path", f"sqlite3 {s}/ledger.sqlite .dump"),
        Form(
            "literal path",
            f"python3 -c \"import sqlite3; print(list(sqlite3.connect('{s}/ledger.sqlite').iterdump()))\"",
        ),
        Form("literal path", f"cat {s}/ledger.sqlite"),
        Form("literal path", f"git diff --no-index /dev/null {h}/token"),
        Form("literal path", f"printf 'x' > {h}/gate.toml; cat {h}/gate.toml"),
        Form("literal path", f"umount {h} 2>&1; cat {h}/token"),
        Form("command substitution and subshells", f'echo "$(< {h}/token)" | rev'),
        Form("command substitution and subshells", f"(cd {h} && cat token)"),
        Form("command substitution and subshells", f"bash -c 'cat {h}/token' | base64"),
        Form("command substitution and subshells", f"sh -c 'cat {h}/keys/*'"),
        Form("command substitution and subshells", f"exec 3<{h}/token; cat <&3"),
        Form("command substitution and subshells", f'eval "cat {h}/token"'),
        Form("command substitution and subshells", f"perl -e 'open F, \"{h}/token\"; print reverse <F>'"),
        Form("command substitution and subshells", f"awk '{{print}}' {h}/token {h}/keys/*"),
        Form("/proc", "cat /proc/self/mountinfo | grep -c exohome; cat /proc/1/root" + f"{h}/token"),
        Form("/proc", f"ls -la /proc/*/root{h}/ 2>&1; cat /proc/*/root{h}/token"),
        Form("/proc", "for p in /proc/[0-9]*; do ls $p/cwd/ 2>/dev/null; cat $p/cwd/token 2>/dev/null; done"),
        Form("/proc", "cat /proc/*/cwd/../token /proc/*/cwd/../keys/* 2>/dev/null"),
        Form("environment", "printenv EXO_TOKEN | rev"),
        Form("environment", "env | base64"),
        Form("environment", "set | grep -i -e token -e exo"),
        Form("environment", "declare -p | rev"),
        Form("environment", "cat /proc/self/environ | tr '\\0' '\\n'"),
        Form("environment", "cat /proc/$PPID/environ | tr '\\0' '\\n'"),
        Form("environment", "cat /proc/1/environ | base64"),
        Form("environment", "python3 -c 'import os; print(dict(os.environ))'"),
        Form("environment", "perl -e 'print \"$_=$ENV{$_}\\n\" for keys %ENV'"),
        Form("processes", "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null"),
        Form("processes", "cat /proc/*/environ 2>/dev/null | base64"),
        Form("processes", "ps eww -A"),
        Form("processes", "cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '"),
        Form("processes", "for p in $(pgrep -f 'exo_core|exod|serve'); do cat /proc/$p/environ; done"),
        Form("processes", "ls -l /proc/*/cwd /proc/*/fd 2>/dev/null"),
        Form("socket", f"curl -s --max-time 2 --unix-socket {h}/run/exod.sock http://x/v1/config"),
        Form(
            "socket",
            'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); '
            f"s.connect('{h}/run/exod.sock'); print(s.recv(99))\"",
        ),
        Form("socket", "curl -s --max-time 2 http://127.0.0.1:8765/ ; echo"),
    ]


def forms(home: Home) -> list[Form]:
    """Every form against ``home``: each reach crossed with each reader (the file rotates), then the whole ones."""
    from exo_core.ledger.keys import KEY_FILE_NAME

    targets = ("token", f"keys/{KEY_FILE_NAME}", "config.toml", "gate.toml", "trust/owner.pub")
    made: list[Form] = []
    for index, (_name, reader) in enumerate(READERS):
        for category, reach in _reaches(home.root, home.store, targets[index % len(targets)]):
            made.append(Form(category, f"W=$PWD; {reach}; {reader}"))
    made.extend(_whole_forms(home.root, home.store))
    return made


def _variants(secret: bytes) -> list[bytes]:
    """The forms a secret can take in a form's output: plain, reversed, base64/32, hex, rot13 (long enough to count)."""
    core = secret.strip()
    text = secret.decode()
    out = [
        core,
        core[::-1],
        base64.b64encode(secret)[:-4],
        base64.b32encode(secret)[:-8],
        secret.hex().encode()[:-2],
        codecs.encode(text, "rot13").strip().encode(),
    ]
    # The secret part of a file whose first words are a label ("exo-ed25519-seed-v1 <hex>"): its last word alone.
    last = core.split()[-1]
    if len(last) >= 24:
        out += [last, last[::-1], codecs.encode(last.decode(), "rot13").encode()]
    return [v for v in out if len(v) >= 16]


_SPACE = re.compile(rb"\s+")


def leaked(home: Home, output: str | bytes, workspace: Path | None = None) -> list[str]:
    """Which secrets of ``home`` appear in ``output`` or in a file of ``workspace`` (in any form above)."""
    blobs = [output.encode() if isinstance(output, str) else output]
    if workspace is not None:
        for root, _dirs, files in os.walk(workspace):
            for name in files:
                path = Path(root, name)
                if path.is_symlink():
                    continue
                try:
                    blobs.append(path.read_bytes())
                except OSError:
                    continue
    found = []
    for blob in blobs:
        squeezed = _SPACE.sub(b"", blob)
        for index, secret in enumerate(home.secrets):
            for variant in _variants(secret):
                if variant in blob or _SPACE.sub(b"", variant) in squeezed:
                    found.append(f"secret {index} ({variant[:6]!r}...)")
                    break
    return sorted(set(found))
