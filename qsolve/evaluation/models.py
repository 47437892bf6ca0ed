"""The models an evaluation may be judged by: ``evaluation.yaml``, and the choice of one (issue 14, item 4).

A declared model is an OpenAI-compatible endpoint::

    models:
      - id: Ising-Calibration-1-8B          # what runs and records call it
        base_url: http://127.0.0.1:8000/v1  # the endpoint
        model: nvidia/Ising-Calibration-1-8B  # the endpoint's own name for it (default: the id)
        api_key_env: ISING_API_KEY           # the NAME of the variable holding its key; none: keyless
        temperature: 0.0                     # greedy; nothing else is accepted
        num_ctx: 16384                       # its context window, in tokens
        images: true                         # whether it takes images

The classical judge (:data:`CLASSICAL_JUDGE`, ``classical-judge``) is built in and always available; it
reads the task result's data and fit, not the figure (:mod:`.classical_judge`).

Where the file is (:func:`config_path`): ``QSOLVE_EVALUATION_CONFIG`` when set (the file must exist);
else ``QSOLVE_HOME/evaluation.yaml`` when it exists; else the checkout's ``config/evaluation.yaml``;
else the copy shipped in the package (``qsolve/evaluation/evaluation.yaml``, the same file).

The choice (:func:`choose_model`), in the seed's order: an explicit id; else ``QCALEVAL_MODEL``; else
the first declared id containing "Ising-Calibration" (case ignored); else a fallback, recorded as
``fallback: true``: the first declared model that takes images, else the classical judge. Only declared
ids (and the classical judge's) are accepted. A key is never read here, only the variable's name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from qsolve.home import DEFAULT_HOME, HOME_VARIABLE, qsolve_home

CONFIG_VARIABLE = "QSOLVE_EVALUATION_CONFIG"
MODEL_VARIABLE = "QCALEVAL_MODEL"
CONFIG_NAME = "evaluation.yaml"
#: the built-in evaluator's id: a classical judge of the data and fit, not a vision model
CLASSICAL_JUDGE = "classical-judge"
#: the id a calibration model is recognised by (case-insensitive substring)
CALIBRATION_MODEL_MARK = "ising-calibration"

_PACKAGED = Path(__file__).with_name(CONFIG_NAME)
_CHECKOUT = Path(__file__).resolve().parents[2] / "config" / CONFIG_NAME
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

ModelId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")]
Kind = Literal["openai", "classical"]
ChosenBy = Literal["explicit", "environment", "calibration-model", "fallback"]


class ConfigError(ValueError):
    """An evaluation.yaml that cannot be read; the message names the file and the place (``models[1].x``)."""


class UnknownModel(ValueError):
    """An id no model of the configuration declares; the message lists the declared ones."""

    def __init__(self, model_id: str, declared: list[str], *, source: str = "") -> None:
        self.model_id = model_id
        self.declared = declared
        where = f" ({source})" if source else ""
        super().__init__(
            f"unknown evaluation model {model_id!r}{where}: the declared models are {', '.join(declared)}"
        )


class ModelUnavailable(RuntimeError):
    """A declared model that cannot judge now: its key's variable unset, or it takes no images."""


class ModelSpec(BaseModel):
    """One model an evaluation may be judged by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ModelId
    kind: Kind = "openai"
    base_url: str | None = None
    #: the endpoint's own name for the model; the id when not given
    model: str | None = None
    #: the NAME of the environment variable holding the key; None for a keyless server
    api_key_env: str | None = None
    temperature: float = 0.0
    #: the context window, in tokens (None for the classical judge, which has none)
    num_ctx: Annotated[int, Field(ge=1)] | None = None
    images: bool = False
    #: seconds one call may take before it counts as failed
    timeout_seconds: Annotated[float, Field(gt=0)] = 300.0
    #: the most output tokens a call may take; None: the endpoint's default
    max_tokens: Annotated[int, Field(ge=1)] | None = None

    @field_validator("api_key_env")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), never a key")
        return value

    @field_validator("base_url")
    @classmethod
    def _an_endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL")
        if parts.username or parts.password:
            raise ValueError("must hold no credentials; name the key's variable in api_key_env")
        return value

    @field_validator("temperature")
    @classmethod
    def _greedy(cls, value: float) -> float:
        if value != 0.0:
            raise ValueError("evaluations decode greedily: temperature must be 0.0")
        return value

    @property
    def endpoint_model(self) -> str:
        return self.model or self.id

    @property
    def is_classical(self) -> bool:
        return self.kind == "classical"

    def public(self) -> dict[str, Any]:
        """What a record or a listing says of the model: everything but how to reach its key."""
        return self.model_dump(exclude={"api_key_env", "timeout_seconds", "max_tokens"})


#: the built-in classical judge
CLASSICAL = ModelSpec(id=CLASSICAL_JUDGE, kind="classical", images=False)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    models: list[dict[str, Any]] = Field(default_factory=list)


class EvaluationConfig(BaseModel):
    """The declared models, in their order, and where they were read from."""

    model_config = ConfigDict(frozen=True)

    models: list[ModelSpec] = Field(default_factory=list)
    source: str = ""

    def declared(self) -> list[str]:
        """Every id a run may name: the declared ones, then the classical judge."""
        return [m.id for m in self.models] + [CLASSICAL_JUDGE]

    def get(self, model_id: str, *, source: str = "") -> ModelSpec:
        if model_id == CLASSICAL_JUDGE:
            return CLASSICAL
        for spec in self.models:
            if spec.id == model_id:
                return spec
        raise UnknownModel(model_id, self.declared(), source=source)


class ModelChoice(BaseModel):
    """The model that judges, how it was chosen, and whether it is a fallback."""

    model_config = ConfigDict(frozen=True)

    model: ModelSpec
    chosen_by: ChosenBy
    fallback: bool = False

    @property
    def id(self) -> str:
        return self.model.id


# --- reading --------------------------------------------------------------------------------------


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _issues(error: ValidationError, prefix: tuple[Any, ...]) -> list[str]:
    """pydantic's issues as ``loc: message``, never with the input (which might be a pasted key)."""
    out = []
    for issue in error.errors(include_input=False, include_url=False):
        loc = prefix + tuple(issue["loc"])
        if issue["type"] == "extra_forbidden" and loc and str(loc[-1]).lower() in ("api_key", "key", "token"):
            message = "a key is never written here; put it in an environment variable named by api_key_env"
        elif issue["type"] == "extra_forbidden":
            message = "unknown key"
        else:
            message = issue["msg"].removeprefix("Value error, ")
        out.append(f"{_where(loc)}: {message}")
    return out


