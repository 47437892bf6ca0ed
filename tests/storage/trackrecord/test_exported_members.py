import storage.trackrecord as trackrecord


def test_exported_members():
    assert trackrecord.__all__ == sorted(trackrecord.__all__)
    assert all(hasattr(trackrecord, name) for name in trackrecord.__all__)
    public = {n for n in dir(trackrecord) if not n.startswith("_")}
    modules = {"commands", "compaction", "errors", "filing", "layout", "page", "query", "row", "views"}
    assert public - modules == set(trackrecord.__all__)
