"""The track record's views as SQL for an analyst's own DuckDB (``qsolve views-sql``; issue 26, item 2).

In a home's folder that is ``trackrecord.sql`` (paths relative to the home) and ``trackrecord.duckdb``.
In object storage it is the same views over ``s3://BUCKET/PREFIX/trackrecord/`` globs (each matching the
schema file at least, as in a folder), after the ``CREATE SECRET`` an S3-compatible endpoint needs: the
endpoint, region, path-style URLs and TLS from ``AWS_ENDPOINT_URL`` and ``AWS_DEFAULT_REGION``. The key
and secret are written as placeholders unless the operator asks for them (``--credentials``): nothing
secret is printed by default. DuckDB reads it with its ``httpfs`` extension (1.x: ``duckdb-extension-httpfs``
on the package index is built for DuckDB 1.5.5).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from qsolve_pipeline.storage.objects import ENDPOINT_VARIABLE, REGION_VARIABLE, ObjectStore

from .layout import FOLDER, SCHEMA_FILE
from .views import Sources, definitions, sql_text

SECRET_NAME = "qsolve_storage"
PLACEHOLDERS = {"KEY_ID": "<AWS_ACCESS_KEY_ID>", "SECRET": "<AWS_SECRET_ACCESS_KEY>"}


def create_secret(store: ObjectStore, *, credentials: bool = False) -> str:
    """``CREATE OR REPLACE SECRET`` for the store, scoped to its bucket and prefix."""
    options = [("TYPE", "s3")]
    if credentials:
        options += [
            ("KEY_ID", sql_text(os.environ.get("AWS_ACCESS_KEY_ID", ""))),
            ("SECRET", sql_text(os.environ.get("AWS_SECRET_ACCESS_KEY", ""))),
        ]
        if os.environ.get("AWS_SESSION_TOKEN"):
            options.append(("SESSION_TOKEN", sql_text(os.environ["AWS_SESSION_TOKEN"])))
    else:
        options += [(k, sql_text(v)) for k, v in PLACEHOLDERS.items()]
    options.append(("REGION", sql_text(os.environ.get(REGION_VARIABLE) or "us-east-1")))
    endpoint = os.environ.get(ENDPOINT_VARIABLE, "").strip()
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options += [
            ("ENDPOINT", sql_text(parts.netloc.rsplit("@", 1)[-1])),  # never a user:password in it
            ("URL_STYLE", "'path'"),
            ("USE_SSL", "false" if parts.scheme == "http" else "true"),
        ]
    options.append(("SCOPE", sql_text(store.address(""))))
    listed = ", ".join(f"{k} {v}" for k, v in options)
    return f"CREATE OR REPLACE SECRET {SECRET_NAME} ({listed});"


def analyst_sql(store: ObjectStore, *, credentials: bool = False, files=None) -> str:
    """The views over the store's files, after the secret: a script for ``duckdb -init`` or ``.read``.
    ``files``: the files to name (an inventory, ``views.reading``'s: the state database's live set,
    checked); by default the files recorded now. No glob: an object the log does not hold is never
    read, and an object replaced after this was printed is not checked by DuckDB (docs/storage.md)."""
    lines = [
        "-- The track record's views (docs/storage.md) over object storage, for DuckDB with httpfs.",
        "-- INSTALL httpfs;  -- once, where DuckDB may download it; else LOAD the extension's file first",
        "LOAD httpfs;",
    ]
    if not credentials:
        lines.append("-- replace the placeholders, or print this again with: qsolve views-sql --credentials")
    lines.append(create_secret(store, credentials=credentials))
    if files is None:
        from dataclasses import replace

        from .views import reading

        files = replace(reading(), schema_file=store.address(f"{FOLDER}/{SCHEMA_FILE}"))
    sources = Sources.of(files)
    lines += [f"CREATE OR REPLACE VIEW {name} AS {select};" for name, select in definitions(sources)]
    return "\n".join(lines) + "\n"
