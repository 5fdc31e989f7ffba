"""Ingestion and search over an in-memory Chroma with a tiny hashing embedding function."""

import importlib
import json
import os
import re
import subprocess
import sys
import uuid

import chromadb
import pytest

from askbetter.retrieval import (
    ChromaRetriever,
    RetrievalError,
    Retriever,
    ingest,
    make_client,
    open_collection,
)
from askbetter.retrieval.ingest import find_files
from askbetter.settings import Settings
from hash_embedding import FailingEmbedding, HashEmbedding

# the module (`askbetter.retrieval.ingest` is the function, re-exported by the package)
ingest_module = importlib.import_module("askbetter.retrieval.ingest")


@pytest.fixture
def settings(tmp_path):
    # EphemeralClients share one in-memory store per process: a fresh collection name per test
    return Settings(chroma_path=tmp_path / "chroma", collection=f"test-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def client(settings):
    return make_client(settings, ephemeral=True)


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "docs"
    (folder / "desktop").mkdir(parents=True)
    (folder / "desktop" / "sync.md").write_text(
        "# Desktop Sync\n\nIn Nimbus Desktop open Preferences and click Enable Sync on each computer.\n"
    )
    (folder / "cloud-sync.md").write_text(
        "# Cloud Sync\n\nIn Nimbus Cloud an admin opens Settings, Workspace, Sync in the browser.\n"
    )
    (folder / "expenses.txt").write_text("Client dinners are reimbursed up to 80 euros per attendee.\n")
    long_text = " ".join(f"Policy sentence number {i} about travel and hotels." for i in range(30))
    (folder / "travel.md").write_text(f"# Travel\n\n{long_text}\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.md").write_text("# Secret\n\nnot to be ingested")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    return folder


def test_ingest_then_reingest_adds_nothing(settings, client, corpus):
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    first = ingest([corpus], collection, chunk_size=200, chunk_overlap=40, progress=False)
    assert (first.files_seen, first.files_ingested, first.skipped) == (4, 4, [])
    assert first.chunks_added == collection.count() > 4  # travel.md is split into several chunks
    assert first.chunks_present == 0

    embedder = HashEmbedding()
    again = open_collection(settings, client=client, embedding_function=embedder)
    paths = [corpus, corpus / "cloud-sync.md"]
    second = ingest(paths, again, chunk_size=200, chunk_overlap=40, progress=False)
    assert second.files_seen == 4  # the file named twice is read once
    assert second.chunks_added == 0
    assert second.chunks_present == first.chunks_added
    assert collection.count() == first.chunks_added
    assert embedder.calls == 0  # nothing was embedded again


def test_interrupted_ingestion_resumes_without_duplicates(settings, client, corpus):
    reference = make_client(settings, ephemeral=True).get_or_create_collection(
        f"{settings.collection}-ref", embedding_function=HashEmbedding()
    )
    expected = ingest([corpus], reference, 120, 20, progress=False).chunks_added

    broken = open_collection(settings, client=client, embedding_function=FailingEmbedding(2))
    with pytest.raises(KeyboardInterrupt):
        ingest([corpus], broken, chunk_size=120, chunk_overlap=20, batch_size=3, progress=False)
    stored = broken.count()
    assert stored == 6  # two batches of three made it

    resumed = open_collection(settings, client=client, embedding_function=HashEmbedding())
    report = ingest([corpus], resumed, chunk_size=120, chunk_overlap=20, batch_size=3, progress=False)
    assert (report.chunks_present, report.chunks_added) == (stored, expected - stored)
    assert resumed.count() == expected
    assert sorted(resumed.get()["ids"]) == sorted(reference.get()["ids"])


def test_bad_files_are_skipped_and_reported_while_the_rest_is_ingested(settings, client, corpus):
    (corpus / "latin1.txt").write_bytes("Caf\xe9 opening hours".encode("latin-1"))
    (corpus / "empty.md").write_text("")
    (corpus / "records.jsonl").write_text('{"text": "Parking in Boston costs 22 dollars."}\n{broken\n')
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    report = ingest([corpus], collection, chunk_size=5000, progress=False)  # one chunk per text
    assert report.files_seen == 7 and report.files_ingested == 5
    reasons = {where.rsplit("/", 1)[-1]: why for where, why in report.skipped}
    assert set(reasons) == {"latin1.txt", "empty.md", "records.jsonl:2"}
    assert "not UTF-8" in reasons["latin1.txt"] and reasons["empty.md"] == "empty file"
    assert "not valid JSON" in reasons["records.jsonl:2"]
    texts = collection.get()["documents"]
    assert any("22 dollars" in text for text in texts)
    assert report.chunks_added == len(texts) == 5
    summary = report.summary()
    assert "5/7 files ingested" in summary and "latin1.txt" in summary


def test_a_file_whose_name_is_not_utf8_is_skipped_and_reported(settings, client, tmp_path):
    """Its path, which the chunks' id and `file` metadata hold, stopped the ingestion with a
    UnicodeEncodeError."""
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("Caf\u00e9 opening hours are 8 to 18.\n")
    (tmp_path / "parking.md").write_text("Parking is in garage B.\n")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    report = ingest(tmp_path, collection, progress=False)
    assert collection.get()["documents"] == ["Parking is in garage B."]
    assert report.skipped == [(f"{tmp_path}/caf\\udce9.md", "its path is not UTF-8 text: rename the file")]
    assert "1/2 files ingested" in report.summary()
    report.summary().encode("utf-8")  # printable


def test_missing_path_is_a_clear_error(settings, client, tmp_path):
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    with pytest.raises(RetrievalError, match="nowhere.md does not exist"):
        ingest([tmp_path / "nowhere.md"], collection, progress=False)


def test_the_package_exports_the_function_ingest_after_its_module_of_that_name_is_imported():
    """The package's names are imported on first use; importing `askbetter.retrieval.ingest`
    binds the package's `ingest` to that module, unless the function was bound first."""
    code = ("import askbetter.retrieval.ingest\nimport askbetter.retrieval as r\n"
            "print(type(r.ingest).__name__, all(hasattr(r, name) for name in r.__all__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout == "function True\n", done.stderr


def test_a_named_pipe_is_refused_not_read(tmp_path):
    """Reading a FIFO waits for a writer that never comes: `askbetter ingest notes.txt` would hang."""
    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    with pytest.raises(RetrievalError, match=f"^{fifo} is neither a file nor a folder$"):
        find_files([fifo])


@pytest.mark.parametrize("link_name", ["a_link.txt", "z_link.txt"])
def test_a_link_to_a_file_also_found_is_one_file_named_as_itself(tmp_path, link_name):
    """A symbolic link to a file of the same ingestion was a second file: the report counted it,
    and the target's chunks took the link's name as title and source where the link came first."""
    (tmp_path / "nested").mkdir()
    target = tmp_path / "b.txt"
    target.write_text("Parking is in garage B.")
    (tmp_path / "nested" / link_name).symlink_to(target)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("Lunch is at noon.")
    (tmp_path / "lunch.txt").symlink_to(outside)  # its only name here: kept as named
    assert find_files([tmp_path / "nested", tmp_path]) == [target, tmp_path / "lunch.txt"]


def test_search_returns_ranked_passages_with_metadata(settings, client, corpus):
    ingest([corpus], open_collection(settings, client=client, embedding_function=HashEmbedding()), progress=False)
    retriever = ChromaRetriever.from_settings(
        settings, client=client, embedding_function=HashEmbedding()
    )
    assert isinstance(retriever, Retriever)
    passages = retriever.search("Nimbus Desktop Enable Sync computer", k=3)
    assert len(passages) == 3
    best = passages[0]
    assert best["title"] == "Desktop Sync"
    assert best["source"] == str(corpus / "desktop" / "sync.md")
    assert best["metadata"]["chunk"] == 0
    assert re.fullmatch(r"[0-9a-f]{32}", best["id"]) and "Enable Sync" in best["text"]
    scores = [p["score"] for p in passages]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[-1]


@pytest.mark.parametrize("space", ["l2", "ip"])
def test_a_collection_made_elsewhere_in_another_space_scores_passages_by_cosine_alike(
    settings, client, corpus, space
):
    """A passage's score is its cosine similarity to the query whatever the collection's space
    (in the l2 space it read 1 - squared distance, 2 cos - 1)."""
    scores = {}
    for made in ("cosine", space):
        name = f"{settings.collection}-{made}"
        if made != "cosine":  # made elsewhere, as Chroma users make one: not by open_collection
            client.create_collection(name, embedding_function=HashEmbedding(), configuration={"hnsw": {"space": space}})
        collection = open_collection(Settings(collection=name), client=client, embedding_function=HashEmbedding())
        ingest([corpus], collection, progress=False)
        scores[made] = [p["score"] for p in ChromaRetriever(collection).search("Nimbus Desktop Enable Sync", k=3)]
    assert scores[space] == pytest.approx(scores["cosine"], abs=1e-4)
    assert 0.0 < scores["cosine"][-1] < scores["cosine"][0] < 1.0


def test_search_rejects_empty_queries(settings, client):
    retriever = ChromaRetriever(open_collection(settings, client=client, embedding_function=HashEmbedding()))
    with pytest.raises(ValueError, match="empty query"):
        retriever.search("   ")


def test_a_search_is_one_query_without_counting_the_collection(settings, client, corpus, monkeypatch):
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest([corpus], collection, progress=False)
    monkeypatch.setattr(type(collection), "count", lambda self: pytest.fail("counted the collection"))
    assert len(ChromaRetriever(collection).search("how do I turn on sync?", k=2)) == 2


def test_searching_an_empty_collection_says_how_to_fill_it(settings, client):
    retriever = ChromaRetriever(open_collection(settings, client=client, embedding_function=HashEmbedding()))
    expected = rf"collection '{settings.collection}' is empty: run `askbetter ingest"
    with pytest.raises(RetrievalError, match=expected):
        retriever.search("how do I turn on sync?")


def test_a_retriever_never_creates_its_collection(tmp_path, monkeypatch):
    settings = Settings(chroma_path=tmp_path / "chroma", collection="askbeter")
    open_collection(Settings(chroma_path=settings.chroma_path), embedding_function=HashEmbedding())

    def no_model(*args):
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", no_model)
    with pytest.raises(RetrievalError) as caught:
        ChromaRetriever.from_settings(settings)
    assert str(caught.value) == (
        "collection 'askbeter' does not exist (collections here: askbetter); "
        "run `askbetter ingest PATH` first"
    )
    assert [c.name for c in make_client(settings).list_collections()] == ["askbetter"]


def test_a_retriever_refuses_an_empty_collection_before_the_embedding_model_loads(tmp_path, monkeypatch):
    settings = Settings(chroma_path=tmp_path / "chroma")
    open_collection(settings, embedding_function=HashEmbedding())

    def no_model(*args):
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", no_model)
    with pytest.raises(RetrievalError, match=r"^collection 'askbetter' is empty: run `askbetter ingest PATH` first$"):
        ChromaRetriever.from_settings(settings)


def test_a_collection_keeps_its_embedding_function_and_its_data(tmp_path, corpus):
    settings = Settings(chroma_path=tmp_path / "chroma", collection="kept")
    collection = open_collection(settings, embedding_function=HashEmbedding())
    added = ingest([corpus], collection, progress=False).chunks_added

    class OtherEmbedding(HashEmbedding):
        @staticmethod
        def name() -> str:
            return "other-model"

    for opened_by in (open_collection, ChromaRetriever.from_settings):
        with pytest.raises(RetrievalError, match="cannot open collection 'kept'.*ASKBETTER_COLLECTION"):
            opened_by(settings, embedding_function=OtherEmbedding())
    assert open_collection(settings, embedding_function=HashEmbedding()).count() == added


def test_collection_uses_cosine_space(settings, client):
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    assert collection.configuration["hnsw"]["space"] == "cosine"
    assert isinstance(client, chromadb.api.ClientAPI)


def test_a_single_path_is_taken_whole(settings, client, corpus):
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    for path in (str(corpus), corpus / "expenses.txt"):
        report = ingest(path, collection, progress=False)
        assert report.files_ingested == (4 if path == str(corpus) else 1)
    assert all(str(corpus) in source for source in {m["source"] for m in collection.get()["metadatas"]})


def test_folders_with_nothing_to_ingest_are_an_error_naming_what_they_hold(settings, client, tmp_path):
    (tmp_path / "empty").mkdir()
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    (other / "a.docx").write_bytes(b"PK")
    (other / "sub" / "b.csv").write_text("x,y\n")
    (other / ".hidden.md").write_text("# not counted")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    with pytest.raises(RetrievalError) as caught:
        ingest([tmp_path / "empty", other], collection, progress=False)
    assert str(caught.value) == (
        f"no .txt, .md, .pdf or .jsonl files under {tmp_path / 'empty'}, {other} "
        "(2 other files ignored: a.docx, sub/b.csv)"
    )
    assert collection.count() == 0
    with pytest.raises(RetrievalError, match="^no paths to ingest: name files or folders$"):
        ingest([], collection, progress=False)


def test_reingesting_an_edited_file_removes_its_old_chunks_only(settings, client, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "p.txt").write_text("Parking costs 5 euros.")
    (folder / "copy.txt").write_text("Parking costs 5 euros.")  # the same text in another file
    (folder / "hours.txt").write_text("The office opens at 9.")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    assert ingest(folder, collection, progress=False).chunks_added == 3

    (folder / "p.txt").write_text("Parking costs 9 euros.")
    report = ingest(folder / "p.txt", collection, progress=False)
    assert (report.chunks_added, report.chunks_present, report.chunks_removed) == (1, 0, 1)
    assert "1/1 files ingested; chunks: 1 added, 0 already present, 1 stale removed; 0 files or lines skipped" in report.summary()
    stored = collection.get()
    assert sorted(stored["documents"]) == [
        "Parking costs 5 euros.", "Parking costs 9 euros.", "The office opens at 9."
    ]
    by_text = dict(zip(stored["documents"], stored["metadatas"]))
    assert by_text["Parking costs 5 euros."]["source"] == str(folder / "copy.txt")

    again = ingest(folder, collection, progress=False)  # nothing changed since
    assert (again.chunks_added, again.chunks_present, again.chunks_removed) == (0, 3, 0)


def test_reingesting_an_edited_file_updates_the_metadata_of_its_unchanged_chunks(settings, client, tmp_path):
    path = tmp_path / "faq.jsonl"
    path.write_text(json.dumps({"text": "Parking is in garage B.", "title": "Parking", "url": "https://x/old"}) + "\n")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest(path, collection, progress=False)

    path.write_text(json.dumps({"text": "Parking is in garage B.", "title": "Car park", "year": 2026}) + "\n")
    embedder = HashEmbedding()
    report = ingest(path, open_collection(settings, client=client, embedding_function=embedder), progress=False)
    assert (report.chunks_added, report.chunks_present, report.chunks_removed) == (0, 1, 0)
    assert embedder.calls == 0  # the text is unchanged: not embedded again
    stored = collection.get()
    assert stored["documents"] == ["Parking is in garage B."]
    assert stored["metadatas"] == [{"source": str(path), "title": "Car park", "year": 2026, "chunk": 0,
                                    "file": str(path.resolve())}]  # the old url is gone


def test_a_file_that_no_longer_loads_keeps_its_chunks(settings, client, tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("Parking costs 5 euros.")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest(path, collection, progress=False)
    path.write_bytes("Parking co\xfbts 9 euros.".encode("latin-1"))
    report = ingest(path, collection, progress=False)
    assert (report.files_ingested, report.chunks_removed) == (0, 0)
    assert collection.get()["documents"] == ["Parking costs 5 euros."]


def test_a_jsonl_number_chroma_cannot_store_as_it_is_is_dropped(settings, client, tmp_path):
    """Chroma dropped NaN and infinities itself and kept a 2**70 as a float (another number), so
    every re-ingest found the chunk's metadata changed."""
    path = tmp_path / "records.jsonl"
    record = {"text": "Parking costs 5 euros.", "score": float("nan"), "top": float("inf"), "big": 2**70,
              "year": 5, "rate": 0.5, "max": 2**63 - 1}
    path.write_text(json.dumps(record) + "\n")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    assert ingest(path, collection, progress=False).chunks_added == 1
    metadata = collection.get()["metadatas"][0]
    assert {key: metadata.get(key) for key in record if key != "text"} == {
        "score": None, "top": None, "big": None, "year": 5, "rate": 0.5, "max": 2**63 - 1}


@pytest.mark.parametrize("key", ["", "#document", "$and", "chroma:document"])
def test_a_jsonl_field_chroma_refuses_as_metadata_is_dropped(settings, client, tmp_path, key):
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"text": "Parking costs 5 euros.", key: "x", "year": 5}) + "\n")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    assert ingest(path, collection, progress=False).chunks_added == 1
    metadata = collection.get()["metadatas"][0]
    assert key not in metadata and metadata["year"] == 5


