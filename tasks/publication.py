"""The publication stage: the version is its content, kept in the blob store, hardware cases inline."""

from __future__ import annotations

from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE

from qsolve.validation.checks import SubmissionChecks
from qsolve.validation.submission import Published
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import NameOwned, PlatformAccount, VersionConflict, connect, qsolve_home


@dataclass(frozen=True)
class PublicationOutcome:
    published: Published | None
    error: str | None = None


def publish(checks: SubmissionChecks, account: str | None = None) -> PublicationOutcome:
    """Publish what the checks read and the gates ran (``checks.snapshot``), never the submitted folder
    read again, for ``account`` (the local operator's when None). The state database judges it in one
    transaction: a name belongs to its developers and its versions only go up (issue 33, item 1); a
    refusal is the one line it says."""
    manifest = checks.workflow.manifest
    packed, digest = checks.snapshot.archive, checks.snapshot.digest
    BlobStore(qsolve_home()).put(packed)
    try:
        with connect() as db:
            db.record_blob_sizes({digest: len(packed)})  # a read of it stops there (storage.bounds)
            version, created = db.publish_version(
                manifest.name,
                manifest.version,
                digest,
                [c.inline() for c in checks.hardware_cases],
                account=account,
            )
    except (VersionConflict, NameOwned, PlatformAccount, ValueError) as e:
        return PublicationOutcome(None, str(e))
    return PublicationOutcome(
        Published(name=version.workflow, version=version.version, digest=digest, created=created)
    )


@task(name="publication", cache_policy=NO_CACHE)
def publication_stage(checks: SubmissionChecks, account: str | None = None) -> PublicationOutcome:
    return publish(checks, account)
