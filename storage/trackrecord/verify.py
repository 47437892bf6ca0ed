"""``qsolve trackrecord verify``: the track record checked with nothing but its files, the log and a trust
list (issue 34, item 2; the log's form: ``log``).

    chain       every entry of its form, signed (strictly) by a key of the trust list not revoked then,
                numbered 1, 2, ... and naming the hash of the one before: an entry changed, removed or
                put in names the first entry where the chain breaks
    live set    the state database's live set (what readers read) is the log folded
    files       every live file's bytes have the digest and size its entry signed; its run ids hash to
                its name, and a batch's are the run ids its entry lists
    runs        every row's run is in an entry: a batch's listed, a compaction's within the runs the log
                filed (runs from before the log, in files it adopted, are counted apart)
    checkpoint  a checkpoint given (``--checkpoint FILE``, saved earlier by anyone) is signed by a trusted
                key, and today's log extends it: its entry ``size`` has hash ``head``

What it does not prove: that a row's values are the run's (the platform's word, signed by its key: a host
whose key the operator endorsed can file what it likes), or that nothing was filed and retired between
two checkpoints (the log keeps every entry, so a reader holding both sees it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

from . import log
from .layout import Layout

#: the name of a file the log may add: one of the folder's (``b-``, ``h-`` or ``o-`` and 32 hex digits), never
#: a path
FILE_NAME = r"^[bho]-[0-9a-f]{32}\.parquet$"


class Added(BaseModel):
    """A file an entry adds, as ``verify`` reads it: a name of the folder's form, a size within the bound
    of a track-record file (``storage.bounds``), whole numbers where numbers are due."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr = Field(pattern=FILE_NAME)
    digest: StrictStr = Field(pattern=r"^[0-9a-f]{64}$")
    size: StrictInt = Field(ge=0, le=TRACKRECORD_FILE_BYTES)
    rows: StrictInt = Field(ge=0)
    run_ids_digest: StrictStr
    run_ids: list[StrictStr] | None


