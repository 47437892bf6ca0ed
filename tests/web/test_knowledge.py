"""The Knowledge page (issue 16, item 5) with the test client: the tasks and their references, the
prompt preview (the same prompts ``qsolve knowledge preview`` prints), the example figures, the draft
upload for editors, and every zip that breaks a draft rule refused by name with nothing stored."""

from __future__ import annotations

import hashlib
import io
import re
import stat
import zipfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from qsolve.evaluation.drafts import DraftStore, task_archive
from tests.qsolve.evaluation.test_drafts import TASK_MD, build, info, nothing_stored
from tests.web.test_evaluations import cli_json, esc, part

KNOWLEDGE = Path(__file__).resolve().parents[2] / "task-knowledge"
TASKS = sorted(p.name for p in KNOWLEDGE.iterdir() if (p / "task.md").is_file())
EDITED = TASK_MD.replace(b"at least 15 points", b"at least 20 points")


@pytest.fixture(autouse=True)
def _published_knowledge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QSOLVE_TASK_KNOWLEDGE", "QSOLVE_EVALUATION_CONFIG", "QCALEVAL_MODEL"):
        monkeypatch.delenv(name, raising=False)


def edited_zip() -> bytes:
    """CheckT1 with its SUCCESS criterion edited (20 points, not 15), and one example."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(info("CheckT1/task.md"), EDITED)
        for example in ("01-success.md", "01-success.png"):
            zf.writestr(
                info(f"CheckT1/examples/{example}"), (KNOWLEDGE / "CheckT1/examples" / example).read_bytes()
            )
    return buffer.getvalue()


def upload(client, token: str | None, data: bytes, name: str = "CheckT1-edit.zip", task: str = "CheckT1"):
    form = {"task": task} | ({"_token": token} if token is not None else {})
    return client.post("/knowledge/drafts", data=form, files={"file": (name, data, "application/zip")})


@pytest.fixture
def editor(client, make_account, login, form_token) -> str:
    login(client, "eddie", make_account("eddie", "editor"))
    return form_token(client)


# --- reading -----------------------------------------------------------------------------------------


def test_the_knowledge_page_lists_every_task_with_its_reference(client, capsys) -> None:
    page = client.get("/knowledge")
    assert page.status_code == 200
    for task in TASKS:
        ref = cli_json(capsys, "knowledge", "reference", str(KNOWLEDGE / task))
        row = part(page.text, "data-task", task)
        assert f"{ref['knowledge_chars']} characters" in row and ref["knowledge_sha256"][:16] in row
        assert f'href="/knowledge/{task}"' in row and f'href="/knowledge/{task}/archive"' in row
    assert "No drafts yet" in page.text and "as an editor to drop a knowledge draft" in page.text


@pytest.mark.parametrize("with_examples", [False, True])
def test_the_preview_is_the_six_prompts_the_command_line_prints(client, capsys, with_examples: bool) -> None:
    query = "?with_examples=true" if with_examples else ""
    page = client.get(f"/knowledge/CheckT1{query}")
    assert page.status_code == 200
    flags = ["--with-examples"] if with_examples else []
    cli = cli_json(capsys, "knowledge", "preview", str(KNOWLEDGE / "CheckT1"), *flags)
    meta = part(page.text, "id", "preview-meta", "dl")
    assert cli["knowledge_sha256"] in meta and f"{cli['knowledge_chars']} characters" in meta
    assert cli["model"] in meta  # the model that would judge, chosen as an evaluation chooses it
    assert len(cli["prompts"]) == 6
    for key, text in cli["prompts"].items():
        assert esc(text) in part(page.text, "data-question", key, "details")
        assert "[figure]" in text
    used = [e["id"] for e in cli["examples"]]
    assert bool(used) == with_examples
    for e in cli["examples"]:
        assert f"{e['id']} ({', '.join(e['questions'])})" in meta
        figure = client.get(f"/knowledge/CheckT1/examples/{e['figure_sha256']}")
        assert figure.status_code == 200 and figure.headers["content-type"] == "image/png"
        assert hashlib.sha256(figure.content).hexdigest() == e["figure_sha256"]
    criteria = part(page.text, "id", "criteria", "table")
    ref = cli_json(capsys, "knowledge", "reference", str(KNOWLEDGE / "CheckT1"))
    assert [esc(c) for c in re.findall(r"<code>([A-Z_]+)</code>", criteria)] == list(ref["criteria"])


def test_the_significance_question_takes_one_more_point(client, capsys) -> None:
    page = client.get("/knowledge/CheckT1", params={"question": "Is T1 <stable> across the day?"})
    cli = cli_json(
        capsys,
        "knowledge",
        "preview",
        str(KNOWLEDGE / "CheckT1"),
        "--question",
        "Is T1 <stable> across the day?",
    )
    shown = part(page.text, "data-question", "experimental_significance", "details")
    assert esc(cli["prompts"]["experimental_significance"]) in shown and esc("<stable>") in shown
    assert client.get("/knowledge/CheckT1", params={"question": "x" * 1001}).status_code == 422


def test_the_published_directory_downloads_as_the_zip_a_draft_starts_from(client) -> None:
    got = client.get("/knowledge/CheckT1/archive")
    assert got.status_code == 200 and got.headers["content-type"] == "application/zip"
    assert got.content == task_archive(KNOWLEDGE / "CheckT1")
    assert 'filename="CheckT1.zip"' in got.headers["content-disposition"]


@pytest.mark.parametrize(
    "path", ["/knowledge/NoSuchTask", "/knowledge/..%2F..%2Fetc", "/knowledge/NoSuchTask/archive"]
)
def test_a_task_that_is_not_in_the_knowledge_is_a_404(client, path: str) -> None:
    got = client.get(path)
    assert got.status_code == 404


def test_an_example_figure_is_served_only_by_its_hash_among_the_examples(client) -> None:
    assert client.get(f"/knowledge/CheckT1/examples/{'a' * 64}").status_code == 404
    assert client.get("/knowledge/CheckT1/examples/..%2Ftask.md").status_code == 404


# --- drafts ------------------------------------------------------------------------------------------


def test_an_editor_drops_a_draft_and_sees_its_prompts(client, editor, home, capsys) -> None:
    page = client.get("/knowledge/CheckT1").text
    assert 'action="/knowledge/drafts"' in page and 'enctype="multipart/form-data"' in page
    data = edited_zip()
    got = upload(client, editor, data)
    assert got.status_code == 303
    where = urlsplit(got.headers["location"])
    assert where.path == "/knowledge/CheckT1"
    assert parse_qs(where.query) == {"draft": [hashlib.sha256(data).hexdigest()], "stored": ["1"]}
    shown = client.get(got.headers["location"])
    assert shown.status_code == 200 and "Draft stored" in shown.text
    draft = DraftStore(home).get(hashlib.sha256(data).hexdigest())
    assert draft.uploader == "eddie" and draft.file_name == "CheckT1-edit.zip"
    cli = cli_json(capsys, "knowledge", "preview", "--draft", draft.id)
    published = cli_json(capsys, "knowledge", "preview", str(KNOWLEDGE / "CheckT1"))
    assert cli["knowledge_sha256"] != published["knowledge_sha256"]
    meta = part(shown.text, "id", "preview-meta", "dl")
    assert cli["knowledge_sha256"] in meta and draft.id in meta
    for key, text in cli["prompts"].items():
        assert esc(text) in part(shown.text, "data-question", key, "details")
    assert "at least 20 points" in part(shown.text, "id", "criteria", "table")
    # the published knowledge is unchanged, and lists the draft
    plain = client.get("/knowledge/CheckT1").text
    assert published["knowledge_sha256"] in plain and "at least 15 points" in plain
    assert f'href="/knowledge/CheckT1?draft={draft.id}"' in plain
    again = upload(client, editor, data, name="other-name.zip")
    assert parse_qs(urlsplit(again.headers["location"]).query)["stored"] == ["0"]
    assert "already stored as this draft, unchanged" in client.get(again.headers["location"]).text
    archive = client.get(f"/knowledge/drafts/{draft.id}/archive")
    assert archive.status_code == 200 and archive.content == data  # byte for byte
    assert 'filename="CheckT1-edit.zip"' in archive.headers["content-disposition"]
    listed = part(client.get("/knowledge").text, "data-draft", draft.id)
    assert "CheckT1-edit.zip" in listed and "eddie" in listed


def test_a_draft_of_another_task_is_shown_under_its_own_task_and_refused_under_another(
    client, editor
) -> None:
    rabi = task_archive(KNOWLEDGE / "CheckRabi")
    got = upload(client, editor, rabi, name="CheckRabi.zip", task="CheckT1")
    assert got.status_code == 303
    where = urlsplit(got.headers["location"])
    assert where.path == "/knowledge/CheckRabi" and parse_qs(where.query)["dropped_on"] == ["CheckT1"]
    assert "It is a draft of CheckRabi, not of CheckT1" in client.get(got.headers["location"]).text
    draft_id = hashlib.sha256(rabi).hexdigest()
    wrong = client.get(f"/knowledge/CheckT1?draft={draft_id}")
    assert wrong.status_code == 409 and "is a draft of CheckRabi, not of CheckT1" in wrong.text


LINK = info("CheckT1/examples/x.md", mode=stat.S_IFLNK | 0o777)
BROKEN = [  # (the zip, the rule's words, the entry named)
    (
        build(("CheckT1/../../escape.md", b"x")),
        "'..' in its path, a path outside the task directory",
        "CheckT1/../../escape.md",
    ),
    (
        build(("CheckT1/run.py", b"import os")),
        "a .py file; a draft holds only .md, .png, .jpg, .jpeg and .webp files",
        "CheckT1/run.py",
    ),
    (
        build((LINK, b"/etc/passwd")),
        "a symbolic link (its external attributes say so)",
        "CheckT1/examples/x.md",
    ),
    (
        build(("CheckRabi/task.md", b"# CheckRabi\n")),
        "a second top folder 'CheckRabi' beside 'CheckT1'",
        "CheckRabi/task.md",
    ),
    (b"PK\x03\x04 this is not a zip", "not a zip file, or a corrupt one", None),
]


@pytest.mark.parametrize(
    ("data", "words", "entry"), BROKEN, ids=["dotdot", "python", "link", "two-tasks", "no-zip"]
)
def test_a_zip_that_breaks_a_draft_rule_is_a_422_naming_it_and_nothing_is_stored(
    client, editor, home, data: bytes, words: str, entry: str | None
) -> None:
    got = upload(client, editor, data, name="attack.zip")
    assert got.status_code == 422
    assert esc(words) in got.text and "draft refused" in got.text and "nothing was stored" in got.text
    if entry is not None:
        assert esc(f"entry: {entry}") in got.text
    assert nothing_stored(DraftStore(home))
    assert "No drafts yet" in client.get("/knowledge").text


def test_no_zip_is_a_422(client, editor, home) -> None:
    got = client.post("/knowledge/drafts", data={"_token": editor, "task": "CheckT1"})
    assert got.status_code == 422 and nothing_stored(DraftStore(home))


@pytest.mark.parametrize(
    ("who", "roles", "token", "status"),
    [
        (None, (), None, 401),  # nobody logged in
        ("rita", ("reviewer",), "page", 403),  # not an editor
        ("eddie", ("editor",), None, 403),  # no form token
        ("eddie", ("editor",), "forged-token", 403),  # another token
    ],
)
def test_no_draft_without_an_editor_and_the_pages_own_token(
    client, home, make_account, login, form_token, who, roles, token, status
) -> None:
    if who is not None:
        login(client, who, make_account(who, *roles))
        if token == "page":
            token = form_token(client)
    got = upload(client, token, edited_zip())
    assert got.status_code == status and nothing_stored(DraftStore(home))


def test_a_wrong_draft_id_is_a_404_that_shows_no_server_folder(client, home) -> None:
    malformed = client.get("/knowledge/CheckT1?draft=abc")
    assert malformed.status_code == 404 and "is not a draft id" in malformed.text
    unknown = client.get(f"/knowledge/CheckT1?draft={'0' * 64}")
    assert unknown.status_code == 404 and f"no knowledge draft {'0' * 64}" in unknown.text
    assert str(home) not in unknown.text
    assert client.get(f"/knowledge/drafts/{'0' * 64}/archive").status_code == 404


def test_an_uploaded_file_name_never_breaks_out_of_the_download_header(client, editor, home) -> None:
    data = edited_zip()
    got = upload(client, editor, data, name='evil";\r\nSet-Cookie: pwned=1;.zip')
    assert got.status_code == 303
    archive = client.get(f"/knowledge/drafts/{hashlib.sha256(data).hexdigest()}/archive")
    assert archive.status_code == 200 and "set-cookie" not in archive.headers
    disposition = archive.headers["content-disposition"]
    assert "\r" not in disposition and "\n" not in disposition
    assert re.fullmatch(
        r"attachment; filename=\"[A-Za-z0-9._-]+\"; filename\*=UTF-8''[A-Za-z0-9%._~-]+", disposition
    )
