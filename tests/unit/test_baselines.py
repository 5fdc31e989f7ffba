"""Trivial baselines, the side-by-side comparison and its Markdown table (fakes only)."""

import json

import numpy as np
import pytest

from askbetter.clarifier import baselines as bl
from askbetter.clarifier import evaluate as ev
from askbetter.clarifier.types import Clarifier, Decision
from askbetter.settings import Settings
from ctrl_c import ctrl_c_in, ctrl_c_once_moved_in, second_run_stopped
from example_factory import example


EXAMPLES = [
    example(0, "pre", "Could you clarify what you mean?", "ambiguous"),
    example(1, "pre", None, "clear"),
    example(2, "post", "Which year do you mean?", "underspecified"),
    example(3, "post", None, "hard-negative"),
]


class OnesEmbedder:
    """A fake encoder: every sentence is the same vector."""

    def encode(self, sentences):
        return np.ones((len(sentences), 3))


def test_trivial_baselines_decide_as_named():
    always, never = bl.AlwaysClarify(), bl.NeverClarify()
    assert isinstance(always, Clarifier) and isinstance(never, Clarifier)
    messages = [{"role": "user", "content": "hi"}]
    pre = always.check(messages)
    assert (pre.needs_clarification, pre.score, pre.question) == (True, 1.0, bl.GENERIC_QUESTION)
    assert pre.stage == "pre"
    post = never.check(messages, [{"id": "d", "text": "t"}])
    assert (post.needs_clarification, post.score, post.question) == (False, 0.0, None)
    assert post.stage == "post"


def test_compare_one_report_per_system_in_order():
    reports = bl.compare(
        EXAMPLES,
        {"always": bl.AlwaysClarify(), "never": bl.NeverClarify()},
        embedder=OnesEmbedder(),
        progress=False,
    )
    assert [r["system"] for r in reports] == ["always", "never"]
    always, never = reports
    assert always["accuracy"] == 0.5 and always["recall_clarify"] == 1.0
    assert always["by_kind"]["hard-negative"]["accuracy"] == 0.0
    # the generic question matches reference 0 exactly, shares only "you mean" with reference 2
    assert always["n_questions"] == 2 and 0.5 < always["rouge_l"] < 1.0
    assert never["accuracy"] == 0.5 and never["f1_clarify"] == 0.0
    assert never["by_kind"]["hard-negative"]["accuracy"] == 1.0
    assert never["rouge_l"] is None and never["n_questions"] == 0


def test_compare_builds_factories_in_order():
    events = []

    def factory(name):
        def build():
            events.append(f"build {name}")
            return bl.NeverClarify()

        return build

    bl.compare(EXAMPLES, {"a": factory("a"), "b": factory("b")}, progress=False)
    assert events == ["build a", "build b"]


def test_format_table_one_row_per_system():
    reports = bl.compare(
        EXAMPLES,
        {"always-clarify": bl.AlwaysClarify(), "never-clarify": bl.NeverClarify()},
        embedder=OnesEmbedder(),
        progress=False,
    )
    lines = bl.format_table(reports).splitlines()
    assert len(lines) == 2 + len(reports)
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "system" and "hard-neg acc" in header and "ROUGE-L" in header
    assert {"pre acc", "post F1-clarify", "all macro-F1", "all AUC", "sec/example"} <= set(header)
    for line in lines:
        assert line.count("|") == len(header) + 1
    never = [c.strip() for c in lines[3].strip("|").split("|")]
    assert never[0] == "never-clarify"
    assert never[header.index("hard-neg acc")] == "100.0%"
    assert never[header.index("ROUGE-L")] == "n/a"


def test_format_table_without_hard_negatives():
    report = bl.compare(EXAMPLES[:2], {"never": bl.NeverClarify()}, progress=False)
    row = bl.format_table(report).splitlines()[2]
    assert "n/a" in row


class NaNClarifier:
    """A float16 model that overflowed: every score NaN."""

    threshold = 0.5

    def check(self, messages, documents=None):
        return Decision(False, float("nan"), None, "post" if documents else "pre")


