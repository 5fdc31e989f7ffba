"""askbetter.text: one message for a file that is not UTF-8, wherever it is read; control
characters made visible for the terminal; files written together."""

from pathlib import Path

import pytest

from askbetter.clarifier.examples import ExampleFormatError, read_examples
from askbetter.clarifier.source_common import RawDataError, read_text
from askbetter.retrieval.loaders import SkipFile, load_file
from askbetter.text import displayable, write_together

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
    files not yet moved in were left behind beside the outputs (`table.md.new`)."""
    (tmp_path / "table.md").mkdir()
    writers = {tmp_path / name: lambda staged: staged.write_text("new\n") for name in ("report.json", "table.md")}
    with pytest.raises(IsADirectoryError):
        write_together(writers, "unused")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "table.md"]
