"""The evaluation runner with a scripted fake clarifier and a fake embedder."""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from askbetter.clarifier import evaluate as ev
from askbetter.clarifier.examples import ExampleFormatError
from askbetter.clarifier.types import Clarifier, Decision
from askbetter.settings import Settings
from ctrl_c import ctrl_c_in, ctrl_c_once_moved_in, second_run_stopped
from example_factory import example

DOCUMENTED_KEYS = set(
    "system threshold n n_clarify n_not_finite accuracy precision_clarify recall_clarify f1_clarify macro_f1"
    " auc by_setting by_kind by_source rouge_l embed_sim one_question_share n_questions sec_per_example"
    .split()
)


EXAMPLES = [
    example(0, "pre", "Which city do you mean?", "ambiguous"),
    example(1, "pre", None, "clear"),
    example(2, "post", "Which year do you mean?", "underspecified"),
    example(3, "post", None, "hard-negative"),
    example(4, "post", None, "hard-negative"),
]
# query text -> (score, question when it asks)
SCRIPT = {
    "query 0": (0.9, "Which city do you mean?"),  # right, same question
    "query 1": (0.2, None),  # right
    "query 2": (0.3, None),  # wrong: misses the clarification
    "query 3": (0.1, None),  # right
    "query 4": (0.7, "Which one? Or the other?"),  # wrong: asks on a hard negative
}


class ScriptedClarifier:
    name = "scripted"
    threshold = 0.5

    def __init__(self):
        self.calls = []

    def check(self, messages, documents=None):
        self.calls.append((messages[-1]["content"], documents))
        score, question = SCRIPT[messages[-1]["content"]]
        stage = "post" if documents else "pre"
        return Decision(score >= self.threshold, score, question, stage)


class WordEmbedder:
    """A fake encoder: a vector of counts of a few words."""

    WORDS = ("which", "city", "year", "one", "mean")

    def __init__(self):
        self.calls = 0

    def encode(self, sentences):
        self.calls += 1
        return np.array([[s.lower().count(w) + 0.01 for w in self.WORDS] for s in sentences])


class ExplodingEmbedder:
    def encode(self, sentences):
        raise AssertionError("the embedder must not be used")


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_fake_is_a_clarifier():
    assert isinstance(ScriptedClarifier(), Clarifier)


def test_report_has_exactly_the_documented_keys_and_serialises():
    report = ev.evaluate(EXAMPLES, ScriptedClarifier(), embedder=WordEmbedder(), progress=False)
    assert set(report) == DOCUMENTED_KEYS == set(ev.REPORT_KEYS)
    assert set(report["by_setting"]) == {"pre", "post"}
    assert json.loads(json.dumps(report, allow_nan=False)) == report


def test_report_figures():
    clarifier = ScriptedClarifier()
    report = ev.evaluate(EXAMPLES, clarifier, embedder=WordEmbedder(), progress=False)
    assert report["system"] == "scripted" and report["threshold"] == 0.5
    assert (report["n"], report["n_clarify"]) == (5, 2)
    assert report["accuracy"] == pytest.approx(3 / 5)
    assert report["precision_clarify"] == 0.5 and report["recall_clarify"] == 0.5
    assert report["by_setting"]["pre"]["accuracy"] == 1.0
    assert report["by_setting"]["post"]["accuracy"] == pytest.approx(1 / 3)
    assert report["by_kind"]["hard-negative"] == {"accuracy": 0.5, "n": 2}
    assert report["by_source"] == {
        "test": {
            "pre": {"accuracy": 1.0, "auc": 1.0, "n": 2},
            # post: the one that needs clarifying (0.3) beats one of the two hard negatives
            "post": {"accuracy": pytest.approx(1 / 3), "auc": 0.5, "n": 3},
        }
    }
    # only example 0 has a reference and a question; its question equals the reference
    assert report["n_questions"] == 1
    assert report["rouge_l"] == 1.0 and report["embed_sim"] == pytest.approx(1.0)
    assert report["one_question_share"] == 1.0
    assert report["sec_per_example"] >= 0.0


