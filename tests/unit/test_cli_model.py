"""The model subcommands: `data build`, `train` options, `eval` errors (no model is loaded)."""

import dataclasses
import json
import re
import warnings
from functools import partial
from pathlib import Path

import pytest

from askbetter.cli import build_parser, main
from askbetter.clarifier.train import TrainConfig
from example_factory import example
from tiny_model import tiny_llama, tiny_tokenizer

FIXTURE_RAW = Path(__file__).parent.parent / "fixtures" / "raw"


def test_data_build_writes_the_three_splits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path), "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "clarify share" in out
    for split in ("train", "dev", "test"):
        lines = (tmp_path / f"{split}.jsonl").read_text().splitlines()
        assert all(json.loads(line)["setting"] in ("pre", "post") for line in lines)


def test_data_build_adds_the_written_turns_of_another_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = FIXTURE_RAW.with_name("written")
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path), "--written", str(written)]) == 0
    ids = {json.loads(line)["id"] for split in ("train", "dev", "test")
           for line in (tmp_path / f"{split}.jsonl").read_text().splitlines()}
    assert {i for i in ids if i.startswith("written-")} <= {json.loads(line)["id"] for line in
                                                          (written / "turns.jsonl").read_text().splitlines()}
    assert any(i.startswith("written-z-") for i in ids)
    capsys.readouterr()
    none = tmp_path / "none"
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path), "--written", str(none)]) == 1
    assert capsys.readouterr().err == (f"askbetter: error: --written {none}: written turns folder not found, "
                                       f"or without *.jsonl files: {none}\n")
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path), "--no-written"]) == 0
    assert all(json.loads(line)["source"] != "written" for split in ("train", "dev", "test")
               for line in (tmp_path / f"{split}.jsonl").read_text().splitlines())


def test_data_build_refuses_a_folder_where_it_writes_a_split_before_any_data_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder named dev.jsonl in --out failed the build at its end, once train.jsonl had moved
    in: the new train split beside the last build's test split, and an errno line."""
    from askbetter.clarifier import data_build

    def no_build(*args, **kwargs):
        raise AssertionError("the raw data was read")

    monkeypatch.setattr(data_build, "build_dataset", no_build)
    for split in ("train", "test"):
        (tmp_path / f"{split}.jsonl").write_text("old\n")
    (tmp_path / "dev.jsonl").mkdir()
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (f"askbetter: error: --out {tmp_path}: {tmp_path / 'dev.jsonl'} is a folder, "
                                       "where the build writes a split: move it away, or name another --out\n")
    assert (tmp_path / "train.jsonl").read_text() == "old\n"


def test_data_build_on_a_missing_folder_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "build", str(tmp_path / "nope")]) == 1
    assert "askbetter: error:" in capsys.readouterr().err


