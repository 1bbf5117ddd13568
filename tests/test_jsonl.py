import json

import pytest

from lee_jax import jsonl


def test_an_append_after_a_torn_line_starts_a_new_line(tmp_path):
  path = tmp_path / "r.jsonl"
  jsonl.append(path, {"a": 1})
  with path.open("a") as f:
    f.write('{"a": 2, "b')  # a kill in the middle of a write
  jsonl.append(path, {"a": 3}, sync=True)
  # glued onto the torn line, the new record would be lost with it
  assert path.read_text().splitlines()[-1] == json.dumps({"a": 3})
  assert jsonl.read(path) == [{"a": 1}, {"a": 3}]
  assert jsonl.numbered(path) == [(1, {"a": 1}), (3, {"a": 3})]


def test_a_line_that_is_no_record_is_an_error_naming_it(tmp_path):
  path = tmp_path / "r.jsonl"
  path.write_text('{"a": 1}\n\nnot json at all\n{"a": 2}\n')
  with pytest.raises(jsonl.JsonlError, match=r"r.jsonl line 3: not JSON .*fix or remove"):
    jsonl.read(path)
  path.write_text('{"a": 1}\n\n[1, 2]\n')  # JSON, not torn: the caller judges its shape
  assert jsonl.read(path) == [{"a": 1}, [1, 2]]