def test_documents_only_for_post_examples():
    clarifier = ScriptedClarifier()
    ev.evaluate(EXAMPLES, clarifier, embedder=WordEmbedder(), progress=False)
    passages = [{"id": "d1", "text": "passage"}]
    assert [docs for _, docs in clarifier.calls] == [None, None, passages, passages, passages]


def test_no_question_quality_without_generated_questions():
    report = ev.evaluate(
        EXAMPLES,
        ScriptedClarifier(),
        embedder=ExplodingEmbedder(),
        generate_questions=False,
        progress=False,
        system="no questions",
    )
    assert report["system"] == "no questions"
    assert report["rouge_l"] is None and report["embed_sim"] is None
    assert report["n_questions"] == 0
    assert report["accuracy"] == pytest.approx(3 / 5)


def test_classification_only_run_scores_without_check():
    class ScoringClarifier(ScriptedClarifier):
        def score(self, messages, documents=None):
            return SCRIPT[messages[-1]["content"]][0]

        def check(self, messages, documents=None):
            raise AssertionError("check writes a question; a scoring run must not call it")

    report = ev.evaluate(
        EXAMPLES, ScoringClarifier(), generate_questions=False, progress=False
    )
    assert report["accuracy"] == pytest.approx(3 / 5) and report["auc"] == pytest.approx(5 / 6)
    assert report["n_questions"] == 0


def test_minilm_is_loaded_only_when_there_are_questions(monkeypatch):
    loaded = []

    def fake_minilm():
        loaded.append(True)
        return WordEmbedder()

    monkeypatch.setattr(ev, "_minilm", fake_minilm)
    ev.evaluate(EXAMPLES[1:2], ScriptedClarifier(), progress=False)
    assert loaded == []
    report = ev.evaluate(EXAMPLES, ScriptedClarifier(), progress=False)
    assert loaded == [True] and report["embed_sim"] == pytest.approx(1.0)


def test_system_without_name_or_threshold():
    class Bare:
        def check(self, messages, documents=None):
            return Decision(False, 0.0, None, "pre")

    report = ev.evaluate(EXAMPLES, Bare(), progress=False)
    assert report["system"] == "Bare" and report["threshold"] is None
    assert report["auc"] == 0.5 and report["rouge_l"] is None


def test_load_examples_limit_takes_the_first(tmp_path):
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES)
    assert [e["id"] for e in ev.load_examples(path, 2)] == ["ex-0", "ex-1"]
    assert len(ev.load_examples(path)) == 5


def test_load_examples_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no examples in .*empty.jsonl"):
        ev.load_examples(empty)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(EXAMPLES[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ExampleFormatError, match=r"broken.jsonl:2"):
        ev.load_examples(broken)
    with pytest.raises(ValueError, match="--limit"):
        ev.load_examples(write_jsonl(tmp_path / "ok.jsonl", EXAMPLES), 0)
    with pytest.raises(FileNotFoundError):
        ev.load_examples(tmp_path / "missing.jsonl")
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes(json.dumps(EXAMPLES[0]).encode() + b"\n" + json.dumps(EXAMPLES[1]).replace("e", "\xe9").encode("latin-1") + b"\n")
    with pytest.raises(ExampleFormatError, match=r"latin1.jsonl:2: not UTF-8 text \(byte 0xe9 at column \d+\); convert the file to UTF-8"):
        ev.load_examples(latin)
    with pytest.raises(ExampleFormatError, match="is a folder"):
        ev.load_examples(tmp_path)
    surrogate = tmp_path / "surrogate.jsonl"  # stopped here, not in the tokenizer once the model loaded
    surrogate.write_text(json.dumps(EXAMPLES[0]) + "\n" + json.dumps(EXAMPLES[1]).replace("query 1", "query \\ud800") + "\n")
    with pytest.raises(ExampleFormatError, match=r"surrogate.jsonl:2: not a valid example: not UTF-8 text"):
        ev.load_examples(surrogate)


def test_a_file_that_opens_with_a_utf8_byte_order_mark_reads_as_without(tmp_path):
    """Windows editors and PowerShell open a UTF-8 file with a BOM: it stopped eval at line 1
    ("Unexpected UTF-8 BOM (decode using utf-8-sig)"), though the file is UTF-8."""
    plain = write_jsonl(tmp_path / "plain.jsonl", EXAMPLES)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert ev.load_examples(bom) == ev.load_examples(plain)
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(EXAMPLES[0]).replace("e", "\xe9").encode("latin-1") + b"\n")
    with pytest.raises(ExampleFormatError, match=r"bom.jsonl:1: not UTF-8 text \(byte 0xe9"):
        ev.load_examples(bom)


