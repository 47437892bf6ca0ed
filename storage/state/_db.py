"""The state database: published versions and runs. Credits are in ``_ledger``.

Every change is one transaction whose guard is in the database (a unique constraint, or an UPDATE
conditioned on the row's status), never in this process: several processes and machines may share
the database (DESIGN.md §7).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve.home import local_account
from qsolve.workflow.semver import order_key, precedence, publication_error
from qsolve_pipeline.storage.objects import shared_store, storage_url
from qsolve_pipeline.storage.state._accounts import Accounts, check_name, developers_of, is_admin
from qsolve_pipeline.storage.state._binding import Binding, storage_identity
from qsolve_pipeline.storage.state._blob_sizes import BlobSizes
from qsolve_pipeline.storage.state._calibration import CalibrationResults
from qsolve_pipeline.storage.state._config import (
    DATABASE_URL_VARIABLE,
    CreditSettings,
    legacy_credit_sources,
    qsolve_home,
)
from qsolve_pipeline.storage.state._credit_table import CreditTable
from qsolve_pipeline.storage.state._engine import make_engine
from qsolve_pipeline.storage.state._errors import (
    CaseTaken,
    CreditsMoved,
    NameOwned,
    NotFound,
    StageLost,
    VersionConflict,
    VersionOrder,
)
from qsolve_pipeline.storage.state._evaluations import Evaluations
from qsolve_pipeline.storage.state._holders import ProviderHolders
from qsolve_pipeline.storage.state._host_keys import HostKeys
from qsolve_pipeline.storage.state._leases import DEADLINE_MARGIN, lease_seconds
from qsolve_pipeline.storage.state._ledger import Ledger, refuse_platform_account
from qsolve_pipeline.storage.state._migrate import migrate
from qsolve_pipeline.storage.state._models import (
    WORKFLOW_REASONS,
    FailureReason,
    Run,
    RunStatus,
    Source,
    Stage,
    Version,
)
from qsolve_pipeline.storage.state._provider_jobs import ProviderJobs
from qsolve_pipeline.storage.state._provider_owners import ProviderOwners
from qsolve_pipeline.storage.state._quotes import Quotes
from qsolve_pipeline.storage.state._rows import (
    RECORDABLE,
    RUNS,
    clock,
    move_run,
    now,
    reason_of,
    run_of,
    run_row,
    version_of,
    version_row,
)
from qsolve_pipeline.storage.state._stages import HistoryStages
from qsolve_pipeline.storage.state._tables import (
    account_roles,
    accounts,
    history_stages,
    runs,
    versions,
    workflows,
)
from qsolve_pipeline.storage.state._trackrecord_files import TrackRecordFiles
from qsolve_pipeline.storage.state._trackrecord_log import TrackRecordLog

#: ids per ``IN (...)`` list: well under SQLite's and PostgreSQL's limits on bound parameters
ID_CHUNK = 500


def connect(
    url: str | None = None,
    home: Path | None = None,
    *,
    settings: CreditSettings | None = None,
    refuse_credits_file: bool = True,
) -> StateDB:
    """Open the state database, migrated to the latest schema.

    ``url`` wins, then ``QSOLVE_DATABASE_URL``, then SQLite at ``home/state.db`` (``home`` defaulting to
    ``QSOLVE_HOME``, itself ``./.qsolve``). The credit settings are the database's, read when used,
    unless ``settings`` are given; a ``credits.toml`` in the home or a ``QSOLVE_CREDITS_*`` variable is
    refused (CreditsMoved, saying what to run) unless ``refuse_credits_file`` is false (the import).

    A home's database (``QSOLVE_DATABASE_URL``, or with ``QSOLVE_STORAGE_URL`` set) is checked against the
    storage it was first used with (``_binding``): another folder, bucket or prefix raises
    ``StorageMismatch``. A ``url`` given here names its database on purpose and is not checked.
    """
    home = Path(home) if home is not None else qsolve_home()
    if settings is None and refuse_credits_file and (found := legacy_credit_sources(home)):
        raise CreditsMoved(found[0], source=found[0].split(":", 1)[0].split(" ", 1)[0])
    own = f"sqlite:///{(home / 'state.db').as_posix()}"
    named = url is not None  # a caller naming its database (a tool, a test): it knows; not checked
    url = url or os.environ.get(DATABASE_URL_VARIABLE) or own
    engine = make_engine(url)
    try:
        migrate(engine)
        db = StateDB(engine, settings)
        db.home = home
        # a home's database (QSOLVE_DATABASE_URL, or its own file, which moves with its folder)
        if not named and (url != own or storage_url() is not None):
            db.bind_storage(storage_identity(home), shared_store())
    except BaseException:
        engine.dispose()
        raise
    return db


def _hold_stage(connection: sa.Connection, stage: Stage, owner: str | None) -> None:
    """Lock the stage's row, and make sure ``owner`` still holds it unfinished."""
    row = connection.execute(
        sa.select(history_stages.c.owner, history_stages.c.finished_at)
        .where(history_stages.c.id == stage.id)
        .with_for_update()
    ).first()
    if row is None or row.owner != owner or row.finished_at is not None:
        raise StageLost(
            f"history stage {stage.id} is no longer held by {owner}: another process took it over",
            stage_id=stage.id,
            owner=owner or "",
        )


