"""A task's labeled examples (``examples/<slug>.md`` and their figures) and the seed's ``examplesOf``.

An example is a Markdown file with YAML frontmatter and a figure::

    ---
    type: qdash.calibration-example
    profile: qdash-calibration/v1
    title: Window too short            # optional; else the first "# " heading, else the slug
    outcome: suboptimal                # expected | suboptimal | anomalous | apparatus
    status: WINDOW_TOO_SHORT           # a code of the task's criteria
    suggested_range: "(0, 400) [us]"   # or [0, 400], or {min: 0, max: 400, unit: us}
    parameters: {t1: 85.0}
    figure: window-too-short.png       # optional; see figure_of
    ---
    The decay is still falling at the last delay ...   (the diagnosis paragraph)

:func:`examples_of` selects the demonstrations an in-context evaluation shows (docs/calibration.md,
"Examples"): the files in name order, one per status, an example without a status kept for the
analysis demonstration, an example without a figure or without any label skipped, at most six
examples or six figures.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qsolve.evaluation.knowledge import find_section, first_paragraph, sections, split_frontmatter

EXAMPLE_TYPE = "qdash.calibration-example"
EXAMPLE_PROFILE = "qdash-calibration/v1"
FIGURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
MAX_EXAMPLES = 6
MAX_EXAMPLE_FIGURES = 6
#: the labels an example may carry; one of them at least, or it is skipped
LABELS = ("outcome", "verdict", "status", "suggested_range", "parameters")

_NO_LABEL = "no label (outcome, verdict, status, suggested_range, parameters)"
_MEDIA_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}
_IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


class Example(BaseModel):
    """One labeled example, read."""

    model_config = ConfigDict(frozen=True)

    id: str  #: the slug: the file name without .md
    title: str
    path: Path
    figure: Path
    figure_sha256: str
    media_type: str
    outcome: str | None = None
    verdict: str | None = None
    status: str | None = None
    suggested_range: str | None = None
    parameters: dict[str, Any] | None = None
    #: the diagnosis paragraph: the analysis the significance question shows
    analysis: str | None = None

    def labelled(self) -> bool:
        return any(getattr(self, name) not in (None, "", {}) for name in LABELS)


class ExampleSkipped(BaseModel):
    id: str
    reason: str


class ExampleSelection(BaseModel):
    """What :func:`select_examples` kept, and what it left out and why."""

    examples: list[Example] = Field(default_factory=list)
    skipped: list[ExampleSkipped] = Field(default_factory=list)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    return text or None


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def range_text(value: Any) -> str | None:
    """A suggested range as the prompt shows it: a string as it is, ``[a, b]`` as ``(a, b)``, a mapping
    ``{min, max, unit}`` as ``(min, max) [unit]``."""
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"({_number(value[0])}, {_number(value[1])})"
    if isinstance(value, dict) and "min" in value and "max" in value:
        unit = _text(value.get("unit"))
        text = f"({_number(value['min'])}, {_number(value['max'])})"
        return f"{text} [{unit}]" if unit else text
    return _text(value)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _usable(path: Path, name: str, task_dir: Path) -> Path | str:
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        return f"figure {name!r} is not a .png, .jpg, .jpeg or .webp"
    if not _inside(path, task_dir):
        return f"figure {name!r} is outside the task directory"
    if not path.is_file():
        return f"figure {name!r} does not exist"
    return path


def figure_of(md: Path, frontmatter: dict[str, Any], body: str, task_dir: Path) -> Path | str:
    """The example's figure, or why it has none.

    The frontmatter's ``figure`` (a path relative to the example's file) when it names one, and then
    only that; else the first Markdown image ``![..](file)`` of the body when that is a usable file;
    else a file next to the example with its name and the suffix .png, .jpg, .jpeg or .webp (the
    first found in that order). A figure is a file of one of those types inside the task directory.
    """
    if "figure" in frontmatter:
        named = frontmatter["figure"]
        if not isinstance(named, str) or not named.strip():
            return "figure: not a file name"
        return _usable(md.parent / named.strip(), named.strip(), task_dir)
    m = _IMAGE_LINK.search(body)
    if m:
        linked = _usable(md.parent / m.group(1), m.group(1), task_dir)
        if isinstance(linked, Path):
            return linked
    for suffix in FIGURE_SUFFIXES:
        path = md.parent / (md.stem + suffix)
        if isinstance(_usable(path, path.name, task_dir), Path):
            return path
    return "no figure"


def _title(frontmatter: dict[str, Any], body: str, slug: str) -> str:
    title = _text(frontmatter.get("title"))
    if title:
        return title
    for line in body.splitlines():
        m = re.match(r"^\s{0,3}#\s+(.*?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    return re.sub(r"[-_]+", " ", slug).strip() or slug


def _analysis(body: str) -> str | None:
    """The diagnosis paragraph: the first paragraph under ``## Diagnosis`` (or ``## Analysis``) when
    there is one, else the body's first paragraph before any ``##`` heading."""
    parts = sections(body)
    for title in ("Diagnosis", "Analysis"):
        section = find_section(parts, title)
        if section is not None:
            return first_paragraph(section.lines)
    return first_paragraph(parts[0].lines, skip_title=True)


