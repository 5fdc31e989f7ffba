"""scripts/corpus_probe.py: hand-labelled examples over what the real retriever finds in the bundled corpus."""

import importlib.util
import os
from pathlib import Path

import pytest

from askbetter.clarifier.examples import read_examples, write_examples
from askbetter.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "corpus_probe.py"
spec = importlib.util.spec_from_file_location("corpus_probe", SCRIPT)
corpus_probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(corpus_probe)


SETTINGS = Settings()


@pytest.fixture(scope="module")
def examples():
    return corpus_probe.build(SETTINGS)


def test_every_case_becomes_a_post_example_over_the_retrieved_passages(examples, tmp_path):
    write_examples(tmp_path / "probe.jsonl", examples)
    back = read_examples(tmp_path / "probe.jsonl")

    assert len(back) == len(corpus_probe.CASES)
    for example, case in zip(back, corpus_probe.CASES, strict=True):
        assert example["setting"] == "post" and example["kind"] == case.kind
        assert example["messages"][-1] == {"role": "user", "content": case.question}
        assert len(example["messages"]) == len(case.dialog) + 1
        assert example["clarification"] == case.clarification
        assert len(example["documents"]) == SETTINGS.top_k
    kinds = {case.kind for case in corpus_probe.CASES}
    assert kinds == {"ambiguous", "clear", "hard-negative"}


def test_the_labels_rest_on_the_passages_retrieved(examples):
    """The bare sync question finds both products' Sync pages (so it is ambiguous); the same
    question after a dialog about Nimbus Desktop finds Desktop's page first."""
    titles = {(case.question, case.dialog[:1]): [d["title"] for d in example["documents"]]
              for case, example in zip(corpus_probe.CASES, examples, strict=True)}
    sync = "How do I turn on sync?"
    bare = titles[(sync, ())]
    assert {"How to turn on Sync in Nimbus Cloud", "How to turn on Sync in Nimbus Desktop"} <= set(bare)
    after_desktop = titles[(sync, ("I just installed Nimbus Desktop on my new laptop.",))]
    assert after_desktop[0] == "How to turn on Sync in Nimbus Desktop"
