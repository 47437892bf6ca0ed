import importlib
import subprocess
import sys
from pathlib import Path

import qsolve_pipeline.storage.trackrecord as trackrecord

REPO = Path(__file__).resolve().parents[3]


def test_exported_members():
    assert trackrecord.__all__ == sorted(trackrecord.__all__)
    for name in trackrecord.__all__:
        value = getattr(trackrecord, name)
        assert getattr(value, "__module__", "qsolve_pipeline.storage.trackrecord").startswith(
            "qsolve_pipeline.storage.trackrecord"
        ), name
    assert set(trackrecord.__all__) <= set(dir(trackrecord))


def test_page_and_query_are_the_functions_whatever_was_imported_first():
    importlib.import_module("qsolve_pipeline.storage.trackrecord.workflow_page")
    importlib.import_module("qsolve_pipeline.storage.trackrecord.sql")
    from qsolve_pipeline.storage.trackrecord import page, query

    assert callable(page) and page.__name__ == "page"
    assert callable(query) and query.__name__ == "query"


PARSER_ONLY = """
import argparse, sys
from qsolve.cli.trackrecord import FORMATS, add_commands
add_commands(argparse.ArgumentParser().add_subparsers())
heavy = [m for m in ("duckdb", "pyarrow", "prefect") if m in sys.modules]
from qsolve_pipeline.storage.trackrecord.sql import FORMATS as SQL_FORMATS
print(heavy, FORMATS == SQL_FORMATS)
"""


def test_the_command_line_parser_loads_no_duckdb_or_arrow():
    done = subprocess.run([sys.executable, "-c", PARSER_ONLY], capture_output=True, text=True, cwd=REPO)
    assert done.stdout == "[] True\n", done.stderr
