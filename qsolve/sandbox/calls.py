"""Calling a workflow's functions, and what comes back of each call, as data (DESIGN.md §3).

What a method, ``evaluate`` or ``estimate`` returns crosses from the workflow process to the platform
as one of these models, validated there: the platform builds every number it reports from them and
from the circuits it ran itself, never from anything else the workflow process says.

:class:`ModuleCode` calls an imported module; the workflow process serves the platform with it
(:mod:`qsolve.sandbox.child`), and tests of the judging use it on trusted code. The platform's
side of the same calls, over the process boundary, is :class:`qsolve.sandbox.remote.RemoteCode`.
"""

from __future__ import annotations

import copy
import math
import os
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from qsolve.errors import MethodUnavailable, shown
from qsolve.judging.results import to_json_value
from qsolve.workflow.method import MethodResult, not_a_number

if TYPE_CHECKING:
    from qsolve.workflow.context import Context

MAX_TEXT = 4000  # characters of a reason or an error message kept


def one_line(text: str) -> str:
    """A message from the workflow as one printable line (:func:`qsolve.errors.shown`): a message cannot
    start a line of its own, colour the platform's or read reversed."""
    return shown(text)


def _short(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


class MethodReturn(BaseModel):
    """What one method call gave: its result as JSON, or why it is unavailable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: None: not a finite number. Strict: a workflow process that sends ``true`` or ``"2.5"`` for a
    #: number is broken, never read as 1.0 or 2.5 (its own :class:`MethodResult` refuses them)
    objective: float | None = Field(default=None, strict=True)
    #: the objective the method gave when it was not finite, by its name (JSON holds no NaN): a claim
    #: its solution does not give, where it returned one
    not_finite: Literal["nan", "inf", "-inf"] | None = None
    solution: Any = None
    stderr: float | None = Field(default=None, strict=True, ge=0)
    details: dict[str, Any] = Field(default_factory=dict)
    postselection: tuple[int, int] | None = None
    unavailable: str | None = None

    @field_validator("postselection")
    @classmethod
    def _kept_of_total(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not (0 <= v[0] <= v[1] and v[1] > 0):
            raise ValueError("postselection must be (kept, total) with 0 <= kept <= total, total > 0")
        return v

    @field_validator("unavailable")
    @classmethod
    def _bounded(cls, v: str | None) -> str | None:
        return None if v is None else _short(v)

    @field_validator("stderr")
    @classmethod
    def _no_negative_zero(cls, v: float | None) -> float | None:
        return None if v is None else v + 0.0  # -0.0 is 0.0: never a negative sign shown or stored


class Answer(BaseModel):
    """What ``evaluate`` or ``estimate`` gave, as JSON, or the error it raised (``Type: message``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: Any = None
    error: str | None = None
    absent: bool = False  # the workflow has no such function (``estimate`` is optional)
    #: what ``evaluate`` returned that is not a number, said: ``evaluate() returned bool (True), not a
    #: number (workflow.py:5)``; the method whose solution it scored fails with it
    returned: str | None = None

    @field_validator("error", "returned")
    @classmethod
    def _bounded(cls, v: str | None) -> str | None:
        return None if v is None else _short(v)


class WorkflowCode(Protocol):
    """The workflow's functions, wherever they run."""

    def call(self, function: str, kind: str, input: dict, params: dict, ctx: Context) -> MethodReturn: ...

    def evaluate(self, input: dict, solution: Any) -> Answer: ...

    def estimate(self, input: dict, params: dict) -> Answer: ...


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def raised(e: BaseException, root: str | None = None) -> str:
    """``Type: message (workflow.py:41)``: the error, one line, and the workflow's own innermost frame
    (a file inside ``root``) where there is one."""
    if isinstance(e, ValidationError):  # pydantic's many lines, as one
        text = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'value'}: {err['msg'].removeprefix('Value error, ')}"
            for err in e.errors(include_url=False)
        )
        said = f"{e.title}: {text}"
    else:
        said = f"{type(e).__name__}: {e}"
    where = own_frame(e, root) if root else None
    if isinstance(e, SyntaxError) and e.msg and where:  # its place said once, not also in str(e)
        said = f"{type(e).__name__}: {e.msg}"
    return f"{said.rstrip()} ({where})" if where else said


def own_frame(e: BaseException, root: str) -> str | None:
    """``workflow.py:41``: the innermost frame of ``e``'s traceback in a file under ``root`` (for a
    ``SyntaxError``, the line it names)."""
    top = os.path.join(os.path.abspath(root), "")
    found = None
    for frame, line in traceback.walk_tb(e.__traceback__):
        name = os.path.abspath(frame.f_code.co_filename)
        if name.startswith(top):
            found = f"{name[len(top):]}:{line}"
    if isinstance(e, SyntaxError) and e.filename and os.path.abspath(e.filename).startswith(top):
        found = f"{os.path.abspath(e.filename)[len(top):]}:{e.lineno}"
    return found


