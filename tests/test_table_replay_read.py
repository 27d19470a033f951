"""A replayed log's reading (ctxcore/replay/read.py), held by hand-valued tables: which files a list of paths,
folders and globs names (once each, by their shortest path; what is not a regular file named), lines cut a chunk at a
time at every edge of their limit, the first lines looked at, whole files, and each Item with its place and the bytes
read so far (issue #29). The files are made in a temporary folder; nothing is mocked."""

import io
import json
import os
import socket

import pytest

from ctxcore.errors import InputError
from ctxcore.replay import read
from ctxcore.replay.read import Item, expand, items, load_item

CANDS = {"query": "what is the refund window?", "candidates": [{"id": "a", "text": "Refunds within 30 days."}]}


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def test_a_folder_is_walked_in_name_order_for_its_log_files(tmp_path):
    for name in ("b.json", "a.jsonl", "c.csv", "d.txt", "sub/e.JSON"):
        _write(tmp_path / name, "{}")
    assert list(expand([str(tmp_path)])) == [(str(tmp_path / n), None) for n in ("a.jsonl", "b.json", "c.csv",
                                                                                  "sub/e.JSON")]


def test_what_names_no_file_is_listed_with_its_reason_and_the_rest_read_on(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    _write(empty / "notes.txt", "x")
    real = _write(tmp_path / "real.json", "{}")
    missing, nothing = str(tmp_path / "missing.json"), str(tmp_path / "*.csv")
    assert list(expand([str(empty), missing, nothing, real])) == [
        (str(empty), "the directory holds no .json, .jsonl or .csv file"), (missing, "no such file or directory"),
        (nothing, "no file matches this pattern"), (real, None)]


def test_globs_reach_into_folders_and_never_name_a_folder(tmp_path):
    _write(tmp_path / "x" / "deep" / "a.json", "{}")
    _write(tmp_path / "b.json", "{}")
    (tmp_path / "dir.json").mkdir()
    assert list(expand([str(tmp_path / "**" / "*.json")])) == [
        (str(tmp_path / "b.json"), None), (str(tmp_path / "x" / "deep" / "a.json"), None)]


def test_each_real_file_once_by_its_shortest_path(tmp_path):
    folder = tmp_path / "log"
    real = _write(folder / "a.json", "{}")
    os.symlink("a.json", folder / "b.json")               # the same length: the first in name order
    os.symlink("a.json", folder / "longer-link.json")
    os.symlink("loop.json", folder / "0-loop.json")       # into a loop, met first: passed over, the walk goes on
    os.symlink("loop.json", folder / "loop.json")
    assert list(expand([str(folder)])) == [(real, None)]
    assert list(expand([real, str(folder)])) == [(real, None)]
    assert list(expand([str(folder / "longer-link.json"), real])) == [(str(folder / "longer-link.json"), None)]


def test_what_is_not_a_regular_file_is_named_and_never_opened(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    sock_path = str(tmp_path / "s.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    try:
        gone1, gone2 = tmp_path / "gone1.json", tmp_path / "gone2.json"
        os.symlink("nowhere1.json", gone1)
        os.symlink("nowhere2.json", gone2)
        assert list(expand([str(fifo), sock_path, "/dev/null", str(gone1), str(gone2)])) == [
            (str(fifo), "skipped: a FIFO, not a regular file"), (sock_path, "skipped: a socket, not a regular file"),
            ("/dev/null", "skipped: a character device, not a regular file"),
            (str(gone1), "cannot read the file (No such file or directory)"),
            (str(gone2), "cannot read the file (No such file or directory)")]
    finally:
        sock.close()


def test_a_live_store_is_named_as_it_is_and_the_next_path_read_on(tmp_path):
    real = _write(tmp_path / "a.json", "{}")
    store = f"store:{tmp_path / 'store'}"
    assert list(expand([store, real])) == [(store, None), (real, None)]


def _lines(data, limit, chunk, monkeypatch):
    monkeypatch.setattr(read, "_CHUNK", chunk)
    return list(read._bounded_lines(io.BytesIO(data), limit))


@pytest.mark.parametrize("data, limit, chunk, lines", [
    (b"ab\nabcdefg\nabcde\nxyz", 6, 4, [(1, b"ab\n", 3), (2, None, 8), (3, b"abcde\n", 6), (4, b"xyz", 3)]),
    (b"abc\nxy\n", 6, 4, [(1, b"abc\n", 4), (2, b"xy\n", 3)]),
    (b"abcd\nx", 6, 4, [(1, b"abcd\n", 5), (2, b"x", 1)]),
    (b"abcd\nxyz\n", 6, 4, [(1, b"abcd\n", 5), (2, b"xyz\n", 4)]),  # the next full chunk starts with the newline
    (b"abcdefgh", 6, 4, [(1, None, 8)]),
    (b"abcdefgh", 7, 4, [(1, b"abcdefgh", 8)]),
    (b"abcdef\nz\n", 6, 4, [(1, b"abcdef\n", 7), (2, b"z\n", 2)]),
    (b"abcdef\nz\n", 5, 4, [(1, None, 7), (2, b"z\n", 2)]),
    (b"abc\n", 3, 1 << 20, [(1, b"abc\n", 4)]),
    (b"abcd\n", 3, 1 << 20, [(1, None, 5)]),
    (b"abcdefgh\nq", 3, 1 << 20, [(1, None, 9), (2, b"q", 1)]),
    (b"\n\nq", 3, 4, [(1, b"\n", 1), (2, b"\n", 1), (3, b"q", 1)]),
    (b"", 3, 4, []),
])
def test_lines_cut_a_chunk_at_a_time_at_every_edge_of_their_limit(data, limit, chunk, lines, monkeypatch):
    assert _lines(data, limit, chunk, monkeypatch) == lines


def _items(*paths):
    return list(items([str(p) for p in paths]))


def test_each_run_in_its_place_with_the_bytes_read_so_far(tmp_path):
    one = json.dumps(CANDS)
    a = _write(tmp_path / "a.jsonl", one + "\n\n" + one + "\n")
    b = _write(tmp_path / "b.json", one)
    c = _write(tmp_path / "c.jsonl", one + "\n")
    size_a, size_b, size_c = (os.path.getsize(p) for p in (a, b, c))
    missing = str(tmp_path / "missing.json")
    assert _items(missing, a, b, missing, c) == [
        Item(0, missing, "error", "no such file or directory", done_bytes=0),
        Item(1, f"{a}:1", "line", one, done_bytes=len(one) + 1),
        Item(2, f"{a}:3", "line", one, done_bytes=size_a),
        Item(3, b, "bytes", one.encode(), done_bytes=size_a + size_b),
        Item(4, missing, "error", "no such file or directory", done_bytes=size_a + size_b),
        Item(5, f"{c}:1", "line", one, done_bytes=size_a + size_b + size_c)]


@pytest.mark.parametrize("broken, kinds", [(4, ["line"] * 5), (5, ["bytes"])])
def test_the_first_five_lines_are_looked_at_for_what_the_log_holds(tmp_path, broken, kinds):
    path = _write(tmp_path / "log.jsonl", "not json\n\n" * broken + json.dumps(CANDS) + "\n")
    assert [i.kind for i in _items(path)] == kinds


def test_a_short_jsonl_of_broken_lines_is_handed_whole_to_the_loader(tmp_path):
    path = _write(tmp_path / "log.jsonl", "not json\nnor this\n")
    assert _items(path) == [Item(0, path, "bytes", b"not json\nnor this\n", done_bytes=18)]


def test_a_json_file_of_run_lines_is_read_a_line_a_run_and_one_line_whole(tmp_path):
    one = json.dumps(CANDS)
    many = _write(tmp_path / "many.json", one + "\n" + one + "\n")
    single = _write(tmp_path / "single.json", one + "\n")
    assert [(i.kind, i.source) for i in _items(many, single)] == [("line", f"{many}:1"), ("line", f"{many}:2"),
                                                                  ("bytes", single)]


def test_an_over_long_first_line_does_not_stop_the_look(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as fh:
        fh.truncate(read.MAX_BYTES + 2)  # one line of zero bytes, over the limit, no newline
    assert _items(path) == [Item(0, str(path), "error", "the file is 67.1 MB; the limit is 64 MB",
                                 done_bytes=read.MAX_BYTES + 2)]


def test_csv_files_are_read_whole_even_when_a_header_starts_with_a_bracket(tmp_path):
    plain = _write(tmp_path / "plain.csv", "id,text\na,Refunds within 30 days.\n")
    bracket = _write(tmp_path / "bracket.csv", "[id],text\na,Refunds within 30 days.\n")
    assert [(i.kind, i.source) for i in _items(plain, bracket)] == [("bytes", plain), ("bytes", bracket)]


def test_a_whole_files_time_and_what_makes_it_unreadable(tmp_path):
    timed = _write(tmp_path / "timed.json", " \n" + json.dumps({**CANDS, "time": "2024-01-02T03:04:05Z"}))
    bad = _write(tmp_path / "bad.json", "{bad")
    ids = _write(tmp_path / "ids.json", json.dumps({"id": "t", "observations": ["o1"]}))
    latin = _write(tmp_path / "latin.json", b'{"query": "caf\xe9"}')
    got = _items(timed, bad, ids, latin)
    assert (got[0].kind, got[0].time) == ("bytes", "2024-01-02T03:04:05Z")
    assert [(i.kind, i.source) for i in got[1:]] == [("error", bad), ("error", ids), ("error", latin)]
    assert got[2].payload == ("field 'observations': this Langfuse trace lists observation ids only; export it with "
                              "its observations (GET /api/public/traces/{traceId})")
    assert not got[1].payload.startswith(bad) and not got[3].payload.startswith(latin)


def test_each_kind_of_item_loads_or_says_why_not(tmp_path):
    with pytest.raises(InputError) as e:
        load_item(Item(0, "log.jsonl:3", "error", "the line is 70.0 MB; the limit is 64 MB a line"))
    assert str(e.value) == "log.jsonl:3: the line is 70.0 MB; the limit is 64 MB a line"
    loaded, run_id, when = load_item(Item(1, "run.json", "bytes", json.dumps(CANDS).encode(), None, "t0"))
    assert ([c.id for c in loaded.candidates], run_id, when) == (["a"], None, "t0")
    loaded, run_id, when = load_item(Item(2, "log.jsonl:1", "line",
                                          json.dumps({**CANDS, "run_id": 7, "time": "t1"})))
    assert ([c.id for c in loaded.candidates], run_id, when) == (["a"], "7", "t1")
    with pytest.raises(InputError) as e:
        load_item(Item(3, "log.jsonl:2", "line", "{bad"))
    assert str(e.value).startswith("log.jsonl:2: ") and e.value.line is None


def test_a_run_line_keeps_its_own_trailing_blanks_and_loses_only_its_line_end(tmp_path):
    one = json.dumps(CANDS)
    path = _write(tmp_path / "log.jsonl", one + "\n" + one + " \t\r\n" + "notjsonX\n")
    assert [i.payload for i in _items(path)] == [one, one + " \t", "notjsonX"]


def test_a_line_over_the_limit_is_named_with_its_size_in_megabytes(tmp_path):
    path = tmp_path / "log.jsonl"
    first = (json.dumps(CANDS) + "\n").encode()
    with open(path, "wb") as fh:
        fh.write(first)
        fh.truncate(len(first) + 67_150_050)  # the second line: zero bytes, no newline; 67.15005 MB
    assert [(i.kind, i.source, i.payload) for i in _items(path)] == [
        ("line", f"{path}:1", first.decode().rstrip("\n")),
        ("error", f"{path}:2", "the line is 67.2 MB; the limit is 64 MB a line")]


def test_a_json_file_whose_first_line_is_broken_is_read_whole(tmp_path):
    one = json.dumps(CANDS)
    path = _write(tmp_path / "runs.json", "not json\n" + one + "\n" + one + "\n")
    assert _items(path) == [Item(0, path, "bytes", open(path, "rb").read(), done_bytes=os.path.getsize(path))]


def test_a_jsonl_whose_first_line_is_a_list_looks_on_for_its_runs(tmp_path):
    one = json.dumps(CANDS)
    path = _write(tmp_path / "log.jsonl", "[1]\n" + one + "\n")
    assert [(i.kind, i.source, i.payload) for i in _items(path)] == [("line", f"{path}:1", "[1]"),
                                                                     ("line", f"{path}:2", one)]


def _lf_trace(tid, ts):
    return {"id": tid, "timestamp": ts, "input": "When?", "observations": [
        {"type": "RETRIEVER", "id": f"r-{tid}", "traceId": tid, "name": "retrieve", "input": "When?",
         "output": [{"pageContent": f"alpha text of {tid}"}], "startTime": ts}]}


def test_each_run_loads_under_its_own_source_and_trace(tmp_path):
    lf = _write(tmp_path / "lf.json", json.dumps([_lf_trace("t-a", "2024-05-14T10:00:00Z"),
                                                  _lf_trace("t-b", "2024-05-14T09:00:00Z")]))
    one = _write(tmp_path / "one.json", json.dumps(CANDS))
    log = _write(tmp_path / "log.jsonl", json.dumps(CANDS) + "\n" + json.dumps(CANDS["candidates"]) + "\n")
    got = [(i.source, *load_item(i)) for i in _items(lf, one, log)]
    assert [(source, loaded.source, run_id, when) for source, loaded, run_id, when in got] == [
        (f"{lf}#t-a", f"{lf}#t-a", "t-a", "2024-05-14T10:00:00Z"),
        (f"{lf}#t-b", f"{lf}#t-b", "t-b", "2024-05-14T09:00:00Z"),
        (one, one, None, None), (f"{log}:1", f"{log}:1", None, None), (f"{log}:2", f"{log}:2", None, None)]
    assert [[c.text for c in loaded.candidates] for _, loaded, _, _ in got[:2]] == [["alpha text of t-a"],
                                                                                     ["alpha text of t-b"]]


def test_a_run_that_cannot_be_loaded_is_named_by_its_own_source(tmp_path):
    bad = {**CANDS, "candidates": [{"id": "a"}]}
    log = _write(tmp_path / "log.jsonl", json.dumps(CANDS) + "\n" + json.dumps(bad) + "\n")
    one = _write(tmp_path / "one.json", json.dumps(bad))
    for item in _items(log, one)[1:]:
        with pytest.raises(InputError) as err:
            load_item(item)
        assert err.value.source == item.source


def test_a_trace_id_given_twice_leaves_each_run_its_own_source(tmp_path):
    a, b = _lf_trace("t-a", "2024-05-14T10:00:00Z"), _lf_trace("t-b", "2024-05-14T09:00:00Z")
    path = _write(tmp_path / "dup.json", json.dumps([a, b, a]))
    got = _items(path)
    assert [(i.source, load_item(i)[0].source) for i in got] == [(f"{path}#{t}", f"{path}#{t}")
                                                                 for t in ("t-a#1", "t-b", "t-a#3")]


@pytest.mark.parametrize("data", [[_lf_trace("t-a", "2024-05-14T10:00:00Z")], _lf_trace("t-a", "2024-05-14T10:00:00Z")])
def test_a_langfuse_export_of_one_trace_is_one_run_at_the_traces_time(tmp_path, data):
    path = _write(tmp_path / "lf.json", json.dumps(data))
    assert [(i.kind, i.time) for i in _items(path)] == [("bytes", "2024-05-14T10:00:00Z")]


def test_a_file_that_is_not_valid_json_says_where_without_naming_itself_twice(tmp_path):
    path = _write(tmp_path / "bad.json", '{"query": 1,')
    assert _items(path) == [Item(0, path, "error", "line 1: not valid JSON: Expecting property name enclosed in "
                                                   "double quotes (column 13)", done_bytes=12)]


def test_a_langsmith_export_of_two_traces_is_two_runs_each_picked_from_the_whole_file(tmp_path):
    def run(tid, text, ts):
        return {"id": f"r-{tid}", "trace_id": tid, "run_type": "retriever", "name": "retrieve",
                "inputs": {"query": "When?"}, "outputs": {"documents": [{"page_content": text, "metadata": {}}]},
                "start_time": ts}
    path = _write(tmp_path / "ls.json", json.dumps([run("t1", "alpha", "2024-05-14T10:00:00Z"),
                                                    run("t2", "beta", "2024-05-14T11:00:00Z")]))
    got = _items(path)
    assert [(i.kind, i.run_id, i.source) for i in got] == [("family", "t1", f"{path}#t1"), ("family", "t2", f"{path}#t2")]
    assert [(load_item(i)[0].logged.trace_id, [c.text for c in load_item(i)[0].candidates]) for i in got] == [
        ("t1", ["alpha"]), ("t2", ["beta"])]
