"""Alembic migrations of the state database, applied on connect by ``storage.state._migrate``.

A new migration goes in ``versions/`` as ``NNNN_what.py``, ``down_revision`` naming the one before;
``storage.state._migrate.alembic_config(connection)`` gives a Config for alembic's commands
(``alembic.command.revision(config, "what", autogenerate=True)`` drafts one against a live database).
"""
