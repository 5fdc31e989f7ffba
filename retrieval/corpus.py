"""The bundled demo corpus: short Markdown documents about Halcyon Works, a fictional company.

Written for askbetter and dedicated to the public domain (CC0 1.0). Two products share feature
names (Nimbus Cloud and Nimbus Desktop both have Sync, Backup, Team plans and a "reset") and two
offices offer the same services (Berlin and Boston), so a query such as "How do I turn on sync?"
really needs a clarification question.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from askbetter.settings import Settings

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from askbetter.retrieval.ingest import IngestReport


def bundled_corpus_dir() -> Path:
    """The folder holding the bundled corpus (`askbetter/corpus/*.md`)."""
    return Path(str(resources.files("askbetter").joinpath("corpus")))


def ephemeral_corpus_collection(settings: Settings, prefix: str) -> tuple["Collection", "IngestReport"]:
    """The bundled corpus ingested into a fresh in-memory Chroma collection named `prefix-<random>`
    (nothing on disk is touched), with the ingestion report."""
    from askbetter.retrieval.ingest import ingest
    from askbetter.retrieval.store import make_client, open_collection

    settings = replace(settings, collection=f"{prefix}-{uuid.uuid4().hex[:8]}")
    collection = open_collection(settings, client=make_client(settings, ephemeral=True))
    report = ingest([bundled_corpus_dir()], collection, settings.chunk_size, settings.chunk_overlap, progress=False)
    return collection, report
