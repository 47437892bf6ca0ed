"""Evaluating calibration task results against their task's knowledge (issue 14; the
calibration-evaluation seed). It reads :mod:`qsolve.calibration`'s task results; calibration knows
nothing of it.

knowledge     a task's knowledge (task-knowledge/<Task>/task.md) and the reference derived from it
examples      a task's labeled examples and the seed's examplesOf
questions     the six questions of an evaluation
prompts       the six requests of one evaluation, and the prompt preview
answers       reading the six answers
units         the units of the numbers an answer states: a parameter's, read and converted
drafts        knowledge drafts: one task directory as a zip, stored under its SHA-256, refused whole
models        the declared evaluation models (evaluation.yaml) and the seed's choice order
vlm           a vision-language model through the openai package: six requests at once, one retry each
classical_judge  the baseline: answers what the data and fit show, declines the rest
evaluate      one evaluation and its record (input, output, evaluator: the hash of the judging modules)
runs          evaluation runs: selection, heartbeat, cancel, retry
compare       two runs, and the scores against the known answers
verdicts      a reviewer's verdict choices and areas

The commands (``qsolve knowledge ...``, ``qsolve evaluate``, ``qsolve evaluations ...``) are
:mod:`qsolve.cli.knowledge` and :mod:`qsolve.cli.evaluation`. Nothing here imports Prefect or storage;
``flows/evaluation.py`` is the flow over :mod:`.runs`.
"""
