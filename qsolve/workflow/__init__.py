"""A workflow as the platform reads it (DESIGN.md §3), and what its methods are given and return.

folder           the folder read into models: manifest, schemas, module, examples, cases (load_workflow)
reading          the one way in to a submitted folder: every file read beneath it, bounded (issue 22)
snapshot         the submitted folder read once: what the checks, the gates and publication use
upload           a workflow folder uploaded as a zip, unpacked by the safe zip reader (qsolve.safezip)
publication      a version is its content: the canonical listing of the folder, and its digest
semver           versions only go up: semantic versioning's form and precedence (semver.org §11)
manifest         ``manifest.yaml`` as a pydantic model
cases            ``benchmarks/cases.yaml``: cases, hardware cases and their expectations
params           run parameters: the manifest's ``params`` schema, its defaults, the platform's limits
patterns         the schemas' regular expressions, matched by RE2 (linear time)
module_loader    importing the workflow's module from its file (in the run only, never in lint)
method           what a method returns (MethodResult), and what it is given to run circuits
context          the run context a method is given (Context, ClassicalContext)

Nothing here imports Prefect or storage; the names below load on first use.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "CASES": "folder",
        "MANIFEST": "folder",
        "Workflow": "folder",
        "load_cases": "folder",
        "load_manifest": "folder",
        "load_workflow": "folder",
        "Snapshot": "snapshot",
    },
)

__all__ = ["CASES", "MANIFEST", "Snapshot", "Workflow", "load_cases", "load_manifest", "load_workflow"]