def test_data_build_on_a_file_says_it_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It said 'raw data folder not found', naming a file that is there."""
    raw = tmp_path / "data.zip"
    raw.write_text("x")
    assert main(["data", "build", str(raw), "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == (f"askbetter: error: raw data folder {raw} is a file: name the folder "
                                       "holding the datasets\n")


def test_every_train_config_field_is_an_option() -> None:
    args = build_parser().parse_args(
        ["train", "--max-examples", "12", "--lr", "0.001", "--target-modules", "q_proj", "v_proj",
         "--out-dir", "/tmp/x"])
    assert args.max_examples == 12 and args.lr == 0.001 and args.out_dir == Path("/tmp/x")
    assert args.target_modules == ("q_proj", "v_proj")  # the field's type, as TrainConfig takes it
    assert args.epochs == TrainConfig().epochs


def test_train_help_describes_every_option_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata["help"] and " ".join(f.metadata["help"].split()) in text, f.name
    assert "passes over the sample (default: 1)" in text
    assert "(default: off)" in text and "(default: q_proj k_proj" in text


def test_train_without_data_says_how_to_build_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--data-dir", str(tmp_path), "--out-dir", str(tmp_path / "run")]) == 1
    assert "askbetter data build" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--stratum-power", "-1", "stratum_power must be 0 or more, not -1.0"),
    ("--max-examples", "-1", "max_examples must be 0 or more, not -1"),
    ("--epochs", "0", "epochs must be 1 or more, not 0"),
    ("--max-steps", "-3", "max_steps must be 0 or more, not -3"),
    ("--batch-tokens", "0", "batch_tokens must be 1 or more, not 0"),
    ("--max-input-tokens", "0", "max_input_tokens must be 64 or more, not 0"),
    ("--lora-r", "0", "lora_r must be 1 or more, not 0"),
    ("--lr", "-1", "lr must be above 0, not -1.0"),
    ("--warmup-share", "1", "warmup_share must lie in [0, 1), not 1.0"),
    ("--device", "gpu", "device must be cpu, cuda, cuda:N or mps, not 'gpu'"),
    ("--device", "cuda:99", "device is 'cuda:99', but this torch has no such device: use cpu"),
])
def test_an_option_out_of_range_is_a_clear_error_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    assert main(["train", option, value, "--out-dir", str(tmp_path / "run")]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_exclude_takes_sources_and_settings() -> None:
    args = build_parser().parse_args(["train", "--exclude", "ambignq:pre", "or-sharc"])
    assert args.exclude == ("ambignq:pre", "or-sharc")
    assert build_parser().parse_args(["train"]).exclude == ()


def test_leaving_out_a_source_the_data_lacks_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path / "data")]) == 0
    capsys.readouterr()
    argv = ["train", "--data-dir", str(tmp_path / "data"), "--out-dir", str(tmp_path / "run")]
    assert main([*argv, "--exclude", "ambignq:pre", "qulac"]) == 1
    err = capsys.readouterr().err
    assert "askbetter: error: qulac matches no example; there are abg-coqa:post" in err
    assert not (tmp_path / "run").exists()  # checked before the model loads or anything is written


def test_source_weight_takes_source_weight_pairs() -> None:
    args = build_parser().parse_args(["train", "--source-weight", "written=3", "ambignq=0.5"])
    assert args.source_weight == ("written=3", "ambignq=0.5")
    assert TrainConfig(source_weight=args.source_weight).source_weights() == {"written": 3.0, "ambignq": 0.5}


@pytest.mark.parametrize("pair", ["written", "written=0", "=2", "written=x", "written=inf", "written=-1"])
def test_a_malformed_source_weight_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], pair: str) -> None:
    assert main(["train", "--source-weight", pair, "--out-dir", str(tmp_path / "run")]) == 1
    assert f"source_weight takes SOURCE=WEIGHT with a finite weight above 0, not {pair!r}" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_source_weighted_twice_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--source-weight", "written=3", "written=2", "--out-dir", str(tmp_path / "run")]
    assert main(argv) == 1
    assert "source_weight names written twice" in capsys.readouterr().err


def test_source_weight_without_a_sample_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--source-weight", "written=3", "--max-examples", "0", "--out-dir", str(tmp_path / "run")]
    assert main(argv) == 1
    assert "source_weight needs max_examples" in capsys.readouterr().err


def test_weighting_a_source_the_data_lacks_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "build", str(FIXTURE_RAW), "--out", str(tmp_path / "data")]) == 0
    capsys.readouterr()
    argv = ["train", "--data-dir", str(tmp_path / "data"), "--out-dir", str(tmp_path / "run")]
    assert main([*argv, "--source-weight", "qulac=2"]) == 1
    err = capsys.readouterr().err
    assert "--source-weight qulac: no such source in the training pool; there are abg-coqa" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("group", ["ambignq:dev", ":pre", "ambignq:"])
def test_a_malformed_exclude_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], group: str) -> None:
    assert main(["train", "--exclude", group, "--out-dir", str(tmp_path / "run")]) == 1
    assert f"exclude takes SOURCE or SOURCE:pre or SOURCE:post, not {group!r}" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("content", "message"), [
    ("", "no examples"), ('{"id": 1\n', ":1: not a valid example"),
    ("[" * 100_000 + "\n", ":1: not a valid example: maximum recursion depth exceeded"),  # was a traceback
])
def test_eval_reports_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    assert main(["eval", str(path), "--no-questions"]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "{data}", "--json", "{tmp}"], "--json {tmp} is a folder: name a file"),
    (["eval", "{data}", "--predictions", "{tmp}/x.jsonl/p.jsonl"], "{tmp}/x.jsonl is a file, not a folder"),
    (["eval", "{data}", "--markdown", "{tmp}/t.md"], "--markdown writes the --baselines table: add --baselines"),
    (["eval", "{data}", "--baselines", "--predictions", "{tmp}/p.jsonl"],
     "--predictions is not written with --baselines"),
    (["eval", "{data}", "--json", "{data}"], "--json {data} is the examples file, which it would overwrite"),
    (["eval", "{data}", "--predictions", "{tmp}/../{tmp.name}/x.jsonl"],
     "--predictions {tmp}/../{tmp.name}/x.jsonl is the examples file"),
    (["eval", "{data}", "--json", "{tmp}/out", "--predictions", "{tmp}/out"],
     "--predictions {tmp}/out is the file of --json, which it would overwrite"),
    (["eval", "{data}", "--baselines", "--markdown", "{data}"], "--markdown {data} is the examples file"),
    (["calibrate", "{data}", "--adapter", "bundled", "--predictions", "{data}"],
     "--predictions {data} is the examples file"),
])
def test_an_output_it_could_not_write_or_that_would_overwrite_data_is_refused_before_any_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, argv: list[str], message: str
) -> None:
    from askbetter.clarifier import evaluate

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(evaluate, "local_clarifier", no_model)
    data = tmp_path / "x.jsonl"
    text = json.dumps({"id": "a", "messages": [{"role": "user", "content": "q"}], "clarification": None}) + "\n"
    data.write_text(text)
    assert main([a.format(data=data, tmp=tmp_path) for a in argv]) == 1
    assert message.format(data=data, tmp=tmp_path) in capsys.readouterr().err
    assert data.read_text() == text and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["eval", "train"])
@pytest.mark.parametrize(("value", "message"), [
    ("bundled:smollm2", "--base-model names no bundled model: 'bundled:smollm2'"),
    ("./no-such-model", "--base-model names the folder ./no-such-model, which does not exist"),
    ("", "--base-model is empty: name a Hugging Face id, a model folder or 'bundled:smollm2-135m-instruct'"),
])
def test_a_base_model_option_is_checked_as_its_setting_is_before_any_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, command: str, value: str, message: str
) -> None:
    """`--base-model` is refused in one line naming the option, as ASKBETTER_BASE_MODEL is (it went
    unchecked to the model's loading, where a `bundled:` name read as a malformed Hub id)."""
    from askbetter.clarifier import evaluate, train

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(evaluate, "local_clarifier", no_model)
    monkeypatch.setattr(train, "train", no_model)
    line = json.dumps({"id": "a", "messages": [{"role": "user", "content": "q"}], "clarification": None}) + "\n"
    for name in ("x.jsonl", "train.jsonl", "dev.jsonl"):
        (tmp_path / name).write_text(line)
    argv = (["eval", str(tmp_path / "x.jsonl"), "--no-questions"] if command == "eval"
            else ["train", "--data-dir", str(tmp_path), "--out-dir", str(tmp_path / "run")])
    assert main([*argv, "--base-model", value]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("existing", [False, True])
def test_an_output_file_without_write_permission_is_refused(tmp_path: Path, monkeypatch, existing: bool) -> None:
    """The permission branch, with `os.access` saying what a user without write access would get
    (the tests run as root, who may write anywhere)."""
    import os

    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_files

    out = tmp_path / "report.json"
    if existing:
        out.write_text("{}")
    denied = out if existing else tmp_path  # the file itself, or the folder it would go into
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != denied and real_access(path, mode))
    with pytest.raises(UsageError, match=f"--json {out}: no permission to write there"):
        check_output_files(tmp_path / "examples.jsonl", json=out)
    (tmp_path / "ok").mkdir()
    check_output_files(tmp_path / "examples.jsonl", json=tmp_path / "ok" / "other.json")  # a writable place passes


def test_an_existing_output_file_in_a_folder_without_write_permission_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is replaced by a temp file written beside it: a file the user may write, in a folder
    they may not, passed the check and failed once the run had scored every example."""
    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_files

    out = tmp_path / "report.json"
    out.write_text("{}")
    _deny_writing(monkeypatch, tmp_path)
    with pytest.raises(UsageError, match=f"--json {out}: no permission to write there"):
        check_output_files(tmp_path / "examples.jsonl", json=out)
    assert out.read_text() == "{}"


def test_an_output_file_that_is_a_link_to_a_file_is_refused_and_a_pipe_or_a_device_is_written_in_place(
    tmp_path: Path,
) -> None:
    """The output's temp file was renamed over it: run as root, `--json /dev/null` replaced the
    system's /dev/null with a regular file holding the report, and `--predictions /dev/stdout`
    (a link to /proc/self/fd/1) the link itself, with stdout sent to a file. A device or a pipe
    is now written in place; a link to a regular file is refused (replacing the link or writing
    its target: either could surprise)."""
    import os
    import threading

    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_files
    from askbetter.text import write_lines

    pipe, target, link = tmp_path / "pipe", tmp_path / "target.json", tmp_path / "link.json"
    os.mkfifo(pipe)
    target.write_text("{}")
    link.symlink_to(target)
    with pytest.raises(UsageError, match=f"--json {link} is a link to a file, which the output would replace"):
        check_output_files(tmp_path / "examples.jsonl", json=link)
    assert link.is_symlink() and target.read_text() == "{}"
    for out in (pipe, Path(os.devnull)):
        check_output_files(tmp_path / "examples.jsonl", json=out)
        check_output_files(tmp_path / "examples.jsonl", json=out, predictions=out)  # both written in place
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_text()), daemon=True)
    reader.start()
    assert write_lines(pipe, ["a\n", "b\n"]) == 2
    reader.join(timeout=10)
    assert read == ["a\nb\n"] and pipe.is_fifo()
    assert write_lines(Path(os.devnull), ["report\n"]) == 1
    assert Path(os.devnull).is_char_device() and Path(os.devnull).read_text() == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "pipe", "target.json"]  # no temp file left


@pytest.mark.parametrize(("command", "option"), [(["train", "--data-dir", "no-data"], "--out-dir"),
                                                 (["data", "build", str(FIXTURE_RAW)], "--out")])
def test_an_output_folder_that_is_a_file_or_under_one_is_refused_before_any_data_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], option: str
) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    for out, message in ((blocker, f"{option} {blocker} is a file: name a folder"),
                         (blocker / "run", f"{option} {blocker / 'run'}: {blocker} is a file, not a folder")):
        assert main([*command, option, str(out)]) == 1
        assert capsys.readouterr().err == f"askbetter: error: {message}\n"
    assert blocker.read_text() == "x"


def test_an_existing_output_folder_needs_write_permission_on_itself_only(tmp_path: Path, monkeypatch) -> None:
    """A run folder that exists is written into, not beside; a new one is made in the folder
    above it (`os.access` says what a user without write access to `tmp_path` would get)."""
    import os

    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_folders

    (tmp_path / "run").mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path and real_access(path, mode))
    check_output_folders(out_dir=tmp_path / "run")
    with pytest.raises(UsageError, match=f"--out-dir {tmp_path / 'new'}: no permission to write there"):
        check_output_folders(out_dir=tmp_path / "new")


@pytest.mark.parametrize(("folders", "name", "existing"), [(False, "report.json", False), (True, "run", True),
                                                          (True, "run", False)])
def test_an_output_place_in_a_folder_without_search_permission_is_refused(
    tmp_path: Path, monkeypatch, folders: bool, name: str, existing: bool
) -> None:
    """Writing into a folder needs search permission on it too: `os.access` says what a user who
    may write to the folder but not enter it would get (the tests run as root)."""
    import os

    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_files, check_output_folders

    out = tmp_path / name
    if existing:
        out.mkdir()
    denied = out if existing else tmp_path  # the folder itself, or the folder it would go into
    real_access = os.access
    monkeypatch.setattr(os, "access",
                        lambda path, mode: not (Path(path) == denied and mode & os.X_OK) and real_access(path, mode))
    check = check_output_folders if folders else partial(check_output_files, tmp_path / "examples.jsonl")
    option = "out_dir" if folders else "json"
    flag = "--out-dir" if folders else "--json"
    with pytest.raises(UsageError) as caught:
        check(**{option: out})
    assert str(caught.value) == f"{flag} {out}: no permission to enter {denied}"


def _deny_writing(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """`os.access` says no to writing `denied`, however it is named (chmod does not stop root)."""
    import os

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: real_access(path, mode) and not (
        Path(path).resolve() == denied.resolve() and mode & os.W_OK))


def test_an_existing_output_file_needs_no_execute_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_files

    out = tmp_path / "report.json"
    out.write_text("{}")
    out.chmod(0o644)  # not executable, even by root
    check_output_files(tmp_path / "examples.jsonl", json=out)  # passes
    _deny_writing(monkeypatch, out)  # while the file itself is checked: not writable, refused
    with pytest.raises(UsageError, match="no permission to write there"):
        check_output_files(tmp_path / "examples.jsonl", json=out)


@pytest.mark.parametrize("relative", [".", "", "run", "run/deeper"])
def test_a_relative_output_folder_is_checked_against_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str
) -> None:
    """`--out .` (the working folder, whose relative path has no parents) passes like any other
    writable folder; a missing one is checked against the working folder."""
    from askbetter.cli import UsageError
    from askbetter.cli_model import check_output_folders

    monkeypatch.chdir(tmp_path)
    check_output_folders(out=Path(relative))  # passes
    _deny_writing(monkeypatch, tmp_path)  # the folder it is checked against: refused
    with pytest.raises(UsageError, match="no permission to write there"):
        check_output_folders(out=Path(relative))


def test_eval_baselines_honours_no_questions(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    from askbetter.clarifier import baselines, evaluate

    def no_embedder():
        raise AssertionError("questions were scored")

    monkeypatch.setattr(baselines, "local_clarifier", lambda settings, **kwargs: baselines.NeverClarify())
    monkeypatch.setattr(evaluate, "_minilm", no_embedder)
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"id": 1, "messages": [{"role": "user", "content": "q"}], "clarification": "Which?"})
                    + "\n")
    json_out = tmp_path / "b.json"
    assert main(["eval", str(path), "--baselines", "--no-questions", "--json", str(json_out)]) == 0
    always = json.loads(json_out.read_text())[0]
    assert always["system"] == "always-clarify" and always["n_questions"] == 0 and always["rouge_l"] is None


def test_eval_baselines_reports_a_system_whose_scores_are_not_finite_and_the_others(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch) -> None:
    from askbetter.clarifier import baselines
    from askbetter.clarifier.types import Decision

    class Overflowed:  # a float16 base model whose scores overflowed to NaN
        threshold = 0.5

        def check(self, messages, documents=None):
            return Decision(False, float("nan"), None, "pre")

    monkeypatch.setattr(baselines, "local_clarifier", lambda settings, **kwargs: Overflowed())
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": [{"role": "user", "content": "q"}], "clarification": c})
                            + "\n" for i, c in enumerate([None, "Which?"])))
    json_out = tmp_path / "b.json"
    assert main(["eval", str(path), "--baselines", "--no-questions", "--json", str(json_out)]) == 0
    reports = {r["system"]: r for r in json.loads(json_out.read_text())}
    assert reports["always-clarify"]["accuracy"] == 0.5 and reports["always-clarify"]["n_not_finite"] == 0
    assert reports["adapter bundled"]["n_not_finite"] == 2 and reports["adapter bundled"]["accuracy"] is None
    assert "| adapter bundled (2 of 2 scores not finite) | n/a |" in capsys.readouterr().out
    assert "adapter bundled: 2 of 2 scores are not finite numbers" in caplog.text


def test_eval_baselines_refuses_a_prompt_style(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch) -> None:
    from askbetter.clarifier import baselines

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(baselines, "local_clarifier", no_model)
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"id": 1, "messages": [{"role": "user", "content": "q"}], "clarification": None}) + "\n")
    assert main(["eval", str(path), "--baselines", "--prompt-style", "few-shot"]) == 1
    assert "--prompt-style is not used with --baselines" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:'askbetter.cli' found in sys.modules:RuntimeWarning")
def test_python_m_askbetter_cli_reports_user_errors_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    """`python -m askbetter.cli` (as scripts/gpu_train.sh runs it) reports a UsageError raised by
    `askbetter.cli_model` as `askbetter` does."""
    import runpy

    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"id": 1, "messages": [{"role": "user", "content": "q"}], "clarification": None}) + "\n")
    monkeypatch.setattr("sys.argv", ["askbetter", "eval", str(path), "--markdown", str(tmp_path / "t.md")])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("askbetter.cli", run_name="__main__")
    assert exited.value.code == 1
    assert capsys.readouterr().err == "askbetter: error: --markdown writes the --baselines table: add --baselines\n"


def one_example_data(tmp_path: Path) -> Path:
    """A data folder whose train split holds one clear example, its dev split that and one
    that needs clarification (a threshold needs both labels)."""
    data = tmp_path / "data"
    data.mkdir()
    clear, unclear = example(1, "pre", None, "clear"), example(2, "pre", "Which one?", "ambiguous")
    (data / "train.jsonl").write_text(json.dumps(clear) + "\n")
    (data / "dev.jsonl").write_text(json.dumps(clear) + "\n" + json.dumps(unclear) + "\n")
    return data


def whole_checkpoint_files(folder: Path) -> None:
    """The files a resumed run reads from its checkpoint, whole (and empty): the PEFT config, the
    weights, the trainer state."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text("{}")
    save_file({}, str(folder / "adapter_model.safetensors"))
    torch.save({"step": 0}, folder / "trainer_state.pt")


def train_tiny(data: Path, run: Path, monkeypatch: pytest.MonkeyPatch, *options: str) -> int:
    """`askbetter train` on `data` into `run` for one step with a tiny random model (fast)."""
    import askbetter.clarifier.assets as assets

    monkeypatch.setattr(assets, "load_base", lambda *args: (tiny_llama(), tiny_tokenizer()))
    return main(["train", "--data-dir", str(data), "--out-dir", str(run), "--max-steps", "1",
                 "--target-modules", "q_proj", *options])


def test_a_run_s_adapter_and_checkpoint_have_a_card_naming_the_base_model_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PEFT wrote its template card, which names the base model by the local folder it was
    loaded from and says nothing more: a run's folders get a short card instead."""
    data, run = one_example_data(tmp_path), tmp_path / "run"
    assert train_tiny(data, run, monkeypatch, "--dev-examples", "0", "--lr", "0.001") == 0
    for folder in ("adapter", "checkpoint"):
        card = (run / folder / "README.md").read_text()
        assert card.startswith('---\nbase_model: "HuggingFaceTB/SmolLM2-135M-Instruct"\nlibrary_name: peft\n')
        assert (f"\n    askbetter train --data-dir {data} --out-dir {run} --dev-examples 0 --lr 0.001 "
                "--target-modules q_proj --max-steps 1\n") in card
        assert "step 1 of 1" in card and "Model Card for Model ID" not in card


def test_loading_an_adapter_raises_no_peft_deprecation_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PEFT reads transformers' deprecated `is_gradient_checkpointing` when it wraps a model: a
    FutureWarning on every load through the Python API (only the CLI hid it)."""
    import askbetter.clarifier.assets as assets

    run = tmp_path / "run"
    assert train_tiny(one_example_data(tmp_path), run, monkeypatch, "--dev-examples", "0") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        loaded = assets._load.__wrapped__("tiny", str(tmp_path), run / "adapter", "float32", "cpu")
    assert loaded.adapter == run / "adapter"


@pytest.mark.parametrize(("edit", "message"), [
    ({"r": 8}, "size mismatch for base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"),
    ({"r": "x"}, "TypeError: '<=' not supported"),
    (None, "KeyError: 'peft_type'"),  # a config of no PEFT adapter: `{}`
])
def test_an_adapter_whose_config_does_not_fit_its_weights_is_named_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], edit: dict | None,
    message: str
) -> None:
    """Whole files that do not fit together (a hand-edited rank, weights copied from another
    adapter, a config of something else) stopped eval, calibrate, ask and train --init-adapter with
    PEFT's traceback."""
    import askbetter.clarifier.assets as assets

    data, run, adapter = one_example_data(tmp_path), tmp_path / "run", tmp_path / "run" / "adapter"
    assert train_tiny(data, run, monkeypatch, "--dev-examples", "0") == 0
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({} if edit is None else {**config, **edit}))
    with pytest.raises(assets.ModelNotFound, match=f"^cannot load the adapter {adapter}: .*{re.escape(message)}"):
        assets._load.__wrapped__("tiny", str(tmp_path), adapter, "float32", "cpu")
    capsys.readouterr()
    assert train_tiny(data, tmp_path / "next", monkeypatch, "--dev-examples", "0", "--init-adapter", str(adapter)) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # after PEFT's warnings and the tokenising bar
    assert err.startswith(f"askbetter: error: cannot load the adapter {adapter}: ")
    assert not (tmp_path / "next").exists()


