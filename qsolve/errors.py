"""One error tree for the domain core, and the located issue every check reports.

    QsolveError
    ├── WorkflowInvalid      a workflow folder that does not read: carries its issues
    │   └── PlatformFailed   the platform could not check it (the host killed its worker)
    ├── MethodUnavailable    a method that cannot serve an input (raised by workflow code)
    ├── CircuitsRefused      a classical method's context was asked to run circuits
    ├── RecordNotFound       a book (the state database) holds no record of that id
    ├── RecordStateError     a record asked to move in a way its status forbids (another process ended it)
    └── WorkflowProcessFailed   the workflow process ended its use (qsolve.sandbox)
        ├── ProcessDied         it died: a signal, or an exit in the middle of a call
        ├── ProtocolBroken      it sent what the protocol does not allow: it is not used again
        ├── OutOfTime           the job's time limit passed: the whole job ends
        ├── PlatformStopped     the platform stopped the flow the job ran for (qsolve.runtime.stopping)
        ├── HostShortOfMemory   the host killed the job's platform worker, the job within its budget
        └── Unconfined          the platform needs the full boundary and the kernel did not give it

An issue's location is a tuple built from the inside out, as pydantic builds `loc`, and is
formatted only at the edge: ``benchmarks/cases.yaml: cases[2].expect.max_gapp: unknown key``.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import ValidationError

Loc = tuple[str | int, ...]


def format_loc(loc: Sequence[str | int]) -> str:
    """``('cases', 2, 'expect', 'max_gapp')`` -> ``cases[2].expect.max_gapp``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


#: characters Python counts printable that show nothing (Unicode's default-ignorable code points): the
#: Hangul fillers, the combining grapheme joiner, Mongolian and other variation selectors
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)
_MAYBE_HIDDEN = re.compile(r"[^\x20-\x7e]")  # only a character past printable ASCII is looked at


def _one_shown(m: re.Match[str]) -> str:
    char = m.group()
    if not char.isprintable():
        return repr(char)[1:-1]
    if _IGNORABLE.match(char):  # printable to Python, so written out here
        return f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}"
    return char


def shown(text: str) -> str:
    """``text`` with every character that does not show as itself escaped as Python writes it
    (``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``): control, format (bidirectional overrides,
    zero-width, tag characters), private-use, unassigned and separator characters, every space but
    the ASCII one (what ``str.isprintable`` refuses), and the default-ignorable ones. Text from a
    workflow folder or a provider cannot start a line of its own, send a terminal escape, read
    reversed or hide a word (issues 22, 35)."""
    return _MAYBE_HIDDEN.sub(_one_shown, text)


@dataclass(frozen=True)
class Issue:
    """One thing wrong (or worth a warning), with the file and key path it is about."""

    file: str
    message: str
    loc: Loc = ()
    code: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return self.format()

    def format(self, folder: str | None = None) -> str:
        """``E052 workflows/x/benchmarks/cases.yaml: hardware_cases[0].target: ...``"""
        file = f"{folder.rstrip('/')}/{self.file}" if folder and self.file else self.file
        file = shown(file)
        where = file + (f": {format_loc(self.loc)}" if self.loc else "")
        prefix = f"{self.code} " if self.code else ""
        return f"{prefix}{where}: {self.message}"


@dataclass
class QsolveError(Exception):
    """Base of every error the domain core raises on purpose."""

    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class RecordNotFound(QsolveError):
    """A book the core is given (the state database) holds no record of that id: the core catches this,
    storage raises its own ``storage.state.NotFound``, a kind of it."""


@dataclass
class RecordStateError(QsolveError):
    """A record asked to move in a way its status forbids, as when another process ended it meanwhile:
    storage raises ``storage.state.RunStateError``, a kind of it."""


@dataclass
class WorkflowInvalid(QsolveError):
    """A workflow folder (or one of its files) does not read; ``issues`` says where."""

    issues: list[Issue] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(i) for i in self.issues) or self.message


