"""Task results from a folder of figures and JSON: all of them, or (with any problem) none, each problem
naming its file and key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve.calibration.importing import ImportInvalid, import_folder, read_folder
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.calibration import CalibrationStore
from qsolve_pipeline.storage.state import connect
from tests.storage.state.conftest import default_settings

PNG = b"\x89PNG\r\n\x1a\n" + b"a figure"


def good(**changes) -> dict:
    return {
        "task": "CheckT1",
        "chip": "lab:chip-a",
        "qid": "Q03",
        "day": "2026-11-30",
        "status": "completed",
        "message": "Successfully finished",
        "figures": ["figures/t1_q03.png"],
        "sweep": {"parameter": "delay", "unit": "us", "start": 0, "stop": 300, "points": 31},
        "settings": {"shots": 1000, "interval": {"value": 500, "unit": "us"}},
        "outputs": {"t1": {"value": 61.2, "unit": "us", "error": 2.0}},
        "true_status": "SUCCESS",
    } | changes


def folder(root: Path, results: dict[str, dict | str]) -> Path:
    (root / "figures").mkdir(parents=True, exist_ok=True)
    (root / "figures" / "t1_q03.png").write_bytes(PNG)
    for name, content in results.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CalibrationStore]:
    with connect(f"sqlite:///{tmp_path / 'state.db'}", home=tmp_path, settings=default_settings()) as db:
        yield CalibrationStore(db, BlobStore(tmp_path))


def test_a_good_folder_is_imported_once(tmp_path: Path, store: CalibrationStore) -> None:
    root = folder(
        tmp_path / "in",
        {
            "t1_q03.json": good(),
            "more/t1_q04.json": good(qid="Q04", figures=["../figures/t1_q03.png"], sweep=None, outputs={}),
        },
    )
    imported = import_folder(root, store)
    assert [r.qid for r in imported] == ["Q04", "Q03"]  # path order: more/ sorts before t1_q03.json
    q03 = store.get(imported[1].id)
    assert q03.sweep.step == 10.0 and q03.settings.interval.value == 500
    assert q03.created_at.isoformat() == "2026-11-30T00:00:00+00:00"
    assert store.figure_bytes(q03.figures[0]) == PNG and q03.figures[0].name == "t1_q03.png"
    assert q03.evaluable and store.latest("CheckT1", "lab:chip-a")[0].qid == "Q03"
    again = import_folder(root, store)
    assert [r.id for r in again] == [r.id for r in imported] and len(store.list()) == 2


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (good(qid="q3"), "bad.json: qid:"),
        (good(settings={"shots": 0}), "bad.json: settings.shots:"),
        (good(sweep={"parameter": "delay", "unit": "us", "start": 0, "stop": 3}), "bad.json: sweep.points:"),
        ({k: v for k, v in good().items() if k != "day"}, "bad.json: day: required key missing"),
        (good(colour="red"), "bad.json: colour: unknown key"),
        (good(figures=["figures/none.png"]), "bad.json: figures[0]: no figure file"),
        (good(figures=["../../etc/passwd"]), "bad.json: figures[0]: '../../etc/passwd' is outside"),
        (good(figures=["bad.json"]), "bad.json: figures[0]: 'bad.json' is not a PNG"),
        (good(created_at="2026-11-30T09:00:00"), "bad.json: created_at: a time needs its zone"),
        ('{"task": "CheckT1", "task": "CheckRabi"}', "bad.json: not JSON: the key 'task' appears twice"),
        (json.dumps(good()).replace("61.2", "NaN"), "bad.json: not JSON: NaN is not a JSON number"),
        ("[1, 2]", "bad.json: a task result is a JSON object"),
    ],
)
def test_a_bad_file_imports_nothing_and_names_its_file_and_key(
    tmp_path: Path, store: CalibrationStore, content: dict | str, where: str
) -> None:
    root = folder(tmp_path / "in", {"a_good.json": good(), "bad.json": content})
    with pytest.raises(ImportInvalid) as caught:
        import_folder(root, store)
    assert any(str(issue).startswith(where) for issue in caught.value.issues), caught.value.issues
    assert store.list() == []


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    root = folder(tmp_path / "in", {"one.json": good(qid="x"), "two.json": good(status="done")})
    with pytest.raises(ImportInvalid) as caught:
        read_folder(root)
    assert [i.file for i in caught.value.issues] == ["one.json", "two.json"]


def test_an_empty_folder_and_a_missing_one_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportInvalid, match="no \\*.json"):
        read_folder(folder(tmp_path / "empty", {}))
    with pytest.raises(ImportInvalid, match="not a folder"):
        read_folder(tmp_path / "nowhere")


def test_two_files_with_one_id_are_refused(tmp_path: Path) -> None:
    same = "ab" * 16
    root = folder(tmp_path / "in", {"a.json": good(id=same), "b.json": good(id=same, qid="Q04")})
    with pytest.raises(ImportInvalid, match="the same id as a.json"):
        read_folder(root)
