"""Where the shared files live (DESIGN.md §6, §7; issue 26): a folder under ``QSOLVE_HOME``, or an
S3-compatible object store named by ``QSOLVE_STORAGE_URL=s3://BUCKET/PREFIX``. The one seam the blobs
(``storage.blobs``) and the track record's files (``storage.trackrecord.shared``) both write through.

    ObjectStore   the interface: create (never overwrites), get (bounded), get_range, head, listing,
                  delete
    ObjectTooLarge  an object larger than its reader's bound: one line, the object never held
    LocalFolder   a folder: whole files (a temporary file, fsync, a hard link: never over another)
    S3Objects     S3 through obstore: a create is a PUT with ``If-None-Match: *``
    storage_of    the store of a home: ``QSOLVE_STORAGE_URL``, else the home's own folder

The S3 client is obstore (object_store's Rust client): it sends ``If-None-Match: *`` for a create
(``mode="create"``), which is what keeps two machines from overwriting each other, and pyarrow's
``S3FileSystem`` cannot; it reads the standard settings itself (``AWS_ENDPOINT_URL``,
``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, web
identity, instance metadata), and its fsspec adapter lets DuckDB read ``s3://`` paths through the same
client (``attach``). No credential is ever read into this module, so none reaches a log or an error: a
failure is :class:`StorageError`, one line naming the object's ``s3://`` address and the status. Every
request has ``QSOLVE_STORAGE_TIMEOUT_S`` (30 s), its retries within it: a store that never answers is
one line naming the object, the server and what did not answer, never a three-minute wait.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

STORAGE_URL_VARIABLE = "QSOLVE_STORAGE_URL"
TIMEOUT_VARIABLE = "QSOLVE_STORAGE_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30.0
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"
REGION_VARIABLE = "AWS_DEFAULT_REGION"
TEMPORARY_PREFIX = ".tmp-"


class StorageError(OSError):
    """The object store refused or failed: one line, naming the address (never a credential)."""


class ObjectTooLarge(StorageError):
    """An object larger than the bound its reader set: one line naming its address and the bound. The
    read stopped at the bound (a folder's file is measured first; a bucket's object by its answer's
    length, its body never read past the bound), so the refusal never holds the object."""

    def __init__(self, address: str, limit: int, size: int | None = None) -> None:
        self.address, self.limit, self.size = address, limit, size
        found = f"{size} bytes" if size is not None else "more bytes"
        super().__init__(f"{address}: {found}, more than the {limit} bytes it may have; not read")

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class Listed:
    """One object: its key (relative to the store's root), size, and what changes when it does (a
    file's modification time; an object's ETag)."""

    key: str
    size: int
    version: str


class ObjectStore:
    """Keys are ``/``-separated paths under the store's root (``blobs/ab/abcd...``)."""

    url: str  #: what the state database records (``file:///abs/folder``, ``s3://bucket/prefix``)

    def create(self, key: str, data: bytes, *, durable: bool = True) -> bool:
        """Write ``key`` whole unless it exists; whether this call made it. Never overwrites."""
        raise NotImplementedError

    def get(self, key: str, *, limit: int | None = None) -> bytes:
        """The object's bytes; FileNotFoundError where there is none. With ``limit``, an object larger
        than ``limit`` bytes is :class:`ObjectTooLarge`, and no more than ``limit`` + 1 bytes of it are
        ever read."""
        raise NotImplementedError

    def get_range(self, key: str, start: int, end: int) -> bytes:
        raise NotImplementedError

    def head(self, key: str) -> Listed:
        """FileNotFoundError where there is none."""
        raise NotImplementedError

    def children(self, folder: str) -> list[Listed]:
        """The objects directly under ``folder`` (not in its sub-folders), sorted by key."""
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove ``key``; one already gone is no error."""
        raise NotImplementedError

    def address(self, key: str) -> str:
        """Where ``key`` is, as a reader opens it: a path, or ``s3://bucket/prefix/key``."""
        raise NotImplementedError

    def attach(self, con: Any) -> None:
        """Let a DuckDB connection read :meth:`address` paths."""


