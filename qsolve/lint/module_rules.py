"""Lint of the workflow module by its syntax tree; workflow code is never imported (E040 to E042, and
the warning W043: a function the platform calls that cannot take the arguments it is given)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from qsolve.errors import Issue, WorkflowInvalid, did_you_mean
from qsolve.workflow.folder import module_path
from qsolve.workflow.manifest import Manifest
from qsolve.workflow.reading import read_text


def top_level_names(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level: functions, assignments and imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def module(root: Path, manifest: Manifest | None) -> Iterator[Issue]:
    if manifest is None:
        return
    label = manifest.module
    try:
        path = module_path(root, manifest.module)
        source = read_text(root, path.relative_to(root).as_posix(), label)
    except WorkflowInvalid as e:
        yield from (Issue(i.file, i.message, i.loc, i.code or "E040") for i in e.issues)
        return
    try:
        tree = ast.parse(source, filename=label)
    except SyntaxError as e:
        yield Issue(label, f"not valid Python at line {e.lineno}: {e.msg}", code="E040")
        return
    names = top_level_names(tree)
    if "evaluate" not in names:
        yield Issue(label, "no top-level `evaluate(input, solution)`", code="E041")
    declared = {m.function_name for m in manifest.methods} | {"evaluate", "estimate"}
    yield from arity(label, tree, manifest)
    for method in manifest.methods:
        if method.function_name not in names:
            yield Issue(
                label,
                f"method {method.name!r} has no top-level function {method.function_name!r}"
                + did_you_mean(method.function_name, sorted(n for n in names if n not in declared)),
                code="E042",
            )


#: what the platform passes each function, positionally
CALLED_WITH = {"evaluate": ("input", "solution"), "estimate": ("input", "params")}
METHOD_ARGUMENTS = ("input", "params", "ctx")


def takes(a: ast.arguments, n: int) -> bool:
    """Whether parameters ``a`` can be called with ``n`` positional arguments and nothing else."""
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    kw_required = sum(1 for d in a.kw_defaults if d is None)
    return required <= n and (positional >= n or a.vararg is not None) and kw_required == 0


def defined_functions(tree: ast.Module) -> Iterator[tuple[str, ast.arguments, int]]:
    """Each top-level function as ``(name, parameters, line)``: a ``def``, or a name bound to a lambda
    (``quantum = lambda input, ctx: ...``)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node.args, node.lineno
        elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Lambda):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    yield t.id, node.value.args, node.lineno


def arity(label: str, tree: ast.Module, manifest: Manifest) -> Iterator[Issue]:
    """W043: a method, ``evaluate`` or ``estimate`` defined at the top level (a ``def`` or a lambda)
    whose parameters cannot take what the platform passes (``def qaoa(input, ctx)`` fails every case at
    ``qsolve test``). The message shows the parameters as written (``input, params, *, ctx``). An
    ``async def`` of one of them is warned of too: the platform's call gives a coroutine, not a result."""
    wanted = {m.function_name: METHOD_ARGUMENTS for m in manifest.methods} | CALLED_WITH
    for node in tree.body:  # called as a plain function, an ``async def`` gives a coroutine, not a result
        if isinstance(node, ast.AsyncFunctionDef) and node.name in wanted:
            yield Issue(
                label,
                f"async def {node.name} at line {node.lineno} cannot be called as the platform calls it: "
                f"{node.name}({', '.join(wanted[node.name])}) would give a coroutine, not its result "
                "(define it with `def`; run any asyncio inside it with asyncio.run)",
                code="W043",
                severity="warning",
            )
    for name, params, line in defined_functions(tree):
        if name in wanted:
            args = wanted[name]
            if not takes(params, len(args)):
                yield Issue(
                    label,
                    f"{name}({ast.unparse(params)}) at line {line} cannot be called as "
                    f"{name}({', '.join(args)}): the platform passes these {len(args)} arguments",
                    code="W043",
                    severity="warning",
                )
