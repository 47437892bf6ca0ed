"""The one way in to a submitted folder: every file of it the platform reads, read beneath it (issue 22).

Lint, the submission checks, the gates, publication and the copy into the sandbox read a workflow
folder only through this module. Each path is relative, without ``..``, and resolved beneath the
folder by the kernel, never through a symbolic link at any level: ``openat2`` with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it, otherwise one ``openat`` per
component with ``O_NOFOLLOW``, each from the folder's descriptor. Only regular files are read (a FIFO,
a device or a socket is refused by name before anything waits on it), at most :data:`MAX_FILE_BYTES`
each, and refused by name before anything is parsed. Each failure is an :class:`Issue` naming the file.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import stat
from collections.abc import Iterator
from functools import cache
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import yaml

from qsolve.errors import Issue, WorkflowInvalid

#: the most one file of a workflow folder may hold to be read (a document, the module, an input)
MAX_FILE_BYTES = 64 * 2**20
#: the most values a YAML document may hold, its aliases written out
MAX_YAML_VALUES = 1_000_000
#: the longest path beneath the folder the platform lists: a longer one does not open (PATH_MAX)
MAX_PATH_BYTES = 4000
#: the most files and folders a walk of a submitted folder visits: each is read, written out into the
#: snapshot and copied into every workflow process, by count and not only by bytes (50,000 empty files
#: took the snapshot 12 s, with no deadline; a million, minutes and a million inodes each copy)
MAX_ENTRIES = 10_000
#: the most of a workflow's own file a message quotes
EXCERPT_CHARS = 120

_SYS_OPENAT2 = 437  # the same number on every architecture (the unified system-call table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
SPECIAL = "is a special file (a device, FIFO or socket): the platform reads regular files only"
HARD_LINK = "has other hard links: the platform reads only a file that is the folder's alone"
NO_LINK = "is a symbolic link or passes through one: the platform follows no link in a workflow folder"


class Unreadable(WorkflowInvalid):
    """A file that is missing, unreadable, or not the document it should be."""


class Refused(ValueError):
    """A path the platform will not read in a workflow folder; the message follows the path."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_openat2_works = [True]  # set to False once the kernel says ENOSYS


def _openat2(dir_fd: int, relative: str, flags: int) -> int | None:
    """``openat2`` beneath ``dir_fd`` with no link followed; ``None`` where the kernel lacks it."""
    libc = _libc()
    if libc is None or not _openat2_works[0]:
        return None
    how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = libc.syscall(
        ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(relative)),
        ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        return fd
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _openat2_works[0]:  # EPERM: a seccomp filter's refusal
        _openat2_works[0] = False
        return None
    raise OSError(err, os.strerror(err), relative)


def _openat_each(dir_fd: int, relative: str, flags: int) -> int:
    """The fallback: one component at a time from ``dir_fd``, each opened with ``O_NOFOLLOW``."""
    parts = PurePosixPath(relative).parts
    fd = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        last = os.open(parts[-1], flags, dir_fd=fd) if parts else os.dup(fd)
    finally:
        os.close(fd)
    return last


def check_relative(relative: str) -> str:
    """``relative`` as a POSIX path inside the folder, or :class:`Refused`: absolute, or with ``..``."""
    if (
        PurePosixPath(relative).is_absolute()
        or PureWindowsPath(relative).is_absolute()
        or relative.startswith(("/", "\\"))
    ):
        raise Refused("is absolute; give a path relative to the workflow folder")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if ".." in pure.parts:
        raise Refused("contains '..'")
    if "\0" in relative:
        raise Refused("contains a NUL character")
    return pure.as_posix()


def open_beneath(root: Path | str, relative: str, flags: int = _FLAGS) -> int:
    """A descriptor of ``relative`` beneath ``root``, no link followed at any level; :class:`Refused`
    (a link, absolute, ``..``) or :class:`OSError` (missing, say) otherwise."""
    rel = check_relative(relative)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fd = _openat2(root_fd, rel, flags)
            return fd if fd is not None else _openat_each(root_fd, rel, flags)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EXDEV):
                raise Refused(NO_LINK) from None
            if e.errno == errno.ENOTDIR and _passes_a_link(root_fd, rel):
                raise Refused(NO_LINK) from None
            raise
    finally:
        os.close(root_fd)


