"""The messages of ``wai.quantum.provider/1`` and how a client reads their answers (§3, §5, §6, §10).

Requests are built as models (:class:`DescribeRequest` … :class:`CancelRequest`) and sent as
:meth:`Request.message`. Answers are read by a reader each, which ignores fields it does not know (§10)
and says why when it refuses an answer:

    read_envelope(obj)          ``ok`` true: the answer; ``ok`` false: :class:`ProviderAnswerError`
    read_description(obj)       §5.1  -> Description (its ``billing`` read by read_billing)
    read_billing(obj)           §5.1  -> Billing, kind free | priced | unpriced | refused
    read_estimate(obj)          §5.2  -> Estimate, kind free | priced | unpriced | refused
    read_submit(obj)            §5.3  -> the job's id
    read_status(obj)            §5.4  -> Status
    read_result(obj, shots)     §5.5, §6, §8.3 -> ResultAnswer
    read_cancel(obj)            §5.6  -> CancelAnswer

A billing or an estimate of none of its forms is not an error: it is read as ``refused``, a cost that
is not known (no figure of it is shown), with ``reason`` saying why. Every other reader raises
:class:`AnswerRefused` (a ``ValueError``) with its reason.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from qsolve.errors import format_loc
from qsolve.providers.device import MAX_PAIRS, MAX_PLACES, Device

PROTOCOL = "wai.quantum.provider/1"
OPS = ("describe", "estimate", "submit", "status", "result", "cancel")
#: an amount as §5.2 and §8.7 write it: digits, optionally a point and digits
DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")
OUTCOME = re.compile(r"[01]+")
MAX_WHOLE = 2**53 - 1

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Unit = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, strict=True)]


class AnswerRefused(ValueError):
    """An answer that breaks the protocol; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _reason(exc: ValidationError, what: str) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:3]:
        loc = format_loc([p for p in err["loc"] if isinstance(p, str | int)])
        msg = err["msg"]
        parts.append(f"{loc}: {msg[0].lower()}{msg[1:]}" if loc else msg[0].lower() + msg[1:])
    more = len(exc.errors()) - 3
    return f"{what}: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _whole(value: Any) -> int | None:
    """A JSON whole number as an int (``3`` or ``3.0``), else None (booleans are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_WHOLE:
        return int(value)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value  # not NaN


# ---- requests (§3, §5) ----------------------------------------------------------------------------


class Request(BaseModel):
    """What every message carries: ``protocol``, ``op`` and the person's non-secret ``settings``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: StrictStr = PROTOCOL
    op: StrictStr
    settings: dict[str, Any] | None = None

    def message(self) -> dict[str, Any]:
        """The message as it is sent: its fields, none of them ``null``."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class DescribeRequest(Request):
    op: Literal["describe"] = "describe"


class EstimateRequest(Request):
    op: Literal["estimate"] = "estimate"
    program: dict[str, Any]
    shots: Annotated[StrictInt, Field(ge=1)]


class SubmitRequest(Request):
    op: Literal["submit"] = "submit"
    program: dict[str, Any]
    shots: Annotated[StrictInt, Field(ge=1)]
    seed: Annotated[StrictInt, Field(ge=0, lt=2**63)] | None = None  # what a simulator seeds with


class StatusRequest(Request):
    op: Literal["status"] = "status"
    job: NonEmpty


class ResultRequest(Request):
    op: Literal["result"] = "result"
    job: NonEmpty


class CancelRequest(Request):
    op: Literal["cancel"] = "cancel"
    job: NonEmpty


REQUESTS: dict[str, type[Request]] = {
    "describe": DescribeRequest,
    "estimate": EstimateRequest,
    "submit": SubmitRequest,
    "status": StatusRequest,
    "result": ResultRequest,
    "cancel": CancelRequest,
}


# ---- the envelope (§3) ----------------------------------------------------------------------------


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    code: StrictStr
    message: StrictStr


class ProviderAnswerError(Exception):
    """An answer with ``"ok": false``: the provider's ``code`` and its ``message`` for a person."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def read_envelope(obj: Any) -> dict[str, Any]:
    """The answer when its ``ok`` is true; ProviderAnswerError when false; AnswerRefused otherwise."""
    if not isinstance(obj, dict):
        raise AnswerRefused("the answer is not a JSON object")
    ok = obj.get("ok")
    if ok is True:
        return obj
    if ok is False:
        try:
            body = ErrorBody.model_validate(obj.get("error"))
        except ValidationError as exc:
            raise AnswerRefused(
                _reason(exc, 'an answer with "ok": false needs error {code, message}')
            ) from None
        raise ProviderAnswerError(body.code, body.message)
    raise AnswerRefused('the answer has no "ok" of true or false')


