"""The package's front door lists what is public, sorted, and every name it lists is there."""

from __future__ import annotations

import qsolve.receipts as receipts


def test_exported_members() -> None:
    assert receipts.__all__ == sorted(receipts.__all__)
    for name in receipts.__all__:
        assert hasattr(receipts, name), name


def test_the_domain_core_imports_no_prefect() -> None:
    import subprocess
    import sys

    code = "import sys, qsolve.cli.receipts, qsolve.receipts.verifier; print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
