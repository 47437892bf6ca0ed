"""The web pages (issue 16): one FastAPI app over the same core functions the command line uses.

app          create_app(home): the routers, the error page, the security headers, /static
pages        render, error_page, db: what every router uses
database     state_db: the app's state database, opened on first use
people       accounts, roles and sessions: current_account, require(role), check_form
login        /login and /logout
workflows    the workflow list and each workflow's page, per version, with its case charts
charts       the small server-rendered SVG charts of a case's accuracy and fidelity over runs
quotes       "Get a quote" and each quote's confirmation, for the workflow's developer
receipts     a run's receipts, and the page that verifies a dropped job file
evaluations  evaluation runs: list, detail, verdicts, compare, scores
evaluation_views  what those pages show of a run, a record and a comparison
evaluation_diff   the compare page's side-by-side line diff of two texts
evaluation_style  the evaluation and knowledge pages' own look (/evaluations/style.css)
knowledge    the knowledge page's prompt preview and draft upload
submissions  /submit: a developer's workflow zip submitted as that account, and its page to the report

The commands (``qsolve serve``, ``qsolve accounts add|list|token``) are :mod:`qsolve.cli.web`.
"""
