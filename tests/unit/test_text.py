"""askbetter.text: one message for a file that is not UTF-8, wherever it is read; control
characters made visible for the terminal; files written atomically, alone or together."""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from askbetter.clarifier.examples import ExampleFormatError, read_examples
from askbetter.clarifier.source_common import RawDataError, read_text
from askbetter.retrieval.loaders import SkipFile, load_file
from askbetter.text import displayable, write_lines, write_together

# an example on line 1, then a byte of Latin-1 "café" on line 2, at its 4th byte
LATIN1 = b'{"id": 1, "messages": [{"role": "user", "content": "q"}], "clarification": null}\ncaf\xe9 au lait\n'
MESSAGE = "not UTF-8 text (byte 0xe9 at column 4); convert the file to UTF-8"


def test_a_file_not_in_utf8_is_reported_in_the_same_words_by_each_reader(tmp_path: Path) -> None:
    """Examples (eval, train), raw datasets (data build) and documents (ingest) each name the
    file and line, or the line where the report names the file, then say the same."""
    path = tmp_path / "latin1.txt"
    path.write_bytes(LATIN1)
    with pytest.raises(ExampleFormatError) as examples:
        read_examples(path)
    with pytest.raises(RawDataError) as raw:
        read_text(path)
    with pytest.raises(SkipFile) as document:
        load_file(path)
    assert str(examples.value) == str(raw.value) == f"{path}:2: {MESSAGE}"
    assert str(document.value) == f"line 2: {MESSAGE}"


def test_control_characters_are_shown_as_escapes_but_line_breaks_and_tabs_stay() -> None:
    # C0 (ESC, CR, BEL), DEL and C1 (0x9b, the one-byte CSI) each act on a terminal
    assert displayable("a\x1b[31mb\r\x07\x7f\x9bc\td\ne") == "a\\x1b[31mb\\x0d\\x07\\x7f\\x9bc\td\ne"
    assert displayable("caf\u00e9 \u2014 ok") == "caf\u00e9 \u2014 ok"


def test_files_written_together_leave_no_staged_file_when_a_rename_fails(tmp_path: Path) -> None:
    """A rename that fails (here the second file's path is a folder) raises its error; the staged
    files not yet moved in were left behind beside the outputs."""
    (tmp_path / "table.md").mkdir()
    writers = {tmp_path / name: lambda staged: staged.write_text("new\n") for name in ("report.json", "table.md")}
    with pytest.raises(IsADirectoryError):
        write_together(writers, "unused")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "table.md"]


def test_a_pipe_among_files_written_together_is_written_in_place_once_the_files_have_moved_in(
    tmp_path: Path,
) -> None:
    """`eval --json /dev/stdout --predictions P`: the pipe cannot be staged and renamed (the staged
    file replaced it); it is written last, the file moved in first, no staged file left."""
    import threading

    pipe, report = tmp_path / "pipe", tmp_path / "report.json"
    os.mkfifo(pipe)
    read: list[str] = []

    def read_pipe() -> None:
        read.append(pipe.read_text())
        read.append(report.read_text())  # the pipe's reader ends once it is written: the file is in

    reader = threading.Thread(target=read_pipe, daemon=True)
    reader.start()
    write_together({pipe: lambda out: write_lines(out, ["to the pipe\n"]),
                    report: lambda out: write_lines(out, ["{}\n"])}, "unused")
    reader.join(timeout=10)
    assert read == ["to the pipe\n", "{}\n"] and pipe.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "report.json"]


def test_a_file_of_the_user_s_named_like_a_temp_file_survives_a_write(tmp_path: Path) -> None:
    """The temp and staged files were at fixed names beside the output (`report.json.tmp`,
    `report.json.new`, `report.json.new.tmp`): a file of the user's at one of them was overwritten,
    then renamed away or removed."""
    theirs = {tmp_path / f"report.json{end}": f"theirs {end}\n" for end in (".tmp", ".new", ".new.tmp")}
    for path, text in theirs.items():
        path.write_text(text)
    write_lines(tmp_path / "report.json", ["one\n"])
    write_together({tmp_path / "report.json": lambda staged: write_lines(staged, ["two\n"])}, "unused")
    assert {path: path.read_text() for path in theirs} == theirs
    assert (tmp_path / "report.json").read_text() == "two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["report.json", *(p.name for p in theirs)])


def test_outputs_written_together_where_one_is_named_like_the_other_s_staged_file(tmp_path: Path) -> None:
    """`eval --json a --predictions a.new` (predictions first): a's staged file was `a.new`, the
    predictions' own name, so the predictions' staged file moved in over it and a got the
    predictions while a.new was gone."""
    a, a_new = tmp_path / "a", tmp_path / "a.new"
    write_together({a_new: lambda staged: write_lines(staged, ["predictions\n"]),
                    a: lambda staged: write_lines(staged, ["report\n"])}, "unused")
    assert (a.read_text(), a_new.read_text()) == ("report\n", "predictions\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.new"]


def test_two_writes_of_one_output_at_once_each_write_their_own_temp_file(tmp_path: Path) -> None:
    """A second write of the same output while the first is writing (another process, as here
    from the first's lines) used the same temp file: it truncated the first's, and its rename took
    the first's away, which then failed. Each now writes whole; the last to move in is kept."""
    path = tmp_path / "report.json"

    def first_lines() -> Iterator[str]:
        yield "first 1\n"
        write_lines(path, ["second\n"])
        yield "first 2\n"

    assert write_lines(path, first_lines()) == 2
    assert path.read_text() == "first 1\nfirst 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.fixture
def umask_027() -> Iterator[None]:
    """A umask (027) whose mode for a new file (0640) is neither 0600 (`tempfile.mkstemp`'s) nor
    the usual 0644, so a file given either shows."""
    previous = os.umask(0o027)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask_027")
def test_written_files_have_the_mode_a_plain_open_gives(tmp_path: Path) -> None:
    """The temp files are made unique, but with the mode `open(path, "w")` gives (the umask
    applied), not 0600: what moves in has it, written alone, together, or by a writer that opens
    its staged file itself."""
    plain = tmp_path / "plain"
    with plain.open("w"):
        pass
    write_lines(tmp_path / "alone", ["x\n"])
    write_together({tmp_path / "by_write_lines": lambda staged: write_lines(staged, ["x\n"]),
                    tmp_path / "by_open": lambda staged: staged.write_text("x\n")}, "unused")
    modes = {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("alone", "by_write_lines", "by_open")}
    assert modes == dict.fromkeys(modes, stat.S_IMODE(plain.stat().st_mode)) and modes["alone"] == 0o640
