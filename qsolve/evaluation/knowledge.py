"""A task's knowledge (``task-knowledge/<Task>/task.md``) and the reference derived from it.

The reference is what an evaluation's prompts carry of a task's knowledge: the background, the status
criteria (SUCCESS first) and the extraction schema. It is derived on every read by
:func:`derive_reference`, exactly as docs/calibration.md ("The reference") states the rules; the
frontmatter and the ``## Recovery`` section never reach it.

    reference = derive_reference(Path("task-knowledge/CheckT1"))
    reference.criteria        # {"SUCCESS": "...", "SHORT_T1": "...", ...}
    reference.public()        # what ``qsolve knowledge reference DIR --json`` prints

No Prefect, no storage: this module reads Markdown and YAML and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

#: an old-format entry's rendered text is cut here (characters)
OLD_FORMAT_LIMIT = 6000
#: the file of a task directory that holds its knowledge
TASK_FILE = "task.md"

ParameterType = Literal["int", "true | false", "float"]


class KnowledgeError(ValueError):
    """A task directory that cannot be read as task knowledge (no task.md, not UTF-8, ...)."""


class ParameterSpec(BaseModel):
    """One entry of the extraction schema: ``name: description`` under ``## Parameters to extract``."""

    model_config = ConfigDict(frozen=True)

    type: ParameterType
    description: str


class Reference(BaseModel):
    """The reference derived from a task's ``task.md`` (docs/calibration.md, "The reference")."""

    model_config = ConfigDict(frozen=True)

    task: str
    background: str
    #: status code -> criterion, in order, SUCCESS first; empty for an old-format entry or no knowledge
    criteria: dict[str, str] = Field(default_factory=dict)
    parameters: dict[str, ParameterSpec] = Field(default_factory=dict)
    knowledge_chars: int
    knowledge_sha256: str
    #: True when the background is the entry's rendered text (no derivable background)
    old_format: bool = False
    #: the suggested-range format the knowledge states; never derived from task.md, so None there
    range_format: str | None = None
    warnings: list[str] = Field(default_factory=list)

    def public(self) -> dict[str, Any]:
        """The JSON ``qsolve knowledge reference DIR --json`` prints: exactly five keys, criteria in order."""
        return {
            "background": self.background,
            "criteria": dict(self.criteria),
            "parameters": {name: spec.model_dump() for name, spec in self.parameters.items()},
            "knowledge_chars": self.knowledge_chars,
            "knowledge_sha256": self.knowledge_sha256,
        }


class TaskKnowledge(BaseModel):
    """One task directory, read: its task.md, its frontmatter and the derived reference."""

    task: str
    directory: Path
    text: str
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    reference: Reference


# --- the hash ---------------------------------------------------------------------------------------


def reference_bytes(background: str, criteria: dict[str, str]) -> bytes:
    """The exact bytes ``knowledge_sha256`` is computed over (docs/calibration.md).

    The UTF-8 encoding of the compact JSON object ``{"background": ..., "criteria": {CODE: criterion,
    ...}}``, keys in that order and the criteria in their order, SUCCESS first; no spaces after ``,``
    and ``:``; non-ASCII characters written as themselves. It is what JavaScript's
    ``JSON.stringify({background, criteria})`` gives, encoded as UTF-8.
    """
    text = json.dumps(
        {"background": background, "criteria": criteria}, ensure_ascii=False, separators=(",", ":")
    )
    return text.encode("utf-8")


def knowledge_sha256(background: str, criteria: dict[str, str]) -> str:
    return hashlib.sha256(reference_bytes(background, criteria)).hexdigest()


def knowledge_chars(background: str, criteria: dict[str, str]) -> int:
    """The reference's size in characters: the background, and every code and its criterion."""
    return len(background) + sum(len(code) + len(text) for code, text in criteria.items())


