"""A small POSIX-shell reader: enough of bash to see every command a line would run.

The gate must know what a command line *does*, so it splits it into simple
commands: at pipes, ``&&``, ``||``, ``;``, ``&`` and newlines, into subshells
``( … )``, command substitutions ``$( … )`` and backticks, and process
substitutions ``<( … )``. Quoting (``'…'``, ``"…"``, ``$'…'``, backslashes) is
removed the way the shell would. Scripts a command runs itself (``bash -c``,
``eval``, a heredoc fed to a shell, ``find -exec``) are read by the classifier
(:mod:`exo_core.gate.commands`), which knows which word is a script.

It never executes or expands anything. A word that contains an expansion the
shell would perform at run time (``$VAR``, ``$(…)``, a glob) is marked
``dynamic``; the classifier treats it as unknown rather than guessing. Input
it cannot read (an unclosed quote, an unbalanced parenthesis, nesting deeper
than :data:`MAX_DEPTH`) gives a :class:`ShellParse` with ``error`` set; the
classifier then treats the whole line as opaque code, which asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["Redirect", "SimpleCommand", "ShellParse", "parse_shell", "MAX_DEPTH"]

MAX_DEPTH = 8
_OPERATORS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n")


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection: ``op`` (``>``, ``>>``, ``<``, ``<<``, ``<<<`` …) and its target or body."""

    op: str
    target: str
    body: str = ""
    expanded: bool = False


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line would run, with what feeds it.

    ``piped_in`` is true when its standard input is another command's output;
    ``stdin_script`` holds a heredoc or here-string body. Leading variable
    assignments (``A=1 cmd``) are not part of ``argv``; they are kept in
    ``assigns`` (the gate judges ``LD_PRELOAD=…``, ``PATH=…`` and the like).
    ``dynamic`` holds the indices of words decided at run time (a glob or an
    expansion); ``expanded`` the subset whose text comes from an expansion
    (``$VAR``, ``$(…)``, backticks, ``<(…)``, braces ``{a,b}``), so not even
    the folder it names is known.
    """

    argv: tuple[str, ...]
    redirects: tuple[Redirect, ...] = ()
    piped_in: bool = False
    dynamic: frozenset[int] = frozenset()
    expanded: frozenset[int] = frozenset()
    assigns: tuple[str, ...] = ()
    expanded_assigns: frozenset[int] = frozenset()
    in_substitution: bool = False  # its output becomes words of another command ($(…), backticks)

    def word_is_dynamic(self, index: int) -> bool:
        """Whether ``argv[index]`` holds a run-time expansion or a glob."""
        return index in self.dynamic

    def word_is_expanded(self, index: int) -> bool:
        """Whether ``argv[index]`` holds a run-time expansion (its text is not known at all)."""
        return index in self.expanded

    @property
    def stdin_script(self) -> str:
        """The text a heredoc or here-string feeds to this command ('' when none)."""
        return "\n".join(r.body for r in self.redirects if r.op in ("<<", "<<-", "<<<"))


@dataclass(frozen=True, slots=True)
class ShellParse:
    """Every simple command of a line (nested ones included), or an error."""

    commands: tuple[SimpleCommand, ...] = ()
    error: str = ""


@dataclass(slots=True)
class _Word:
    text: str = ""
    dynamic: bool = False
    expanded: bool = False
    nested: list[tuple[bool, str]] = field(default_factory=list)  # (a $(…) or `…`?, script) inside the word


@dataclass(slots=True)
class _Tok:
    kind: str  # word | op | redir
    value: str
    word: _Word | None = None
    redirect: Redirect | None = None  # a heredoc's body is filled in when its lines have been read


class _ParseError(ValueError):
    """Raised inside the reader; turned into ``ShellParse.error`` at the boundary."""


def parse_shell(line: str, *, depth: int = 0) -> ShellParse:
    """Split ``line`` into the simple commands it would run (never raises)."""
    if depth > MAX_DEPTH:
        return ShellParse(error=f"nesting deeper than {MAX_DEPTH} levels")
    try:
        tokens = _Lexer(line).tokens()
        commands: list[SimpleCommand] = []
        _Builder(tokens, depth, commands).script(0)
    except _ParseError as exc:
        return ShellParse(error=str(exc))
    return ShellParse(tuple(commands))


class _Lexer:
    """Characters to tokens; quote removal and heredoc bodies happen here."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.out: list[_Tok] = []
        self.pending_heredocs: list[_Tok] = []

    def tokens(self) -> list[_Tok]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#" and self._at_word_start():
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif c == "\n":
                self.out.append(_Tok("op", "\n"))
                self.i += 1
                self._read_heredocs()
            elif c in "()":
                self.out.append(_Tok("op", c))
                self.i += 1
            elif self._redirect():
                continue
            elif op := next((o for o in _OPERATORS if s.startswith(o, self.i)), ""):
                self.out.append(_Tok("op", op))
                self.i += len(op)
            else:
                word = self._word()
                self.out.append(_Tok("word", word.text, word=word))
        if self.pending_heredocs:
            self._read_heredocs()  # a heredoc on the last line: its body may be missing
        return self.out

    def _at_word_start(self) -> bool:
        return self.i == 0 or self.s[self.i - 1] in " \t\n;&|()"

    def _redirect(self) -> bool:
        s, j = self.s, self.i
        while j < len(s) and s[j].isdigit():
            j += 1
        if s.startswith("&>", j) and j == self.i:
            op = "&>>" if s.startswith("&>>", j) else "&>"
        else:
            op = next(
                (o for o in ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<") if s.startswith(o, j)), ""
            )
        if not op:
            return False
        if s.startswith(("<(", ">("), j):
            return False  # process substitution: a word
        self.i = j + len(op)
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s) or s[self.i] in "\n;&|()<>":
            raise _ParseError(f"redirection {op!r} has no target")
        target = self._word()
        op = op.lstrip("&") if op.startswith("&>") else op
        body = target.text if op == "<<<" else ""
        tok = _Tok("redir", op, word=target, redirect=Redirect(op, target.text, body, target.expanded))
        if op in ("<<", "<<-"):
            self.pending_heredocs.append(tok)
        self.out.append(tok)
        return True

    def _read_heredocs(self) -> None:
        s = self.s
        for tok in self.pending_heredocs:
            assert tok.redirect is not None
            delim = tok.redirect.target
            body: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                end = len(s) if end < 0 else end
                line = s[self.i : end]
                self.i = end + 1
                if (line.lstrip("\t") if tok.redirect.op == "<<-" else line) == delim:
                    break
                body.append(line)
            tok.redirect = replace(tok.redirect, body="\n".join(body))
        self.pending_heredocs = []

    def _word(self) -> _Word:
        s, w = self.s, _Word()
        start = self.i
        self._word_chars(w)
        if _BRACES.search(s[start : self.i]):
            w.dynamic = w.expanded = True  # {a,b} and {1..3}: the words are made at run time
        return w

    def _word_chars(self, w: _Word) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n;&|" or (c in "()" and not s.startswith(("<(", ">("), self.i)):
                break
            if c in "<>" and not s.startswith(("<(", ">("), self.i):
                break
            if c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _ParseError("unclosed single quote")
                w.text += s[self.i + 1 : end]
                self.i = end + 1
            elif c == '"':
                self._double_quoted(w)
            elif c == "\\":
                # A backslash-newline is a line continuation, even inside a word (r\<newline>m is rm).
                w.text += "" if s.startswith("\\\n", self.i) else s[self.i + 1 : self.i + 2]
                self.i += 2
            elif s.startswith("$'", self.i):
                end = self.i + 2
                while end < len(s) and s[end] != "'":
                    end += 2 if s[end] == "\\" else 1
                if end >= len(s):
                    raise _ParseError("unclosed $'...' quote")
                w.text += ansi_c_text(s[self.i + 2 : end])
                self.i = end + 1
            elif c == "$" or c == "`" or s.startswith(("<(", ">("), self.i):
                self._expansion(w)
            else:
                if c in "*?":
                    w.dynamic = True  # a glob: its words are decided at run time
                w.text += c
                self.i += 1

    def _double_quoted(self, w: _Word) -> None:
        s = self.s
        self.i += 1
        while True:
            if self.i >= len(s):
                raise _ParseError("unclosed double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                w.text += s[self.i + 1] if s[self.i + 1] != "\n" else ""
                self.i += 2
            elif c in "$`":
                self._expansion(w)
            else:
                w.text += c
                self.i += 1

    def _expansion(self, w: _Word) -> None:
        s = self.s
        if s.startswith("$((", self.i):
            end = _matching(s, self.i + 1)
            inner = s[self.i + 3 : end - 1]
            if "$(" in inner or "`" in inner:
                # Bash runs command substitutions inside arithmetic (even in array subscripts).
                raise _ParseError("a command substitution inside $((...))")
            w.text += s[self.i : end + 1]
            self.i = end + 1
        elif s.startswith(("$(", "<(", ">("), self.i):
            end = _matching(s, self.i + 1)
            w.nested.append((s[self.i] == "$", s[self.i + 2 : end]))
            w.text += s[self.i : end + 1]
            self.i = end + 1
        elif s[self.i] == "`":
            end = s.find("`", self.i + 1)
            if end < 0:
                raise _ParseError("unclosed backtick")
            w.nested.append((True, s[self.i + 1 : end]))
            w.text += s[self.i : end + 1]
            self.i = end + 1
        elif s.startswith("${", self.i):
            end = s.find("}", self.i)
            if end < 0:
                raise _ParseError("unclosed ${...}")
            w.text += s[self.i : end + 1]
            self.i = end + 1
        else:
            j = self.i + 1
            while j < len(s) and (s[j].isalnum() or s[j] == "_"):
                j += 1
            if j == self.i + 1 and j < len(s) and s[j] in "@*#?$!-0123456789":
                j += 1
            if j == self.i + 1:
                w.text += "$"  # a lone dollar is literal
                self.i = j
                return
            w.text += s[self.i : j]
            self.i = j
        w.dynamic = w.expanded = True


_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_NUMERIC = {"x": 2, "u": 4, "U": 8}  # how many hex digits each takes at most


def ansi_c_text(raw: str) -> str:
    """The word bash makes of the inside of ``$'...'`` (bash(1), "ANSI-C Quoting"), escape by escape.

    The gate must read the same word bash runs: Python's ``unicode_escape`` decoded escapes bash does not
    have (``\\N{...}``) and kept a NUL that bash ends the word at, so ``$'rm\\0x'`` read as something other
    than ``rm``. An escape bash does not know keeps its backslash, as bash does."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\" or i + 1 >= len(raw):
            out.append(c)
            i += 1
            continue
        letter = raw[i + 1]
        if letter in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[letter])
            i += 2
        elif letter in _OCTAL:
            end = i + 1
            while end < len(raw) and end < i + 4 and raw[end] in _OCTAL:
                end += 1
            out.append(chr(int(raw[i + 1 : end], 8) & 0xFF))
            i = end
        elif letter in _NUMERIC:
            end = i + 2
            while end < len(raw) and end < i + 2 + _NUMERIC[letter] and raw[end] in _HEX:
                end += 1
            if end == i + 2:
                out.append(raw[i : i + 2])  # no digits: bash keeps "\\x" as written
            else:
                out.append(_code_point(int(raw[i + 2 : end], 16)))
            i = end
        elif letter == "c" and i + 2 < len(raw):
            control = raw[i + 2]
            used = 3
            if raw.startswith("\\\\", i + 2):
                used = 4  # "\\c\\\\": the control character of an escaped backslash
            out.append("\x7f" if control == "?" else chr(ord(control.upper()) & 0x1F))
            i += used
        else:
            out.append(raw[i : i + 2])
            i += 2
    word = "".join(out)
    # A C string ends at its first NUL: bash passes on only what comes before it.
    return word.split("\x00", 1)[0]


def _code_point(value: int) -> str:
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return "\ufffd"  # bash writes bytes no text can hold; no command is named by them
    return chr(value)


def _matching(s: str, open_at: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_at``, skipping quotes."""
    depth, i = 0, open_at
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = s.find("'", i + 1)
            if i < 0:
                break
        elif c == '"':
            i += 1
            while i < len(s) and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise _ParseError("unbalanced parenthesis in $(...)")


_BRACES = re.compile(r"(?<![$\\])\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
_SKIP_WORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "esac"})


class _Builder:
    """Tokens to simple commands, recursing into nested scripts."""

    def __init__(self, tokens: list[_Tok], depth: int, commands: list[SimpleCommand]) -> None:
        self.t = tokens
        self.depth = depth
        self.commands = commands

    def script(self, i: int, *, subshell: bool = False) -> int:
        """Commands from token ``i`` to the end, or (in a subshell) to its ``)``; returns the index after it."""
        piped = False
        words: list[_Word] = []
        redirs: list[_Tok] = []
        while i < len(self.t):
            tok = self.t[i]
            if tok.kind == "op" and tok.value == "(":
                if words:
                    raise _ParseError("unexpected '(' inside a command (function definitions are not read)")
                i = self.script(i + 1, subshell=True)
                continue
            if tok.kind == "op" and tok.value == ")":
                if not subshell:
                    raise _ParseError("unbalanced ')'")
                self._emit(words, redirs, piped)
                return i + 1
            if tok.kind == "op":
                self._emit(words, redirs, piped)
                words, redirs = [], []
                piped = tok.value in ("|", "|&")
            elif tok.kind == "redir":
                redirs.append(tok)
            else:
                words.append(tok.word or _Word(tok.value))
            i += 1
        if subshell:
            raise _ParseError("unbalanced '('")
        self._emit(words, redirs, piped)
        return i

    def _emit(self, words: list[_Word], redirs: list[_Tok], piped: bool) -> None:
        while words and words[0].text in _SKIP_WORDS and not words[0].dynamic:
            words = words[1:]
        if words and words[0].text == "function":
            raise _ParseError("function definitions are not read")
        if words and words[0].text in ("for", "case", "select"):
            words = []  # loop headers: their bodies are separate commands
        for w in [*words, *(r.word for r in redirs if r.word is not None)]:
            for substituted, script in w.nested:
                self._recurse(script, "$()", substituted=substituted)
        assigns: list[_Word] = []
        while words and _is_assignment(words[0].text):
            assigns.append(words.pop(0))
        redirects = tuple(r.redirect for r in redirs if r.redirect is not None)
        if not words and not redirects and not assigns:
            return
        cmd = SimpleCommand(
            tuple(w.text for w in words),
            redirects,
            piped,
            frozenset(n for n, w in enumerate(words) if w.dynamic),
            frozenset(n for n, w in enumerate(words) if w.expanded),
            tuple(w.text for w in assigns),
            frozenset(n for n, w in enumerate(assigns) if w.expanded),
        )
        self.commands.append(cmd)

    def _recurse(self, script: str, how: str, *, substituted: bool) -> None:
        inner = parse_shell(script, depth=self.depth + 1)
        if inner.error:
            raise _ParseError(f"inside {how}: {inner.error}")
        if substituted:
            self.commands.extend(replace(c, in_substitution=True) for c in inner.commands)
        else:
            self.commands.extend(inner.commands)


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return (
        bool(eq)
        and bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(ch.isalnum() or ch == "_" for ch in name.rstrip("+"))
    )
