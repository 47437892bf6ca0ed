"""qsolve's pipeline on Prefect, under a name of its own (issue 36): its packages stay at the top of the
repository, and import only as ``qsolve_pipeline.NAME``, never as a bare ``storage``, ``tasks``, ``flows`` or
``deployments`` (names Prefect's runner, a user's ``tasks.py`` or another distribution use).

    flows          the Prefect flows (flows/)
    tasks          the Prefect tasks the flows run (tasks/)
    storage        the state database, blobs, object storage and the track record (storage/)
    deployments    the work pool, the deployments' limits and automations (deployments/)

In a checkout each is a link to the folder at the top (``qsolve_pipeline/storage -> ../storage``); a wheel
holds them here as packages of their own.
"""
