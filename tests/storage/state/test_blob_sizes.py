"""Every blob's size is recorded with its digest (issue 34, item 4; migration 0016), on SQLite and
PostgreSQL: where qsolve records a blob it records its size, and a read stops there."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from blake3 import blake3

from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES, FIGURE_BYTES
from qsolve_pipeline.storage.state import StateDB


def test_a_size_is_recorded_once_and_read_back_by_its_digest(db: StateDB) -> None:
    a, b = "a" * 64, "b" * 64
    assert db.blob_size(a) is None and db.blob_limit(a, ARCHIVE_BYTES) == ARCHIVE_BYTES
    db.record_blob_sizes({a: 9, b: 3 << 30})  # a size past 32 bits
    db.record_blob_sizes({a: 10})  # the same name holds the same bytes: the first row stays
    db.record_blob_sizes({})
    assert db.blob_size(a) == 9 and db.blob_limit(a, ARCHIVE_BYTES) == 9
    assert db.blob_sizes([a, b, "c" * 64]) == {a: 9, b: 3 << 30}
    many = {f"{i:064x}": i for i in range(1200)}  # more than one IN list
    db.record_blob_sizes(many)
    assert db.blob_sizes(many) == many


def test_a_sealed_jobs_keeper_records_the_receipts_size(db: StateDB, tmp_path: Path) -> None:
    from qsolve_pipeline.storage.sessions import keeper

    digest, _ = keeper(tmp_path, db)('{"sealed": "job"}')
    assert digest == blake3(b'{"sealed": "job"}').hexdigest()
    assert db.blob_size(digest) == len(b'{"sealed": "job"}')


def test_calibration_figures_are_recorded_with_their_sizes(db: StateDB, tmp_path: Path) -> None:
    from qsolve_pipeline.storage.calibration import CalibrationStore
    from tests.qsolve.calibration.calibration_runs import calibrated

    done = calibrated("CheckT1", 1)
    store = CalibrationStore(db, BlobStore(tmp_path))
    (figure,) = store.record(done.result, done.figures).figures
    data = done.figures[figure.sha256]
    assert db.blob_size(figure.blob) == len(data) and db.blob_limit(figure.blob, FIGURE_BYTES) == len(data)
    assert store.figure_bytes(figure) == data


def test_the_migration_records_the_sizes_the_evaluations_kept(db: StateDB) -> None:
    from alembic import command

    from qsolve_pipeline.storage.state._migrate import alembic_config

    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0015")
        connection.execute(
            sa.text(
                "INSERT INTO evaluation_assets (sha256, blob, bytes, media_type, created_at) "
                "VALUES (:s, :b, 1234, 'image/png', CURRENT_TIMESTAMP)"
            ),
            {"s": "5" * 64, "b": "f" * 64},
        )
        command.upgrade(alembic_config(connection), "head")
    assert db.blob_size("f" * 64) == 1234