def test_load_examples_from_elsewhere_without_kind_or_source(tmp_path):
    # the design calls `kind` informative only: a held-out file may leave it (and `source`) out
    bare = {k: v for k, v in EXAMPLES[0].items() if k not in ("kind", "source")}
    [loaded] = ev.load_examples(write_jsonl(tmp_path / "bare.jsonl", [bare]))
    assert (loaded["kind"], loaded["source"]) == ("unknown", "unknown")
    assert loaded["messages"] == EXAMPLES[0]["messages"]


def test_load_examples_from_elsewhere_with_null_documents_and_loose_document_fields(tmp_path):
    # another source's writer may give `pre` null documents, numeric ids, a null or numeric title
    pre = {**EXAMPLES[0], "setting": "pre", "documents": None}
    post = {**EXAMPLES[1], "setting": "post",
            "documents": [{"id": 3, "title": None, "text": "a"}, {"title": 1984, "text": "b"}]}
    loaded = ev.load_examples(write_jsonl(tmp_path / "loose.jsonl", [pre, post]))
    assert loaded[0]["documents"] == []
    assert loaded[1]["documents"] == [{"id": "3", "title": None, "text": "a"},
                                      {"id": "", "title": "1984", "text": "b"}]


def test_load_examples_from_elsewhere_with_bare_passages_a_blank_reference_or_no_setting(tmp_path):
    # passages as plain strings; "" for "no clarification"; no `setting`: documents decide it
    bare_passages = {**EXAMPLES[1], "setting": "post", "documents": ["first passage", "second"]}
    blank = {**EXAMPLES[0], "clarification": " "}
    unset = [{k: v for k, v in ex.items() if k != "setting"} for ex in (EXAMPLES[0], bare_passages)]
    loaded = ev.load_examples(write_jsonl(tmp_path / "loose.jsonl", [bare_passages, blank, *unset]))
    assert loaded[0]["documents"] == [{"id": "", "text": "first passage"}, {"id": "", "text": "second"}]
    assert loaded[1]["clarification"] is None
    assert [ex["setting"] for ex in loaded[2:]] == ["pre", "post"]


def test_load_examples_reads_a_numeric_id_as_text_and_names_one_without_an_id_by_its_line(tmp_path):
    # the predictions' ids are text (scripts/compare_predictions.py reads their suffixes)
    [loaded] = ev.load_examples(write_jsonl(tmp_path / "numeric.jsonl", [{**EXAMPLES[0], "id": 7}]))
    assert loaded["id"] == "7"
    unnamed = {k: v for k, v in EXAMPLES[2].items() if k != "id"}
    path = write_jsonl(tmp_path / "no_id.jsonl", [EXAMPLES[0], {**EXAMPLES[1], "id": None}, unnamed])
    assert [ex["id"] for ex in ev.load_examples(path)] == ["ex-0", "line-2", "line-3"]
    for bad in (["a"], True):
        path = write_jsonl(tmp_path / "bad_id.jsonl", [EXAMPLES[0], {**EXAMPLES[1], "id": bad}])
        with pytest.raises(ExampleFormatError, match=re.escape(f"bad_id.jsonl:2: not a valid example: id must be a string or a whole number, not {bad!r}")):
            ev.load_examples(path)


