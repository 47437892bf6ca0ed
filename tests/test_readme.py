"""The README's two commands are what CI runs."""

from __future__ import annotations

import re

from tests.conftest import REPO


def readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (REPO / "README.md").read_text())


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    main_command, test_command = readme_commands()[:2]
    assert "qsolve" in main_command
    assert test_command in (REPO / ".ci" / "run").read_text().splitlines()