class Retired(BaseModel):
    """A file an entry retires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    digest: StrictStr


class EntryForm(BaseModel):
    """What ``verify`` folds and reads of an entry (the rest of its form and its signature:
    ``log.check_entry``). An entry not of this form is named and neither folded nor read."""

    model_config = ConfigDict(extra="allow", frozen=True)

    seq: StrictInt = Field(ge=1)
    kind: StrictStr
    adds: list[Added]
    retires: list[Retired]


def form_problem(entry: Any) -> str | None:
    """Why ``entry`` is not of :class:`EntryForm`, in one line (where, what), or None."""
    try:
        EntryForm.model_validate(entry)
    except ValidationError as e:
        errors = e.errors(include_url=False, include_input=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"]) or "it"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"not of its form: {where}: {first['msg']}{more}"
    return None


class NotAFile(OSError):
    """A name of the folder that holds no regular file (a directory, a FIFO, a symlink, a device)."""


@dataclass
class Verified:
    """What ``verify`` found: each failure names the entry or the file; ``said`` the lines that are not."""

    problems: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def trusted_keys(trust: Mapping[str, Any]) -> dict[str, Any]:
    """A trust list (``wai.quantum.receipt-keys/1``) as key -> its entry: the window it vouches for
    what it signs in (``not_before_ms``, ``not_after_ms``, ``revoked_from_ms``; ``log.key_refused``)."""
    from qsolve.receipts.trust import TrustList

    found = TrustList.from_value(dict(trust))
    return dict(found.entries)


def verify(
    documents: Iterable[str | Mapping[str, Any]],
    read_file: Callable[[str, int], bytes | None],
    trusted: Mapping[str, Any],
    *,
    live: Mapping[str, str] | None = None,
    checkpoint: Mapping[str, Any] | None = None,
) -> Verified:
    """Check the log ``documents`` (in order) against the files (``read_file(name, size)``: the bytes,
    read no further than ``size`` + 1, or None where missing) and ``trusted`` keys; ``live``: the state
    database's live set (name -> digest) to hold to the fold; ``checkpoint``: a checkpoint document."""
    out = Verified()
    read = []
    for n, d in enumerate(documents, start=1):
        try:
            read.append(log.read(d))
        except log.LogRefused as e:
            out.problems.append(f"entry {n}: {e}")
            read.append({})
    chain = log.Chain.of(read, trusted)
    out.problems += chain.problems
    formed = []  # the entries of the form folded and read: no other is (a traceback, a path, a size)
    for n, d in enumerate(read, start=1):
        entry = d.get("entry")
        if not isinstance(entry, dict):
            continue  # the chain named it
        why = form_problem(entry)
        if why is not None:
            out.problems.append(f"entry {n}: {why}")
        else:
            formed.append(entry)
    folded = log.fold(formed)
    out.said.append(f"{len(read)} entries; {len(folded)} files live")
    if live is not None:
        for name in sorted(set(live) | set(folded)):
            want = folded.get(name, {}).get("digest")
            if live.get(name) != want:
                out.problems.append(
                    f"{name}: the state database's live set says {str(live.get(name))[:16]}, its log "
                    f"{str(want)[:16]}: the live set was changed outside the log"
                )
    import pyarrow as pa
    import pyarrow.compute as pc

    filed_runs = pa.array(
        [
            i
            for e in formed
            if e.get("kind") == log.FILED
            for a in e["adds"]
            if a["run_ids"] is not None
            for i in a["run_ids"]
        ],
        pa.string(),
    )
    adopted = any(e.get("kind") == log.ADOPTED for e in formed)
    rows = before_log = 0
    # each file read, hashed and its run ids sorted in a pool of threads (BLAKE3, Parquet and Arrow's
    # sort let go of the GIL); what is found is told in the files' order, as one thread would
    checked = _in_pool(lambda item: _check_file(item[0], item[1], read_file), sorted(folded.items()))
    unlisted = []  # (where, its run ids): a compaction's files, whose runs must be among those filed
    for where, problems, ids, listed in checked:
        out.problems += problems
        if ids is None:
            continue
        rows += len(ids)
        if not listed:
            unlisted.append((where, ids))
    if unlisted:
        # one lookup of every such run among the runs filed (a set built once, not once per file)
        joined = pa.chunked_array([ids for _, ids in unlisted], pa.string()).combine_chunks()
        filed = pc.is_in(joined, value_set=filed_runs)
        at = 0
        for where, ids in unlisted:
            outside = pc.filter(ids, pc.invert(filed.slice(at, len(ids))))
            at += len(ids)
            if len(outside) and adopted:
                before_log += len(outside)
            elif len(outside):
                out.problems.append(f"{where}: {len(outside)} rows of runs no entry filed (run {outside[0]})")
    out.said.append(
        f"{rows} rows, each a run of an entry"
        + (f" ({before_log} from before the log)" if before_log else "")
    )
    if checkpoint is not None:
        try:
            statement = log.check_checkpoint(checkpoint)
        except log.LogRefused as e:
            out.problems.append(f"the checkpoint: {e}")
        else:
            key = statement["key"]
            if key not in trusted:
                out.problems.append(f"the checkpoint: signed by key {key[:16]}, not in the trust list")
            elif (refused := log.key_refused(trusted[key], statement["at_ms"])) is not None:
                out.problems.append(f"the checkpoint: signed by key {key[:16]}, {refused}")
            why = chain.extends(statement)
            if why is not None:
                out.problems.append(f"the checkpoint of {statement['size']} entries: {why}")
            else:
                out.said.append(f"the log extends the checkpoint of {statement['size']} entries")
    return out


