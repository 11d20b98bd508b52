"""Schema files are parsed once and kept in binary next to them (schema.parse_schema_file): the
cache must give exactly what the text gives, follow every change of the text, and never be
needed."""
import os
import shutil

import pytest

from google.protobuf import text_format

from ivytrace import schema
from ivytrace.v1 import schema_pb2


def _copy(tmp_path, name="torch.textproto"):
    d = tmp_path / "schemas"
    d.mkdir()
    shutil.copy(os.path.join(schema.schema_dir(), name), d / name)
    return d / name


def _text(path):
    return text_format.Parse(path.read_text(), schema_pb2.SchemaFile())


def test_the_cache_gives_what_the_text_gives_and_follows_its_changes(tmp_path):
    path = _copy(tmp_path)
    first = schema.parse_schema_file(str(path))
    cached = list((path.parent / "__pycache__").iterdir())
    assert len(cached) == 1 and cached[0].name.startswith("torch.textproto.")
    assert first == _text(path)
    assert schema.parse_schema_file(str(path)) == first          # read back from the cache
    # An edit of the text is read, not the cache of the old text (which goes).
    path.write_text(path.read_text() + '\nop { name: "torch.an_op_added_here" }\n')
    changed = schema.parse_schema_file(str(path))
    assert changed == _text(path) and changed != first
    assert any("torch.an_op_added_here" in op.name for op in changed.op)
    cached_now = list((path.parent / "__pycache__").iterdir())
    assert len(cached_now) == 1 and cached_now[0].name != cached[0].name


def test_a_damaged_cache_is_not_trusted_over_the_text(tmp_path):
    path = _copy(tmp_path)
    want = schema.parse_schema_file(str(path))
    (cache,) = (path.parent / "__pycache__").iterdir()
    cache.write_bytes(b"\xff\xff\xff not a SchemaFile")
    assert schema.parse_schema_file(str(path)) == want


def test_without_a_place_for_the_cache_the_text_is_parsed(tmp_path):
    path = _copy(tmp_path)
    (path.parent / "__pycache__").write_text("a file where the cache directory would be")
    assert schema.parse_schema_file(str(path)) == _text(path)


def test_a_text_that_does_not_parse_is_still_refused(tmp_path):
    path = _copy(tmp_path)
    schema.parse_schema_file(str(path))
    path.write_text("op { name: ")
    with pytest.raises(schema.SchemaError, match=str(path)):
        schema.parse_schema_file(str(path))