def test_a_jsonl_records_source_replaces_the_path_but_its_title_chunk_and_file_fields_do_not(
    settings, client, tmp_path
):
    path = tmp_path / "records.jsonl"
    record = {"text": "Parking costs 5 euros.", "title": "Parking", "source": "https://x.example/p",
              "chunk": 7, "file": "/elsewhere.md"}
    path.write_text(json.dumps(record) + "\n")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest(path, collection, progress=False)
    metadata = collection.get()["metadatas"][0]
    assert (metadata["source"], metadata["title"], metadata["chunk"], metadata["file"]) == (
        "https://x.example/p", "Parking", 0, str(path.resolve()))


def test_the_same_text_twice_in_a_file_is_stored_once_and_counted_as_present(settings, client, tmp_path):
    path = tmp_path / "faq.jsonl"
    path.write_text('{"text": "Parking is in garage B."}\n' * 2)
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    report = ingest(path, collection, progress=False)
    assert (report.chunks_added, report.chunks_present, collection.count()) == (1, 1, 1)


@pytest.mark.parametrize(("n", "listed"), [(5, "f0.csv, f1.csv, f2.csv, f3.csv, f4.csv"),
                                            (6, "f0.csv, f1.csv, f2.csv, f3.csv, f4.csv, ...")])
