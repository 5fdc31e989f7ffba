"""Fixtures shared by the unit tests."""

from chroma_server import chroma_server  # noqa: F401 (the fixture, for every unit test module)