# --- Markdown, as far as task.md needs it ----------------------------------------------------------

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_IMAGE_LINE = re.compile(r"^\s*!\[[^\]]*\]\([^)]*\)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_COMMENT_LINE = re.compile(r"^\s*<!--.*-->\s*$")


#: how deep a frontmatter's collections may nest (PyYAML composes them recursively)
MAX_FRONTMATTER_DEPTH = 20


class _Unfit(yaml.YAMLError):
    """A frontmatter unfit to compose; its ``problem`` is what the warning says."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class _FrontmatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing as it composes (one parse) an alias, whose expansion has no bound
    once its values are read as text, and collections nested past :data:`MAX_FRONTMATTER_DEPTH` (PyYAML
    composes them recursively)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise _Unfit("a YAML alias (*name); knowledge files use none")
        if not self.check_event(yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_FRONTMATTER_DEPTH:
            raise _Unfit(f"collections nested more than {MAX_FRONTMATTER_DEPTH} deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, list[str]]:
    """(frontmatter, body, warnings): YAML between a first line ``---`` and the next ``---`` or ``...``."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text, []
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            raw, body = "".join(lines[1:i]), "".join(lines[i + 1 :])
            try:
                data = yaml.load(raw, Loader=_FrontmatterLoader) if raw.strip() else {}  # a SafeLoader
            except _Unfit as e:
                return {}, body, [f"frontmatter: {e.problem}; ignored"]
            except yaml.YAMLError as e:
                return {}, body, [f"frontmatter: not YAML ({type(e).__name__}); ignored"]
            if not isinstance(data, dict):
                return {}, body, ["frontmatter: not a mapping; ignored"]
            return data, body, []
    return {}, text, ["frontmatter: no closing '---'; read as text"]


@dataclass
class Section:
    """A part of a Markdown body: the text before the first ``##`` heading (title None), or one H2."""

    title: str | None
    lines: list[str] = field(default_factory=list)


def sections(body: str) -> list[Section]:
    """The body cut at its level-2 headings; a ``##`` line inside a code fence is not a heading."""
    out = [Section(None)]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            m = _HEADING.match(line)
            if m and len(m.group(1)) == 2:
                out.append(Section(m.group(2).strip()))
                continue
        out[-1].lines.append(line)
    return out


def find_section(parts: list[Section], title: str) -> Section | None:
    """The first section titled ``title`` (case and surrounding space ignored)."""
    want = title.strip().casefold()
    return next((s for s in parts if s.title is not None and s.title.strip().casefold() == want), None)


def _skipped(line: str) -> bool:
    """Lines that are no block at all: images alone on their line, HTML comments, thematic breaks."""
    return bool(_IMAGE_LINE.match(line) or _COMMENT_LINE.match(line) or _RULE.match(line))


def _starts_block(line: str) -> bool:
    """A line that starts a non-prose block (and so ends a paragraph)."""
    s = line.lstrip()
    return bool(_FENCE.match(line) or _HEADING.match(line) or _BULLET.match(line) or s.startswith(("|", ">")))


def first_paragraph(lines: list[str], *, skip_title: bool = False) -> str | None:
    """The section's first block when it is a prose paragraph, its lines joined by single spaces.

    Blank lines, images alone on a line, HTML comments and thematic breaks are passed over; with
    ``skip_title``, so is a level-1 heading (the intro's title). When the first block is anything else
    (a list, a table, a quote, a code fence, a heading), the section has no first paragraph: a section
    that opens with a bullet list contributes nothing.
    """
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or _skipped(line):
            i += 1
            continue
        m = _HEADING.match(line)
        if skip_title and m and len(m.group(1)) == 1:
            i += 1
            continue
        break
    else:
        return None
    if _starts_block(lines[i]):
        return None
    words: list[str] = []
    while i < len(lines) and lines[i].strip() and not _starts_block(lines[i]) and not _skipped(lines[i]):
        words.extend(lines[i].split())
        i += 1
    return " ".join(words) or None


def bullets(lines: list[str]) -> list[str]:
    """The top-level bullets of a section, each with its continuation lines joined by single spaces.

    A bullet is a line ``- ``, ``* ``, ``+ `` or ``1. ``/``1) `` indented by at most one space; the
    non-blank lines after it join it until a blank line or the next bullet. Nested bullets (indented
    by two spaces or more) and their lines are left out, and so is everything inside code fences.
    """
    items: list[list[str]] = []
    open_item = False
    nested = False
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            open_item = False
            continue
        if fenced:
            continue
        if not line.strip():
            open_item = False
            nested = False
            continue
        m = _BULLET.match(line)
        if m and len(m.group(1).expandtabs(4)) <= 1:
            items.append([m.group(2)])
            open_item, nested = True, False
        elif m:
            nested = True
        elif open_item and not nested and not _HEADING.match(line):
            items[-1].append(line.strip())
    return [" ".join(" ".join(parts).split()) for parts in items]


# --- sentences ------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?][\"')\]*_]*\s+")


def sentences(paragraph: str) -> list[str]:
    """The paragraph cut after ``.``, ``!`` or ``?`` (closing quotes or brackets kept with it) where
    whitespace follows and the next word starts with a capital letter (opening quotes, brackets and
    emphasis marks passed over); so "e.g. the" and "0.5 μs" stay inside their sentence."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(paragraph):
        rest = paragraph[m.end() :].lstrip("\"'(*_[")
        if rest[:1].isupper():
            out.append(paragraph[start : m.end()].strip())
            start = m.end()
    tail = paragraph[start:].strip()
    if tail:
        out.append(tail)
    return out


_GOOD = re.compile(r"^[*_\"']*a good result\b[*_]*\s*", re.IGNORECASE)


def success_criterion(expected: str) -> str:
    """The sentence beginning "A good result" with that prefix dropped, else the first sentence."""
    parts = sentences(expected)
    for sentence in parts:
        m = _GOOD.match(sentence)
        if m:
            rest = sentence[m.end() :].lstrip(" :,;—–-").strip()
            if rest:
                return rest
    return parts[0] if parts else expected


# --- failures and parameters -----------------------------------------------------------------------

_SEPARATORS = ("—", "–", ":")


def _split_at_separator(text: str) -> tuple[str, str] | None:
    """Title and rest at the first —, – or : outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in _SEPARATORS:
            return text[:i], text[i + 1 :]
    return None


def status_code(title: str) -> str:
    """Parentheses and what they hold dropped, the rest upper snake case: "Short T1 (<20 μs)" → SHORT_T1.

    Accents are taken off (NFKD); any run of characters other than ASCII letters and digits becomes
    one underscore; leading and trailing underscores go.
    """
    previous = None
    while previous != title:
        previous, title = title, re.sub(r"\([^()]*\)", " ", title)
    title = title.replace("(", " ").replace(")", " ")
    ascii_text = "".join(c for c in unicodedata.normalize("NFKD", title) if not unicodedata.combining(c))
    return re.sub(r"[^A-Za-z0-9]+", "_", ascii_text).strip("_").upper()


def _clean(text: str) -> str:
    return " ".join(text.split()).strip().strip("*").strip()


def failure(bullet: str) -> tuple[str, str]:
    """(code, criterion) of one ``## Common failures`` bullet; the code may be empty."""
    split = _split_at_separator(bullet)
    if split is None:
        title = " ".join(bullet.split()[:4])
        return status_code(title), _clean(bullet)
    title, rest = split
    return status_code(title), _clean(rest.split(";", 1)[0])


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BOOLEAN_WORDS = re.compile(
    r"\b(?:true\s*(?:or|/|\|)\s*false|false\s*(?:or|/|\|)\s*true|booleans?|bool)\b", re.IGNORECASE
)
_INT_WORDS = re.compile(r"\b(?:integers?|ints?)\b", re.IGNORECASE)


def parameter_type(description: str) -> ParameterType:
    """``true | false`` when the description says true or false (or true/false, boolean, bool);
    ``int`` when it says integer or int; else ``float``. Backticks are ignored; boolean is tested first."""
    text = description.replace("`", "")
    if _BOOLEAN_WORDS.search(text):
        return "true | false"
    if _INT_WORDS.search(text):
        return "int"
    return "float"


def parameter(bullet: str) -> tuple[str, ParameterSpec] | str:
    """(name, spec) of one ``## Parameters to extract`` bullet, or the reason it is skipped."""
    if ":" not in bullet:
        return f"no 'name: description' in {bullet!r}"
    raw_name, description = bullet.split(":", 1)
    name = raw_name.strip().strip("*`").strip()  # **name** and `name` are read as name
    if not _IDENTIFIER.match(name):
        return f"{name!r} is not an identifier"
    description = _clean(description)
    return name, ParameterSpec(type=parameter_type(description), description=description)


# --- the derivation --------------------------------------------------------------------------------


def _join_background(task: str, intro: str | None, expected: str | None) -> str:
    """``This is a <task> experiment: <intro>. <expected plot>``: a period is added after the intro
    only when it does not already end with ``.``, ``!`` or ``?``; nothing is added after the expected
    plot's paragraph."""
    text = f"This is a {task} experiment: "
    parts = [p for p in (intro, expected) if p]
    for i, part in enumerate(parts):
        if i:
            text += " " if parts[i - 1].rstrip("\"')*_").endswith((".", "!", "?")) else ". "
        text += part
    return text


def _render_old_format(parts: list[Section]) -> str:
    """An old-format entry's rendered text: the body without ``## Recovery``, cut at 6000 characters."""
    lines: list[str] = []
    for section in parts:
        if section.title is not None and section.title.strip().casefold() == "recovery":
            continue
        if section.title is not None:
            lines.append(f"## {section.title}")
        lines.extend(section.lines)
    return "\n".join(lines).strip()[:OLD_FORMAT_LIMIT]


def _task_name(explicit: str | None, directory: Path | None, frontmatter: dict[str, Any], body: str) -> str:
    if explicit:
        return explicit
    if directory is not None:
        return directory.name
    for key in ("name", "task"):
        value = frontmatter.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    for line in body.splitlines():
        m = _HEADING.match(line)
        if m and len(m.group(1)) == 1:
            return m.group(2).strip()
    return "calibration"


def derive(text: str, *, task: str) -> Reference:
    """The reference of a task.md's text, for a task of that name."""
    _frontmatter, body, warnings = split_frontmatter(text)
    parts = sections(body)
    intro = first_paragraph(parts[0].lines, skip_title=True)
    expected_section = find_section(parts, "Expected plot")
    expected = first_paragraph(expected_section.lines) if expected_section else None

    parameters: dict[str, ParameterSpec] = {}
    params_section = find_section(parts, "Parameters to extract")
    for bullet in bullets(params_section.lines) if params_section else []:
        got = parameter(bullet)
        if isinstance(got, str):
            warnings.append(f"Parameters to extract: skipped, {got}")
        elif got[0] in parameters:
            warnings.append(f"Parameters to extract: {got[0]} seen twice; the first kept")
        else:
            parameters[got[0]] = got[1]

    criteria: dict[str, str] = {}
    old_format = False
    if intro is None and expected is None:
        background = _render_old_format(parts)
        old_format = bool(background)
        if old_format:
            warnings.append("no derivable background: the entry's rendered text is the background")
    else:
        background = _join_background(task, intro, expected)
        criteria["SUCCESS"] = (
            success_criterion(expected)
            if expected
            else "The figure shows what this experiment is meant to show, and none of the failures below."
        )
        failures = find_section(parts, "Common failures")
        for bullet in bullets(failures.lines) if failures else []:
            code, criterion = failure(bullet)
            if not code:
                warnings.append(f"Common failures: skipped {bullet!r}, its title gives no code")
            elif not criterion:
                warnings.append(f"Common failures: skipped {code}, its criterion is empty")
            elif code in criteria:
                warnings.append(f"Common failures: {code} seen twice; the first criterion kept")
            else:
                criteria[code] = criterion
    return Reference(
        task=task,
        background=background,
        criteria=criteria,
        parameters=parameters,
        knowledge_chars=knowledge_chars(background, criteria),
        knowledge_sha256=knowledge_sha256(background, criteria),
        old_format=old_format,
        warnings=warnings,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KnowledgeError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise KnowledgeError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise KnowledgeError(f"{path}: cannot be read: {e.strerror or e}") from None


def read_task(task_dir: Path | str) -> TaskKnowledge:
    """A task directory (``<Task>/task.md`` with ``examples/``), read; the task is the folder's name."""
    directory = Path(task_dir)
    if not directory.is_dir():
        raise KnowledgeError(f"{directory}: not a task directory (no such folder)")
    path = directory / TASK_FILE
    if not path.is_file():
        raise KnowledgeError(f"{directory}: not a task directory (no {TASK_FILE})")
    text = _read_text(path)
    frontmatter, _body, _ = split_frontmatter(text)
    task = directory.resolve().name
    return TaskKnowledge(
        task=task, directory=directory, text=text, frontmatter=frontmatter, reference=derive(text, task=task)
    )


def derive_reference(source: Path | str, *, task: str | None = None) -> Reference:
    """The reference of a task.

    ``source`` is a :class:`~pathlib.Path` to a task directory or to its task.md, or a ``str`` holding
    task.md's text. The task's name is ``task`` when given, else the directory's name, else the
    frontmatter's ``name`` (or ``task``), else the first level-1 heading.
    """
    if isinstance(source, Path):
        if source.is_dir():
            knowledge = read_task(source)
            return knowledge.reference if task is None else derive(knowledge.text, task=task)
        text = _read_text(source)
        frontmatter, body, _ = split_frontmatter(text)
        return derive(text, task=_task_name(task, source.resolve().parent, frontmatter, body))
    frontmatter, body, _ = split_frontmatter(source)
    return derive(source, task=_task_name(task, None, frontmatter, body))