def test_running_out_of_memory_while_an_adapter_loads_is_not_named_a_bad_adapter(tmp_path: Path) -> None:
    """torch's OutOfMemoryError is a RuntimeError, as PEFT's size mismatch is: the adapter was
    reported as one that cannot load, and the memory not named."""
    import torch

    import askbetter.clarifier.assets as assets

    with pytest.raises(torch.OutOfMemoryError, match="CUDA out of memory"):
        with assets.loading_adapter(tmp_path):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")


def test_train_says_once_where_it_wrote_the_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture
) -> None:
    """It was said twice: logged with the threshold, and printed."""
    run = tmp_path / "run"
    assert train_tiny(one_example_data(tmp_path), run, monkeypatch, "--dev-examples", "0") == 0
    said = capsys.readouterr()
    assert (said.out + said.err + caplog.text).count(f"written to {run / 'adapter'}") == 1


def test_an_interrupted_run_names_the_step_of_the_checkpoint_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C said 'go on from its last checkpoint, if it wrote one': now which step, or none."""
    import askbetter.clarifier.assets as assets
    import askbetter.clarifier.train as training

    data, run = one_example_data(tmp_path), tmp_path / "run"
    save = training._save_checkpoint

    def save_then_stop(*args, **kwargs) -> None:
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "_save_checkpoint", save_then_stop)
    options = ["--dev-examples", "0", "--epochs", "3", "--max-steps", "3", "--checkpoint-every", "2"]
    assert train_tiny(data, run, monkeypatch, *options) == 130
    assert capsys.readouterr().err.endswith(
        f"\ninterrupted; its checkpoint at step 2 of 3 ({run / 'checkpoint'}) is kept: run the same "
        "command again to go on from there\n")

    def stopped(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(assets, "load_base", stopped)
    assert main(["train", "--data-dir", str(data), "--out-dir", str(tmp_path / "new"), "--dev-examples", "0"]) == 130
    assert capsys.readouterr().err == (
        "\ninterrupted; it wrote no checkpoint: the same command starts it again from step 0\n")


def test_train_refuses_a_checkpoint_of_other_options_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed with another --lr, a run would train on at the checkpoint's rate (the scheduler
    keeps it) while its record says the new one: refused in one line, the run folder kept."""
    import askbetter.clarifier.assets as assets

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(assets, "load_base", no_model)
    data, run = one_example_data(tmp_path), tmp_path / "run"
    trained = TrainConfig(data_dir=data, out_dir=run, lr=3e-4, epochs=1, threads=2).to_json()
    (run / "checkpoint").mkdir(parents=True)
    whole_checkpoint_files(run / "checkpoint")
    (run / "checkpoint" / "askbetter_clarifier.json").write_text(json.dumps({"training": {"config": trained}}))
    kept = sorted(run.rglob("*"))
    argv = ["train", "--data-dir", str(data), "--out-dir", str(run), "--epochs", "2"]
    assert main([*argv, "--lr", "0.001", "--lora-r", "8"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lr 0.0003 now 0.001; --lora-r 16 now 8" in err
    assert "--epochs" not in err and "--threads" not in err  # a longer or faster run may resume
    assert sorted(run.rglob("*")) == kept
    with pytest.raises(AssertionError, match="the model loaded"):
        main([*argv, "--threads", "1"])  # the same options go on to load the model


@pytest.mark.parametrize(("damage", "message"), [
    ("trainer_state.pt", "trainer_state.pt is corrupt or truncated (PytorchStreamReader failed"),
    ("empty trainer_state.pt", "trainer_state.pt is corrupt or truncated (Ran out of input)"),
    ("adapter_model.safetensors", "adapter_model.safetensors is corrupt or truncated"),
    ("no adapter_model.safetensors", "has no adapter_model.safetensors: the adapter's weights are missing"),
    ("no trainer_state.pt", "has no trainer_state.pt (the optimizer's state and the step reached)"),
])
def test_train_refuses_a_damaged_checkpoint_in_one_line_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, damage: str, message: str
) -> None:
    """A checkpoint file cut off stopped the resumed run with torch's or safetensors' traceback once
    the model had loaded: refused in one line naming the file, the run folder kept."""
    import askbetter.clarifier.assets as assets

    data, run = one_example_data(tmp_path), tmp_path / "run"
    assert train_tiny(data, run, monkeypatch, "--dev-examples", "0") == 0
    ckpt = run / "checkpoint"
    name = damage.split()[-1]
    if damage.startswith("no "):
        (ckpt / name).unlink()
    else:
        (ckpt / name).write_bytes(b"" if damage.startswith("empty ") else (ckpt / name).read_bytes()[:100])
    kept = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(assets, "load_base", no_model)
    capsys.readouterr()
    argv = ["train", "--data-dir", str(data), "--out-dir", str(run), "--dev-examples", "0", "--target-modules",
            "q_proj", "--max-steps", "2"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"askbetter: error: {ckpt}") and err.count("\n") == 1 and message in err
    assert err.endswith(f"the run cannot resume from {ckpt}: move it away, and the same command starts again "
                        "from step 0\n")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == kept


def test_train_refuses_target_modules_the_base_model_lacks_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PEFT would skip the misspelt ones (and stop with a traceback were none right): refused in
    one line naming the model's linear layers, before the run folder is made."""
    import askbetter.clarifier.assets as assets

    monkeypatch.setattr(assets, "load_base", lambda *args: (tiny_llama(), None))
    run = tmp_path / "run"
    argv = ["train", "--data-dir", str(one_example_data(tmp_path)), "--out-dir", str(run)]
    assert main([*argv, "--target-modules", "q_proj", "nope", "self_attn.nix"]) == 1
    assert capsys.readouterr().err == (
        "askbetter: error: --target-modules nope self_attn.nix: no layer of HuggingFaceTB/SmolLM2-135M-Instruct "
        "has that name; its linear layers are down_proj gate_proj k_proj lm_head o_proj q_proj up_proj v_proj\n")
    assert not run.exists()
    # a module LoRA cannot adapt (a block of layers, the model itself): PEFT's traceback
    assert main([*argv, "--target-modules", "self_attn", "0", ""]) == 1
    assert capsys.readouterr().err.startswith(
        "askbetter: error: --target-modules self_attn 0 : no layer of HuggingFaceTB/SmolLM2-135M-Instruct has that name")
    assert not run.exists()


def test_train_refuses_a_base_model_that_scales_its_logits_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loss reads the output embeddings over the decoder's last hidden state at the answer's
    positions, which is not the logits of a model that scales or caps them (Gemma 2, Cohere): such
    a base model is refused in one line, before the run folder is made."""
    from types import SimpleNamespace

    import askbetter.clarifier.assets as assets

    def scaling_model(*args):
        model = tiny_llama()
        forward = model.forward
        model.forward = lambda *args, **kwargs: SimpleNamespace(logits=forward(*args, **kwargs).logits * 30)
        return model, tiny_tokenizer()

    monkeypatch.setattr(assets, "load_base", scaling_model)
    run = tmp_path / "run"
    argv = ["train", "--data-dir", str(one_example_data(tmp_path)), "--out-dir", str(run), "--target-modules", "q_proj"]
    assert main(argv) == 1
    err = capsys.readouterr().err.rsplit("\r", 1)[-1]  # after the tokenising bar
    assert err.startswith("askbetter: error: LlamaForCausalLM computes its logits otherwise") and err.count("\n") == 1
    assert not run.exists()


@pytest.mark.parametrize(("change", "options", "message"), [
    ("empty train", [], "train.jsonl holds no examples"),
    ("", ["--exclude", "test"], "--exclude test leaves out every example of {data}/train.jsonl"),
    ("empty dev", [], "dev.jsonl holds no examples to pick the threshold on"),
    ("broken dev", [], "dev.jsonl:3: not a valid example"),
    ("one-label dev", [], "calibration needs examples of both labels: all 1 are clear; those are "
                          "--dev-examples 400 of {data}/dev.jsonl"),
])
def test_train_refuses_data_it_could_not_train_or_calibrate_on_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    change: str, options: list[str], message: str
) -> None:
    """No example to train on wrote an untrained adapter, and a dev split without one (or with a
    broken line) stopped the run only after its last step, as did one of a single label (no
    threshold or AUC between them, as `calibrate` says): all are refused at the start."""
    import askbetter.clarifier.assets as assets

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(assets, "load_base", no_model)
    data, run = one_example_data(tmp_path), tmp_path / "run"
    if change == "empty train":
        (data / "train.jsonl").write_text("\n")
    elif change == "empty dev":
        (data / "dev.jsonl").write_text("")
    elif change == "broken dev":
        (data / "dev.jsonl").write_text((data / "dev.jsonl").read_text() + '{"id": "x"\n')
    elif change == "one-label dev":
        (data / "dev.jsonl").write_text((data / "train.jsonl").read_text())
    assert main(["train", "--data-dir", str(data), "--out-dir", str(run), *options]) == 1
    err = capsys.readouterr().err
    assert err.startswith("askbetter: error: ") and err.count("\n") == 1
    assert message.format(data=data) in err
    assert not run.exists()
    if "dev" in change:  # a run without dev examples does not read dev
        with pytest.raises(AssertionError, match="the model loaded"):
            main(["train", "--data-dir", str(data), "--out-dir", str(run), "--dev-examples", "0"])


def test_train_keeps_a_finished_run_s_adapter_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run again, a finished run wrote its adapter anew and its threshold with it (one picked by
    `askbetter calibrate` since was lost), and without its checkpoint a new run replaced the
    adapter: both are refused, the run folder kept; a longer run, or a run stopped before its
    threshold, goes on."""
    import askbetter.clarifier.assets as assets

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(assets, "load_base", no_model)
    data, run = one_example_data(tmp_path), tmp_path / "run"
    options = dict(data_dir=data, out_dir=run, max_steps=2, dev_examples=1)
    training = {"steps": 2, "planned_steps": 2, "config": TrainConfig(**options).to_json()}
    for folder, meta in [("checkpoint", {"training": training}),
                         ("adapter", {"threshold": 0.4, "calibration": {"file": "mine.jsonl"}, "training": training})]:
        (run / folder).mkdir(parents=True)
        (run / folder / "askbetter_clarifier.json").write_text(json.dumps(meta))
    whole_checkpoint_files(run / "checkpoint")
    kept = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    argv = ["train", "--data-dir", str(data), "--out-dir", str(run), "--max-steps", "2", "--dev-examples", "2"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{run} holds this run, finished: its adapter (step 2, threshold 0.400)" in err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == kept
    with pytest.raises(AssertionError, match="the model loaded"):
        main([*argv, "--max-steps", "3"])  # a longer run goes on from the checkpoint
    (run / "checkpoint").rename(run / "aside")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{run / 'checkpoint'} is missing: a run there would start at step 0" in err
    # a new one: --init-adapter into this --out-dir is refused the same way
    assert err.endswith(f"train into a new --out-dir (with --init-adapter {run / 'adapter'} to continue that adapter)\n")
    (run / "aside").rename(run / "checkpoint")
    (run / "adapter" / "askbetter_clarifier.json").write_text(json.dumps({"training": training}))
    with pytest.raises(AssertionError, match="the model loaded"):
        main(argv)  # no threshold yet: a run stopped in its dev scoring finishes
