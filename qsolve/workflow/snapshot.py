"""The submitted folder, read once: what the checks, every gate's copy and publication use (issue 22).

The folder is the submitter's, and it can change while the platform works on it: read anew at each
stage, a ``workflow.py`` changed between the gates and publication was published though no gate ran
it. :meth:`Snapshot.take` reads the folder once, through :mod:`qsolve.workflow.reading` (as publication packs
it: no link followed, regular files only), into the archive publication keeps, and writes that archive
out into a private folder of the platform's (0700, its own temporary folder). The checks read that
folder, the sandbox copies it into every workflow process, and publication stores the archive itself:
what is published is byte for byte what was checked and gated.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from qsolve.workflow.publication import digest_of, pack, unpack

#: the most a submitted folder may hold (the sandbox's copy has the same bound)
MAX_BYTES = 256 * 2**20


class Snapshot:
    """One reading of a submitted folder: its archive (:func:`qsolve.workflow.publication.pack`), its
    digest, and ``folder``, the archive written out for the stages that read files. The folder is removed
    when the snapshot is closed or no longer referenced; a pickled snapshot is its archive, written out anew
    where it is unpickled."""

    def __init__(self, archive: bytes) -> None:
        self.archive = archive
        self.digest = digest_of(archive)
        private = tempfile.mkdtemp(prefix="qsolve-snapshot-")  # 0700: the platform's alone
        self._removed = weakref.finalize(self, shutil.rmtree, private, ignore_errors=True)
        self.folder = unpack(archive, Path(private) / "workflow")

    @classmethod
    def take(cls, root: Path | str) -> Snapshot:
        """Read ``root`` once; :class:`qsolve.workflow.publication.PublicationError` names what cannot be
        read."""
        return cls(pack(Path(root), limit=MAX_BYTES))

    def __reduce__(self) -> tuple:
        return (Snapshot, (self.archive,))

    def close(self) -> None:
        self._removed()