def test_load_examples_rejects_an_empty_judged_turn(tmp_path):
    # caught when the file is read, not an hour into scoring it
    empty_turn = {**EXAMPLES[1], "messages": [{"role": "user", "content": "  "}]}
    path = write_jsonl(tmp_path / "empty_turn.jsonl", [EXAMPLES[0], empty_turn])
    with pytest.raises(ExampleFormatError, match=r"empty_turn.jsonl:2: .*non-empty"):
        ev.load_examples(path)


def test_run_eval_writes_report_and_predictions(tmp_path, monkeypatch):
    built = []

    def fake_local_clarifier(settings, *, adapter, prompt_style):
        built.append((settings.base_model, adapter, prompt_style))
        return ScriptedClarifier()

    monkeypatch.setattr(ev, "local_clarifier", fake_local_clarifier)
    monkeypatch.setattr(ev, "_minilm", WordEmbedder)
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES)
    json_out, preds_out = tmp_path / "out" / "report.json", tmp_path / "out" / "preds.jsonl"
    report = ev.run_eval(
        path,
        adapter="none",
        base_model="some/model",
        limit=4,
        json_out=json_out,
        prompt_style="few-shot",
        settings=Settings(),
        predictions_out=preds_out,
    )
    assert built == [("some/model", "none", "few-shot")]
    assert report["n"] == 4 and report["system"] == "base model, few-shot"
    assert json.loads(json_out.read_text()) == report
    rows = [json.loads(line) for line in preds_out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["ex-0", "ex-1", "ex-2", "ex-3"]
    assert {r["source"] for r in rows} == {"test"}
    assert rows[0]["label"] is True and rows[0]["decision"] is True
    assert rows[0]["score"] == 0.9 and rows[0]["question"] == "Which city do you mean?"
    assert rows[2]["decision"] is False and rows[2]["question"] is None


def test_run_eval_defaults_to_the_settings_adapter(tmp_path, monkeypatch):
    built = []

    def fake_local_clarifier(settings, *, adapter, prompt_style):
        built.append(adapter)
        return ScriptedClarifier()

    monkeypatch.setattr(ev, "local_clarifier", fake_local_clarifier)
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES[1:2])
    settings = Settings(adapter="my/adapter")
    report = ev.run_eval(
        path, adapter=None, base_model=None, limit=None, json_out=None, settings=settings
    )
    assert built == ["my/adapter"] and report["system"] == "adapter my/adapter"


def test_format_report_mentions_every_section():
    report = ev.evaluate(EXAMPLES, ScriptedClarifier(), embedder=WordEmbedder(), progress=False)
    text = ev.format_report(report)
    needles = ["scripted", "threshold: 0.500", "overall", "pre", "post", "hard-negative"]
    needles += ["60.0%", "ROUGE-L 1.000", "seconds per example"]
    needles += ["accuracy / AUC by source", "100.0% / 1.000 (n=2)", "33.3% / 0.500 (n=3)"]
    for needle in needles:
        assert needle in text
    report["auc"] = None
    assert "n/a" in ev.format_report(report)


def test_read_predictions_reads_back_what_write_predictions_wrote(tmp_path):
    path = tmp_path / "preds.jsonl"
    ev.write_predictions(path, ROWS)
    path.write_text(path.read_text() + "\n")  # a trailing blank line is skipped
    assert ev.read_predictions(path) == [dataclasses.asdict(r) for r in ROWS]


ROWS = [ev.Prediction("a", "test", "pre", "clear", False, 0.1, False, None, None, 0.5),
        ev.Prediction("b", "test", "post", "ambiguous", True, 0.8, True, "Which one?", "Which?", 0.4)]


def test_a_predictions_write_that_fails_midway_leaves_the_last_file_whole(tmp_path):
    path = tmp_path / "preds.jsonl"
    ev.write_predictions(path, ROWS)
    last = path.read_bytes()
    broken = dataclasses.replace(ROWS[1], question=object())  # not JSON: fails after the first row
    with pytest.raises(TypeError):
        ev.write_predictions(path, [ROWS[0], broken])
    assert path.read_bytes() == last and [p.name for p in tmp_path.iterdir()] == ["preds.jsonl"]


