"""Alembic's environment: run on the connection ``storage.state._migrate`` hands over, in its transaction."""

from alembic import context

from qsolve_pipeline.storage.state._tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