def _json_document(value: Any, what: str) -> Any:
    """A strict-JSON copy: NaN and infinities are refused here rather than by the backend."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} is not JSON: {e}") from e


def _highest(connection: sa.Connection, name: str) -> sa.Row | None:
    """The name's highest published version's row (``semver.order_key``), or None."""
    listed = connection.execute(
        sa.select(versions.c.id, versions.c.version).where(versions.c.workflow == name)
    ).all()
    if not listed:
        return None
    top = max(listed, key=lambda r: order_key(r.version, r.id))
    return connection.execute(sa.select(versions).where(versions.c.id == top.id)).first()


def _publish(
    connection: sa.Connection, name: str, version: str, digest: str, cases: list, account: str
) -> tuple[Version, bool]:
    """``publish_version``'s transaction: owner, then content, then order."""
    refuse_platform_account(connection, account, f"account {account} may not publish {name}")
    if connection.execute(sa.select(accounts.c.name).where(accounts.c.name == account)).first() is None:
        connection.execute(accounts.insert().values(name=account, kind="user", created_at=now()))
    known = connection.execute(
        sa.select(workflows.c.name).where(workflows.c.name == name).with_for_update()
    ).first()
    developers = developers_of(connection, name)
    if account not in developers:
        admin = is_admin(connection, account)
        if developers and not admin:
            raise NameOwned(
                f"{name} belongs to its developers ({', '.join(developers)}): account {account} may not "
                f"publish it; a developer or an admin adds developers with qsolve accounts developer add "
                f"{name} ACCOUNT",
                workflow=name,
                account=account,
                developers=developers,
            )
        if known is not None and not developers and not admin:
            raise NameOwned(
                f"{name} has no developer (published before names had owners): only an admin may publish "
                f"it, not account {account}; the operator adds its developers with qsolve accounts "
                f"developer add {name} ACCOUNT",
                workflow=name,
                account=account,
            )
    if known is None:  # the name's first publication: its row is what two first publications meet on
        connection.execute(workflows.insert().values(name=name, created_at=now()))
    if not developers:  # a new name (or one with no developer) becomes the publishing account's
        connection.execute(
            account_roles.insert().values(account=account, role="developer", workflow=name, created_at=now())
        )
    existing = version_row(connection, name, version)
    if existing is not None:
        if existing.digest != digest:
            raise VersionConflict(
                f"{name} {version} is already published with other content (digest "
                f"{existing.digest[:16]}, not {digest[:16]}): publish changed content under a new version "
                "number",
                workflow=name,
                version=version,
                published_digest=existing.digest,
                digest=digest,
            )
        return version_of(existing), False
    highest = _highest(connection, name)
    refused = publication_error(version)
    if refused is None and highest is not None:
        above = precedence(highest.version)
        if above is not None and precedence(version) <= above:
            refused = (
                f"{name} {version} is not above {highest.version}, its highest published version: versions "
                f"only go up (semantic versioning precedence); publish a version above {highest.version}"
            )
    if refused is not None:
        raise VersionOrder(
            refused,
            workflow=name,
            version=version,
            published_digest=highest.digest if highest is not None else "",
            digest=digest,
            highest=highest.version if highest is not None else "",
        )
    connection.execute(
        versions.insert().values(
            workflow=name,
            version=version,
            digest=digest,
            published_at=now(),
            hardware_cases=cases,
            account=account,
        )
    )
    return version_of(version_row(connection, name, version)), True


