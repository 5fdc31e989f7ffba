"""A tiny hashing embedding function for tests that need a real Chroma but no embedding model."""

import re
import zlib

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

DIMENSIONS = 256


class HashEmbedding(EmbeddingFunction[Documents]):
    """Bag of words hashed into a few dimensions: texts sharing words get close vectors."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, input: Documents) -> Embeddings:
        self.calls += 1
        vectors = []
        for text in input:
            vector = np.full(DIMENSIONS, 1e-3, dtype=np.float32)
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
            vectors.append(vector / np.linalg.norm(vector))
        return vectors

    @staticmethod
    def name() -> str:
        return "test-hash"

    def get_config(self) -> dict:
        return {}

    @staticmethod
    def build_from_config(config: dict) -> "HashEmbedding":
        return HashEmbedding()


class FailingEmbedding(HashEmbedding):
    """Works for `calls_before_failure` calls, then fails like a crash mid-ingestion."""

    def __init__(self, calls_before_failure: int) -> None:
        super().__init__()
        self.calls_before_failure = calls_before_failure

    def __call__(self, input: Documents) -> Embeddings:
        if self.calls >= self.calls_before_failure:
            raise KeyboardInterrupt("simulated interruption")
        return super().__call__(input)
