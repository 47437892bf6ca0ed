"""People of the web pages (issue 16): a login on a user's credit account, its roles, its sessions.

A login is an access token issued once (``qsolve accounts add``), printed once and kept only as its
SHA-256; it is 32 random bytes, so a plain hash is as good as a slow one and lookups stay exact. The
roles: ``developer`` of a named workflow (the account that asks for that workflow's hardware quotes,
pays for them and confirms them), ``editor`` of task knowledge (uploads drafts), ``reviewer`` (adds
verdicts), ``admin``. A developer role is also what owns a workflow's name (issue 33, item 1): the first
publication of a new name records its account as a developer here, later versions are published only for
its developers or an admin (``StateDB.publish_version``), and a developer or the operator adds others
(:meth:`Accounts.add_developer`); a role needs no login. The ledger's own accounts (``system``,
``ledger:*``) are given no login and no role. A session is a random id the browser keeps in a cookie,
kept here only as its SHA-256, with a form token its pages carry in every form that changes something;
it lapses at ``expires_at``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import NameOwned, NotFound, StateError
from qsolve_pipeline.storage.state._ledger import refuse_platform_account
from qsolve_pipeline.storage.state._rows import now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import (
    ROLES,
    account_logins,
    account_roles,
    account_sessions,
    accounts,
    versions,
)

SESSION_S = 12 * 3600  # a session lapses twelve hours after login
#: an account's name: what a person types at the login, and a credit account's name
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}")


@dataclass
class AccountExists(StateError):
    """``accounts add`` of a name that already has a login."""

    account: str = ""


@dataclass(frozen=True)
class LoginAccount:
    """An account that can log in: its roles, and the workflows it is the developer of."""

    name: str
    roles: frozenset[str]
    workflows: frozenset[str] = field(default_factory=frozenset)
    created_at: datetime | None = None


@dataclass(frozen=True)
class OpenedSession:
    """What the browser is given at login: the session's id (its cookie) and its form token."""

    session_id: str
    form_token: str
    expires_at: datetime


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not an account name: letters, digits and _ . @ -, starting with a letter or a "
            "digit, at most 100 characters"
        )
    return name


