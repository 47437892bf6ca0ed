"""A reviewer's verdict on an evaluation record, and the area of the answer it is about: the choices of
``qsolve evaluations verdict`` and of the run page's verdict form (the state database's check constraint
holds the verdicts too)."""

VERDICTS = ("agree", "disagree", "unsure")
AREAS = ("status", "outcome", "fit", "parameters", "range", "description")