@pytest.mark.parametrize("write", [lambda path: ev.write_json(path, {"n": 2}),
                                   lambda path: ev.write_predictions(path, ROWS)], ids=["json", "predictions"])
def test_a_report_or_predictions_write_stopped_before_it_ends_leaves_the_last_file_whole(
        tmp_path, monkeypatch, write):
    path = tmp_path / "out"
    path.write_text("the last run's\n")

    def stop(self, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", stop)  # stopped just before the new file takes its place
    with pytest.raises(KeyboardInterrupt):
        write(path)
    assert path.read_text() == "the last run's\n" and [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("when", ["while the report is computed", "between the two files' renames"])
def test_run_eval_stopped_leaves_predictions_and_report_of_one_run(tmp_path, monkeypatch, when):
    """A Ctrl-C once the predictions were scored left the new predictions beside the last run's
    report: stopped before the files move in, both are the last run's; between the renames, the
    Ctrl-C waits until both are the new run's."""
    import signal

    monkeypatch.setattr(ev, "local_clarifier", lambda settings, **_: ScriptedClarifier())
    monkeypatch.setattr(ev, "_minilm", WordEmbedder)
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES)
    json_out, preds_out = tmp_path / "report.json", tmp_path / "preds.jsonl"

    def run(limit):
        ev.run_eval(path, adapter="none", base_model=None, limit=limit, json_out=json_out,
                    settings=Settings(), predictions_out=preds_out)

    second_run_stopped(run, lambda: ctrl_c_in(monkeypatch, ev, "summarize") if when == "while the report is computed"
                       else ctrl_c_once_moved_in(monkeypatch, "preds.jsonl"))
    n = 2 if when == "while the report is computed" else 4
    assert json.loads(json_out.read_text())["n"] == n and len(ev.read_predictions(preds_out)) == n
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex.jsonl", "preds.jsonl", "report.json"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_run_eval_keeps_the_predictions_when_a_score_is_not_a_number(tmp_path, monkeypatch):
    # a model in float16 can overflow to NaN: the report cannot be computed, but the run's
    # per-example output is written before that fails, and the error says what is wrong
    class NaNClarifier(ScriptedClarifier):
        def check(self, messages, documents=None):
            decision = super().check(messages, documents)
            if messages[-1]["content"] == "query 1":
                return dataclasses.replace(decision, score=float("nan"), needs_clarification=False)
            return decision

    monkeypatch.setattr(ev, "local_clarifier", lambda settings, **_: NaNClarifier())
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES)
    preds_out = tmp_path / "preds.jsonl"
    with pytest.raises(ValueError, match="1 of 5 scores are not finite"):
        ev.run_eval(path, adapter="none", base_model=None, limit=None, json_out=None,
                    settings=Settings(), predictions_out=preds_out, generate_questions=False)
    assert [r["id"] for r in ev.read_predictions(preds_out)] == [f"ex-{i}" for i in range(5)]


def test_run_eval_stops_on_a_score_that_is_not_a_number_before_it_loads_minilm(tmp_path, monkeypatch):
    # the report would fail: its question figures, and the MiniLM load they need, are not computed
    class NaNClarifier(ScriptedClarifier):
        def check(self, messages, documents=None):
            return dataclasses.replace(super().check(messages, documents), score=float("nan"))

    monkeypatch.setattr(ev, "local_clarifier", lambda settings, **_: NaNClarifier())
    monkeypatch.setattr(ev, "_minilm", lambda: pytest.fail("MiniLM loaded for a report that cannot be made"))
    path = write_jsonl(tmp_path / "ex.jsonl", EXAMPLES)
    with pytest.raises(ValueError, match="5 of 5 scores are not finite"):
        ev.run_eval(path, adapter="none", base_model=None, limit=None, json_out=None, settings=Settings())
