import re

import pytest

from askbetter.retrieval.chunking import chunk_id, chunk_text

SENTENCES = " ".join(f"Sentence {i} explains how the sync feature works on day {i}." for i in range(40))


def _shared(previous: str, following: str) -> str:
    """The longest start of `following` that is also the end of `previous`."""
    for n in range(min(len(previous), len(following)), 0, -1):
        if previous.endswith(following[:n]):
            return following[:n]
    return ""


def test_short_text_is_one_chunk_without_outer_whitespace():
    text = "  # Title\n\nOne short paragraph.  \n"
    assert chunk_text(text, 800, 120) == ["# Title\n\nOne short paragraph."]


def test_whitespace_only_text_has_no_chunks():
    assert chunk_text(" \n\n \t", 800, 120) == []


def test_chunks_respect_size_and_overlap_on_sentence_boundaries():
    chunks = chunk_text(SENTENCES, 300, 100)
    assert len(chunks) > 5
    assert all(len(chunk) <= 300 for chunk in chunks)
    for previous, following in zip(chunks, chunks[1:]):
        shared = _shared(previous, following)
        assert 50 <= len(shared) <= 100  # at least half the budget, as whole sentences
        assert shared.startswith("Sentence ") and shared.endswith(".")
    assert all(chunk.startswith("Sentence ") and chunk.endswith(".") for chunk in chunks)


def test_every_word_survives_and_none_is_cut():
    chunks = chunk_text(SENTENCES, 250, 60)
    words_in = re.findall(r"\S+", SENTENCES)
    words_out = [word for chunk in chunks for word in re.findall(r"\S+", chunk)]
    assert set(words_out) == set(words_in)


def test_paragraphs_that_fit_stay_whole():
    paragraphs = [f"Paragraph {p}. " + " ".join(["word"] * 40) + "." for p in range(4)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, 2 * len(paragraphs[0]) + 2, 0)
    assert chunks == ["\n\n".join(paragraphs[:2]), "\n\n".join(paragraphs[2:])]


def test_a_paragraph_cut_into_sentences_keeps_its_break_from_the_paragraph_before():
    chunks = chunk_text("Intro.\n\n" + SENTENCES, 300, 0)
    assert chunks[0].startswith("Intro.\n\nSentence 0 explains")


def test_an_overlap_that_ends_a_paragraph_keeps_the_break_before_the_next():
    paragraphs = [f"Paragraph {p} starts here and says a little. It ends with sentence {p}." for p in range(6)]
    chunks = chunk_text("\n\n".join(paragraphs), 120, 50)
    assert len(chunks) == len(paragraphs)  # each a paragraph after the previous one's tail
    for previous, chunk, paragraph in zip(paragraphs, chunks[1:], paragraphs[1:]):
        tail, _, rest = chunk.partition("\n\n")
        assert previous.endswith(tail) and rest == paragraph


def test_an_overlap_of_one_sentence_shares_that_sentence_whole():
    text = " ".join(f"Sentence {i:02d} explains the sync feature." for i in range(40))
    sentence = len("Sentence 00 explains the sync feature.")
    chunks = chunk_text(text, 200, sentence)
    for previous, following in zip(chunks, chunks[1:]):
        assert re.fullmatch(r"Sentence \d\d explains the sync feature\.", _shared(previous, following))


def test_overlap_falls_back_to_words_when_the_trailing_sentence_is_short():
    # the last sentence, "Yes.", fills less than half the overlap: the words before it come too
    text = " ".join(f"Part {i} of the guide explains the sync feature in a great many words. Yes." for i in range(20))
    chunks = chunk_text(text, 200, 60)
    for previous, following in zip(chunks, chunks[1:]):
        shared = _shared(previous, following)
        assert 30 <= len(shared) <= 60 and shared.endswith("words. Yes.")
        assert following.split()[0] in previous.split()  # starts on a whole word


def test_overlap_falls_back_to_words_when_sentences_are_long():
    long_sentence = " ".join(f"w{i}" for i in range(200)) + "."
    chunks = chunk_text(long_sentence, 120, 30)
    assert all(len(chunk) <= 120 for chunk in chunks)
    for previous, following in zip(chunks, chunks[1:]):
        shared = _shared(previous, following)
        assert 0 < len(shared) <= 30
        assert following.split()[0] in previous.split()  # starts on a whole word


def test_a_word_longer_than_a_chunk_is_cut():
    chunks = chunk_text("start " + "x" * 250 + " end", 100, 20)
    assert all(len(chunk) <= 100 for chunk in chunks)
    assert "".join(chunks).count("x") >= 250


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_sizes_are_rejected(size, overlap):
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("text", size, overlap)


def test_chunk_ids_depend_on_the_file_and_the_content():
    assert chunk_id("/d/a.md", "Sync is on.\n\nReally.") == chunk_id("/d/a.md", "Sync  is on. Really.")
    assert chunk_id("/d/a.md", "Sync is on.") != chunk_id("/d/a.md", "Sync is off.")
    assert chunk_id("/d/a.md", "Sync is on.") != chunk_id("/d/b.md", "Sync is on.")
    assert re.fullmatch(r"[0-9a-f]{32}", chunk_id("/d/a.md", "x"))
    assert chunk_text(SENTENCES, 300, 100) == chunk_text(SENTENCES, 300, 100)