def test_a_folder_with_nothing_to_ingest_names_five_of_its_files(tmp_path, n, listed):
    for i in range(n):
        (tmp_path / f"f{i}.csv").write_text("x,y\n")
    with pytest.raises(RetrievalError) as caught:
        find_files(tmp_path)
    assert str(caught.value).endswith(f"({n} other files ignored: {listed})")


def test_a_jsonl_line_with_an_unpaired_surrogate_escape_is_skipped(settings, client, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"text": "Caf\\ud800 hours"}\n{"text": "Parking costs 5 euros.", "note": "\\udfff"}\n'
                    '{"text": "The office opens at 9. \\ud83d\\ude00"}\n')
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    report = ingest(path, collection, progress=False)
    assert collection.get()["documents"] == ["The office opens at 9. \U0001f600"]
    assert report.skipped == [
        (f"{path}:{line}", "not UTF-8 text (an unpaired surrogate escape such as \\ud800)") for line in (1, 2)
    ]


def _faq_ingested(settings, client, tmp_path):
    """A two-record JSONL file, ingested into a fresh collection: (its path, the collection)."""
    path = tmp_path / "faq.jsonl"
    path.write_text('{"text": "Parking is in garage B."}\n{"text": "Badges are issued at reception."}\n')
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest(path, collection, progress=False)
    return path, collection