def _defined_at(fn: Any, root: str | None) -> str:
    """`` (workflow.py:30)``: where a function of the workflow is defined, when it is under ``root``."""
    code = getattr(fn, "__code__", None)
    if code is None or not root:
        return ""
    top = os.path.join(os.path.abspath(root), "")
    name = os.path.abspath(code.co_filename)
    return f" ({name[len(top):]}:{code.co_firstlineno})" if name.startswith(top) else ""


class _NotAMethodResult(TypeError):
    pass


class ModuleCode:
    """A module's functions called in this process: for the workflow process, and for trusted code."""

    def __init__(
        self, module: ModuleType | None, import_error: str | None = None, root: str | None = None
    ) -> None:
        self.module = module
        self.import_error = import_error
        self.import_seconds = 0.0
        file = getattr(module, "__file__", None)
        #: the workflow's folder: a traceback's frames in its files are the workflow's own
        self.root = root or (os.path.dirname(file) if file else None)
        self.file = os.path.basename(file) if file else "the workflow module"

    def _function(self, name: str) -> Any:
        fn = getattr(self.module, name, None)
        if not callable(fn):
            raise AttributeError(f"{self.file} has no top-level function {name!r}")
        return fn

    @classmethod
    def load(cls, path: Path) -> ModuleCode:
        """Import ``path`` afresh (trusted code only: this runs it in this process)."""
        from qsolve.workflow.module_loader import load_module

        start = time.perf_counter()
        try:
            code = cls(load_module(path))
        except (Exception, SystemExit) as e:
            code = cls(None, raised(e, str(path.parent)))
        code.import_seconds = time.perf_counter() - start
        return code

    def call(self, function: str, kind: str, input: dict, params: dict, ctx: Context) -> MethodReturn:
        """One method; one that raises is unavailable: ``failed: Type: message`` if it crashed."""
        try:
            fn = self._function(function)
            raw = fn(copy.deepcopy(input), dict(params), ctx)
            result = raw if isinstance(raw, MethodResult) else self._result(function, fn, raw)
            objective = float(result.objective)
            out = MethodReturn(
                objective=_finite(objective),
                not_finite=None if math.isfinite(objective) else str(objective),
                solution=to_json_value(result.solution),
                stderr=None if result.stderr is None else _finite(float(result.stderr)),
                details=to_json_value(result.details),
                postselection=ctx.postselection,
            )
        except MethodUnavailable as e:
            out = MethodReturn(unavailable=str(e) or "unavailable", postselection=ctx.postselection)
        except _NotAMethodResult as e:
            out = MethodReturn(unavailable=f"failed: TypeError: {e}", postselection=ctx.postselection)
        except (Exception, SystemExit) as e:
            out = MethodReturn(unavailable=f"failed: {raised(e, self.root)}", postselection=ctx.postselection)
        return out

    def _result(self, function: str, fn: Any, raw: Any) -> MethodResult:
        """What a method returned, as a :class:`MethodResult`; one that is not names what it was."""
        at = _defined_at(fn, self.root)
        if not isinstance(raw, dict):
            raise _NotAMethodResult(
                f"{function}() returned {type(raw).__name__}, not a MethodResult or a dict of its keys{at}"
            )
        try:
            return MethodResult.model_validate(raw)
        except ValidationError as e:
            raise _NotAMethodResult(f"{function}() returned a dict that is not a MethodResult: "
                                    f"{raised(e).split(': ', 1)[1]}{at}") from None

    def evaluate(self, input: dict, solution: Any) -> Answer:
        try:
            fn = self._function("evaluate")
            raw = fn(copy.deepcopy(input), copy.deepcopy(solution))
        except (Exception, SystemExit) as e:
            return Answer(error=raised(e, self.root))
        at = _defined_at(fn, self.root)
        refused = not_a_number(raw)
        if refused is not None:  # float() would take True as 1.0 and "3" as 3.0: neither is a number
            return Answer(returned=f"evaluate() returned {refused}, not a number{at}")
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return Answer(returned=f"evaluate() returned {type(raw).__name__}, not a number{at}")
        return Answer(value=_finite(value))  # JSON holds no NaN: a value that is not finite is None

    def estimate(self, input: dict, params: dict) -> Answer:
        fn = getattr(self.module, "estimate", None)
        if fn is None:
            return Answer(absent=True)
        try:
            return Answer(value=to_json_value(fn(copy.deepcopy(input), dict(params))))
        except (Exception, SystemExit) as e:
            return Answer(error=f"estimate() failed: {raised(e, self.root)}")


__all__ = ["Answer", "MethodReturn", "ModuleCode", "WorkflowCode", "one_line", "own_frame", "raised"]