def _check_file(name: str, add: Mapping[str, Any], read_file: Callable[[str, int], bytes | None]):
    """One live file against its entry: (where, problems, its run ids (None where its bytes are not its
    entry's), whether its entry lists them). A batch's runs are held here to the list its entry signed; a
    compaction's the caller looks up among every run filed."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    where = f"{name} (entry {add['seq']})"
    try:
        data = read_file(name, add["size"])
    except OSError as e:  # not a file (a directory, a FIFO), or not readable: named, not read
        return where, [f"{where}: {e.strerror or e}"], None, False
    if data is None:
        return where, [f"{where}: missing"], None, False
    digest = log.blake3(data, max_threads=log.blake3.AUTO).hexdigest()
    if len(data) != add["size"] or digest != add["digest"]:
        changed = f"{where}: its bytes are not those its entry signed (rewritten or replaced)"
        return where, [changed], None, False
    ids = pq.read_table(pa.BufferReader(data), columns=["run_id"], use_threads=False).column("run_id")
    ids = ids.combine_chunks()
    ids = ids.cast(pa.string()) if ids.type != pa.string() else ids
    in_order = pc.take(ids, pc.array_sort_indices(ids))
    problems = []
    if len(ids) != add["rows"] or _ids_digest(in_order) != add["run_ids_digest"]:
        problems.append(f"{where}: its runs are not those its entry names")
    if add.get("run_ids") is not None and in_order.to_pylist() != add["run_ids"]:
        problems.append(f"{where}: its runs are not those its entry lists")
    return where, problems, ids, add.get("run_ids") is not None


def _in_pool(work: Callable[[Any], Any], items: list) -> list:
    """``work`` of each item, in the items' order, on a few threads (the machine's cores, at most 4: each
    holds one file's bytes)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    threads = min(4, os.cpu_count() or 1, len(items))
    if threads <= 1:
        return [work(i) for i in items]
    with ThreadPoolExecutor(threads, thread_name_prefix="qsolve-verify") as pool:
        return list(pool.map(work, items))


def _ids_digest(in_order) -> str:
    """``layout.run_ids_digest`` of run ids already sorted (an Arrow array), joined in Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array([0, len(in_order)], pa.int32()), in_order), "\n"
    )
    return log.blake3(joined[0].as_py().encode()).hexdigest(length=16)


def file_reader(layout: Layout) -> Callable[[str, int], bytes | None]:
    """``read_file`` for the home's folder or bucket: only a name of the folder's form (``FILE_NAME``),
    bounded by the size the entry signed and by ``TRACKRECORD_FILE_BYTES``. A folder's name that is not a
    regular file raises :class:`NotAFile` (opened without waiting on a FIFO, without following a
    symlink); an object past the bound reads as no bytes (not the entry's)."""
    import re

    from qsolve_pipeline.storage.objects import ObjectTooLarge

    form = re.compile(FILE_NAME)

    def read(name: str, size: int) -> bytes | None:
        if form.fullmatch(name) is None:
            raise NotAFile(f"{name!r}: not a name of the track record's folder; not read")
        limit = min(size, TRACKRECORD_FILE_BYTES)
        try:
            if layout.store is not None:
                from .shared import key

                return layout.store.get(key(name), limit=limit)
            path: Path = layout.folder / name
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
            with open(path, "rb", opener=lambda p, _f: os.open(p, flags)) as f:
                mode = os.fstat(f.fileno()).st_mode
                if not stat.S_ISREG(mode):
                    raise NotAFile(f"not a file (a {_kind(mode)}); not read")
                return f.read(limit + 1)
        except FileNotFoundError:
            return None
        except ObjectTooLarge:
            return b""
        except NotAFile:
            raise
        except OSError as e:
            if e.errno == getattr(os, "ELOOP", None):  # O_NOFOLLOW met a symlink
                raise NotAFile("not a file (a symlink); not read") from None
            if isinstance(e, IsADirectoryError):
                raise NotAFile("not a file (a directory); not read") from None
            raise

    return read


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special file"
