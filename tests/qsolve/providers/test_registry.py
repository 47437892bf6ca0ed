"""providers.yaml: entries checked, written whole, errors naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from qsolve.providers.registry import ProviderEntry, Registry, RegistryError


def test_entries_round_trip_and_say_nothing_secret(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.put("ref", ProviderEntry(transport="process", command=("python", "-m", "ref", "--stdio")))
    registry.put("lab", ProviderEntry(transport="http", url="https://lab.example/wai", credential=True))
    assert registry.load() == {
        "lab": ProviderEntry(transport="http", url="https://lab.example/wai", credential=True),
        "ref": ProviderEntry(transport="process", command=("python", "-m", "ref", "--stdio")),
    }
    assert registry.remove("ref") and not registry.remove("ref")
    assert list(registry.load()) == ["lab"]
    assert [p.name for p in tmp_path.iterdir()] == ["providers.yaml"]


def test_a_credential_over_plain_http_goes_only_to_this_machine() -> None:
    with pytest.raises(ValueError, match="a credential goes over https:// only, or to this machine"):
        ProviderEntry(transport="http", url="http://lab.example/wai", credential=True)
    for url in ("http://127.0.0.1:8080/", "http://localhost/", "http://[::1]:9/"):
        assert ProviderEntry(transport="http", url=url, credential=True).url == url


def test_a_bad_entry_names_the_file_and_the_key(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text("providers:\n  ref:\n    transport: process\n    colour: red\n")
    with pytest.raises(RegistryError, match=r"providers.yaml: providers.ref.colour: Extra inputs"):
        Registry(tmp_path).load()
    (tmp_path / "providers.yaml").write_text("providers: [1, 2]\n")
    with pytest.raises(RegistryError, match="not a mapping of names to providers"):
        Registry(tmp_path).load()


def test_an_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    Registry(tmp_path).put("ref", ProviderEntry(transport="process", command=("x",)))
    with pytest.raises(RegistryError, match="no provider named 'lab' .*; known: ref"):
        Registry(tmp_path).get("lab")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://lab.example/wai", "https://lab.example/wai"),
        ("http://TOKEN@127.0.0.1:9/", "http://[credential redacted]@127.0.0.1:9/"),
        ("http://u:PW@h/x?api_key=KEY&region=eu#KEY",
         "http://[credential redacted]@h/x?api_key=[hidden]&region=[hidden]#[hidden]"),
        ("http:u:PW@127.0.0.1:9/", "http:[credential redacted]@127.0.0.1:9/"),
        ("http:\\\\u:PW@127.0.0.1:9/", "http:\\\\[credential redacted]@127.0.0.1:9/"),
        ("http://h/?KEY", "http://h/?[hidden]"),
        ("http://h/users/a@b", "http://h/users/a@b"),
        ("http://h/\x1b[2J", "http://h/\\x1b[2J"),
    ],
)  # fmt: skip
def test_a_url_is_printed_without_its_userinfo_query_values_or_fragment(url: str, shown: str) -> None:
    """§1: a credential never in an answer the host prints: a user alone may be a token, a query a key."""
    from qsolve.providers.registry import names_userinfo, shown_url

    assert shown_url(url) == shown
    assert names_userinfo(url) == ("@" in url.split("/users/")[0])


def test_a_file_that_is_not_yaml_names_the_line_and_column_and_quotes_nothing(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text("providers:\n  lab: {url: 'http://u:PW@h/' transport: http}\n")
    with pytest.raises(RegistryError) as e:
        Registry(tmp_path).load()
    assert str(e.value) == f"{tmp_path / 'providers.yaml'}: not YAML (line 2, column 31)"
