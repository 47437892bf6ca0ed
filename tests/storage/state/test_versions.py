"""Publishing: a version is its content; the same content again is a no-op, other content is refused."""

from __future__ import annotations

import pytest

from qsolve_pipeline.storage.state import NotFound, StateDB, VersionConflict

CASES = [
    {"name": "hardware-ring-6", "input": {"edges": [[0, 1], [1, 2]]}, "target": "ibm:ibm_fez", "seed": 1}
]


def test_publishing_keeps_the_hardware_cases_inline(db: StateDB) -> None:
    version, created = db.publish_version("max-cut", "1.0.0", "d1" * 32, CASES)
    assert created
    assert (version.workflow, version.version, version.digest) == ("max-cut", "1.0.0", "d1" * 32)
    assert version.hardware_cases == CASES
    assert version.published_at.tzinfo is not None
    assert db.get_version("max-cut", "1.0.0") == version


def test_identical_content_is_a_no_op(db: StateDB) -> None:
    first, _ = db.publish_version("max-cut", "1.0.0", "d1" * 32, CASES)
    again, created = db.publish_version("max-cut", "1.0.0", "d1" * 32, CASES)
    assert not created
    assert again == first


def test_other_content_under_a_published_version_is_refused(db: StateDB) -> None:
    db.publish_version("max-cut", "1.0.0", "d1" * 32, CASES)
    with pytest.raises(
        VersionConflict, match="max-cut 1.0.0 is already published with other content"
    ) as caught:
        db.publish_version("max-cut", "1.0.0", "d2" * 32, [])
    assert "new version number" in str(caught.value)
    assert (caught.value.published_digest, caught.value.digest) == ("d1" * 32, "d2" * 32)
    assert db.get_version("max-cut", "1.0.0").digest == "d1" * 32


def test_the_latest_version_is_the_last_published(db: StateDB) -> None:
    db.publish_version("max-cut", "1.0.0", "d1" * 32, [])
    db.publish_version("max-cut", "1.1.0", "d2" * 32, CASES)
    db.publish_version("generic-qubo", "2.0.0", "d3" * 32, [])
    assert db.get_version("max-cut").version == "1.1.0"
    assert db.get_version("generic-qubo").version == "2.0.0"
    with pytest.raises(NotFound, match="no published version max-cut 9.9.9"):
        db.get_version("max-cut", "9.9.9")
    with pytest.raises(NotFound):
        db.get_version("nothing")


def test_hardware_cases_must_be_json(db: StateDB) -> None:
    with pytest.raises(ValueError, match="hardware_cases is not JSON"):
        db.publish_version("max-cut", "1.0.0", "d1" * 32, [{"input": {"x": float("nan")}}])
