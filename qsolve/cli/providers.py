"""``qsolve providers ...`` (DESIGN.md §5; issue 12): bring a device, check it, follow its jobs.

    qsolve providers add NAME --http URL [--credential-env VAR] [--timeout S] [--setting K=V ...]
        [--holder ACCOUNT]
    qsolve providers add NAME --process [--credential-env VAR] [--env NAME ...] [--timeout S]
        [--allow-read PATH ...] [--allow-write PATH ...] [--allow-port N ...] [--accept-unconfined NAME]
        [--holder ACCOUNT] -- COMMAND ARG...
    qsolve providers list | remove NAME | describe NAME
    qsolve providers claim NAME [--holder ACCOUNT]
    qsolve providers allow NAME (ACCOUNT | --workflow W) [--account ACTING]
    qsolve providers disallow NAME (ACCOUNT | --workflow W) [--account ACTING]
    qsolve providers follow JOB [--resubmit] [--yes]
    qsolve providers jobs [--provider NAME] [--json]
    qsolve providers cancel JOB
    qsolve providers test NAME [--yes]
    qsolve providers reference --stdio | --http ADDR [--unpriced] [--qubits N] [--basis B] [--connectivity C]

Exit codes: 0 done, 1 a provider or a job failed, 2 misuse or unreadable input. A credential is read
from the environment variable ``--credential-env`` names, once, and kept in the keychain or an
owner-only file: never from the command line, and never printed.

A provider has a holder (issue 33, item 3; docs/providers.md "Who may spend on a provider"): the account
that added it first, on any machine, recorded in the state database (``--holder``, by default the local
operator: ``$QSOLVE_ACCOUNT``, else the login name, as ``qsolve quote``'s payer). Only the holder and
those it allows (``allow``: an account, or ``--workflow W``, that workflow's quotes) get quotes on it;
only the holder or an admin changes that, acting as ``--account``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
SPENDS_HOLDER = (
    "it lets them ask quotes on it; a job that is not free still runs only once you confirm it too "
    "(qsolve confirm QUOTE_ID --account HOLDER)"
)
SPENDS = "can spend money on the provider's account: a job that is not free is sent only with --yes or a yes"


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "providers", help="bring your own device over wai.quantum.provider/1 (docs/providers.md)"
    )
    sub = p.add_subparsers(dest="providers_command", required=True, metavar="COMMAND")

    a = sub.add_parser("add", help="add (or replace) a provider in QSOLVE_HOME/providers.yaml")
    a.add_argument("name", metavar="NAME")
    where = a.add_mutually_exclusive_group(required=True)
    where.add_argument("--http", metavar="URL", help="its endpoint: one URL, POST, JSON")
    where.add_argument("--process", action="store_true", help="a local program: give it after --")
    a.add_argument(
        "--credential-env", metavar="VAR", help="read its credential from this environment variable, once"
    )
    a.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds for each answer (60)")
    a.add_argument("--setting", action="append", default=[], metavar="K=V", help="a non-secret setting")
    a.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this environment variable on to a process provider (a non-secret one of your own; "
        "its credential goes as WAI_PROVIDER_CREDENTIAL, and nothing else of qsolve's environment does)",
    )
    a.add_argument(
        "--allow-read",
        action="append",
        default=[],
        metavar="PATH",
        help="what a process provider's confined program may read besides the runtime and the files its "
        "command names (never QSOLVE_HOME or the keychain)",
    )
    a.add_argument(
        "--allow-write",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or folder (that exists) a process provider's confined program may write; nothing else "
        "is, but a scratch folder of its own (the paths its command names are only read)",
    )
    a.add_argument(
        "--allow-port",
        action="append",
        default=[],
        metavar="N",
        help="a TCP port a process provider's confined program may connect to besides 443 (on any "
        "address); never the state database's or the Prefect API's",
    )
    a.add_argument(
        "--accept-unconfined",
        metavar="NAME",
        help="run this process provider, named again, where the kernel cannot confine its program",
    )
    a.add_argument(
        "--holder",
        metavar="ACCOUNT",
        help="the account that holds it, whose money it spends ($QSOLVE_ACCOUNT, else you); the first to "
        "add a name on any machine holds it",
    )
    a.add_argument("command", nargs="*", metavar="-- COMMAND ARG...")
    a.set_defaults(func=cmd_add)

    x = sub.add_parser(
        "claim", help="record the holder of a provider configured here before holders were recorded"
    )
    x.add_argument("name", metavar="NAME")
    x.add_argument(
        "--holder", metavar="ACCOUNT", help="the account that holds it ($QSOLVE_ACCOUNT, else you)"
    )
    x.set_defaults(func=cmd_claim)
    verbs = {
        "allow": "allow an account, or a workflow's quotes, to spend on a provider you hold",
        "disallow": "take back an allowance: new quotes on the provider are refused",
    }
    for verb, said in verbs.items():
        x = sub.add_parser(verb, help=f"{said}; {SPENDS_HOLDER}" if verb == "allow" else said)
        x.add_argument("name", metavar="NAME")
        x.add_argument("grantee", nargs="?", metavar="ACCOUNT", help="the account")
        x.add_argument("--workflow", metavar="W", help="that workflow's quotes (asked by its developers)")
        x.add_argument(
            "--account",
            metavar="ACTING",
            help="who acts: the provider's holder or an admin ($QSOLVE_ACCOUNT, else you)",
        )
        x.set_defaults(func=cmd_allow if verb == "allow" else cmd_disallow)

    x = sub.add_parser("list", help="the providers, where each is and where its credential is kept")
    x.set_defaults(func=cmd_list)
    x = sub.add_parser("remove", help="remove a provider and its stored credential")
    x.add_argument("name", metavar="NAME")
    x.set_defaults(func=cmd_remove)
    x = sub.add_parser("describe", help="ask a provider to describe its device")
    x.add_argument("name", metavar="NAME")
    x.set_defaults(func=cmd_describe)

    x = sub.add_parser("follow", help=f"read a recorded provider job later, from any process; {SPENDS}")
    x.add_argument("job", metavar="JOB", help="the job's record id (qsolve run and errors print it)")
    x.add_argument("--resubmit", action="store_true", help="send again a job whose submit did not complete")
    x.add_argument("--yes", action="store_true", help="confirm the spend of a resubmitted job, for it only")
    x.set_defaults(func=cmd_follow)

    x = sub.add_parser(
        "jobs", help="the provider jobs recorded here: id, provider, state, created, how to follow each"
    )
    x.add_argument("--provider", metavar="NAME", help="that provider's jobs only")
    x.add_argument("--json", action="store_true", help="one JSON array of the records")
    x.set_defaults(func=cmd_jobs)

    x = sub.add_parser(
        "cancel",
        help="cancel a recorded provider job at its provider (one whose describe says cancels: false "
        "runs on, and is said to)",
    )
    x.add_argument("job", metavar="JOB", help="the job's record id (qsolve run and errors print it)")
    x.set_defaults(func=cmd_cancel)

    x = sub.add_parser("test", help=f"the conformance checker; {SPENDS}")
    x.add_argument("name", metavar="NAME")
    x.add_argument("--yes", action="store_true", help="allow the spend of the checker's jobs, this once")
    x.set_defaults(func=cmd_test)

    x = sub.add_parser(
        "reference", help="the reference provider (qiskit-aer's exact simulator): the template to copy"
    )
    from qsolve.providers.reference_options import add_arguments

    add_arguments(x)
    x.set_defaults(func=cmd_reference, parser=x)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"qsolve providers: {message}", file=sys.stderr)
    return code


def cmd_add(args: argparse.Namespace) -> int:
    from qsolve.providers.credentials import CredentialStore, Secret
    from qsolve.providers.registry import ProviderEntry, Registry, RegistryError, names_userinfo

    command = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else args.command
    if args.process and not command:
        return _fail(
            "--process needs the provider's program after --: providers add NAME --process -- CMD ARG"
        )
    if args.http and command:
        return _fail(f"--http takes no command: {' '.join(command)!r}")
    if args.http and names_userinfo(args.http):  # the URL is not echoed: it holds a password
        return _fail(
            "--http: the URL names a user or a password (user:pass@); a credential goes through "
            "--credential-env VAR, the environment variable that holds it, never in the URL"
        )
    settings = {}
    for item in args.setting:
        key, sep, value = item.partition("=")
        if not sep or not key:
            return _fail(f"--setting {item!r}: give KEY=VALUE")
        settings[key] = value
    if args.credential_env and args.credential_env in args.env:
        return _fail(
            f"--env {args.credential_env}: that is the credential's variable; the credential reaches the "
            "provider as WAI_PROVIDER_CREDENTIAL only"
        )
    if args.env:
        from qsolve.providers.program_env import host_value, host_variable
        from qsolve.providers.registry import known_credential_envs, known_secret_values

        credential_envs = (*([args.credential_env] if args.credential_env else []), *known_credential_envs())
        secret_values = known_secret_values()
        for name in args.env:
            why = host_variable(name, credential_envs)
            if why is None and os.environ.get(name):  # its value is never said
                why = host_value(os.environ[name], secret_values)
            if why:
                return _fail(
                    f"--env {name}: the host's secret or setting is never passed on to a provider: {why}"
                )
    if args.allow_port and not args.process:
        return _fail(
            "--allow-port: only a process provider's program is confined (an http one is reached here)"
        )
    try:
        from qsolve.providers.confined import Refused, check_ports

        ports = check_ports(args.allow_port)
    except Refused as e:
        return _fail(str(e))
    confined = _confinable(args, command, ports) if args.process else None
    if isinstance(confined, int):
        return confined
    secret = None
    if args.credential_env:
        value = os.environ.get(args.credential_env)
        if not value:
            return _fail(f"--credential-env {args.credential_env}: that environment variable is not set")
        secret = Secret(value)
    try:
        entry = ProviderEntry(
            transport="http" if args.http else "process",
            url=args.http,
            command=tuple(command),
            settings=settings,
            timeout_s=args.timeout,
            credential=secret is not None,
            credential_env=args.credential_env if secret is not None else None,
            env=tuple(dict.fromkeys(args.env)),
            allow_read=tuple(dict.fromkeys(args.allow_read)),
            allow_write=tuple(dict.fromkeys(os.path.abspath(p) for p in args.allow_write)),
            allow_port=ports,
            accept_unconfined=bool(confined),
        )
        registry = Registry()
        holder = _hold(args.name, args.holder)  # claimed before anything is written here
        store = CredentialStore(registry.home)
        if secret is not None:
            stored = store.put(args.name, secret)
        else:
            store.remove(args.name)
            stored = None
        registry.put(args.name, entry)
    except _Refused as e:
        return _fail(str(e), EXIT_FAILED)
    except (ValueError, RegistryError) as e:
        return _fail(str(e).splitlines()[0] if "validation error" not in str(e) else _first_error(e))
    print(f"added provider {args.name} ({entry.transport}: {entry.describe_where()}) to {registry.path}")
    print(f"  its holder is {holder}: only {holder} and the accounts it allows get quotes on it")
    print(f"  its credential is in {stored.label}" if stored else "  it has no credential")
    if entry.transport == "process":
        given = ", ".join(("PATH, LANG, LC_*, TZ, a scratch HOME and TMPDIR", *entry.env))
        given += ", WAI_PROVIDER_CREDENTIAL" if stored else ""
        print(f"  its environment: {given}; nothing else")
        print(
            "  it runs NOT CONFINED, as you accepted: " + "; ".join(confined)
            if confined
            else "  it runs confined: its own processes, the runtime, its command's files"
            + "".join(f", {p}" for p in entry.allow_read)
            + "; it writes only its scratch folder"
            + "".join(f", {p}" for p in entry.allow_write)
            + "; it connects over TCP only to port "
            + ", ".join(str(p) for p in sorted({443, *entry.allow_port}))
            + " (UDP is not filtered)"
            + "; never QSOLVE_HOME, the keychain or another provider's credential"
        )
    print(
        f"  next: qsolve providers test {args.name}: its first job is §6's probe (an X on qubit 0, every "
        "qubit measured: its counts all land on …01); jobs run only when free, or with --yes, which can "
        "spend your money on the provider's account"
    )
    return EXIT_OK


def _confinable(args: argparse.Namespace, command: list[str], ports: tuple[int, ...]) -> list[str] | int:
    """What the kernel cannot give the provider's program here (issue 35): nothing, or what the
    operator accepted by naming the provider again (``--accept-unconfined NAME``); else the refusal."""
    from qsolve.home import qsolve_home
    from qsolve.providers import confined as program

    if args.accept_unconfined is not None and args.accept_unconfined != args.name:
        return _fail(f"--accept-unconfined {args.accept_unconfined}: name the provider itself, {args.name}")
    try:
        for path in args.allow_write:
            if not os.path.lexists(path):
                return _fail(f"--allow-write {path}: it does not exist; make it first (nothing is made)")
        tcp = sorted({*program.PORTS, *ports})
        missing = program.probe(command, args.allow_read, qsolve_home(), args.allow_write, tcp)
    except (program.Refused, OSError) as e:
        return _fail(str(e) if isinstance(e, program.Refused) else f"cannot confine it: {e}")
    if missing and args.accept_unconfined is None:
        return _fail(
            f"the kernel cannot confine provider {args.name}'s program here ({'; '.join(missing)}): it would "
            f"see what you see; add it with --accept-unconfined {args.name} to run it so anyway",
            EXIT_FAILED,
        )
    return missing


class _Refused(Exception):
    """A holding or an allowance the state database refused: its message names the rule and the holder."""


def _hold(name: str, holder: str | None) -> str:
    """Claim ``name`` for ``holder`` (the local operator by default) in the state database; _Refused when
    another account holds it."""
    from qsolve.home import local_account
    from qsolve.providers.credentials import NAME_RE
    from qsolve_pipeline.storage.state import ProviderHeld, connect
    from qsolve_pipeline.storage.state._accounts import check_name

    holder = local_account(holder)
    check_name(holder)
    if not NAME_RE.match(name):
        raise ValueError(
            f"{name!r} is not a provider name: lower-case letters, digits, '-' and '_', at most 63"
        )
    with connect() as db:
        try:
            db.hold_provider(name, holder)
        except ProviderHeld as e:
            raise _Refused(str(e)) from None
    return holder


def _first_error(e: Exception) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(x) for x in first['loc']) or 'provider'}: {first['msg']}"
    return str(e)


def cmd_list(args: argparse.Namespace) -> int:
    from qsolve.providers.credentials import CredentialStore
    from qsolve.providers.registry import Registry, RegistryError

    registry = Registry()
    try:
        entries = registry.load()
    except RegistryError as e:
        return _fail(str(e))
    if not entries:
        print(f"no providers in {registry.path}: qsolve providers add NAME --http URL | --process -- CMD")
        return EXIT_OK
    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        held = db.provider_holdings(list(entries))
    store = CredentialStore(registry.home)
    for name, entry in entries.items():
        where = store.where(name) if entry.credential else None
        kept = where.label if where else ("MISSING: add it again" if entry.credential else "no credential")
        print(f"{name}  {entry.transport}  {entry.describe_where()}  credential: {kept}")
        if (h := held.get(name)) is not None:
            print(f"  holder: {h.holder}; allowed: {h.allowed()}")
        else:
            print(f"  holder: none recorded: no quote is taken on it (qsolve providers claim {name})")
    return EXIT_OK


def cmd_claim(args: argparse.Namespace) -> int:
    from qsolve.providers.registry import Registry, RegistryError

    registry = Registry()
    try:
        if args.name not in registry.load():
            return _fail(
                f"no provider named {args.name!r} in {registry.path}: claim it where it is configured"
            )
        holder = _hold(args.name, args.holder)
    except _Refused as e:
        return _fail(str(e), EXIT_FAILED)
    except (ValueError, RegistryError) as e:
        return _fail(str(e))
    print(f"provider {args.name} is held by {holder}")
    return EXIT_OK


def _allowance(args: argparse.Namespace) -> tuple[str, dict[str, str]] | int:
    from qsolve.home import local_account

    if (args.grantee is None) == (args.workflow is None):
        return _fail(f"providers {args.providers_command}: give one ACCOUNT or one --workflow W")
    named = {"account": args.grantee} if args.grantee is not None else {"workflow": args.workflow}
    return local_account(args.account), named


def _change(args: argparse.Namespace, allow: bool) -> int:
    from qsolve_pipeline.storage.state import NotFound, ProviderNotAllowed, connect

    got = _allowance(args)
    if isinstance(got, int):
        return got
    acting, named = got
    whom = f"account {named['account']}" if "account" in named else f"workflow {named['workflow']}'s quotes"
    with connect() as db:
        try:
            if allow:
                changed = db.allow_provider(args.name, acting, **named)
            else:
                changed = db.disallow_provider(args.name, acting, **named)
        except (NotFound, ProviderNotAllowed) as e:
            return _fail(str(e), EXIT_FAILED)
    if allow:
        print(f"{acting} allowed {whom} on provider {args.name}" + ("" if changed else " (it was already)"))
        print(f"  {SPENDS_HOLDER}")
    else:
        said = f"{acting} took back {whom}'s allowance on provider {args.name}"
        print(said if changed else f"{whom} was not allowed on provider {args.name}: nothing changed")
    return EXIT_OK


def cmd_allow(args: argparse.Namespace) -> int:
    return _change(args, allow=True)


def cmd_disallow(args: argparse.Namespace) -> int:
    return _change(args, allow=False)


def cmd_remove(args: argparse.Namespace) -> int:
    from qsolve.providers.credentials import CredentialStore
    from qsolve.providers.registry import Registry

    registry = Registry()
    removed = registry.remove(args.name)
    CredentialStore(registry.home).remove(args.name)
    if not removed:
        return _fail(f"no provider named {args.name!r} in {registry.path}")
    print(f"removed provider {args.name} and its stored credential")
    return EXIT_OK


def cmd_describe(args: argparse.Namespace) -> int:
    from qsolve.providers.errors import ProviderError
    from qsolve.providers.registry import RegistryError
    from qsolve_pipeline.storage.sessions import opened

    try:
        client, _ = opened(args.name)
    except RegistryError as e:
        return _fail(str(e))
    except ProviderError as e:
        return _fail(str(e), EXIT_FAILED)
    try:
        described = client.describe()
    except ProviderError as e:
        return _fail(str(e), EXIT_FAILED)
    finally:
        client.close()
    print(json.dumps(described.model_dump(mode="json", exclude_none=True), indent=2))
    return EXIT_OK


def cmd_follow(args: argparse.Namespace) -> int:
    from qsolve.providers.errors import ProviderError
    from qsolve.providers.jobs import JobStopped
    from qsolve.providers.registry import RegistryError
    from qsolve_pipeline.storage.sessions import provider_session
    from qsolve_pipeline.storage.state import NotFound, connect

    with connect() as db:
        try:
            job = db.get_provider_job(args.job)
        except NotFound as e:
            return _fail(str(e))
    if job.status in ("done", "failed", "cancelled"):
        from qsolve.errors import shown
        from qsolve.providers.errors import job_shown

        print(f"provider job {job.id} ({job.provider}, its id {job_shown(job.job)}): {job.status}")
        if job.error:
            print(f"  {shown(job.error)}")
        if job.receipt:
            from qsolve_pipeline.storage.blobs import BlobStore
            from qsolve_pipeline.storage.state import qsolve_home

            print(f"  receipt: {BlobStore(qsolve_home()).where(job.receipt)} (qsolve verify it)")
        return EXIT_OK if job.status == "done" else EXIT_FAILED
    if _is_ibm(job):
        return _follow_ibm(job)
    try:
        s = provider_session(job.provider, yes=args.yes, run_id=job.run_id)
    except RegistryError as e:
        return _fail(str(e))
    try:
        if job.status == "recorded":
            return _fail(f"provider job {job.id} was recorded and never sent: nothing to follow", EXIT_FAILED)
        if job.status == "submitting":
            if not args.resubmit:
                return _fail(
                    f"provider job {job.id}: its submit did not complete, so {job.provider} may have taken "
                    "(and billed) it; nothing was sent again. --resubmit sends it again "
                    "(with --yes for a job that is not free)",
                    EXIT_FAILED,
                )
            free = bool(job.context.get("cost", {}).get("free"))
            if not free and not s.confirmation.confirm(f"provider {job.provider}: send job {job.id} again?"):
                return _fail("not confirmed: nothing was sent", EXIT_FAILED)
            sealed = s.submit_again(job.id)
        else:
            sealed = s.follow(job.id)
    except (JobStopped, ProviderError) as e:
        return _fail(str(e), EXIT_FAILED)
    finally:
        s.close()
    print(f"provider job {job.id}: done; receipt {sealed.path}")
    return EXIT_OK


def cmd_jobs(args: argparse.Namespace) -> int:
    """Every provider job the state database records (oldest first), each with the command that follows
    it: what Ctrl-C, a time-out or a submit that did not complete leave for later."""
    from qsolve_pipeline.storage.state import connect

    with connect() as db:
        jobs = db.list_provider_jobs(args.provider)
    rows = [
        {
            "id": job.id,
            "provider": job.provider,
            "state": str(getattr(job.status, "value", job.status)),
            "created": job.created_at.isoformat(timespec="seconds"),
            "job": job.job,
            "follow": f"qsolve providers follow {job.id}",
        }
        for job in jobs
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        whose = f" of provider {args.provider}" if args.provider else ""
        print(f"no provider job{whose} is recorded here")
        return EXIT_OK
    width = max(len("PROVIDER"), *(len(r["provider"]) for r in rows))
    print(f"{'RECORD':32}  {'PROVIDER':{width}}  {'STATE':10}  {'CREATED':25}  FOLLOW")
    for r in rows:
        print(f"{r['id']:32}  {r['provider']:{width}}  {r['state']:10}  {r['created']:25}  {r['follow']}")
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    """Pass a cancel on to the job's provider (qsolve.targets.cancel): 0 when its device no longer runs
    it (cancelled, or it had ended), 1 when it may still (it cannot be cancelled, or the cancel failed)."""
    from qsolve.targets.cancel import cancel_job
    from qsolve_pipeline.storage.state import NotFound, connect

    with connect() as db:
        try:
            db.get_provider_job(args.job)
        except NotFound as e:
            return _fail(str(e))
        done = cancel_job(db, args.job)
    print(done.line, file=sys.stdout if done.stopped else sys.stderr)
    return EXIT_OK if done.stopped else EXIT_FAILED


def _is_ibm(job: Any) -> bool:
    """A job the ``ibm:`` target recorded (provider ``ibm``, its context a ``sampler-v2`` one): IBM's own
    client follows it, not a wai.quantum.provider/1 session (a provider someone named ``ibm`` in
    providers.yaml records its jobs as ``http`` or ``process``)."""
    from qsolve.targets.ibm.names import KIND, PROVIDER

    return job.provider == PROVIDER and job.context.get("kind") == KIND


def _follow_ibm(job: Any) -> int:
    """An IBM Quantum job followed and sealed as ``python -m qsolve.targets.ibm collect`` does it: the
    record's device and settings, the person's key; nothing is ever sent again from here."""
    from qsolve.errors import QsolveError
    from qsolve.home import qsolve_home
    from qsolve.targets.ibm import collect
    from qsolve_pipeline.storage.sessions import keeper
    from qsolve_pipeline.storage.state import connect

    if job.status == "recorded":
        return _fail(f"provider job {job.id} was recorded and never sent: nothing to follow", EXIT_FAILED)
    if job.status == "submitting":
        return _fail(
            f"provider job {job.id}: its submit to IBM Quantum did not complete, so IBM may have taken (and "
            "billed) it; nothing was sent again, and an IBM job is never sent again from here (--resubmit "
            "is for wai.quantum.provider/1 jobs): look for it among the instance's jobs at IBM Quantum",
            EXIT_FAILED,
        )
    try:
        with connect() as db:
            sealed = collect(job.id, book=db, keep=keeper(qsolve_home(), db))
    except QsolveError as e:
        return _fail(str(e), EXIT_FAILED)
    print(f"provider job {job.id}: done; receipt {sealed.path}")
    return EXIT_OK


def cmd_test(args: argparse.Namespace) -> int:
    from qsolve.providers.conformance import run_checks

    return run_checks(args.name, yes=args.yes)


def cmd_reference(args: argparse.Namespace) -> int:
    from qsolve.providers.reference import serve

    return serve(args, args.parser)