def test_a_system_whose_scores_are_not_finite_is_marked_and_the_others_reported(caplog):
    reports = bl.compare(EXAMPLES, {"base": NaNClarifier(), "never": bl.NeverClarify()}, progress=False)
    nan, never = reports
    assert nan["n_not_finite"] == 4 and nan["n"] == 4 and nan["n_clarify"] == 2
    assert nan["accuracy"] is None and nan["auc"] is None and nan["macro_f1"] is None
    assert nan["by_setting"]["pre"]["accuracy"] is None and nan["by_setting"]["pre"]["n"] == 2
    assert nan["by_kind"] == {} and nan["by_source"] == {}
    assert never["n_not_finite"] == 0 and never["accuracy"] == 0.5
    assert json.loads(json.dumps(reports, allow_nan=False)) == reports
    assert "base: 4 of 4 scores are not finite numbers" in caplog.text
    rows = bl.format_table(reports).splitlines()
    nan_row = [c.strip() for c in rows[2].strip("|").split("|")]
    assert nan_row[0] == "base (4 of 4 scores not finite)"
    assert nan_row[1:14] == ["n/a"] * 13  # the classification cells and hard-negative accuracy
    assert rows[3].startswith("| never | 50.0% |")


def test_run_baselines_builds_the_five_systems(tmp_path, monkeypatch):
    built = []

    def fake_local_clarifier(settings, *, adapter, prompt_style):
        built.append((adapter, prompt_style))
        return bl.NeverClarify()

    monkeypatch.setattr(bl, "local_clarifier", fake_local_clarifier)
    monkeypatch.setattr(ev, "_minilm", OnesEmbedder)
    path = tmp_path / "ex.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EXAMPLES), encoding="utf-8")
    json_out, md_out = tmp_path / "out" / "baselines.json", tmp_path / "out" / "table.md"
    reports = bl.run_baselines(
        path,
        limit=3,
        adapter=None,
        json_out=json_out,
        markdown_out=md_out,
        settings=Settings(adapter="bundled"),
    )
    # the adapter runs with the prompt style stored with it (None: read it there)
    assert built == [("none", "zero-shot"), ("none", "few-shot"), ("bundled", None)]
    assert [r["system"] for r in reports] == [
        "always-clarify",
        "never-clarify",
        "base model, zero-shot",
        "base model, few-shot",
        "adapter bundled",
    ]
    assert all(r["n"] == 3 for r in reports)
    assert json.loads(json_out.read_text()) == reports
    assert md_out.read_text() == bl.format_table(reports) + "\n"


@pytest.mark.parametrize("when", ["while the table is written", "between the two files' renames"])
def test_run_baselines_stopped_leaves_report_and_table_of_one_run(tmp_path, monkeypatch, when):
    """A Ctrl-C once the JSON report was written left it beside the last run's table: stopped
    before the files move in, both are the last run's; between the renames, the Ctrl-C waits
    until both are the new run's."""
    import signal

    monkeypatch.setattr(bl, "local_clarifier", lambda settings, **_: bl.NeverClarify())
    monkeypatch.setattr(ev, "_minilm", OnesEmbedder)
    path = tmp_path / "ex.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EXAMPLES), encoding="utf-8")
    json_out, md_out = tmp_path / "baselines.json", tmp_path / "table.md"

    def run(limit):
        bl.run_baselines(path, limit=limit, json_out=json_out, markdown_out=md_out, settings=Settings())

    table = bl.format_table
    second_run_stopped(run, lambda: ctrl_c_in(monkeypatch, bl, "format_table") if when == "while the table is written"
                       else ctrl_c_once_moved_in(monkeypatch, "baselines.json"))
    n = 2 if when == "while the table is written" else 4
    reports = json.loads(json_out.read_text())
    assert {r["n"] for r in reports} == {n} and md_out.read_text() == table(reports) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baselines.json", "ex.jsonl", "table.md"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_run_baselines_rejects_an_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="no examples in"):
        bl.run_baselines(path, limit=None, settings=Settings())


@pytest.mark.parametrize("adapter", ["none", " NONE "])
def test_run_baselines_refuses_no_adapter_before_reading_the_examples(tmp_path, adapter):
    """Without an adapter its row would repeat the base model's: refused, nothing read or written."""
    json_out = tmp_path / "baselines.json"
    with pytest.raises(ValueError, match='--baselines needs an adapter .* not ' + adapter):
        bl.run_baselines(tmp_path / "missing.jsonl", limit=None, adapter=adapter, json_out=json_out,
                         settings=Settings())
    assert not json_out.exists()


def test_a_system_without_an_adapter_is_named_the_base_model_whatever_the_case():
    assert ev.system_name("None", "zero-shot") == "base model, zero-shot"
    assert ev.system_name("bundled", None) == "adapter bundled"
