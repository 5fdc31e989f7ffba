import json
import logging
import re
from pathlib import Path

import pytest

from askbetter.retrieval.loaders import SkipFile, load_file


def make_pdf(text: str, title: str) -> bytes:
    """A minimal one-page PDF with a text layer and a document title."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_markdown_title_is_the_first_heading(tmp_path):
    path = write(tmp_path / "sync.md", "Intro line\n\n# Turn on Sync #\n\nText.\n\n# Second\n")
    [document] = load_file(path).documents
    assert document.title == "Turn on Sync"
    assert document.source == str(path)
    assert "Text." in document.text


def test_text_file_title_is_the_file_stem_and_bom_is_dropped(tmp_path):
    path = write(tmp_path / "notes.txt", "\ufeffHello there.".encode("utf-8"))
    [document] = load_file(path).documents
    assert (document.title, document.text) == ("notes", "Hello there.")


def test_pdf_text_and_title(tmp_path):
    path = write(tmp_path / "manual.pdf", make_pdf("Press the blue button to sync.", "Relay Manual"))
    [document] = load_file(path).documents
    assert document.title == "Relay Manual"
    assert "blue button" in document.text


def test_a_damaged_pdf_that_pypdf_reads_logs_no_warning(tmp_path, caplog):
    """pypdf logs each damage it works around: the command line printed them as its own lines
    ("askbetter: Ignoring wrong pointing object 1 0 (offset 1)"), naming no file."""
    pdf = re.sub(rb"\d{10} 00000 n", b"0000000001 00000 n", make_pdf("Press the blue button.", "Relay"))
    path = write(tmp_path / "manual.pdf", pdf)  # every offset in its cross-reference table is wrong
    with caplog.at_level(logging.WARNING):
        [document] = load_file(path).documents
    assert "blue button" in document.text and caplog.records == []


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("latin1.txt", "café crème".encode("latin-1"), "line 1: not UTF-8 text (byte 0xe9 at column 4); convert the file to UTF-8"),
        ("empty.md", "", "empty file"),
        ("blank.txt", " \n\t\n", "empty file"),
        ("broken.pdf", b"%PDF-1.4\nthis is not really a pdf", "unreadable PDF"),
        ("image.png", b"\x89PNG", "unsupported file type .png"),
        (
            "all-broken.jsonl",
            "{oops\n[1, 2]\n",
            'no usable lines (2 broken: line 1: not valid JSON (Expecting property name enclosed in '
            'double quotes: column 2); line 2: not an object with a string "text" field)',
        ),
    ],
)
def test_unusable_files_raise_skip_with_the_reason(tmp_path, name, content, reason):
    with pytest.raises(SkipFile, match=reason.replace("(", r"\(").replace(")", r"\)")):
        load_file(write(tmp_path / name, content))


def test_jsonl_keeps_good_lines_and_reports_broken_ones(tmp_path):
    lines = [
        json.dumps({"text": "Berlin parking is 6 euros.", "title": "Parking", "id": "p1", "year": 5}),
        '{"text": "unterminated',
        json.dumps({"title": "no text field"}),
        "",
        json.dumps({"text": "   "}),
        json.dumps({"text": "Boston has no garage.", "tags": ["a"], "source": "https://x.example/b"}),
    ]
    path = write(tmp_path / "records.jsonl", "\n".join(lines))
    loaded = load_file(path)
    texts = [d.text for d in loaded.documents]
    assert texts == ["Berlin parking is 6 euros.", "Boston has no garage."]
    first, second = loaded.documents
    assert first.title == "Parking" and first.metadata == {"id": "p1", "year": 5}
    assert second.title == "records line 6"
    assert second.metadata == {"source": "https://x.example/b"}  # the list is not storable: dropped
    assert [where for where, _ in loaded.skipped] == [f"{path}:2", f"{path}:3", f"{path}:5"]
    assert loaded.skipped[0][1] == "not valid JSON (Unterminated string starting at: column 10)"
    assert '"text" field' in loaded.skipped[1][1]
    assert loaded.skipped[2][1] == "empty text"


def test_jsonl_line_nested_too_deep_is_a_broken_line(tmp_path):
    """json.loads raises RecursionError, not JSONDecodeError: ingest stopped with its traceback."""
    good = json.dumps({"text": "Parking is in garage B."})
    path = write(tmp_path / "deep.jsonl", good + "\n" + "[" * 100_000 + "\n")
    loaded = load_file(path)
    assert [d.text for d in loaded.documents] == ["Parking is in garage B."]
    assert loaded.skipped == [(f"{path}:2", "not valid JSON (nested too deep)")]


def test_jsonl_with_only_broken_lines_names_the_first_three(tmp_path):
    path = write(tmp_path / "broken.jsonl", "{\n" * 5)
    with pytest.raises(SkipFile) as caught:
        load_file(path)
    reason = "not valid JSON (Expecting property name enclosed in double quotes: column 2)"
    assert str(caught.value) == (
        f"no usable lines (5 broken: line 1: {reason}; line 2: {reason}; line 3: {reason}; 2 more)"
    )