def _passes_a_link(root_fd: int, rel: str) -> bool:
    at = ""
    for part in PurePosixPath(rel).parts:
        at = f"{at}/{part}" if at else part
        try:
            if stat.S_ISLNK(os.lstat(at, dir_fd=root_fd).st_mode):
                return True
        except OSError:
            return False
    return False


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _fail(file: str, message: str, code: str | None = None) -> Unreadable:
    return Unreadable(message, [Issue(file=file, message=message, code=code)])


def read_bytes(
    root: Path | str, relative: str, label: str | None = None, limit: int = MAX_FILE_BYTES
) -> bytes:
    """The bytes of a regular file beneath ``root``, at most ``limit``; :class:`Unreadable` otherwise,
    naming ``label`` (default: the path)."""
    label = label or relative
    try:
        fd = open_beneath(root, relative)
    except Refused as e:
        raise _fail(label, str(e)) from None
    except FileNotFoundError:
        raise _fail(label, "does not exist") from None
    except NotADirectoryError:
        raise _fail(label, "does not exist (a part of its path is a file, not a folder)") from None
    except OSError as e:
        if e.errno == errno.ENXIO:  # opening a socket
            raise _fail(label, "is a socket: the platform reads regular files only") from None
        raise _fail(label, f"cannot be read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise _fail(label, "is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise _fail(label, f"is {_kind(mode)}: the platform reads regular files only")
        if st.st_nlink > 1:  # a hard link to a file outside (root may link a 0600 token in): not the folder's
            raise _fail(label, HARD_LINK)
        chunks, size = [], 0
        try:
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as e:
            raise _fail(label, f"cannot be read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise _fail(label, f"is larger than {limit // 2**20} MiB, the most the platform reads of one file")
    return b"".join(chunks)


def kind(root: Path | str, relative: str) -> str:
    """What ``relative`` is beneath ``root``, no link followed: ``file``, ``folder``, ``missing``,
    ``link`` or ``special``."""
    try:
        fd = open_beneath(root, relative, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except Refused:
        return "link"
    except OSError:
        return "missing"
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISLNK(mode):  # O_PATH | O_NOFOLLOW opens a trailing link itself
        return "link"
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "special"


def read_text(root: Path | str, relative: str, label: str | None = None) -> str:
    label = label or relative
    data = read_bytes(root, relative, label)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(label, f"cannot be read: not UTF-8 (byte {e.start})") from None


def parse_yaml(text: str, label: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except RecursionError:  # PyYAML composes a node's children by recursion: `[[[[...` 100,000 deep
        raise _fail(label, "is not YAML the platform reads: it is nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise _fail(label, f"is not YAML{where}: {excerpt(problem)}") from None
    if _expanded(value) > MAX_YAML_VALUES:
        raise _fail(label, f"holds more than {MAX_YAML_VALUES:,} values once its aliases are written out")
    return value


def _expanded(value: Any) -> int:
    """How many values ``value`` holds with every shared part counted each time it is used (YAML
    aliases share: nine of them, each of nine before, are a billion values for whatever walks them)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        v, done = stack.pop()
        if not isinstance(v, dict | list) or (id(v) in sizes and not done):
            continue
        children = [*v.keys(), *v.values()] if isinstance(v, dict) else v
        if done:
            sizes[id(v)] = min(1 + sum(sizes.get(id(c), 1) for c in children), MAX_YAML_VALUES + 1)
        else:
            sizes[id(v)] = 1  # a value that holds itself (an alias of its parent) counts once
            stack.append((v, True))
            stack.extend((c, False) for c in children)
    return sizes.get(id(value), 1)


def read_yaml(root: Path | str, relative: str, label: str | None = None) -> Any:
    return parse_yaml(read_text(root, relative, label), label or relative)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise _fail(label, f"is not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise _fail(label, f"is not JSON: {excerpt(str(e))}") from None


def read_json(root: Path | str, relative: str, label: str | None = None) -> Any:
    return parse_json(read_text(root, relative, label), label or relative)


def read_json_object(root: Path | str, relative: str, label: str | None = None) -> dict[str, Any]:
    value = read_json(root, relative, label)
    if not isinstance(value, dict):
        raise _fail(label or relative, f"holds a JSON {_json_type(value)}, not a JSON object")
    return value


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def excerpt(text: str, most: int = EXCERPT_CHARS) -> str:
    """At most ``most`` characters of ``text``: what a message may quote of a workflow's file."""
    return text if len(text) <= most else text[: most - 1] + "…"


def inside(root: Path | str, relative: str) -> str:
    """``relative`` as a path to read beneath ``root``: :class:`Refused` (a :class:`ValueError`) when it is
    absolute, has ``..`` or passes through a link; the reason is worded to follow the path."""
    rel = check_relative(relative)
    if kind(root, rel) == "link":
        raise Refused(NO_LINK)
    return rel


def entries(root: Path | str, folder: str = "") -> Iterator[tuple[str, str]]:
    """``(name, kind)`` of each entry of ``folder`` beneath ``root`` (``file``, ``folder``, ``link``,
    ``special``), the folder opened with no link followed; nothing when it is not a folder."""
    try:
        fd = open_beneath(root, folder or ".", os.O_RDONLY | os.O_DIRECTORY | _FLAGS)
    except (OSError, Refused):
        return
    try:
        with os.scandir(fd) as it:
            found = [
                (e.name, "link" if e.is_symlink() else "folder" if e.is_dir(follow_symlinks=False)
                 else "file" if e.is_file(follow_symlinks=False) else "special")
                for e in it
            ]
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    yield from sorted(found)


def files_in(root: Path | str, folder: str, suffix: str) -> list[str]:
    """The relative paths of ``folder``'s entries whose names end in ``suffix``, sorted; links and special
    files included, so that reading them refuses them by name."""
    found = entries(root, folder)
    return [f"{folder}/{name}" for name, k in found if name.endswith(suffix) and k != "folder"]


def walk(root: Path | str, skipped_dirs: set[str], skipped_suffixes: set[str]) -> list[str]:
    """Every regular file beneath ``root`` by relative POSIX path, less what is skipped; a link or a
    special file is :class:`Refused`, its path in the message."""
    out: list[str] = []
    stack = [""]
    visited = 0
    while stack:
        folder = stack.pop()
        for name, k in entries(root, folder):
            rel = f"{folder}/{name}" if folder else name
            visited += 1
            if visited > MAX_ENTRIES:  # refused before anything of it is read
                raise Refused(f"the folder has more than {MAX_ENTRIES:,} files and folders")
            if len(os.fsencode(rel)) > MAX_PATH_BYTES:  # its folder would list as empty: refused, not omitted
                raise Refused(f"{excerpt(rel)}: its path is longer than {MAX_PATH_BYTES:,} bytes")
            if name in skipped_dirs:  # a worktree's `.git` is a file: skipped whatever it is
                continue
            if PurePosixPath(name).suffix in skipped_suffixes:
                continue
            if k == "folder":
                stack.append(rel)
            elif k == "file":
                out.append(rel)
            elif k == "link":
                raise Refused(f"{rel}: {NO_LINK}")
            else:
                raise Refused(f"{rel}: {_special(root, rel)}")
    return out


def _special(root: Path | str, rel: str) -> str:
    """What a special file is, in words that follow its path (a FIFO, a socket, a device)."""
    try:
        return f"is {_kind(os.lstat(Path(root) / rel).st_mode)}: the platform reads regular files only"
    except OSError:
        return SPECIAL