class Accounts(Store):
    """Logins, roles and sessions of the web pages."""

    def add_login(self, name: str, roles: Iterable[str], workflows: Iterable[str] = ()) -> str:
        """A login for ``name`` (its credit account opened if need be) with ``roles``; ``developer``
        with the workflows it develops, or none yet (its first publication makes a name its own). Returns
        the access token, which is kept nowhere in the clear. A name that already has a login raises
        AccountExists."""
        check_name(name)
        roles, workflows = sorted(set(roles)), sorted(set(workflows))
        unknown = [r for r in roles if r not in ROLES]
        if unknown or not roles:
            raise ValueError(f"roles {unknown or 'none'}: give one or more of {', '.join(ROLES)}")
        if workflows and "developer" not in roles:
            raise ValueError("--workflow names a developer's workflows: give --role developer with it")
        with self._read() as connection:  # refused before an account is opened for it
            refuse_platform_account(connection, name, f"account {name} is given no login")
        self.open_account(name)  # type: ignore[attr-defined] - Ledger's
        token = secrets.token_urlsafe(32)
        created = now()
        rows = [{"role": r, "workflow": ""} for r in roles if r != "developer"]
        # a developer of no workflow yet (its first publication, from /submit, makes it one's): workflow ''
        if "developer" in roles:
            rows += [{"role": "developer", "workflow": w} for w in workflows or [""]]
        try:
            with self._write() as connection:
                refuse_platform_account(connection, name, f"account {name} is given no login")
                connection.execute(
                    account_logins.insert().values(
                        account=name, token_sha256=token_hash(token), created_at=created
                    )
                )
                for row in rows:  # a developer role its publication gave it already is kept as it is
                    _add_role(connection, name, row["role"], row["workflow"], created)
        except IntegrityError:
            raise AccountExists(
                f"account {name} already has a login: its token was printed when it was added "
                f"(qsolve accounts token {name} issues a new one)",
                account=name,
            ) from None
        return token

    def reissue_token(self, name: str) -> str:
        """A new access token for ``name``'s login (the old one stops working; its sessions end)."""
        token = secrets.token_urlsafe(32)
        with self._write() as connection:
            moved = connection.execute(
                account_logins.update()
                .where(account_logins.c.account == name)
                .values(token_sha256=token_hash(token), created_at=now())
            )
            if moved.rowcount != 1:
                raise NotFound(f"no login for account {name!r}", kind="login", key=name)
            connection.execute(account_sessions.delete().where(account_sessions.c.account == name))
        return token

    def get_login(self, name: str) -> LoginAccount:
        with self._read() as connection:
            found = _logins(connection, name)
        if not found:
            raise NotFound(f"no login for account {name!r}", kind="login", key=name)
        return found[0]

    def list_logins(self) -> list[LoginAccount]:
        with self._read() as connection:
            return _logins(connection)

    def check_login(self, name: str, token: str) -> LoginAccount | None:
        """The account when ``token`` is its access token; None otherwise (which part was wrong is not
        said)."""
        with self._read() as connection:
            stored = connection.execute(
                sa.select(account_logins.c.token_sha256).where(account_logins.c.account == name)
            ).scalar()
            given = token_hash(token)
            if stored is None:
                hmac.compare_digest(given, given)  # the same work whether the name exists or not
                return None
            if not hmac.compare_digest(stored, given):
                return None
            return _logins(connection, name)[0]

    def open_session(
        self, name: str, *, seconds: float = SESSION_S, replaces: str | None = None
    ) -> OpenedSession:
        """A new session of ``name`` (and the account's lapsed sessions gone). ``replaces``, the session id
        the browser held before this login (whoever's it was), ends in the same transaction: a login never
        leaves the session it replaces alive."""
        session_id, form_token = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        created = now()
        expires = created + timedelta(seconds=seconds)
        with self._write() as connection:
            connection.execute(account_sessions.delete().where(account_sessions.c.expires_at < created))
            if replaces:
                connection.execute(
                    account_sessions.delete().where(account_sessions.c.id_sha256 == token_hash(replaces))
                )
            connection.execute(
                account_sessions.insert().values(
                    id_sha256=token_hash(session_id),
                    account=name,
                    form_token=form_token,
                    created_at=created,
                    expires_at=expires,
                )
            )
        return OpenedSession(session_id, form_token, expires)

    def session_of(self, session_id: str) -> tuple[LoginAccount, str] | None:
        """The account a live session belongs to, and its form token; None for an unknown or lapsed one."""
        with self._read() as connection:
            row = connection.execute(
                sa.select(account_sessions.c.account, account_sessions.c.form_token).where(
                    account_sessions.c.id_sha256 == token_hash(session_id),
                    account_sessions.c.expires_at > now(),
                )
            ).first()
            if row is None:
                return None
            found = _logins(connection, row.account)
        return (found[0], row.form_token) if found else None

    def close_session(self, session_id: str) -> None:
        with self._write() as connection:
            connection.execute(
                account_sessions.delete().where(account_sessions.c.id_sha256 == token_hash(session_id))
            )

    def workflow_developers(self, workflow: str) -> list[str]:
        """The accounts that are ``workflow``'s developers: those its name belongs to."""
        with self._read() as connection:
            return developers_of(connection, workflow)

    def add_developer(self, workflow: str, account: str, *, by: str | None = None) -> list[str]:
        """Make ``account`` a developer of ``workflow`` (a co-developer: it may publish its versions and ask
        for its quotes); returns the developers. ``by``, the account asking, must be one of its developers
        or an admin (NameOwned otherwise); None is the operator at the command line, who may also give an
        owner to a name that has none. A role needs no login; the ledger's own accounts get none."""
        check_name(account)
        with self._write() as connection:
            refuse_platform_account(connection, account, f"account {account} is given no role")
            developers = developers_of(connection, workflow)
            if by is not None and by not in developers and not is_admin(connection, by):
                raise NameOwned(
                    f"{workflow} belongs to its developers ({', '.join(developers) or 'none yet'}): "
                    f"account {by} may not add its developers; one of them or an admin does",
                    workflow=workflow,
                    account=by,
                    developers=developers,
                )
            opened = sa.select(accounts.c.name).where(accounts.c.name == account)
            if connection.execute(opened).first() is None:
                connection.execute(accounts.insert().values(name=account, kind="user", created_at=now()))
            _add_role(connection, account, "developer", workflow, now())
            return developers_of(connection, workflow)

    def published_workflows(self) -> list[str]:
        """Every workflow with a published version, by name (the pages' workflow list)."""
        query = sa.select(versions.c.workflow).distinct().order_by(versions.c.workflow)
        with self._read() as connection:
            return list(connection.execute(query).scalars())


def developers_of(connection: sa.Connection, workflow: str) -> list[str]:
    """The accounts ``workflow``'s name belongs to (role ``developer`` of it), by name."""
    query = (
        sa.select(account_roles.c.account)
        .where(account_roles.c.role == "developer", account_roles.c.workflow == workflow)
        .order_by(account_roles.c.account)
    )
    return list(connection.execute(query).scalars())


def is_admin(connection: sa.Connection, account: str) -> bool:
    query = sa.select(account_roles.c.account).where(
        account_roles.c.account == account, account_roles.c.role == "admin"
    )
    return connection.execute(query).first() is not None


def _add_role(connection: sa.Connection, account: str, role: str, workflow: str, created: datetime) -> None:
    """The role, unless the account holds it already."""
    held = connection.execute(
        sa.select(account_roles.c.account).where(
            account_roles.c.account == account,
            account_roles.c.role == role,
            account_roles.c.workflow == workflow,
        )
    ).first()
    if held is None:
        connection.execute(
            account_roles.insert().values(account=account, role=role, workflow=workflow, created_at=created)
        )


def _logins(connection: sa.Connection, name: str | None = None) -> list[LoginAccount]:
    query = (
        sa.select(
            account_logins.c.account,
            account_logins.c.created_at,
            account_roles.c.role,
            account_roles.c.workflow,
        )
        .join(accounts, accounts.c.name == account_logins.c.account)
        .outerjoin(account_roles, account_roles.c.account == account_logins.c.account)
        .order_by(account_logins.c.account)
    )
    if name is not None:
        query = query.where(account_logins.c.account == name)
    found: dict[str, tuple[set[str], set[str], datetime]] = {}
    for row in connection.execute(query):
        roles, workflows, _ = found.setdefault(row.account, (set(), set(), row.created_at))
        if row.role is not None:
            roles.add(row.role)
            if row.role == "developer" and row.workflow:
                workflows.add(row.workflow)
    return [
        LoginAccount(n, frozenset(roles), frozenset(workflows), created)
        for n, (roles, workflows, created) in found.items()
    ]