class PlatformFailed(WorkflowInvalid):
    """The platform could not check a workflow (its worker was killed by the host, short of memory):
    the platform's failure, not the workflow's; read as any :class:`WorkflowInvalid` is (one line), its
    issues carry no lint code, and a caller that files a verdict does not file this one as the
    workflow's."""


class MethodUnavailable(Exception):  # noqa: N818 - the name workflows already use
    """Raised by a method that cannot serve this input; the case is not failed by it alone."""


class CircuitsRefused(Exception):  # noqa: N818
    """Raised when a classical method's context is asked to run circuits."""


class WorkflowProcessFailed(Exception):  # noqa: N818
    """The workflow process can no longer be used; ``str(e)`` says why, for the case it was serving."""


class ProcessDied(WorkflowProcessFailed):
    pass


class ProtocolBroken(WorkflowProcessFailed):
    pass


class OutOfTime(WorkflowProcessFailed):
    pass


class Unconfined(WorkflowProcessFailed):
    pass


class PlatformStopped(WorkflowProcessFailed):
    """The flow the job ran for was stopped (SIGTERM, SIGINT, a cancellation): the platform's doing."""


class HostShortOfMemory(WorkflowProcessFailed):
    """The platform's worker for a job was killed by the host (short of memory) while the job was within
    its budget: the platform's failure, never the workflow's (its run is not recorded nor charged)."""


_PYDANTIC_WORDING = {
    "extra_forbidden": "unknown key",
    "missing": "required key missing",
}


def issues_from_validation(
    exc: ValidationError,
    file: str,
    *,
    prefix: Loc = (),
    codes: dict[str, str] | None = None,
    default_code: str | None = None,
    model: Any = None,
) -> list[Issue]:
    """Translate pydantic's errors into issues, keeping its ``loc`` as the key path.

    ``codes`` maps a pydantic error type (``extra_forbidden``, ``missing``) to a lint code; an
    error raised with a custom type that is itself a code (``E021``) keeps it. ``model``, the type
    validated: an unknown key says the known key it is closest to (``unknown key; did you mean
    'max_gap'?``).
    """
    issues = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        message = _PYDANTIC_WORDING.get(kind) or _describe(err)
        if kind == "extra_forbidden" and model is not None and err["loc"]:
            message += did_you_mean(str(err["loc"][-1]), keys_at(model, err["loc"][:-1]))
        if codes is None and default_code is None:
            code = None
        elif kind[:1] in "EW" and kind[1:].isdigit():
            code = kind
        else:
            code = (codes or {}).get(kind, default_code)
        loc = prefix + tuple(err["loc"])
        issues.append(Issue(file=file, loc=loc, message=message, code=code))
    return issues


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """``; did you mean 'max_gap'?`` when ``word`` is close to one of ``known``, else nothing."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def keys_at(model: Any, path: Sequence[str | int]) -> list[str]:
    """The keys the pydantic model found at ``path`` inside ``model`` (a model, or a list of them) knows.
    (pydantic imported here: ``qsolve test`` starts its workflow process before loading it.)"""
    from pydantic import BaseModel

    tp = model
    for part in path:
        tp = _unwrapped(tp)
        if isinstance(part, int):
            args = get_args(tp)
            tp = args[0] if args else None
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        else:
            return []
    tp = _unwrapped(tp)
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def _unwrapped(tp: Any) -> Any:
    """``X | None`` as ``X``."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _describe(err: dict) -> str:
    msg = err["msg"]
    if err["type"] in {
        "string_type",
        "int_type",
        "float_type",
        "bool_type",
        "dict_type",
        "list_type",
        "model_type",
        "literal_error",
        "int_from_float",
        "string_pattern_mismatch",
        "int_parsing",
        "float_parsing",
        "bool_parsing",
    }:
        got = err.get("input")
        shown = repr(got)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{msg[0].lower()}{msg[1:]}, got {shown}"
    return msg[0].lower() + msg[1:] if msg else msg