def ok(**fields: Any) -> dict[str, Any]:
    """An answer, as a provider writes one."""
    return {"ok": True, **fields}


def error_answer(code: str, message: str) -> dict[str, Any]:
    """An error answer, as a provider writes one (§3)."""
    return {"ok": False, "error": {"code": code, "message": message}}


# ---- billing (§5.1) -------------------------------------------------------------------------------

BillingKind = Literal["free", "priced", "unpriced", "refused"]


class Billing(BaseModel):
    """A device's ``billing`` as a client reads it. ``refused``: of none of §5.1's forms, a cost unknown."""

    model_config = ConfigDict(frozen=True)

    kind: BillingKind
    unit: str | None = None
    price: str | None = None
    currency: str | None = None
    free_tier: Any = None
    reason: str | None = None  # why it was refused
    given: Any = Field(default=None, repr=False)  # the billing as the provider wrote it

    @property
    def free(self) -> bool:
        return self.kind == "free"

    def wire(self) -> Any:
        """The billing as §5.1 writes it (a refused one as it was given)."""
        tier = {"free_tier": self.free_tier} if self.free_tier is not None else {}
        if self.kind == "free":
            return {"free": True, **tier}
        if self.kind == "priced":
            return {"unit": self.unit, "price": self.price, "currency": self.currency, **tier}
        if self.kind == "unpriced":
            return {"free": False, "priced": False, **tier}
        return self.given

    def text(self) -> str:
        if self.kind == "free":
            return "free"
        if self.kind == "priced":
            return f"{self.price} {self.currency} a {self.unit}"
        if self.kind == "unpriced":
            return "not free, and no price set: the cost is unknown"
        return f"the cost is unknown ({self.reason})"

    def without_estimate(self) -> str:
        """Why a job is of unknown cost when its provider gives no estimate (``unsupported``) and this
        billing is not free: §5.2 ("the client then treats the cost as unknown"), and §7 (only a billing
        that says free makes such a job free; "every other job, an unknown cost included, is not
        free")."""
        if self.kind == "priced":
            return (
                f"the provider gives no estimate: its billing prices one {self.unit} at {self.price} "
                f"{self.currency}, and this job's cost is unknown"
            )
        if self.kind == "unpriced":
            return "the provider gives no estimate, and its billing sets no price"
        return f"the provider gives no estimate, and its billing states nothing ({self.reason})"


_PRICE_KEYS = ("unit", "price", "currency")
_MISSING: Any = object()


