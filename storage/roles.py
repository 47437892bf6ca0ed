"""Who may do what on the web pages (issue 16; benchmarks-and-gates.md, "How they run": a workflow's
developer asks for its quotes, "admins can too"): the roles an account holds in the state database.
Here, apart from ``storage.state``, so that the command line's parser reads them without database code."""

ROLES = ("admin", "developer", "editor", "reviewer")