def read_example(md: Path, task_dir: Path) -> Example | ExampleSkipped:
    """One ``examples/<slug>.md``, read, or why it is left out."""
    slug = md.stem
    try:
        text = md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return ExampleSkipped(id=slug, reason=f"cannot be read: {type(e).__name__}")
    frontmatter, body, warnings = split_frontmatter(text)
    if warnings:
        return ExampleSkipped(id=slug, reason=warnings[0])
    if frontmatter.get("type") != EXAMPLE_TYPE:
        return ExampleSkipped(id=slug, reason=f"type is not {EXAMPLE_TYPE}")
    if frontmatter.get("profile") != EXAMPLE_PROFILE:
        return ExampleSkipped(id=slug, reason=f"profile is not {EXAMPLE_PROFILE}")
    if not any(frontmatter.get(name) not in (None, "", {}, []) for name in LABELS):
        return ExampleSkipped(id=slug, reason=_NO_LABEL)
    figure = figure_of(md, frontmatter, body, task_dir)
    if isinstance(figure, str):
        return ExampleSkipped(id=slug, reason=figure)
    parameters = frontmatter.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        parameters = None
    status = _text(frontmatter.get("status"))
    example = Example(
        id=slug,
        title=_title(frontmatter, body, slug),
        path=md,
        figure=figure,
        figure_sha256=hashlib.sha256(figure.read_bytes()).hexdigest(),
        media_type=_MEDIA_TYPES[figure.suffix.lower()],
        outcome=_text(frontmatter.get("outcome")),
        verdict=_text(frontmatter.get("verdict")),
        status=status.upper() if status else None,
        suggested_range=range_text(frontmatter.get("suggested_range")),
        parameters=parameters or None,
        analysis=_analysis(body),
    )
    if not example.labelled():  # a label that reads as nothing (parameters: 3, say)
        return ExampleSkipped(id=slug, reason=_NO_LABEL)
    return example


def example_files(task_dir: Path | str) -> list[Path]:
    """``examples/*.md`` in the repository's order: sorted by file name (code points)."""
    folder = Path(task_dir) / "examples"
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.suffix == ".md" and p.is_file()), key=lambda p: p.name)


def select_examples(task_dir: Path | str) -> ExampleSelection:
    """examplesOf, with the reasons for what it left out."""
    root = Path(task_dir)
    selection = ExampleSelection()
    statuses: set[str] = set()
    figures = 0
    for md in example_files(root):
        if len(selection.examples) >= MAX_EXAMPLES or figures >= MAX_EXAMPLE_FIGURES:
            selection.skipped.append(ExampleSkipped(id=md.stem, reason="six examples already selected"))
            continue
        got = read_example(md, root)
        if isinstance(got, ExampleSkipped):
            selection.skipped.append(got)
            continue
        if got.status is not None:
            if got.status in statuses:
                selection.skipped.append(ExampleSkipped(id=got.id, reason=f"a second {got.status} example"))
                continue
            statuses.add(got.status)
        selection.examples.append(got)
        figures += 1
    return selection


def examples_of(task_dir: Path | str) -> list[Example]:
    """The examples an in-context evaluation of this task shows, in the order it shows them."""
    return select_examples(task_dir).examples