def read_billing(obj: Any) -> Billing:
    """§5.1's three forms: ``{"free": true}``; ``{"unit", "price", "currency"}``; or
    ``{"free": false, "priced": false}``, each with an optional ``free_tier``. Anything else is
    ``refused``: it states nothing, and the cost is unknown."""

    def refused(reason: str) -> Billing:
        return Billing(kind="refused", reason=reason, given=obj)

    if not isinstance(obj, dict):
        return refused("billing is not an object")
    free_tier = obj.get("free_tier")
    free, priced = obj.get("free", _MISSING), obj.get("priced", _MISSING)
    given = [k for k in _PRICE_KEYS if k in obj]
    if free is not _MISSING and not isinstance(free, bool):
        return refused("billing's free is not true or false")
    if priced is not _MISSING:
        if priced is not False:
            return refused("billing's priced is in the third form only, and false there")
        if free is not False:
            return refused('billing\'s priced false goes with "free": false only')
        if given:
            return refused(f"billing's third form holds no {', '.join(given)}")
        return Billing(kind="unpriced", free_tier=free_tier)
    if free is True:
        if given:
            return refused(f'billing is "free": true beside {", ".join(given)}: of no one form')
        return Billing(kind="free", free_tier=free_tier)
    if given:
        missing = [k for k in _PRICE_KEYS if k not in obj]
        if missing:
            return refused(f"billing's priced form lacks {', '.join(missing)}")
        unit, price, currency = obj["unit"], obj["price"], obj["currency"]
        if not isinstance(unit, str) or not unit:
            return refused("billing's unit is not a name")
        if not isinstance(price, str) or not DECIMAL.fullmatch(price):
            return refused(f"billing's price {price!r} is not a decimal string")
        if not isinstance(currency, str) or not currency:
            return refused("billing's currency is not a name")
        return Billing(kind="priced", unit=unit, price=price, currency=currency, free_tier=free_tier)
    if free is False:
        return refused('billing is "free": false alone: it states no price, nor that none is set')
    return refused("billing is of none of the three forms: it states nothing")


# ---- describe (§5.1) ------------------------------------------------------------------------------


