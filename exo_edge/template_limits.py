"""Chat templates rendered under limits: a GGUF's template is code from the file, and code can loop.

A registered GGUF carries its chat template (Jinja) in its header, and whoever
made the file wrote it. Jinja's sandbox stops it reaching Python's internals,
but not from looping 10^10 times, building a gigabyte string, or formatting
with a width of a billion. :class:`BoundedChatFormatter` renders a template the
way llama-cpp-python's ``Jinja2ChatFormatter`` does (same environment options,
same variables) but under :class:`TemplateLimits`:

* **steps**: the template is compiled so that every block it enters (each
  iteration of a loop, empty or not, each branch taken, each macro body) and
  every call it makes is a step;
* **seconds**: checked at every step;
* **size**: the text rendered, every string or list a template expression
  yields, and the operands of ``*``, ``**`` and ``%`` (checked *before* the
  operation), the integer arguments of calls and filters, and the widths in
  a format string;
* **cancel**: a :class:`threading.Event` the caller sets (``turn.interrupt``,
  exod's shutdown) ends the render at the next check.

Past a limit the render raises :class:`TemplateLimitError`, a typed provider
error: the turn fails with a message, and the thread that rendered is free
again within the limit. ``exo models add`` refuses a template
(:func:`refuse_unsafe_template`, :class:`UnsafeTemplateError`) that exceeds
:data:`CHECK_LIMITS` on sample conversations (:func:`check_template`), or whose
plain compile, as llama-cpp-python runs it when it loads the model (constant
expressions are evaluated then, in any branch), does not finish in a child
process limited to :data:`COMPILE_MEMORY` and :data:`COMPILE_SECONDS`.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from exo_core.errors import UsageError
from exo_core.seams.failures import FailureKind, ProviderError

__all__ = [
    "TemplateLimits",
    "RENDER_LIMITS",
    "CHECK_LIMITS",
    "TemplateLimitError",
    "BoundedChatFormatter",
    "Rendered",
    "check_template",
    "bounded_formatter",
    "UnsafeTemplateError",
    "refuse_unsafe_template",
]


@dataclass(frozen=True, slots=True)
class TemplateLimits:
    """How much one render may do."""

    steps: int = 2_000_000  # template lines executed
    seconds: float = 3.0
    chars: int = 4_000_000  # the longest text (or list) any one value may be, the output included
    integer: int = 1_000_000  # the largest integer a call, filter or format width may take


# A turn's prompt: a long conversation with tools renders in a few thousand steps and milliseconds.
RENDER_LIMITS = TemplateLimits()
# `exo models add`: sample conversations, a fraction of a real one's work.
CHECK_LIMITS = TemplateLimits(steps=500_000, seconds=2.0, chars=1_000_000)
_SEQUENCES = (str, bytes, list, tuple)
_SIZED = (*_SEQUENCES, dict)
_WIDTH = re.compile(r"\d{7,}")  # a run of 7+ digits in a format string: a width of a million or more


class TemplateLimitError(ProviderError):
    """The model's chat template did more than a render may (it loops, or builds something huge)."""

    code = "template_limit"

    def __init__(self, message: str) -> None:
        super().__init__(message, kind=FailureKind.BAD_REQUEST, provider="local")


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered prompt; ``stop`` holds the end-of-turn text (llama-cpp-python's ``ChatFormatterResponse`` shape)."""

    prompt: str
    stop: list[str]


class _Budget:
    """Steps, time and cancel for one render; the compiled template calls :meth:`step` (via ``environment.tick``)."""

    __slots__ = ("limits", "cancel", "steps", "deadline")

    def __init__(self, limits: TemplateLimits, cancel: threading.Event | None) -> None:
        self.limits = limits
        self.cancel = cancel
        self.steps = 0
        self.deadline = time.monotonic() + limits.seconds

    def step(self) -> None:
        """One step: a block entered (a loop's iteration, a branch, a macro's body) or a call made."""
        self.steps += 1
        if self.steps > self.limits.steps:
            raise TemplateLimitError(
                f"the model's chat template ran more than {self.limits.steps:,} steps rendering one prompt "
                "(a loop without a useful end); it was stopped"
            )
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"the model's chat template ran longer than {self.limits.seconds:g} s rendering one prompt; "
                "it was stopped"
            )
        if self.cancel is not None and self.cancel.is_set():
            raise TemplateLimitError("the chat template's render was cancelled (the turn was interrupted)")

    def size(self, value: Any, what: str) -> Any:
        if isinstance(value, _SIZED) and len(value) > self.limits.chars:
            raise TemplateLimitError(
                f"the model's chat template built {what} of {len(value):,} items (the limit is "
                f"{self.limits.chars:,}); it was stopped"
            )
        return value

    def integer(self, value: Any, what: str) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > self.limits.integer:
            raise TemplateLimitError(
                f"the model's chat template passed {what} the number {value:,} (the limit is "
                f"{self.limits.integer:,}); it was stopped"
            )