class StateDB(
    Ledger,
    HistoryStages,
    ProviderJobs,
    Quotes,
    CalibrationResults,
    Evaluations,
    Accounts,
    CreditTable,
    HostKeys,
    ProviderHolders,
    ProviderOwners,
    Binding,
    TrackRecordFiles,
    BlobSizes,
    TrackRecordLog,
):
    """Versions, runs, history stages and leases, credit accounts and the ledger, hardware quote
    batches (``_quotes``), provider jobs, calibration task results, and what every machine shares: the
    credit settings, the hosts' receipt keys, which host holds which provider, which account holds it and
    whom it allows (``_provider_owners``); the track record's files
    (``_trackrecord_files``); every blob's size (``_blob_sizes``). A context manager."""

    # versions

    def publish_version(
        self,
        name: str,
        version: str,
        digest: str,
        hardware_cases: list[Mapping[str, Any]],
        *,
        account: str | None = None,
    ) -> tuple[Version, bool]:
        """Publish for ``account`` (the local operator's when None), or find the same content published:
        ``(version, created)``. One write transaction, the name's row locked (issue 33, item 1):

        - a name never published, with no developer, becomes ``account``'s: it is made a developer of it
          (``account_roles``), so of two first publications at once exactly one takes the name (the
          other meets the name's row, and is judged again as a later publication);
        - otherwise only one of its developers or an admin publishes it (NameOwned, naming them); a name
          published before names had owners, with no developer, only an admin (who becomes one);
        - the same version with the same content changes nothing; with other content, VersionConflict;
        - a new version must be a semantic version above the name's highest (VersionOrder).

        The ledger's own accounts publish nothing (PlatformAccount).
        """
        account = check_name(account if account is not None else local_account())
        cases = _json_document(list(hardware_cases), "hardware_cases")
        for attempt in range(3):
            try:
                with self._write() as connection:
                    return _publish(connection, name, version, digest, cases, account)
            except IntegrityError:  # another process took the name or published this version meanwhile
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def get_version(self, name: str, version: str | None = None) -> Version:
        """A published version; without ``version``, the name's highest (semantic versioning precedence,
        ``qsolve.workflow.semver``): what the seed calls the latest published version."""
        with self._read() as connection:
            row = _highest(connection, name) if version is None else version_row(connection, name, version)
        if row is None:
            raise NotFound(f"no published version {name} {version or ''}".rstrip(), kind="version", key=name)
        return version_of(row)

    # runs

    def create_run(
        self,
        version: Version,
        case_name: str,
        target: str,
        source: Source | str,
        *,
        owner: str | None = None,
        seconds: float | None = None,
        stage: Stage | None = None,
        case_index: int | None = None,
    ) -> Run:
        """A new run, ``created``: hold its credits, then start it.

        ``owner`` is the Lease token that keeps it alive; ``seconds`` its time limit (its deadline is
        that and a margin from now). In a history stage, ``stage`` and ``case_index`` place it: the
        stage must still be held by ``owner`` (StageLost), and a case that already has a live or
        recordable run in the round is refused (CaseTaken).
        """
        run_id = uuid.uuid4().hex
        values = {
            "id": run_id,
            "version_id": version.id,
            "case_name": case_name,
            "target": target,
            "source": Source(source).value,
            "status": RunStatus.CREATED.value,
            "case_index": case_index,
            "owner": owner,
        }
        lease = timedelta(seconds=lease_seconds()) if owner is not None else None
        try:
            with self._write() as connection:
                # its lease, deadline and age are judged by the database's clock: written by it too
                values["created_at"] = created = clock(connection)
                if lease is not None:
                    values["lease_expires_at"] = created + lease
                if seconds is not None:
                    values["deadline_at"] = created + timedelta(seconds=seconds) + DEADLINE_MARGIN
                if stage is not None:
                    values["stage_id"] = stage.id
                    _hold_stage(connection, stage, owner)
                connection.execute(runs.insert().values(**values))
                return run_of(run_row(connection, run_id))
        except IntegrityError:
            if stage is None:
                raise
            raise CaseTaken(
                f"case {case_index} ({case_name} on {target}) of {version.workflow} {version.version} "
                f"already has a live or recorded run in history round {stage.round}",
                run_id=run_id,
                status=RunStatus.CREATED.value,
                stage_id=stage.id,
                case_index=case_index or 0,
            ) from None

    def get_run(self, run_id: str) -> Run:
        with self._read() as connection:
            return run_of(run_row(connection, run_id))

    def list_runs(self, version: Version) -> list[Run]:
        """The version's runs, oldest first."""
        query = RUNS.where(runs.c.version_id == version.id).order_by(runs.c.created_at, runs.c.id)
        with self._read() as connection:
            return [run_of(row) for row in connection.execute(query)]

    def start_run(self, run_id: str) -> Run:
        """``created`` to ``running``; a run refused before it started (a failed one) never starts."""
        return self._move_run(
            run_id,
            {RunStatus.CREATED},
            status=RunStatus.RUNNING.value,
            started_at=now(),
        )

    def finish_run(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        reason: FailureReason | str | None = None,
        result: Mapping[str, Any] | None = None,
        detail: str | None = None,
    ) -> Run:
        """End a run: ``finished`` from ``running``, or ``failed`` with a reason.

        A platform reason may end a run that never started; ``crash`` and ``timeout`` (the workflow's own
        failures) only a running one.
        """
        status = RunStatus(status)
        if status is RunStatus.FINISHED:
            if reason is not None:
                raise ValueError(f"a finished run has no failure reason, got {reason!r}")
            allowed = {RunStatus.RUNNING}
        elif status is RunStatus.FAILED:
            reason = reason_of(reason)
            allowed = (
                {RunStatus.RUNNING} if reason in WORKFLOW_REASONS else {RunStatus.CREATED, RunStatus.RUNNING}
            )
        else:
            raise ValueError(f"a run ends finished or failed, not {status.value}")
        document = None if result is None else _json_document(dict(result), "result")
        return self._move_run(
            run_id,
            allowed,
            status=status.value,
            reason=None if reason is None else reason.value,
            result=document,
            detail=detail,
            finished_at=now(),
        )

    def _move_run(self, run_id: str, allowed: set[RunStatus], **values: Any) -> Run:
        with self._write() as connection:
            return move_run(connection, run_id, allowed, **values)

    def unfiled_runs(self, limit: int = 20) -> list[Run]:
        """Ended runs the track record keeps and has not filed yet, oldest first.

        Runs failed for platform reasons are never listed: they say nothing about the workflow.
        """
        query = (
            RUNS.where(runs.c.filed_at.is_(None), RECORDABLE)
            .order_by(runs.c.finished_at, runs.c.id)
            .limit(limit)
        )
        with self._read() as connection:
            return [run_of(row) for row in connection.execute(query)]

    def count_unfiled(self) -> int:
        """How many ended runs the track record keeps are not filed yet."""
        query = sa.select(sa.func.count()).select_from(runs).where(runs.c.filed_at.is_(None), RECORDABLE)
        with self._read() as connection:
            return connection.execute(query).scalar_one()

    def count_filed(self) -> int:
        """How many ended runs the track record keeps are marked filed."""
        query = sa.select(sa.func.count()).select_from(runs).where(runs.c.filed_at.is_not(None), RECORDABLE)
        with self._read() as connection:
            return connection.execute(query).scalar_one()

    def filed_run_ids(self) -> set[str]:
        """The ids of the ended runs the track record keeps that are marked filed."""
        query = sa.select(runs.c.id).where(runs.c.filed_at.is_not(None), RECORDABLE)
        with self._read() as connection:
            return set(connection.execute(query).scalars())

    def recordable_run_ids(self) -> list[str]:
        """The ids of every ended run the track record keeps, filed or not, oldest first."""
        query = sa.select(runs.c.id).where(RECORDABLE).order_by(runs.c.finished_at, runs.c.id)
        with self._read() as connection:
            return list(connection.execute(query).scalars())

    def runs_by_id(self, run_ids: Iterable[str]) -> list[Run]:
        """These runs (those that exist), oldest first."""
        ids = list(dict.fromkeys(run_ids))
        found: list[Run] = []
        with self._read() as connection:
            for i in range(0, len(ids), ID_CHUNK):
                query = RUNS.where(runs.c.id.in_(ids[i : i + ID_CHUNK]))
                found.extend(run_of(row) for row in connection.execute(query))
        return sorted(found, key=lambda r: (r.finished_at is None, r.finished_at, r.id))

    def mark_filed(self, run_ids: Iterable[str]) -> int:
        """Mark ended runs filed; already filed ones keep their time. Returns how many were newly marked."""
        return len(self.mark_filed_ids(run_ids))

    def mark_filed_ids(self, run_ids: Iterable[str]) -> list[str]:
        """Mark ended runs filed; the ids this call marked (not those another process marked first: two
        maintenance passes filing the same runs at once each report only their own)."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return []
        with self._write() as connection:
            result = connection.execute(
                runs.update()
                .where(
                    runs.c.id.in_(ids),
                    runs.c.filed_at.is_(None),
                    runs.c.status.in_([RunStatus.FINISHED.value, RunStatus.FAILED.value]),
                )
                .values(filed_at=now())
                .returning(runs.c.id)
            )
            marked = set(result.scalars())
        return [i for i in ids if i in marked]
