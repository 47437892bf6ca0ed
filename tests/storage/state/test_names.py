"""A workflow name belongs to its developers and its versions only go up (issue 33, items 1 and 5), as a
second account acts: it cannot take a published name with a lower version, cannot publish a higher one,
and two first publications at once give the name to exactly one account. The ledger's own accounts get
no login, no role and no name. Both backends."""

from __future__ import annotations

import pytest

from qsolve_pipeline.storage.state import (
    NameOwned,
    PlatformAccount,
    StateDB,
    VersionConflict,
    VersionOrder,
    connect,
)
from tests.storage.state.conftest import default_settings
from tests.storage.state.test_concurrency import _url, race

D1, D2, D3 = "a" * 64, "b" * 64, "c" * 64


def test_the_first_publication_makes_its_account_a_developer_and_records_who_published(db: StateDB) -> None:
    version, created = db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    assert created and version.account == "dev1"
    assert db.workflow_developers("hwflow") == ["dev1"]
    assert db.get_version("hwflow").account == "dev1"


def test_a_second_account_cannot_squat_a_published_name_with_a_lower_version(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    with pytest.raises(NameOwned) as refused:
        db.publish_version("hwflow", "0.0.1", D2, [], account="mallory")
    said = str(refused.value)
    assert "hwflow belongs to its developers (dev1): account mallory may not publish it" in said
    assert "qsolve accounts developer add" in said and "\n" not in said
    assert refused.value.developers == ["dev1"]
    current = db.get_version("hwflow")
    assert (current.version, current.digest, current.account) == ("1.0.0", D1, "dev1")
    with pytest.raises(NameOwned):  # nor a higher one, nor the same content again
        db.publish_version("hwflow", "9.0.0", D2, [], account="mallory")
    with pytest.raises(NameOwned):
        db.publish_version("hwflow", "1.0.0", D1, [], account="mallory")
    assert db.workflow_developers("hwflow") == ["dev1"]


def test_a_developer_publishes_higher_versions_and_a_co_developer_too(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    assert db.publish_version("hwflow", "1.1.0", D2, [], account="dev1")[1]
    with pytest.raises(NameOwned, match="may not add its developers"):
        db.add_developer("hwflow", "mallory", by="mallory")
    assert db.add_developer("hwflow", "dev2", by="dev1") == ["dev1", "dev2"]
    version, created = db.publish_version("hwflow", "2.0.0", D3, [], account="dev2")
    assert created and version.account == "dev2"
    assert db.get_version("hwflow").version == "2.0.0"


def test_an_admin_publishes_any_name_without_becoming_its_developer(db: StateDB) -> None:
    db.add_login("ann", ["admin"])
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    assert db.publish_version("hwflow", "1.0.1", D2, [], account="ann")[0].account == "ann"
    assert db.workflow_developers("hwflow") == ["dev1"]
    assert db.add_developer("hwflow", "dev2", by="ann") == ["dev1", "dev2"]


def test_versions_only_go_up_by_semantic_versioning(db: StateDB) -> None:
    db.publish_version("hwflow", "1.10.0", D1, [], account="dev1")
    for lower in ("1.9.9", "1.10.0-rc.1", "1.10.0+build.2"):  # lower, a pre-release of it, equal
        with pytest.raises(VersionOrder, match="is not above 1.10.0, its highest published version"):
            db.publish_version("hwflow", lower, D2, [], account="dev1")
    with pytest.raises(VersionConflict, match="already published with other content"):
        db.publish_version("hwflow", "1.10.0", D2, [], account="dev1")
    assert db.publish_version("hwflow", "1.10.0", D1, [], account="dev1") == (db.get_version("hwflow"), False)
    with pytest.raises(VersionOrder, match="not a semantic version: publish MAJOR.MINOR.PATCH"):
        db.publish_version("hwflow", "2.0", D2, [], account="dev1")
    db.publish_version("hwflow", "2.0.0-alpha", D2, [], account="dev1")
    db.publish_version("hwflow", "2.0.0-alpha.1", D3, [], account="dev1")
    db.publish_version("hwflow", "2.0.0", "e" * 64, [], account="dev1")
    assert db.get_version("hwflow").version == "2.0.0"


def test_the_latest_version_is_the_highest_not_the_last_in_time(db: StateDB) -> None:
    """Versions published before the rule (written straight, as an older qsolve did) in any order: the
    highest is current; a non-semantic legacy version ranks below every semantic one."""
    import sqlalchemy as sa

    from qsolve_pipeline.storage.state._rows import now
    from qsolve_pipeline.storage.state._tables import versions, workflows

    with db.engine.begin() as connection:
        connection.execute(workflows.insert().values(name="old", created_at=now()))
        for v in ("2.0.0", "10.0.0", "1.0.1", "beta"):
            connection.execute(
                versions.insert().values(
                    workflow="old", version=v, digest=v, published_at=now(), hardware_cases=[]
                )
            )
        assert connection.execute(sa.select(sa.func.count()).select_from(versions)).scalar() == 4
    assert db.get_version("old").version == "10.0.0"
    db.add_login("ann", ["admin"])
    with pytest.raises(NameOwned, match="has no developer .*only an admin may publish it"):
        db.publish_version("old", "11.0.0", D1, [], account="mallory")
    with pytest.raises(VersionOrder):
        db.publish_version("old", "3.0.0", D1, [], account="ann")
    db.publish_version("old", "11.0.0", D1, [], account="ann")  # an admin takes an ownerless name
    assert db.workflow_developers("old") == ["ann"]


def test_a_developer_named_before_the_first_publication_owns_the_name(db: StateDB) -> None:
    db.add_login("dev1", ["developer"], ["hwflow"])  # the operator gives dev1 the name first
    with pytest.raises(NameOwned, match=r"\(dev1\)"):
        db.publish_version("hwflow", "1.0.0", D1, [], account="mallory")
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    assert db.get_login("dev1").workflows == {"hwflow"}


def test_a_login_for_a_developer_by_publication_keeps_its_role(db: StateDB) -> None:
    db.publish_version("hwflow", "1.0.0", D1, [], account="dev1")
    db.add_login("dev1", ["developer"], ["hwflow", "other"])
    assert db.get_login("dev1").workflows == {"hwflow", "other"}


def test_the_ledgers_own_accounts_get_no_login_no_role_and_no_name(db: StateDB) -> None:
    for name in ("system",):
        with pytest.raises(PlatformAccount, match="one of the ledger's own accounts, which act for nobody"):
            db.add_login(name, ["developer"], ["victim"])
        with pytest.raises(PlatformAccount):
            db.add_login(name, ["admin"])
        with pytest.raises(PlatformAccount):
            db.add_developer("victim", name)
        with pytest.raises(PlatformAccount):
            db.publish_version("victim", "1.0.0", D1, [], account=name)
    assert db.list_logins() == [] and db.workflow_developers("victim") == []


def publish_first(barrier, url: str, account: str) -> str:
    with connect(url, settings=default_settings()) as db:
        barrier.wait(timeout=60)
        try:
            db.publish_version("fresh", "1.0.0", account.ljust(64, "0"), [], account=account)
        except NameOwned as e:
            return f"refused: {e.developers}"
        return "published"


def test_two_first_publications_of_a_new_name_at_once_give_it_to_exactly_one(db: StateDB) -> None:
    url = _url(db)
    for round_ in range(3):
        name = ["dev-a", "dev-b", "dev-c"]
        if round_:
            with db.engine.begin() as connection:  # start again from a name never published
                from qsolve_pipeline.storage.state._tables import account_roles, versions, workflows

                connection.execute(versions.delete().where(versions.c.workflow == "fresh"))
                connection.execute(account_roles.delete().where(account_roles.c.workflow == "fresh"))
                connection.execute(workflows.delete().where(workflows.c.name == "fresh"))
        outcomes = race([(publish_first, (url, account)) for account in name])
        owners = db.workflow_developers("fresh")
        assert len(owners) == 1 and outcomes.count("published") == 1, outcomes
        assert outcomes[name.index(owners[0])] == "published"
        assert all(o == f"refused: {owners}" for o in outcomes if o != "published")
        assert db.get_version("fresh").account == owners[0]
