"""The bundled demo corpus: short Markdown documents about Halcyon Works, a fictional company.

Written for askbetter and dedicated to the public domain (CC0 1.0). Two products share feature
names (Nimbus Cloud and Nimbus Desktop both have Sync, Backup, Team plans and a "reset") and two
offices offer the same services (Berlin and Boston), so a query such as "How do I turn on sync?"
really needs a clarification question.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_corpus_dir() -> Path:
    """The folder holding the bundled corpus (`askbetter/corpus/*.md`)."""
    return Path(str(resources.files("askbetter").joinpath("corpus")))
