"""fade.jsonl, the one reader and writer of JSON lines: its torn-line policies, gzip by suffix, a
line number in every error, lines of any length and hostile bytes, and the writers."""

from __future__ import annotations

import gzip
import json
import warnings
import zlib
from pathlib import Path

import pytest

from fade import jsonl
from fade.jsonl import JsonlError, NestedTooDeep

GOOD = [{"step": 1, "x": 0.5}, {"step": 2, "x": None}, {"step": 3, "text": "é"}]
TORN = '{"step": 4, "x'


def lines_of(records: list) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def read_both(path: Path, torn: jsonl.TornLine, **kwargs) -> list[tuple[int, dict]]:
    """What the whole-file reader and the streaming one read: the same, or the same error."""
    whole = list(jsonl.read(path, torn=torn, **kwargs).records())
    assert list(jsonl.records(path, torn=torn)) == whole
    return whole


def refused(path: Path, torn: jsonl.TornLine, *needles: str, error: type = JsonlError) -> str:
    """Both readers raise one line holding every one of ``needles``."""
    messages = []
    for read in (lambda: list(jsonl.read(path, torn=torn).records()), lambda: list(jsonl.records(path, torn=torn))):
        with pytest.raises(error) as caught:
            read()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "\n" not in messages[0] and all(n in messages[0] for n in needles), messages[0]
    return messages[0]


# -- the torn last line: each policy ---------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_each_policy_handles_a_torn_last_line_as_it_says(tmp_path, suffix):
    path = tmp_path / f"m.jsonl{suffix}"
    text = lines_of(GOOD) + "\n" + TORN  # a blank line 4, the torn line 5
    path.write_bytes(gzip.compress(text.encode()) if suffix else text.encode())
    numbered = [(1, GOOD[0]), (2, GOOD[1]), (3, GOOD[2])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # skipping silently warns nothing
        assert read_both(path, "skip-silently") == numbered
    with pytest.warns(RuntimeWarning, match=r"m\.jsonl(\.gz)?:5: skipped the unfinished last line") as caught:
        assert list(jsonl.read(path, torn="skip-with-warning").records()) == numbered
    assert len(caught) == 1
    with pytest.warns(RuntimeWarning, match=r":5: skipped"):
        assert list(jsonl.records(path, torn="skip-with-warning")) == numbered
    refused(path, "error", f"m.jsonl{suffix}:5: the last line is cut short", "expected a complete JSON object")


def test_the_dropped_torn_line_is_reported_with_its_number_and_bytes(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(GOOD) + TORN)
    lines = jsonl.read(path, torn="skip-silently")
    assert (lines.torn, lines.rest, lines.data) == (4, TORN.encode(), lines_of(GOOD).encode())


@pytest.mark.parametrize("torn", jsonl.TORN_LINE)
def test_a_bad_line_before_the_last_is_an_error_under_every_policy(tmp_path, torn):
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(GOOD[:1]) + TORN + "\n" + lines_of(GOOD[1:]))
    refused(path, torn, "m.jsonl:2: not valid JSON (Unterminated string starting at column 13): expected one JSON "
                        "object per line")


@pytest.mark.parametrize("torn", jsonl.TORN_LINE)
def test_a_terminated_bad_last_line_is_damage_not_a_torn_write(tmp_path, torn):
    # a record is written with its newline in one write: a line cut short never ends in one
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(GOOD) + TORN + "\n")
    refused(path, torn, "m.jsonl:4: not valid JSON")


@pytest.mark.parametrize("torn", jsonl.TORN_LINE)
def test_a_whole_last_line_without_its_newline_is_read(tmp_path, torn):
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(GOOD).rstrip("\n"))
    assert [r for _, r in read_both(path, torn)] == GOOD


