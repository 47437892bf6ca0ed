import types

import storage.trackrecord as trackrecord


def test_exported_members():
    assert trackrecord.__all__ == sorted(trackrecord.__all__)
    public = {
        n
        for n in dir(trackrecord)
        if not n.startswith("_") and not isinstance(getattr(trackrecord, n), types.ModuleType)
    }
    assert public == set(trackrecord.__all__)