class Durations(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    unit: Literal["ns", "us", "ms", "s"]
    gates: dict[str, Unit] = Field(default_factory=dict)
    measure: Unit | None = None


class QubitCalibration(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    qubit: Annotated[StrictInt, Field(ge=0)]
    readout_error: Share | None = None
    error_1q: Share | None = None
    t1_us: Unit | None = None
    t2_us: Unit | None = None


class EdgeCalibration(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    qubits: tuple[Annotated[StrictInt, Field(ge=0)], Annotated[StrictInt, Field(ge=0)]]
    error: Share | None = None


class Calibration(BaseModel):
    """The calibration snapshot a device is under: its ``id``, and optionally its errors."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: StrictStr
    qubits: Annotated[list[QubitCalibration], Field(max_length=MAX_PLACES)] | None = None
    edges: Annotated[list[EdgeCalibration], Field(max_length=MAX_PAIRS)] | None = None


#: the most gate names a device may list
MAX_GATES = 256

Pair = tuple[Annotated[StrictInt, Field(ge=0)], Annotated[StrictInt, Field(ge=0)]]


class Description(BaseModel):
    """A ``describe`` answer (§5.1); fields a later text adds are ignored (§10)."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    protocol: Literal["wai.quantum.provider/1"]
    provider: StrictStr
    device_name: StrictStr = Field(alias="device")  # the answer's ``device``; ``device()`` is its shape
    provenance: Literal["silicon", "emulator", "simulator"]
    simulator: StrictStr | None = None  # with provenance simulator: a sentence naming it
    emulator: StrictStr | None = None  # with provenance emulator: the same
    #: bounded where the answer is read (a few bytes may claim 10^12 qubits, all coupled)
    #: (:data:`~qsolve.providers.device.MAX_PLACES`)
    qubits: Annotated[StrictInt, Field(ge=0, le=MAX_PLACES)]
    native_gates: list[StrictStr] = Field(max_length=MAX_GATES)
    connectivity: Literal["all"] | Annotated[list[Pair], Field(max_length=MAX_PAIRS)]
    resonators: Annotated[list[Annotated[StrictInt, Field(ge=0)]], Field(max_length=MAX_PLACES)] | None = None
    moves: Annotated[list[Pair], Field(max_length=MAX_PAIRS)] | None = None
    durations: Durations | None = None
    calibration: Calibration | None = None
    billing: Billing = Field(default_factory=lambda: Billing(kind="refused", reason="no billing was given"))
    max_shots: Annotated[StrictInt, Field(ge=1)] | None = None
    seeded: StrictBool | None = None
    approximate: StrictBool | None = None
    cancels: StrictBool | None = None

    _answer: dict[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_answer(cls, data: Any, handler: Any) -> Description:
        model = handler(data)
        if isinstance(data, dict):
            model._answer = dict(data)
        return model

    @field_validator("billing", mode="before")
    @classmethod
    def _billing(cls, value: Any) -> Billing:
        return value if isinstance(value, Billing) else read_billing(value)

    @field_serializer("billing")
    def _billing_wire(self, billing: Billing) -> Any:
        return billing.wire()

    @property
    def answer(self) -> dict[str, Any]:
        """The ``describe`` answer as the provider gave it, fields this text does not know included
        (what a receipt's ``provider.describe`` hashes, §8.1)."""
        return (
            dict(self._answer)
            if self._answer is not None
            else self.model_dump(mode="json", exclude_none=True)
        )

    @model_validator(mode="after")
    def _shape(self) -> Description:
        if self.moves and not self.resonators:
            raise ValueError("moves are given without resonators")
        self.device()  # its places, pairs, resonators and moves agree
        return self

    def device(self) -> Device:
        """The device's shape, as a compiler reads it."""
        return Device(
            qubits=self.qubits,
            native_gates=tuple(self.native_gates),
            connectivity=self.connectivity if self.connectivity == "all" else tuple(self.connectivity),
            resonators=tuple(self.resonators or ()),
            moves=tuple(self.moves or ()),
        )

    @property
    def provenance_label(self) -> str:
        """``silicon``, or ``simulator: <its sentence>`` as a receipt writes it (§8.1)."""
        sentence = self.simulator if self.provenance == "simulator" else self.emulator
        return (
            f"{self.provenance}: {sentence}" if sentence and self.provenance != "silicon" else self.provenance
        )

    def problems(self) -> list[str]:
        """What a conformance checker holds against the description, though a client reads it."""
        found = []
        if self.billing.kind == "refused":
            found.append(f"billing: {self.billing.reason}")
        if self.provenance != "silicon" and not (
            self.simulator if self.provenance == "simulator" else self.emulator
        ):
            found.append(
                f'provenance {self.provenance} without the sentence naming it in "{self.provenance}"'
            )
        if self.calibration is None:
            found.append("no calibration")
        if self.approximate is not None and self.provenance == "silicon":
            found.append("approximate is for a simulator or an emulator")
        return found


#: the most characters of a name in a description (``provider``, ``device``, a gate's name, the
#: calibration's ``id``, billing's ``unit`` and ``currency``, any key of an object)
MAX_NAME_CHARS = 256
#: the most characters of any other string in a description (``simulator``, ``emulator``: a sentence
#: naming it; a field a later text adds), as free text
MAX_TEXT_CHARS = 4096
#: the most a description may hold in all, counted as its JSON is written (its strings and keys with
#: their quotes, its numbers as written, a byte between two members): what is kept of it with each job.
#: A device at every bound above, its calibration whole, is about 6 MB
MAX_DESCRIPTION_CHARS = 8 * 2**20
#: the strings of a description held to :data:`MAX_NAME_CHARS`, by their path (``*``: any member)
_NAMES = (
    ("provider",),
    ("device",),
    ("native_gates", "*"),
    ("calibration", "id"),
    ("billing", "unit"),
    ("billing", "currency"),
    ("billing", "price"),
)


def _too_long(
    obj: Any,
    path: tuple[str | int, ...] = (),
    *,
    names: tuple[tuple[str, ...], ...] = _NAMES,
    total: int | None = MAX_DESCRIPTION_CHARS,
    outcomes: tuple[str, ...] | None = None,
) -> str | None:
    """Where an answer holds a string past its bound, and the bound, in words; else None. Every
    string is bounded (``names``, by their path, by :data:`MAX_NAME_CHARS`, the rest by
    :data:`MAX_TEXT_CHARS`), keys included (but the keys of the object at ``outcomes``, a result's
    counts, each held to the program's bits where the counts are read), at any depth, before anything
    of the answer is read or kept (a device name of 8 MiB was kept whole with each job), and the whole
    held to ``total`` characters (a description's :data:`MAX_DESCRIPTION_CHARS`)."""
    size = 0  # as its JSON is written, about
    frames: list[tuple[tuple[str | int, ...], Any]] = [(path, iter([(None, obj)]))]  # (where, members)
    while frames:
        at, members = frames[-1]
        step = next(members, _MISSING)
        if step is _MISSING:
            frames.pop()
            continue
        key, value = step
        here = at if key is None else (*at, key)
        size += 1
        if isinstance(key, str):
            if len(key) > MAX_NAME_CHARS and at != outcomes:
                where = format_loc(at) or "the answer"
                return f"{where}: a key of {len(key)} characters, past the bound of {MAX_NAME_CHARS}"
            size += len(key) + 3
        if isinstance(value, str):
            size += len(value) + 2
            named = any(
                len(here) == len(p) and all(q == "*" or q == a for q, a in zip(p, here, strict=True))
                for p in names
            )
            bound = MAX_NAME_CHARS if named else MAX_TEXT_CHARS
            if len(value) > bound:
                what, where = "name" if named else "string", format_loc(here) or "the answer"
                return f"{where}: a {what} of {len(value)} characters, past the bound of {bound}"
        elif isinstance(value, dict):
            frames.append((here, iter(value.items())))
        elif isinstance(value, list):
            frames.append((here, enumerate(value)))
        else:
            size += len(repr(value))
        if total is not None and size > total:
            return f"the answer is longer than {total} characters, the bound of a description"
    return None


def read_description(obj: Any) -> Description:
    """A ``describe`` answer read (§5.1); AnswerRefused naming the field and the bound for a string
    past its bound (:data:`MAX_NAME_CHARS`, :data:`MAX_TEXT_CHARS`), before anything of it is kept."""
    if (where := _too_long(obj)) is not None:
        raise AnswerRefused(f"the description does not read: {where}")
    try:
        return Description.model_validate(obj)
    except ValidationError as exc:
        raise AnswerRefused(_reason(exc, "the description does not read")) from None


#: the names of the other answers (:data:`MAX_NAME_CHARS`), by their path; every other string of them
#: (an estimate's ``note``, a status's or a cancel's ``reason``, an execution's ``note``, a field a later
#: text adds) is free text, held to :data:`MAX_TEXT_CHARS`, as a description's are (issue 35)
_ANSWER_NAMES: dict[str, tuple[tuple[str, ...], ...]] = {
    "estimate": (("amount",), ("currency",), ("unit",)),
    "submit": (("job",),),
    "status": (("status",),),
    "cancel": (("status",),),
    "result": (
        ("counts_source",),
        ("charged", "amount"),
        ("charged", "currency"),
        ("calibration",),
        ("calibration", "id"),
        ("execution", "*"),
    ),
}


def _held(obj: Any, what: str) -> None:
    """AnswerRefused naming the field and the bound where the ``what`` answer (``estimate`` …
    ``result``) holds a string past its bound (:func:`_too_long`), before anything of it is read or
    kept; a result's outcomes are held to the program's bits where its counts are read."""
    outcomes = ("counts",) if what == "result" else None
    found = _too_long(obj, names=_ANSWER_NAMES[what], total=None, outcomes=outcomes)
    if found is not None:
        raise AnswerRefused(f"the {what} answer does not read: {found}")


# ---- estimate (§5.2) ------------------------------------------------------------------------------

EstimateKind = Literal["free", "priced", "unpriced", "refused"]


class Estimate(BaseModel):
    """An ``estimate`` answer as a client reads it. ``unpriced`` and ``refused`` are costs unknown;
    a refused estimate shows no figure, whatever it held."""

    model_config = ConfigDict(frozen=True)

    kind: EstimateKind
    amount: str | None = None
    currency: str | None = None
    unit: str | None = None
    at_least: bool | None = None
    seconds: float | None = None
    note: str | None = None
    reason: str | None = None  # why it was refused, or why there is none

    @property
    def free(self) -> bool:
        return self.kind == "free"

    @property
    def cost_known(self) -> bool:
        return self.kind in ("free", "priced")

    def shown(self) -> dict[str, Any]:
        """The estimate as it is shown and sealed (§8.1 ``cost.estimate``): what the provider stated,
        with ``unknown``, a sentence, when the cost is not known; a refused one shows no figure."""
        extra = {k: v for k, v in (("seconds", self.seconds), ("note", self.note)) if v is not None}
        if self.kind == "free":
            return {"free": True, **extra}
        if self.kind == "priced":
            priced = {"free": False, "amount": self.amount, "currency": self.currency}
            priced.update(
                {k: v for k, v in (("unit", self.unit), ("at_least", self.at_least)) if v is not None}
            )
            return {**priced, **extra}
        if self.kind == "unpriced":
            return {
                "free": False,
                "priced": False,
                "unknown": "the provider sets no price for this job",
                **extra,
            }
        return {"free": False, "unknown": self.reason or "no estimate was given"}

    def text(self) -> str:
        if self.kind == "free":
            return "free"
        if self.kind == "priced":
            unit = f" ({self.unit})" if self.unit else ""
            return f"{'at least ' if self.at_least else ''}{self.amount} {self.currency}{unit}"
        if self.kind == "unpriced":
            return "unknown: the provider sets no price for this job"
        return f"unknown: {self.reason}"


def unknown_estimate(reason: str) -> Estimate:
    """The estimate of a job whose provider gave none: a cost unknown (§7)."""
    return Estimate(kind="refused", reason=reason)


def read_estimate(obj: Any) -> Estimate:
    """§5.2's three forms: free (``"free": true``), priced (``"free": false``, a decimal string
    ``amount`` and a ``currency``), unpriced (``{"free": false, "priced": false}`` with no ``amount``,
    ``currency``, ``unit`` or ``at_least``). Anything else is ``refused``: a cost unknown, no figure."""

    def refused(reason: str) -> Estimate:
        return Estimate(kind="refused", reason=f"the estimate is of none of the three forms: {reason}")

    _held(obj, "estimate")
    if not isinstance(obj, dict):
        return refused("it is not an object")
    seconds, note = obj.get("seconds"), obj.get("note")
    if seconds is not None and (not _is_number(seconds) or seconds < 0 or seconds == float("inf")):
        return refused("seconds is not a number of at least 0")
    if note is not None and not isinstance(note, str):
        return refused("note is not a sentence")
    extra = {"seconds": float(seconds) if seconds is not None else None, "note": note}
    free = obj.get("free", _MISSING)
    if free is not _MISSING and not isinstance(free, bool):
        return refused("free is not true or false")
    if "priced" in obj:
        priced = obj["priced"]
        if not isinstance(priced, bool):
            return refused("priced is not false")
        if priced:
            return refused("priced is true: it is in the unpriced form only, and false there")
        if free is True:
            return refused('priced beside "free": true')
        beside = [k for k in ("amount", "currency", "unit", "at_least") if k in obj]
        if beside:
            return refused(f"priced beside {', '.join(beside)}")
        if free is not False:
            return refused('priced false without "free": false')
        return Estimate(kind="unpriced", **extra)
    if free is True:  # as billing's free form: a figure beside it makes it of no one form (the person
        # would be shown "free" and never the amount it states)
        beside = [k for k in ("amount", "currency", "unit", "at_least") if k in obj]
        if beside:
            return refused(f'"free": true beside {", ".join(beside)}: of no one form')
    if "amount" in obj:
        amount = obj["amount"]
        if not isinstance(amount, str):
            return refused("the amount is not a decimal string")
        if not DECIMAL.fullmatch(amount):
            return refused("the amount is not a decimal (digits, optionally a point and digits)")
        currency = obj.get("currency")
        if currency is None:
            return refused("an amount with no currency")
        if not isinstance(currency, str) or not currency:
            return refused("the currency is not a name")
        unit, at_least = obj.get("unit"), obj.get("at_least")
        if unit is not None and (not isinstance(unit, str) or not unit):
            return refused("the unit is not a name")
        if at_least is not None and not isinstance(at_least, bool):
            return refused("at_least is not true or false")
        if free is _MISSING:
            return refused("an amount without free")
        return Estimate(
            kind="priced", amount=amount, currency=currency, unit=unit, at_least=at_least, **extra
        )
    if free is True:
        return Estimate(kind="free", **extra)
    if free is False:
        return refused('"free": false alone: no amount and currency, nor "priced": false')
    return refused("it has no free")


# ---- submit, status, cancel (§5.3, §5.4, §5.6) ------------------------------------------------------


class SubmitAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    job: NonEmpty


def read_submit(obj: Any) -> str:
    """The id of the job a ``submit`` took."""
    _held(obj, "submit")
    try:
        return SubmitAnswer.model_validate(obj).job
    except ValidationError as exc:
        raise AnswerRefused(_reason(exc, "the submit answer does not read")) from None


class Status(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    status: Literal["queued", "running", "done", "failed", "cancelled"]
    reason: StrictStr | None = None

    @property
    def ended(self) -> bool:
        return self.status in ("done", "failed", "cancelled")


def read_status(obj: Any) -> Status:
    _held(obj, "status")
    try:
        return Status.model_validate(obj)
    except ValidationError as exc:
        raise AnswerRefused(_reason(exc, "the status answer does not read")) from None


class CancelAnswer(BaseModel):
    """``cancelled``; or, for a job that had already ended, ``done``, or ``failed`` with its reason."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: Literal["cancelled", "done", "failed"]
    reason: StrictStr | None = None


def read_cancel(obj: Any) -> CancelAnswer:
    _held(obj, "cancel")
    try:
        return CancelAnswer.model_validate(obj)
    except ValidationError as exc:
        raise AnswerRefused(_reason(exc, "the cancel answer does not read")) from None


# ---- result (§5.5, §6, §8.3) ----------------------------------------------------------------------

Step = Literal["off", "on", "none", "unknown"]


class Execution(BaseModel):
    """How the device ran the program, as the provider states it (§5.5, §8.3): nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mitigation: Step
    twirling: Step
    decoupling: Step
    remapping: Step
    optimisation: Step
    verbatim: StrictBool
    note: StrictStr | None = None

    @model_validator(mode="after")
    def _verbatim(self) -> Execution:
        if self.verbatim:
            for step in ("remapping", "optimisation"):
                if getattr(self, step) not in ("off", "none"):
                    raise ValueError(f"a program run verbatim is not {step} {getattr(self, step)}")
        return self


class Charged(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    amount: StrictStr
    currency: NonEmpty

    @field_validator("amount")
    @classmethod
    def _decimal(cls, value: str) -> str:
        if not DECIMAL.fullmatch(value):
            raise ValueError(f"the amount {value!r} is not a decimal string")
        return value


class Energy(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    kwh: Unit


CountsSource = Literal["shots", "vendor_counts", "probabilities"]


class ResultAnswer(BaseModel):
    """A ``result`` answer a client keeps: counts of the shots the device kept, and where from."""

    model_config = ConfigDict(frozen=True)

    counts: dict[str, int]
    shots: int
    accepted_shots: int | None = None
    counts_source: CountsSource = "vendor_counts"
    execution: Execution | None = None
    charged: Charged | None = None
    energy: Energy | None = None
    calibration: Calibration | None = None

    @property
    def kept_shots(self) -> int:
        """The shots the counts are of: ``accepted_shots`` when given, else every shot asked."""
        return self.accepted_shots if self.accepted_shots is not None else self.shots

    @property
    def bits(self) -> int:
        return len(next(iter(self.counts)))


def read_result(obj: Any, shots: int, *, bits: int | None = None) -> ResultAnswer:
    """A ``result`` answer to a job that asked ``shots`` (and measures ``bits``, when given).

    Its counts are outcomes of ``0`` and ``1`` (§6), all of one length, to whole numbers of at least 0,
    summing to ``accepted_shots`` when it is given (a whole number of at least 1), else to ``shots``;
    an outcome counted 0 is not kept, and no more outcomes than ``shots`` are. Its strings are bounded
    as a description's are (:func:`_held`).
    ``counts_source`` is one of §8.3's (absent: ``vendor_counts``), ``execution`` of §5.5's form.
    """
    if not isinstance(obj, dict):
        raise AnswerRefused("the result is not an object")
    _held(obj, "result")
    if isinstance(shots, bool) or not isinstance(shots, int) or shots < 1:
        raise ValueError(f"shots asked must be a whole number of at least 1, not {shots!r}")
    counts = obj.get("counts")
    if not isinstance(counts, dict) or not counts:
        raise AnswerRefused("the result's counts are not an object of outcomes")
    read: dict[str, int] = {}
    width = bits
    for outcome, count in counts.items():
        if not isinstance(outcome, str) or not OUTCOME.fullmatch(outcome):
            raise AnswerRefused(f"the outcome {outcome!r} is not a string of 0 and 1")
        if width is None:
            width = len(outcome)
        if len(outcome) != width:
            raise AnswerRefused(
                f"the outcome {outcome!r} has {len(outcome)} characters: an outcome is exactly the "
                f"program's {width} bits (§6)"
                if bits is not None
                else f"the outcome {outcome!r} has {len(outcome)} bits, not {width} as the others have"
            )
        n = _whole(count)
        if n is None or n < 0 or n > MAX_WHOLE:
            raise AnswerRefused(f"the count of {outcome!r} is not a whole number of at least 0: {count!r}")
        if n:  # an outcome counted 0 is dropped as it is read (§8.1): only outcomes that occurred are held
            read[outcome] = n
    given_shots = obj.get("shots", _MISSING)
    if given_shots is not _MISSING and _whole(given_shots) != shots:
        raise AnswerRefused(f"the result says {given_shots!r} shots, and the job asked {shots}")
    accepted: int | None = None
    if "accepted_shots" in obj and obj["accepted_shots"] is not None:
        accepted = _whole(obj["accepted_shots"])
        if accepted is None or accepted < 1:
            raise AnswerRefused(
                f"accepted_shots {obj['accepted_shots']!r} is not a whole number of at least 1"
            )
    if len(read) > shots:  # a device that ran more than asked (accepted_shots) is read, but what a client
        # holds of one job is what it asked (issue 35: a batch's counts are bounded before it is sent)
        raise AnswerRefused(
            f"the counts list {len(read)} outcomes that occurred, more than the {shots} shots asked"
        )
    total = sum(read.values())
    target = accepted if accepted is not None else shots
    if total != target:
        raise AnswerRefused(
            f"the counts sum to {total}, not to the {target} "
            + ("shots the device kept (accepted_shots)" if accepted is not None else "shots asked")
        )
    source = obj.get("counts_source", "vendor_counts")
    if source not in ("shots", "vendor_counts", "probabilities"):
        raise AnswerRefused(f"counts_source {source!r} is not shots, vendor_counts or probabilities")
    fields: dict[str, Any] = {}
    optional = (
        ("execution", Execution),
        ("charged", Charged),
        ("energy", Energy),
        ("calibration", Calibration),
    )
    for name, model in optional:
        if name not in obj or (obj[name] is None and name != "execution"):
            continue
        given = obj[name]
        if name == "calibration" and isinstance(given, str):  # a snapshot named by its id alone
            given = {"id": given}
        try:
            fields[name] = model.model_validate(given)
        except ValidationError as exc:
            raise AnswerRefused(_reason(exc, f"the result's {name} is not of its form")) from None
    return ResultAnswer(counts=read, shots=shots, accepted_shots=accepted, counts_source=source, **fields)
