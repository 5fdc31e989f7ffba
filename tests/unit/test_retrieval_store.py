"""Chroma clients: which one the settings pick, and clear errors when the store is unusable."""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import chromadb
import pytest
from chromadb.errors import InternalError

from askbetter.retrieval import ChromaRetriever, RetrievalError, ingest, make_client, open_collection
from askbetter.retrieval.store import _unreachable
from askbetter.settings import Settings
from hash_embedding import HashEmbedding


def test_persistent_client_creates_a_missing_folder(tmp_path):
    path = tmp_path / "not" / "yet" / "there"
    client = make_client(Settings(chroma_path=path))
    client.get_or_create_collection("probe", embedding_function=None)
    assert (path / "chroma.sqlite3").is_file()


def test_unreachable_server_says_how_to_start_it():
    settings = Settings(chroma_host="127.0.0.1", chroma_port=1)
    with pytest.raises(RetrievalError) as caught:
        make_client(settings)
    message = str(caught.value)
    assert "cannot reach Chroma at 127.0.0.1:1" in message
    assert f"chroma run --path {settings.chroma_path} --port 1" in message


def test_a_server_that_is_not_chroma_is_reported_in_one_line():
    """Another HTTP server at the port answers with its own page (here an HTML 404)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(RetrievalError) as caught:
            make_client(Settings(chroma_host="127.0.0.1", chroma_port=server.server_address[1]))
    finally:
        server.shutdown()
        server.server_close()
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"cannot reach Chroma at 127.0.0.1:{server.server_address[1]} (<")
    assert "Error code: 501" in message and "...); start it with `chroma run" in message


def test_an_unreachable_server_elsewhere_is_not_told_to_start_here():
    """`chroma run` on this machine starts no server on another: the hint named this machine's folder."""
    exc = ConnectionError("Connection refused")
    here = _unreachable("LOCALHOST", 8000, exc, "/data/chroma")
    assert "); start it with `chroma run --path /data/chroma --port 8000`, or unset ASKBETTER_CHROMA_HOST" in here
    there = _unreachable("chroma.internal", 8000, exc, "/data/chroma")
    assert there == ("cannot reach Chroma at chroma.internal:8000 (Connection refused); check that the server "
                     "there is running and that this machine may connect to it, or unset ASKBETTER_CHROMA_HOST "
                     "to use a local folder")


def test_chroma_path_that_is_a_file(tmp_path):
    path = tmp_path / "chroma"
    path.write_text("not a folder")
    with pytest.raises(RetrievalError, match="is a file, not a folder; set ASKBETTER_CHROMA_PATH"):
        make_client(Settings(chroma_path=path))


def test_chroma_path_below_a_file_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RetrievalError, match="cannot create the Chroma folder .*file/chroma"):
        make_client(Settings(chroma_path=tmp_path / "file" / "chroma"))


@pytest.mark.parametrize("denied", [os.W_OK, os.X_OK], ids=["write", "search"])
def test_chroma_folder_that_is_not_writable(tmp_path, monkeypatch, denied):
    # chmod cannot stop root, who runs CI here: stand in for the permission check instead
    monkeypatch.setattr("askbetter.retrieval.store.os.access", lambda path, mode: not mode & denied)
    with pytest.raises(RetrievalError, match=f"the Chroma folder {tmp_path} is not writable"):
        make_client(Settings(chroma_path=tmp_path))


def test_locked_chroma_folder_names_the_likely_cause(tmp_path, monkeypatch):
    def locked(path):
        raise InternalError("database is locked")

    monkeypatch.setattr(chromadb, "PersistentClient", locked)
    with pytest.raises(RetrievalError) as caught:
        make_client(Settings(chroma_path=tmp_path))
    message = str(caught.value)
    assert f"cannot open the Chroma folder {tmp_path}: database is locked" in message
    assert "another process holds the folder" in message


def test_a_server_that_stops_answering_mid_run_is_reported_as_unreachable(chroma_server, tmp_path):
    settings, server = chroma_server
    path = tmp_path / "p.txt"
    path.write_text("Parking costs 5 euros.")
    collection = open_collection(settings, embedding_function=HashEmbedding())
    ingest(path, collection, progress=False)
    retriever = ChromaRetriever(collection)
    server.kill()
    server.wait()
    unreachable = (
        f"cannot reach Chroma at 127.0.0.1:{settings.chroma_port} ([Errno 111] Connection refused); "
        f"start it with `chroma run --path <its data folder> --port {settings.chroma_port}`, or unset "
        "ASKBETTER_CHROMA_HOST to use a local folder"
    )
    with pytest.raises(RetrievalError) as caught:
        ingest(path, collection, progress=False)
    assert str(caught.value) == (
        f"{unreachable}. The chunks stored so far are kept; run the same ingestion again to continue"
    )
    with pytest.raises(RetrievalError) as caught:
        retriever.search("parking")
    assert str(caught.value) == unreachable


def test_a_retriever_over_a_server_refuses_a_missing_or_empty_collection_before_the_embedding_model_loads(
        chroma_server, monkeypatch):
    """The collection `get_collection` gives over HTTP is counted as an embedded one is."""
    settings, _ = chroma_server
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function",
                        lambda *args: pytest.fail("the embedding model was loaded"))
    with pytest.raises(RetrievalError, match=r"^collection 'served' does not exist \(collections here: none\)"):
        ChromaRetriever.from_settings(settings)
    collection = open_collection(settings, embedding_function=HashEmbedding())
    with pytest.raises(RetrievalError, match=r"^collection 'served' is empty: run `askbetter ingest PATH` first$"):
        ChromaRetriever.from_settings(settings)
    collection.add(ids=["p"], documents=["Parking costs 5 euros."])
    assert ChromaRetriever.from_settings(settings, embedding_function=HashEmbedding()).search("parking", k=1)


class PagedClient:
    """A client whose `list_collections` gives at most `page` collections per call, whatever
    `limit` asks: a Chroma that pages its listing."""

    def __init__(self, client, page: int) -> None:
        self.client = client
        self.page = page

    def list_collections(self, limit=None, offset=None):
        return self.client.list_collections(limit=min(limit or self.page, self.page), offset=offset)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_retriever_finds_its_collection_on_any_page_of_collections(tmp_path, monkeypatch):
    client = make_client(Settings(chroma_path=tmp_path))
    names = ["alpha", "beta", "gamma"]
    for name in names:
        client.create_collection(name, embedding_function=None).add(ids=["p"], documents=["x"], embeddings=[[1.0]])
    paged = PagedClient(client, page=1)
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", lambda *args: None)
    for name in names:
        assert ChromaRetriever.from_settings(Settings(collection=name), client=paged).collection.name == name
    with pytest.raises(RetrievalError) as caught:
        ChromaRetriever.from_settings(Settings(collection="delta"), client=paged)
    assert str(caught.value) == (
        "collection 'delta' does not exist (collections here: alpha, beta, gamma); run `askbetter ingest PATH` first"
    )
