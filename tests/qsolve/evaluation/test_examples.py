"""examplesOf: repository order, one per status, unlabelled kept, skipped without figure or label, six."""

from __future__ import annotations

import hashlib
from pathlib import Path

from qsolve.evaluation.examples import examples_of, range_text, read_example, select_examples

HEAD = "---\ntype: qdash.calibration-example\nprofile: qdash-calibration/v1\n"


def write(
    task: Path, slug: str, labels: str = "", body: str = "The analysis.\n", figure: str | None = ".png"
):
    folder = task / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{slug}.md").write_text(HEAD + labels + "---\n" + body, encoding="utf-8")
    if figure:
        (folder / f"{slug}{figure}").write_bytes(f"figure of {slug}".encode())


def ids(task: Path) -> list[str]:
    return [e.id for e in examples_of(task)]


def test_examples_are_walked_in_file_name_order(tmp_path: Path):
    for slug in ("c-third", "a-first", "B-upper", "b-second"):
        write(tmp_path, slug, "outcome: expected\n")
    assert ids(tmp_path) == ["B-upper", "a-first", "b-second", "c-third"]


def test_one_example_per_status_the_second_dropped(tmp_path: Path):
    write(tmp_path, "1", "status: SUCCESS\n")
    write(tmp_path, "2", "status: success\n")  # the same status: codes are read upper case
    write(tmp_path, "3", "status: SHORT_T1\n")
    write(tmp_path, "4", "status: SHORT_T1\nsuggested_range: [0, 10]\n")
    selection = select_examples(tmp_path)
    assert [e.id for e in selection.examples] == ["1", "3"]
    assert {s.id: s.reason for s in selection.skipped} == {
        "2": "a second SUCCESS example",
        "4": "a second SHORT_T1 example",
    }


def test_examples_without_a_status_are_kept_for_the_analysis(tmp_path: Path):
    write(tmp_path, "1", "outcome: expected\nverdict: agree\n")
    write(tmp_path, "2", "outcome: suboptimal\n")
    write(tmp_path, "3", "status: SUCCESS\n")
    assert ids(tmp_path) == ["1", "2", "3"]


def test_an_example_without_a_figure_or_without_a_label_is_skipped(tmp_path: Path):
    write(tmp_path, "no-figure", "status: SUCCESS\n", figure=None)
    write(tmp_path, "no-label", "title: Nothing\n")
    write(tmp_path, "empty-labels", "status: ''\nparameters: {}\n")
    write(tmp_path, "ok", "parameters: {t1: 3}\n")
    selection = select_examples(tmp_path)
    assert [e.id for e in selection.examples] == ["ok"]
    reasons = {s.id: s.reason for s in selection.skipped}
    assert reasons["no-figure"] == "no figure"
    assert reasons["no-label"].startswith("no label")
    assert reasons["empty-labels"].startswith("no label")


def test_selection_stops_at_six(tmp_path: Path):
    for i in range(8):
        write(tmp_path, f"{i:02d}", "outcome: expected\n")
    selection = select_examples(tmp_path)
    assert [e.id for e in selection.examples] == ["00", "01", "02", "03", "04", "05"]
    assert [s.id for s in selection.skipped] == ["06", "07"]


def test_a_dropped_or_skipped_example_does_not_count_toward_six(tmp_path: Path):
    for i in range(6):
        write(tmp_path, f"{i:02d}", "status: SUCCESS\n" if i < 3 else "", figure=".png")
    for i in range(6, 12):
        write(tmp_path, f"{i:02d}", "outcome: expected\n")
    assert ids(tmp_path) == ["00", "06", "07", "08", "09", "10"]


def test_figure_from_frontmatter_body_link_or_same_name(tmp_path: Path):
    write(tmp_path, "named", "status: A\nfigure: plots/fig.webp\n", figure=None)
    (tmp_path / "examples" / "plots").mkdir()
    (tmp_path / "examples" / "plots" / "fig.webp").write_bytes(b"webp")
    write(tmp_path, "linked", "status: B\n", body="![plot](other.jpg)\n\nText.\n", figure=None)
    (tmp_path / "examples" / "other.jpg").write_bytes(b"jpg")
    write(tmp_path, "same", "status: C\n", figure=".jpeg")
    got = {e.id: e for e in examples_of(tmp_path)}
    assert got["named"].figure.name == "fig.webp" and got["named"].media_type == "image/webp"
    assert got["linked"].figure.name == "other.jpg"
    assert got["same"].figure.name == "same.jpeg"
    assert got["named"].figure_sha256 == hashlib.sha256(b"webp").hexdigest()


def test_a_figure_outside_the_task_or_of_another_type_is_refused(tmp_path: Path):
    task = tmp_path / "Task"
    (tmp_path / "outside.png").write_bytes(b"x")
    write(task, "escape", "status: A\nfigure: ../../outside.png\n", figure=None)
    write(task, "pdf", "status: B\nfigure: fig.pdf\n", figure=None)
    (task / "examples" / "fig.pdf").write_bytes(b"x")
    write(task, "missing", "status: C\nfigure: nothing.png\n", figure=None)
    reasons = {s.id: s.reason for s in select_examples(task).skipped}
    assert "outside the task directory" in reasons["escape"]
    assert "not a .png" in reasons["pdf"]
    assert "does not exist" in reasons["missing"]


def test_type_and_profile_must_be_the_calibration_examples(tmp_path: Path):
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "a.md").write_text("---\ntype: other\nprofile: qdash-calibration/v1\nstatus: A\n---\n")
    (folder / "b.md").write_text("---\ntype: qdash.calibration-example\nprofile: v0\nstatus: B\n---\n")
    (folder / "a.png").write_bytes(b"x")
    (folder / "b.png").write_bytes(b"x")
    assert examples_of(tmp_path) == []


def test_labels_title_and_analysis_are_read(tmp_path: Path):
    write(
        tmp_path,
        "window-too-short",
        "outcome: suboptimal\nstatus: WINDOW_TOO_SHORT\nsuggested_range: {min: 0, max: 400.0, unit: us}\n"
        "parameters: {t1: 85.5}\n",
        body="# Short window\n\nThe curve still falls\nat the last delay.\n\nMore.\n",
    )
    (e,) = examples_of(tmp_path)
    assert e.title == "Short window"
    assert e.analysis == "The curve still falls at the last delay."
    assert e.suggested_range == "(0, 400) [us]"
    assert e.parameters == {"t1": 85.5}
    write(tmp_path, "x-diag", "status: X\ntitle: Given\n", body="Intro.\n\n## Diagnosis\n\nThe diagnosis.\n")
    got = read_example(tmp_path / "examples" / "x-diag.md", tmp_path)
    assert got.title == "Given" and got.analysis == "The diagnosis."
    write(tmp_path, "y_slug-name", "status: Y\n", body="")
    assert read_example(tmp_path / "examples" / "y_slug-name.md", tmp_path).title == "y slug name"


def test_range_text_forms():
    assert range_text("(0, 300) [ns]") == "(0, 300) [ns]"
    assert range_text([0, 2.5]) == "(0, 2.5)"
    assert range_text({"min": 1, "max": 2}) == "(1, 2)"
    assert range_text(None) is None


def test_no_examples_folder(tmp_path: Path):
    assert examples_of(tmp_path) == []