def test_a_record_emptied_on_purpose_loses_its_chunks(settings, client, tmp_path):
    path, collection = _faq_ingested(settings, client, tmp_path)
    path.write_text('{"text": "Parking is in garage C."}\n{"text": ""}\n')
    report = ingest(path, collection, progress=False)
    assert (report.chunks_added, report.chunks_removed) == (1, 2)
    assert collection.get()["documents"] == ["Parking is in garage C."]


@pytest.mark.parametrize(("name", "emptied"), [("p.txt", " \n"), ("faq.jsonl", '{"text": ""}\n')])
def test_a_file_emptied_on_purpose_loses_its_chunks(settings, client, tmp_path, name, emptied):
    path = tmp_path / name
    path.write_text('{"text": "Parking is in garage B."}\n' if name.endswith(".jsonl") else "Parking is in garage B.")
    kept = tmp_path / "hours.txt"
    kept.write_text("The office opens at 9.")
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    ingest([path, kept], collection, progress=False)

    path.write_text(emptied)
    report = ingest([path, kept], collection, progress=False)
    assert (report.files_ingested, report.chunks_removed, len(report.skipped)) == (1, 1, 1)
    assert collection.get()["documents"] == ["The office opens at 9."]


def test_a_broken_jsonl_line_keeps_what_was_stored_for_its_file(settings, client, tmp_path):
    path, collection = _faq_ingested(settings, client, tmp_path)
    path.write_text('{"text": "Parking is in garage C."}\n{"text": "Badges are issued at reception.\n')
    report = ingest(path, collection, progress=False)
    assert (report.chunks_added, report.chunks_removed, len(report.skipped)) == (1, 0, 1)
    assert sorted(collection.get()["documents"]) == [
        "Badges are issued at reception.", "Parking is in garage B.", "Parking is in garage C."
    ]

    path.write_text('{"text": "Parking is in garage C."}\n{"text": "Badges are issued at the desk."}\n')
    fixed = ingest(path, collection, progress=False)  # read whole again: its old chunks go
    assert (fixed.chunks_added, fixed.chunks_removed) == (1, 2)
    assert sorted(collection.get()["documents"]) == ["Badges are issued at the desk.", "Parking is in garage C."]


def test_chunks_are_stored_as_the_files_are_read_not_after_the_last(settings, client, tmp_path, monkeypatch, capsys):
    """Memory holds one file's chunks and one batch, not the corpus's chunks."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(4):
        (folder / f"{number}.txt").write_text(" ".join(f"File {number} sentence {i}." for i in range(40)))
    collection = open_collection(settings, client=client, embedding_function=HashEmbedding())
    stored_at_read = []
    load_file = ingest_module.load_file

    def counting_load(path):
        stored_at_read.append(collection.count())
        return load_file(path)

    monkeypatch.setattr(ingest_module, "load_file", counting_load)
    report = ingest(folder, collection, chunk_size=100, chunk_overlap=0, batch_size=4)
    assert report.chunks_added == collection.count() > 16
    assert stored_at_read[0] == 0 and all(a < b for a, b in zip(stored_at_read, stored_at_read[1:]))
    assert stored_at_read[-1] >= 3 * report.chunks_added // 4 - 4  # at most one batch waits
    bar = capsys.readouterr().err.split("\r")[-1]
    size = sum(path.stat().st_size for path in folder.iterdir())
    assert bar.startswith("ingest: 100%") and f"{size / 1024:.2f}k/{size / 1024:.2f}k" in bar