class LocalFolder(ObjectStore):
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = self.root.absolute().as_uri()

    def _path(self, key: str) -> Path:
        return self.root / key

    def create(self, key: str, data: bytes, *, durable: bool = True) -> bool:
        path = self._path(key)
        if path.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}.{os.getpid()}"
        try:
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                if durable:
                    os.fsync(f.fileno())
            return link_no_clobber(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return True

    def get(self, key: str, *, limit: int | None = None) -> bytes:
        if limit is None:
            return self._path(key).read_bytes()
        with open(self._path(key), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise ObjectTooLarge(self.address(key), limit, size)
            data = f.read(limit + 1)
        if len(data) > limit:  # grew since it was measured
            raise ObjectTooLarge(self.address(key), limit)
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        with open(self._path(key), "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def head(self, key: str) -> Listed:
        st = self._path(key).stat()
        return Listed(key, st.st_size, str(st.st_mtime_ns))

    def children(self, folder: str) -> list[Listed]:
        out = []
        try:
            listed = list(os.scandir(self._path(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for d in listed:
            if d.name.startswith(TEMPORARY_PREFIX):
                continue
            with contextlib.suppress(FileNotFoundError):
                if d.is_file(follow_symlinks=False):
                    st = d.stat()
                    out.append(Listed(f"{folder}/{d.name}", st.st_size, str(st.st_mtime_ns)))
        return sorted(out, key=lambda e: e.key)

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def address(self, key: str) -> str:
        return str(self._path(key).absolute())


class S3Objects(ObjectStore):
    """``s3://BUCKET/PREFIX`` through obstore; the rest of the settings from the environment."""

    def __init__(self, url: str) -> None:
        bucket, prefix = parse_s3_url(url)
        self.bucket, self.prefix = bucket, prefix
        self.url = f"s3://{bucket}/{prefix}".rstrip("/")
        self._store = None
        self._endpoint = ""
        self.timeout = DEFAULT_TIMEOUT_S
        self._fs = None

    @property
    def endpoint(self) -> str:
        """The S3 server this client reaches, as a message shows it (no user part): ``AWS_ENDPOINT_URL``
        when the client was made (or now, before it is), else AWS's own."""
        endpoint = self._endpoint if self._store is not None else os.environ.get(ENDPOINT_VARIABLE, "")
        return without_user(endpoint.strip()) or "AWS S3 (no AWS_ENDPOINT_URL)"

    def _options(self) -> dict[str, Any]:
        """The client's settings beyond what it reads itself: plain HTTP where the endpoint is, and bounded
        waits. A request (connecting, sending, the whole answer) takes at most ``QSOLVE_STORAGE_TIMEOUT_S``
        (30 s), connecting at most a third of it; a failed request is retried (with backoff) only while
        that much has not passed since the first, so a store that never answers is given up on within
        about twice the time, not the client's own three minutes."""
        from datetime import timedelta

        endpoint = os.environ.get(ENDPOINT_VARIABLE, "")
        self._endpoint = endpoint
        self.timeout = storage_timeout()
        bound = timedelta(seconds=self.timeout)
        client: dict[str, Any] = {"timeout": bound, "connect_timeout": bound / 3}
        if endpoint.startswith("http://"):
            client["allow_http"] = True
        return {"client_options": client, "retry_config": {"max_retries": 10, "retry_timeout": bound}}

    @property
    def store(self):
        if self._store is None:
            from obstore.store import S3Store

            with _translated(self.url, where=self):
                self._store = S3Store(self.bucket, prefix=self.prefix or None, **self._options())
        return self._store

    def _full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def create(self, key: str, data: bytes, *, durable: bool = True) -> bool:
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            with _translated(self.address(key), (AlreadyExistsError, PreconditionError), where=self):
                obstore.put(self.store, key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        return True

    def get(self, key: str, *, limit: int | None = None) -> bytes:
        import obstore

        with _translated(self.address(key), where=self):
            found = obstore.get(self.store, key)
            if limit is None:
                return bytes(found.bytes())
            size = found.meta["size"]
            if size > limit:  # refused on the answer's length: its body is never read
                raise ObjectTooLarge(self.address(key), limit, size)
            data = bytearray()
            for chunk in found.stream(min_chunk_size=min(limit + 1, 8 << 20) or 1):
                data += chunk
                if len(data) > limit:  # more than the length said
                    raise ObjectTooLarge(self.address(key), limit)
            return bytes(data)

    def get_range(self, key: str, start: int, end: int) -> bytes:
        import obstore

        with _translated(self.address(key), where=self):
            return bytes(obstore.get_range(self.store, key, start=start, end=end))

    def head(self, key: str) -> Listed:
        import obstore

        with _translated(self.address(key), where=self):
            meta = obstore.head(self.store, key)
        return Listed(key, meta["size"], str(meta.get("e_tag") or meta["last_modified"]))

    def children(self, folder: str) -> list[Listed]:
        import obstore

        with _translated(self.address(folder + "/"), where=self):
            found = obstore.list_with_delimiter(self.store, folder + "/")
        out = [
            Listed(o["path"], o["size"], str(o.get("e_tag") or o["last_modified"])) for o in found["objects"]
        ]
        return sorted(out, key=lambda e: e.key)

    def delete(self, key: str) -> None:
        import obstore

        with (
            _translated(self.address(key), (FileNotFoundError,), where=self),
            contextlib.suppress(FileNotFoundError),
        ):
            obstore.delete(self.store, key)

    def address(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._full(key)}"

    def attach(self, con: Any) -> None:
        """DuckDB reads ``s3://`` through this client (DuckDB 2.x has no httpfs here): a read-only fsspec
        filesystem whose reads are ranged GETs (obstore's own fsspec adapter returns short reads, which
        DuckDB takes for a damaged file)."""
        if self._fs is None:
            self._fs = _reading_filesystem(self)
        con.register_filesystem(self._fs)


def link_no_clobber(tmp: Path, path: Path) -> bool:
    """Give the whole file ``tmp`` the name ``path`` unless that name exists; whether it did."""
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError as e:  # a file system without hard links: rename, after a look (the race is benign:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):  # same content)
            raise
        if path.exists():
            return False
        os.rename(tmp, path)
        return True


def _reading_filesystem(objects: S3Objects) -> Any:
    """An fsspec filesystem over ``objects``' bucket, for reading only: ``info``, ``ls`` and files read
    whole-range by :meth:`S3Objects.get_range` (fsspec's buffered file asks for exactly what DuckDB
    reads)."""
    from fsspec import AbstractFileSystem
    from fsspec.spec import AbstractBufferedFile

    base = f"{objects.bucket}/{objects.prefix}/" if objects.prefix else f"{objects.bucket}/"

    def key(path: str) -> str:
        path = path.removeprefix("s3://")
        if not path.startswith(base):
            raise FileNotFoundError(f"s3://{path}: outside {objects.url}")
        return path[len(base) :]

    class File(AbstractBufferedFile):
        def _fetch_range(self, start: int, end: int) -> bytes:
            return objects.get_range(key(self.path), start, end)

    class Reading(AbstractFileSystem):
        protocol = "s3"
        cachable = False

        def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
            found = objects.head(key(path))
            return {"name": path.removeprefix("s3://"), "size": found.size, "type": "file"}

        def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
            folder = key(path.rstrip("/") + "/").rstrip("/")
            listed = [
                {"name": base + e.key, "size": e.size, "type": "file"} for e in objects.children(folder)
            ]
            return listed if detail else [e["name"] for e in listed]

        def modified(self, path: str) -> Any:
            import datetime as dt

            return dt.datetime.fromtimestamp(0, dt.UTC)  # an object qsolve wrote never changes

        def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> File:
            if mode != "rb":
                raise PermissionError(f"s3://{path}: qsolve's DuckDB only reads")
            return File(self, path, mode, size=self.info(path)["size"], cache_type="readahead")

    return Reading()


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://BUCKET/PREFIX`` -> (bucket, prefix without slashes at its ends); a one-line StorageError
    naming the variable otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment or "@" in parts.netloc:
        raise StorageError(f"{STORAGE_URL_VARIABLE}={_shown(url)}: not s3://BUCKET/PREFIX")
    prefix = parts.path.strip("/")
    if prefix and any(segment in ("", ".", "..") for segment in prefix.split("/")):
        # the client refuses such a prefix at its first request; refused here, before the state database
        # is bound to it (a binding that every corrected URL would then disagree with)
        raise StorageError(
            f"{STORAGE_URL_VARIABLE}={_shown(url)}: the prefix has an empty, '.' or '..' segment"
        )
    return parts.netloc, prefix


def _shown(url: str) -> str:
    """The URL as an error shows it: no user part (where someone put a key in it)."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return repr(f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else "<not a URL>")


@contextlib.contextmanager
def _translated(
    address: str, passing: tuple[type[BaseException], ...] = (), *, where: S3Objects | None = None
):
    """obstore's errors (several lines, a debug dump) as one line: the address, and what was said; a store
    that did not answer in time (or could not be reached), the server and the bound too."""
    try:
        yield
    except (StorageError, *passing):
        raise
    except FileNotFoundError:
        raise FileNotFoundError(f"{address}: no such object") from None
    except Exception as e:
        if type(e).__module__.split(".")[0] != "obstore" and not isinstance(e, OSError | ValueError):
            raise
        whole = str(e)
        said = " ".join(whole.split("Debug source:")[0].split())
        if where is not None and (unanswered := _unanswered(whole, said, where.timeout)):
            raise StorageError(f"{address} at {where.endpoint}: {unanswered}") from None
        status = (
            said.split("Server returned non-2xx status code: ")[-1][:120] if "status code" in said else said
        )
        raise StorageError(f"{address}: {type(e).__name__}: {without_user(status)[:300]}") from None


def _unanswered(whole: str, said: str, bound: float) -> str | None:
    """What a failure to hear from the store was (its request timed out, or no connection was made), from
    the client's error; None for any other failure (a status the server answered with, say)."""
    method = re.search(r"Error performing (\w+) ", said)
    request = f"the {method.group(1)} request" if method else "a request"
    retried = re.search(r"retries: (\d+)", whole)
    tries = int(retried.group(1)) + 1 if retried else 1
    within = f"within {bound:g} s ({TIMEOUT_VARIABLE})"
    if "kind: Timeout" in whole or "TimedOut" in whole or "operation timed out" in said:
        return f"no answer to {request} {within}" + (f", {tries} tries" if tries > 1 else "")
    if "kind: Connect" in whole or "error trying to connect" in whole or "Connection refused" in whole:
        return f"could not connect: no server took {request} {within}, {tries} tries"
    return None


def storage_timeout() -> float:
    """How long one request to the object store may take: ``QSOLVE_STORAGE_TIMEOUT_S``, else 30 s."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.1 <= value <= 3600:  # NaN too
        raise StorageError(f"{TIMEOUT_VARIABLE}={text!r}: a number of seconds from 0.1 to 3600")
    return value


def without_user(text: str) -> str:
    """``text`` with the user part of every URL in it left out (an endpoint given as
    ``http://KEY:SECRET@host`` is echoed in the client's own errors)."""
    return re.sub(r"//[^/@\s]*@", "//", text)


def storage_url() -> str | None:
    """``QSOLVE_STORAGE_URL``, where it is set."""
    return os.environ.get(STORAGE_URL_VARIABLE, "").strip() or None


_opened: dict[tuple[str, str], S3Objects] = {}


def shared_store() -> S3Objects | None:
    """The object store named by ``QSOLVE_STORAGE_URL`` (one client per URL, endpoint and process), or
    None."""
    url = storage_url()
    if url is None:
        return None
    key = (url, os.environ.get(ENDPOINT_VARIABLE, ""))
    if key not in _opened:
        _opened[key] = S3Objects(url)
    return _opened[key]


def storage_of(home: Path | str) -> ObjectStore:
    """The store of this home: ``QSOLVE_STORAGE_URL``'s, else ``home`` itself as a folder (blobs in
    ``home/blobs``, the track record in ``home/trackrecord``)."""
    return shared_store() or LocalFolder(Path(home))