def parse_config(data: Any, *, source: str = "<config>") -> EvaluationConfig:
    """The configuration of already-loaded YAML (``None`` is an empty file: no models)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: not a mapping with 'models'")
    try:
        raw = _File.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: " + "; ".join(_issues(e, ()))) from None
    problems: list[str] = []
    models: list[ModelSpec] = []
    for i, entry in enumerate(raw.models):
        if not isinstance(entry, dict):
            problems.append(f"models[{i}]: not a mapping")
            continue
        if entry.get("kind", "openai") != "openai":
            problems.append(f"models[{i}].kind: only openai-compatible endpoints are declared here")
            continue
        try:
            spec = ModelSpec.model_validate(entry)
        except ValidationError as e:
            problems.extend(_issues(e, ("models", i)))
            continue
        for name in ("base_url", "num_ctx"):
            if getattr(spec, name) is None:
                problems.append(f"models[{i}].{name}: required")
        if spec.id == CLASSICAL_JUDGE:
            problems.append(f"models[{i}].id: {CLASSICAL_JUDGE} is the built-in classical judge's id")
        elif any(m.id == spec.id for m in models):
            problems.append(f"models[{i}].id: {spec.id} is declared twice")
        models.append(spec)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))
    return EvaluationConfig(models=models, source=source)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the configuration is read from (see the module's docstring)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_VARIABLE)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"{CONFIG_VARIABLE}={explicit}: no such file")
        return path
    at_home = qsolve_home(env.get(HOME_VARIABLE) or DEFAULT_HOME) / CONFIG_NAME
    if at_home.is_file():
        return at_home
    if _CHECKOUT.is_file():
        return _CHECKOUT
    return _PACKAGED


def load_config(
    path: Path | str | None = None, *, environ: Mapping[str, str] | None = None
) -> EvaluationConfig:
    """The configuration of ``path``, else of :func:`config_path`."""
    where = Path(path) if path is not None else config_path(environ)
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{where}: cannot be read ({type(e).__name__})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{where}: not YAML{at}") from None
    return parse_config(data, source=str(where))


# --- the choice -------------------------------------------------------------------------------------


def choose_model(
    explicit: str | None = None,
    *,
    config: EvaluationConfig | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelChoice:
    """The model that judges: ``explicit``, else ``QCALEVAL_MODEL``, else the first declared id with
    "Ising-Calibration" in it, else the fallback (the first declared model that takes images, else the
    classical judge) with ``fallback=True``. An id that is not declared raises :class:`UnknownModel`;
    a chosen model (other than the classical judge) that takes no images raises :class:`ModelUnavailable`."""
    env = os.environ if environ is None else environ
    cfg = config if config is not None else load_config(environ=environ)
    for chosen_by, wanted, source in (
        ("explicit", explicit, ""),
        ("environment", env.get(MODEL_VARIABLE) or None, MODEL_VARIABLE),
    ):
        if wanted:
            spec = cfg.get(wanted.strip(), source=source)
            if not spec.is_classical and not spec.images:
                raise ModelUnavailable(f"{spec.id} takes no images, and an evaluation judges a figure")
            return ModelChoice(model=spec, chosen_by=chosen_by)
    for spec in cfg.models:
        if CALIBRATION_MODEL_MARK in spec.id.lower():
            if not spec.images:
                raise ModelUnavailable(f"{spec.id} takes no images, and an evaluation judges a figure")
            return ModelChoice(model=spec, chosen_by="calibration-model")
    for spec in cfg.models:
        if spec.images:
            return ModelChoice(model=spec, chosen_by="fallback", fallback=True)
    return ModelChoice(model=CLASSICAL, chosen_by="fallback", fallback=True)


def api_key(spec: ModelSpec, environ: Mapping[str, str] | None = None) -> str:
    """The key the model's variable holds, or a placeholder for a keyless server (``api_key_env``
    not declared). Kept in memory for the client only: never logged, stored or put in an error."""
    if spec.api_key_env is None:
        return "no-key"
    env = os.environ if environ is None else environ
    value = env.get(spec.api_key_env)
    if not value:
        raise ModelUnavailable(f"{spec.id}: the environment variable {spec.api_key_env} (its key) is not set")
    return value
