"""Where the test suite's time goes: the per-file and per-test sums of a pytest junit file.

    PYTEST_ADDOPTS="--junitxml=/tmp/junit.xml" bash .ci/run
    python bench/test_durations.py /tmp/junit.xml [--files 45] [--tests 60]

The suite's wall time is about the total divided by the workers (-n 3); the first lines say which files
to make cheaper first.
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit")
    parser.add_argument("--files", type=int, default=45)
    parser.add_argument("--tests", type=int, default=60)
    args = parser.parse_args()
    per_file: collections.Counter[str] = collections.Counter()
    per_test: list[tuple[float, str]] = []
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        per_file[case.get("classname", "?")] += seconds
        per_test.append((seconds, f"{case.get('classname')}::{case.get('name')}"))
    print(f"total test time {sum(per_file.values()):.0f} s over {len(per_test)} tests")
    for name, seconds in per_file.most_common(args.files):
        print(f"{seconds:8.1f}  {name}")
    print()
    for seconds, name in sorted(per_test, reverse=True)[: args.tests]:
        print(f"{seconds:8.1f}  {name}")


if __name__ == "__main__":
    main()