_ACTIVE = threading.local()  # the budget of the render running on this thread


def _budget() -> _Budget:
    budget = getattr(_ACTIVE, "budget", None)
    if budget is None:  # a template object used outside render(): no limits apply, so refuse to run it
        raise TemplateLimitError("a chat template ran outside a bounded render")
    return budget


def _environment() -> Any:
    """The sandboxed environment, with every size-changing operation checked against the running budget."""
    from jinja2 import BaseLoader
    from jinja2.compiler import CodeGenerator, CompilerExit
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Counting(CodeGenerator):
        """Every block of the compiled template (each loop iteration, branch, macro body) begins with a step."""

        def blockvisit(self, nodes: Any, frame: Any) -> None:
            try:
                self.writeline("environment.tick()")  # where jinja2 writes "pass"
                for node in nodes:
                    self.visit(node, frame)
            except CompilerExit:
                pass

    class Bounded(ImmutableSandboxedEnvironment):
        code_generator_class = Counting
        # Intercepted operators are also never folded at compile time, so `'x' * 10**10` cannot run there.
        intercepted_binops = frozenset({"*", "**", "%", "+"})

        def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
            budget = _budget()
            if op == "*":
                for count, seq in ((left, right), (right, left)):
                    if isinstance(count, int) and isinstance(seq, _SEQUENCES):
                        budget.integer(count, "'*'")
                        if len(seq) * max(count, 0) > budget.limits.chars:
                            raise TemplateLimitError(
                                f"the model's chat template repeats {len(seq):,} items {count:,} times "
                                f"(the limit is {budget.limits.chars:,}); it was stopped"
                            )
            elif op == "**":
                budget.integer(right, "'**'")
                if isinstance(right, int) and isinstance(left, int) and abs(right) > 256:
                    raise TemplateLimitError(f"the model's chat template raises to the power {right}; it was stopped")
            elif op == "%" and isinstance(left, str):
                if _WIDTH.search(left):
                    raise TemplateLimitError("the model's chat template formats with a huge width; it was stopped")
                for value in right if isinstance(right, tuple) else (right,):
                    budget.integer(value, "'%'")
            return budget.size(super().call_binop(context, op, left, right), "a value")

        # The dunder names are jinja2's own: a template may pass keyword arguments named context or obj.
        def tick(self) -> None:
            _budget().step()

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            budget = _budget()
            budget.step()
            for value in (*args, *kwargs.values()):
                budget.integer(value, "a call")
            receiver, method = getattr(__obj, "__self__", None), getattr(__obj, "__name__", "")
            if isinstance(receiver, str) and method == "join" and args:
                args = (_sized(budget, args[0]), *args[1:])
                _precheck(budget, "join", _joined_size(receiver, args[0]))
            if isinstance(receiver, str) and method == "replace" and len(args) >= 2:
                _precheck(budget, "replace", _replaced_size(receiver, args[0], args[1]))
            return budget.size(super().call(__context, __obj, *args, **kwargs), "a value")

        def getattr(self, obj: Any, attribute: str) -> Any:
            budget = _budget()
            if attribute in ("format", "format_map") and isinstance(obj, str) and _WIDTH.search(obj):
                raise TemplateLimitError("the model's chat template formats with a huge width; it was stopped")
            return budget.size(super().getattr(obj, attribute), "a value")

        def getitem(self, obj: Any, argument: Any) -> Any:
            return _budget().size(super().getitem(obj, argument), "a value")

    class IgnoreGenerationTags(Extension):  # llama-cpp-python's pass-through for HuggingFace's {% generation %}
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            parser.stream.skip(1)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    # The options llama-cpp-python's Jinja2ChatFormatter uses, so a template renders the same text.
    env = Bounded(
        loader=BaseLoader(),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[IgnoreGenerationTags, loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    return env


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """JSON as Transformers' (and llama-cpp-python's) chat templates write it: keys in order, text as is."""
    import json

    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _sized(budget: _Budget, items: Any) -> Any:
    """``items`` as something with a length: an iterator is read into a list of at most the size limit."""
    if isinstance(items, Sized) or not isinstance(items, Iterable):
        return items
    taken = list(itertools.islice(items, budget.limits.chars + 1))
    return budget.size(taken, "a list")


def _joined_size(separator: Any, items: Any) -> int:
    if isinstance(separator, str) and isinstance(items, Sized):
        return len(separator) * len(items)
    return 0


def _replaced_size(text: Any, old: Any, new: Any) -> int:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return 0
    return (len(text) // max(len(old), 1) + 1) * len(new) + len(text)


def _precheck(budget: _Budget, name: str, size: int) -> None:
    """Refuse a join or replace whose result could pass the size limit, before it is built."""
    if size > budget.limits.chars:
        raise TemplateLimitError(
            f"the model's chat template would build up to {size:,} characters with {name} (the limit is "
            f"{budget.limits.chars:,}); it was stopped"
        )


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with its integer arguments and its result checked against the running budget."""
    from jinja2.nodes import EvalContext

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        for value in (*args, *kwargs.values()):
            budget.integer(value, f"the filter {name!r}")
        plain = [a for a in args if not isinstance(a, EvalContext)]  # join and replace take the context first
        if name == "join" and plain:
            items = _sized(budget, plain[0])
            args = tuple(items if a is plain[0] else a for a in args)
            _precheck(budget, "join", _joined_size(plain[1] if len(plain) > 1 else kwargs.get("d", ""), items))
        if name == "replace" and len(plain) >= 3:
            _precheck(budget, "replace", _replaced_size(plain[0], plain[1], plain[2]))
        return budget.size(function(*args, **kwargs), f"a value (filter {name!r})")

    return bounded


def _raise_exception(message: str) -> None:
    raise ValueError(message)


def _strftime_now(fmt: str) -> str:
    return _dt.datetime.now().strftime(fmt)


class BoundedChatFormatter:
    """A chat template compiled once and rendered under :class:`TemplateLimits` (see the module docstring).

    Called like llama-cpp-python's ``Jinja2ChatFormatter``: ``formatter(messages=..., tools=...)``
    returns an object with ``prompt`` and ``stop``.
    """

    def __init__(
        self,
        template: str,
        *,
        eos_token: str = "",
        bos_token: str = "",
        add_generation_prompt: bool = True,
        limits: TemplateLimits = RENDER_LIMITS,
    ) -> None:
        self.template = template
        self.eos_token = eos_token
        self.bos_token = bos_token
        self.add_generation_prompt = add_generation_prompt
        self.limits = limits
        self._compiled = _environment().from_string(template)

    def __call__(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        cancel: threading.Event | None = None,
        limits: TemplateLimits | None = None,
        **_: Any,
    ) -> Rendered:
        """Render ``messages`` (and ``tools``); :class:`TemplateLimitError` past a limit."""
        budget = _Budget(limits or self.limits, cancel)
        variables = {
            "messages": messages,
            "eos_token": self.eos_token,
            "bos_token": self.bos_token,
            "raise_exception": _raise_exception,
            "add_generation_prompt": self.add_generation_prompt,
            "functions": None,
            "function_call": None,
            "tools": tools,
            "tool_choice": tool_choice,
            "strftime_now": _strftime_now,
        }
        return Rendered(_render(self._compiled, variables, budget), [self.eos_token] if self.eos_token else [])


@functools.lru_cache(maxsize=8)
def bounded_formatter(template: str, eos_token: str = "", bos_token: str = "") -> BoundedChatFormatter:
    """A :class:`BoundedChatFormatter` compiled once per template and tokens (compiling is most of a render's cost)."""
    return BoundedChatFormatter(template, eos_token=eos_token, bos_token=bos_token)


def _render(compiled: Any, variables: Mapping[str, Any], budget: _Budget) -> str:
    """Run the compiled template with ``budget`` active on this thread; the output is capped as it grows."""
    pieces: list[str] = []
    total = 0
    _ACTIVE.budget = budget
    try:
        for piece in compiled.generate(**variables):
            total += len(piece)
            if total > budget.limits.chars:
                raise TemplateLimitError(
                    f"the model's chat template wrote more than {budget.limits.chars:,} characters for one "
                    "prompt; it was stopped"
                )
            pieces.append(piece)
    finally:
        _ACTIVE.budget = None
    return "".join(pieces)


_SAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file in the workspace.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
_CALL = {"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": {"path": "todo.txt"}}}
_SAMPLES: tuple[tuple[list[dict[str, Any]], list[dict[str, Any]] | None], ...] = (
    ([{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello"}], None),
    (
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "What is in todo.txt?"},
            {"role": "assistant", "content": "", "tool_calls": [_CALL]},
            {"role": "tool", "content": "buy milk", "tool_call_id": "call_0"},
            {"role": "assistant", "content": "It says: buy milk."},
            {"role": "user", "content": "Thanks!"},
        ],
        _SAMPLE_TOOLS,
    ),
)


def check_template(template: str, *, bos_token: str = "", eos_token: str = "") -> None:
    """Render sample conversations under :data:`CHECK_LIMITS`; :class:`TemplateLimitError` if the template exceeds them.

    A template that refuses a sample (``raise_exception``, a Jinja error) is
    not refused here: many templates reject some role orders, and the turn
    reports such an error when it happens.
    """
    import jinja2

    try:
        formatter = BoundedChatFormatter(template, eos_token=eos_token, bos_token=bos_token, limits=CHECK_LIMITS)
    except jinja2.TemplateError:
        return  # a template that does not compile fails at its first use, with Jinja's message
    for messages, tools in _SAMPLES:
        try:
            formatter(messages=messages, tools=tools)
        except TemplateLimitError:
            raise
        except (jinja2.TemplateError, ValueError, TypeError, LookupError, RecursionError):
            continue


COMPILE_MEMORY = 1 << 30  # bytes of address space the compile check's child may use
COMPILE_SECONDS = 10  # CPU seconds it may use
# The child compiles as llama-cpp-python does. Jinja turns any error while folding a constant into
# "not constant", a MemoryError included, so the operations folding uses report one by exiting.
_COMPILE = """\
import functools, os, sys
import jinja2.nodes
from jinja2 import BaseLoader
from jinja2.sandbox import ImmutableSandboxedEnvironment
def guard(function):
    @functools.wraps(function)
    def guarded(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except MemoryError:
            os._exit(4)
    return guarded
jinja2.nodes._binop_to_func = {k: guard(f) for k, f in jinja2.nodes._binop_to_func.items()}
jinja2.nodes._uaop_to_func = {k: guard(f) for k, f in jinja2.nodes._uaop_to_func.items()}
source = sys.stdin.read()
env = ImmutableSandboxedEnvironment(loader=BaseLoader(), trim_blocks=True, lstrip_blocks=True)
env.filters = {name: guard(f) for name, f in env.filters.items()}
try:
    env.from_string(source)
except MemoryError:
    sys.exit(4)
except Exception:
    sys.exit(3)
"""


class UnsafeTemplateError(UsageError):
    """A GGUF's chat template exceeds what one render or compile may do; the file is not registered."""

    code = "unsafe_template"


def _limit_child() -> None:  # runs in the child between fork and exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (COMPILE_MEMORY, COMPILE_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (COMPILE_SECONDS, COMPILE_SECONDS))


def _compile_problem(template: str) -> str | None:
    """Why compiling ``template`` as llama-cpp-python does is unsafe (None: it compiles within the limits)."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _COMPILE],
            input=template.encode("utf-8", errors="surrogatepass"),
            capture_output=True,
            timeout=COMPILE_SECONDS * 3,
            preexec_fn=_limit_child,  # the child only sets its own limits, then execs python
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"compiling it took longer than {COMPILE_SECONDS * 3} s"
    if done.returncode in (0, 3):  # 3: Jinja refused it; the model then fails to load with Jinja's message
        return None
    if done.returncode == 4:
        return (
            f"compiling it needed more than {COMPILE_MEMORY >> 20} MiB (a constant expression that builds a huge value)"
        )
    return f"compiling it was stopped by its limits ({COMPILE_SECONDS} CPU seconds, {COMPILE_MEMORY >> 20} MiB)"


def refuse_unsafe_template(template: str, *, where: str) -> None:
    """Raise :class:`UnsafeTemplateError` naming ``where`` when ``template`` is not safe to keep (module docstring)."""
    problem = _compile_problem(template)
    if problem is None:
        try:
            check_template(template)
        except TemplateLimitError as exc:
            problem = f"rendering a sample conversation: {exc.message}"
    if problem is not None:
        raise UnsafeTemplateError(
            f"{where}: its chat template is refused ({problem}). A chat template is code that runs on every "
            "turn, and this one could pin a core; register a copy of the model that carries its original template"
        )