def test_where_every_line_ends_in_a_newline_a_whole_unterminated_line_is_torn_too(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text(lines_of(GOOD).rstrip("\n"))
    lines = jsonl.read(path, torn="skip-silently", newline_ends=True)
    assert lines.torn == 3 and [r for _, r in lines.records()] == GOOD[:2]
    with pytest.raises(JsonlError, match=r"scores\.jsonl:3: the last line is cut short"):
        jsonl.read(path, torn="error", newline_ends=True)


def test_a_line_cut_inside_a_multibyte_character_is_torn(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1}\n' + '{"note": "é'.encode()[:-1])
    assert read_both(path, "skip-silently") == [(1, {"step": 1})]


def test_a_file_that_must_hold_records_names_what_it_lacks(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    assert list(jsonl.read(empty, torn="error").records()) == []
    with pytest.raises(JsonlError, match=r"empty\.jsonl: no rollouts \(the file has no non-blank lines\)"):
        jsonl.read(empty, torn="error", at_least_one="rollouts")
    only = tmp_path / "only.jsonl"
    only.write_text("\n" + TORN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any warning
        with pytest.raises(JsonlError, match=r"only\.jsonl:2: the only line is cut short"):
            jsonl.read(only, torn="skip-with-warning", at_least_one="rollouts")
    with pytest.raises(JsonlError, match=r"only\.jsonl:2: the last line is cut short"):
        jsonl.read(only, torn="error", at_least_one="rollouts")


def test_an_unknown_policy_is_refused(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(GOOD))
    for read in (jsonl.read, lambda p, torn: list(jsonl.records(p, torn=torn))):
        with pytest.raises(ValueError, match="torn='stop': expected one of error, skip-with-warning, skip-silently"):
            read(path, torn="stop")


# -- gzip ------------------------------------------------------------------------------------------


def test_gzip_by_suffix_members_in_a_row_and_zero_padding(tmp_path):
    text = lines_of(GOOD)
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(gzip.compress(text[:10].encode()) + gzip.compress(text[10:].encode()) + b"\0" * 8)
    assert [r for _, r in read_both(path, "error")] == GOOD
    assert jsonl.read_bytes(path) == text.encode()
    plain = tmp_path / "m.gz.jsonl"  # only the suffix says gzip
    plain.write_bytes(text.encode())
    assert jsonl.read_bytes(plain) == text.encode()


def test_an_unfinished_gzip_member_is_read_as_far_as_it_goes_unless_the_file_must_be_complete(tmp_path):
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join(member.compress(json.dumps(r).encode() + b"\n") + member.flush(zlib.Z_SYNC_FLUSH) for r in GOOD)
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(data)  # a writer still running (or killed): no trailer
    assert [r for _, r in read_both(path, "skip-silently")] == GOOD
    refused(path, "error", "m.jsonl.gz:4: the gzip data is cut off or damaged", "expected a complete gzip file")
    tail = member.compress(TORN.encode()) + member.flush(zlib.Z_SYNC_FLUSH)
    path.write_bytes(data + tail[:len(tail) // 2])  # killed mid-record
    with pytest.warns(RuntimeWarning, match=r"m\.jsonl\.gz:4: skipped"):
        assert [r for _, r in jsonl.read(path, torn="skip-with-warning").records()] == GOOD


def test_damaged_gzip_data_is_one_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(b"\x1f\x8b" + b"\0" * 40)
    for torn in jsonl.TORN_LINE:
        refused(path, torn, "m.jsonl.gz:1: the gzip data is cut off or damaged (")
    with pytest.raises(JsonlError, match=r"m\.jsonl\.gz:1: the gzip data"):
        jsonl.read_bytes(path)
    path.write_text(lines_of(GOOD))  # plain text named .gz
    refused(path, "skip-silently", "m.jsonl.gz:1: the gzip data is cut off or damaged")
    data = bytearray(gzip.compress(lines_of(GOOD).encode()))
    data[-6] ^= 1  # the trailer's checksum no longer matches
    path.write_bytes(bytes(data))
    refused(path, "skip-silently", "the gzip data is cut off or damaged", "data check")


# -- lines of any length and hostile bytes: one error naming path:line ------------------------------


def test_lines_are_numbered_from_one_counting_blank_lines_and_split_at_newlines_alone(tmp_path):
    path = tmp_path / "m.jsonl"
    # a raw U+2028 inside a string (ensure_ascii=False writes it so) and a CRLF line end stay in their line
    path.write_bytes(b"\n\n" + json.dumps({"t": "a\u2028b"}, ensure_ascii=False).encode() + b"\r\n" + b' [1]\n')
    refused(path, "error", "m.jsonl:4: a JSON list: expected one JSON object per line")
    path.write_bytes(path.read_bytes()[:-5])
    assert read_both(path, "error") == [(3, {"t": "a\u2028b"})]
    path.write_bytes(b'{"a": 1}\nnull\n')  # JSON's name for the value, not Python's
    refused(path, "error", "m.jsonl:2: a JSON null: expected one JSON object per line")


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_huge_line_is_read_whole(tmp_path, where):
    huge = {"step": 2, "text": "x" * (3 << 20)}  # longer than a read (1 MiB): it spans several
    rows = [{"step": 1}, huge, {"step": 3}] if where == "middle" else (
        [huge, {"step": 1}] if where == "first" else [{"step": 1}, huge])
    path = tmp_path / "m.jsonl"
    path.write_text(lines_of(rows).rstrip("\n") if where == "last" else lines_of(rows))
    assert [r for _, r in read_both(path, "error")] == rows
    gz(tmp_path / "m.jsonl.gz", lines_of(rows))
    assert [r for _, r in read_both(tmp_path / "m.jsonl.gz", "error")] == rows


def test_a_line_that_is_not_utf8_is_one_error_naming_the_byte(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(lines_of(GOOD[:1]).encode() + b'{"text": "caf\xe9"}\n')
    refused(path, "skip-silently", "latin.jsonl:2: not UTF-8 (byte 0xe9 at column 14): expected one JSON object "
                                   "per line, in UTF-8")


def test_json_nested_past_the_parsers_recursion_limit_is_one_error_naming_the_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    deep = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(lines_of(GOOD) + deep + "\n")
    message = refused(path, "skip-silently", "deep.jsonl:4: JSON nested deeper than Python's JSON parser reads",
                      error=NestedTooDeep)
    assert len(message) < 300
    path.write_text(lines_of(GOOD) + deep)  # unterminated, too deep to tell whether whole: read as a line
    refused(path, "skip-silently", "deep.jsonl:4: JSON nested deeper", error=NestedTooDeep)
    # a caller with a parser that reads it (pyarrow's) hands it the line
    lines = jsonl.read(path, torn="error")
    assert list(lines.records(deep=lambda line: {"deep": len(line)}))[-1] == (4, {"deep": len(deep)})
    with pytest.raises(NestedTooDeep, match="deep.jsonl:4"):
        list(lines.records(deep=lambda line: None))


def test_other_values_json_cannot_read_into_python_name_the_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"a": 1}\n{"big": ' + "1" * 5000 + "}\n")
    refused(path, "error", "m.jsonl:2: a value JSON cannot be read into Python (", "4300")
    path.write_text(path.read_text()[:-1])  # no newline: the parser stops at it, so it is judged, not dropped as torn
    refused(path, "skip-silently", "m.jsonl:2: a value JSON cannot be read into Python (", "4300")


def test_loads_names_where_and_what_was_expected():
    assert jsonl.loads(b'{"a": [1, 2]}', "x") == {"a": [1, 2]}
    with pytest.raises(JsonlError, match=r"^state\.json: not valid JSON \(Expecting value at line 2 column 11\): "
                                         r"expected TRL's state$"):
        jsonl.loads('{"a":\n  1, "b": }', "state.json", "TRL's state")


def test_a_file_is_read_once_to_the_size_it_had_when_opened(tmp_path):
    path = tmp_path / "live.jsonl"
    rows = [{"step": i, "pad": "x" * 1000} for i in range(3000)]  # 3 MB: read in several pieces
    path.write_text(lines_of(rows))
    read = jsonl.records(path, torn="error")
    first = next(read)
    with open(path, "a") as f:  # a live writer appends meanwhile
        f.write(lines_of([{"step": 9999}]) + TORN)
    assert [first, *read] == list(enumerate(rows, start=1))
    assert len(list(jsonl.read(path, torn="skip-silently").records())) == len(rows) + 1  # the next read sees it


# -- writing -------------------------------------------------------------------------------------


def test_json_safe_makes_strict_json_at_any_depth():
    value = {"a": float("nan"), "b": [1.5, float("inf"), (2, float("-inf"))], "c": {"d": None, "e": "x"}}
    assert jsonl.json_safe(value) == {"a": None, "b": [1.5, None, [2, None]], "c": {"d": None, "e": "x"}}
    json.dumps(jsonl.json_safe(value), allow_nan=False)

    class Pair:
        def __init__(self, a: float, b: float) -> None:
            self.a, self.b = a, b

    converted = jsonl.json_safe([Pair(1.0, float("nan"))], lambda v: [v.a, v.b] if isinstance(v, Pair) else v)
    assert converted == [[1.0, None]]


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_write_replaces_a_file_whole_and_reads_back(tmp_path, suffix):
    path = tmp_path / f"w.jsonl{suffix}"
    path.write_text("old\n")
    jsonl.write(path, GOOD)
    assert [r for _, r in read_both(path, "error")] == GOOD
    first = path.read_bytes()
    jsonl.write(path, GOOD)
    assert path.read_bytes() == first  # a gzip header with no time and no name: the same bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left
    jsonl.write(path, [{"t": "é"}], ensure_ascii=False)
    assert jsonl.read_bytes(path) == '{"t": "é"}\n'.encode()
    with pytest.raises(ValueError):
        jsonl.write(path, [{"x": float("nan")}], allow_nan=False)
    assert jsonl.read_bytes(path) == '{"t": "é"}\n'.encode()  # a failed write leaves the file as it was


def test_an_appender_writes_a_gzip_member_per_session_readable_at_every_moment(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    first = jsonl.Appender(path)
    first.append(GOOD[0])
    assert [r for _, r in jsonl.read(path, torn="skip-silently").records()] == GOOD[:1]  # flushed, no trailer
    first.close()
    assert gzip.decompress(path.read_bytes()) == lines_of(GOOD[:1]).encode()  # a complete gzip file
    killed = jsonl.Appender(path)
    killed.append(GOOD[1])  # ... and the process dies without closing it
    with jsonl.Appender(path) as after:  # the next session first ends the unfinished member
        after.append(GOOD[2])
    assert gzip.decompress(path.read_bytes()) == lines_of(GOOD).encode()


def test_an_appender_drops_the_torn_record_a_kill_left_in_an_unfinished_member(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = member.compress(lines_of(GOOD[:2]).encode() + TORN.encode()) + member.flush(zlib.Z_SYNC_FLUSH)
    path.write_bytes(data)
    with jsonl.Appender(path) as log:
        log.append(GOOD[2])
    assert gzip.decompress(path.read_bytes()) == lines_of(GOOD).encode()


def test_an_appender_writes_to_a_file_the_caller_opened(tmp_path):
    path = tmp_path / "scores.jsonl"
    with jsonl.Appender(path, file=open(path, "ab")) as log:
        log.append(GOOD[0])
        assert path.read_bytes() == lines_of(GOOD[:1]).encode()  # flushed as written
        log.append(GOOD[1])
    assert log.file.closed and path.read_text() == lines_of(GOOD[:2])


def test_a_key_named_twice_is_refused_where_the_caller_asks(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"a": 1}\n{"b": 1, "c": 2, "b": 3}\n')
    assert [r for _, r in jsonl.read(path, torn="error").records()][1] == {"b": 3, "c": 2}  # json's own rule
    with pytest.raises(JsonlError, match=r"m\.jsonl:2: key 'b' twice in one object: expected each key once"):
        list(jsonl.read(path, torn="error").records(unique_keys=True))


def test_a_stream_without_a_file_number_is_read_to_its_end(tmp_path):
    import io

    path = tmp_path / "chunk.jsonl.zst"  # what a decompressor hands over: lines, no file behind them
    stream = io.BufferedReader(io.BytesIO((lines_of(GOOD) + TORN).encode()))
    with pytest.warns(RuntimeWarning, match=r"chunk\.jsonl\.zst:4: skipped"):
        lines = jsonl.read(path, torn="skip-with-warning", file=stream)
    assert [r for _, r in lines.records()] == GOOD
