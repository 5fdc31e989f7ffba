"""scripts/judge_adapter.sh: which scorings it runs, on what, and which it skips on a second run.

The script runs in a stand-in repository whose `.venv/bin/askbetter` and `.venv/bin/python` log
their arguments and write the files their options name, so the test sees the script's own logic
(the adapter's copy, the skipped scorings, `--test`, paths resolved from another folder) without
a model."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "judge_adapter.sh"

# a stand-in for both commands: log the call, then make the files its options name (their folders
# too, as the real ones do)
STAND_IN = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$CALLS"
echo "accuracy 50.0%"  # what the script shows of a report
make() { mkdir -p "$(dirname "$1")" && touch "$1"; }
args=("$@")
for i in "${!args[@]}"; do
    case "${args[$i]}" in
        --predictions|--json) make "${args[$((i + 1))]}" ;;
    esac
done
case "$*" in
    *smalltalk_prefix.py\\ write*) make "${args[3]}" ;;
    *corpus_probe.py*) make "${args[1]}" ;;
esac
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with the script, stand-in commands and a checkpoint to judge."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / SCRIPT.name)
    (root / ".venv" / "bin").mkdir(parents=True)
    for name in ("askbetter", "python"):
        command = root / ".venv" / "bin" / name
        command.write_text(STAND_IN)
        command.chmod(command.stat().st_mode | stat.S_IXUSR)
    for probe in ("sense_probe.jsonl", "domain_probe.jsonl", "domain_probe_2.jsonl", "domain_probe_3.jsonl"):
        (root / "scripts" / probe).write_text(f'{{"id": "{probe}"}}\n')
    (root / "clarifier" / "written" / "heldout").mkdir(parents=True)
    (root / "clarifier" / "written" / "heldout" / "turns.jsonl").write_text('{"id": "held-out turn"}\n')
    checkpoint = root / "runs" / "full" / "checkpoint"
    checkpoint.mkdir(parents=True)
    for name in ("adapter_config.json", "adapter_model.safetensors", "trainer_state.pt"):
        (checkpoint / name).write_text(name)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls.log"))
    return root


def _judge(repo: Path, *args: str, cwd: Path, **env_vars: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SHIPPED_DEV_PREDICTIONS": "runs/eval/missing.pred.jsonl", **env_vars}
    return subprocess.run(["bash", str(repo / "scripts" / SCRIPT.name), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def test_a_first_run_scores_dev_greetings_and_the_probes_on_a_copy_and_a_second_only_the_test(
        repo: Path, tmp_path: Path) -> None:
    # from another folder, with relative paths: they are resolved before the script moves
    done = _judge(repo, "repo/runs/full/checkpoint", "repo/runs/full/judge", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = repo / "runs" / "full" / "judge"
    scorings = [c for c in _calls(tmp_path) if c.startswith("askbetter")]
    assert scorings == [
        f"askbetter calibrate data/dev.unseen.jsonl --adapter {out}/adapter --predictions {out}/dev.pred.jsonl",
        f"askbetter eval runs/eval/dev.greet.jsonl --adapter {out}/adapter --no-questions --limit 600 "
        f"--predictions {out}/greet600.pred.jsonl",
        f"askbetter eval runs/eval/corpus_probe.jsonl --adapter {out}/adapter --no-questions "
        f"--json {out}/corpus.json --predictions {out}/corpus.pred.jsonl",
        "askbetter eval runs/eval/offdomain.jsonl --adapter bundled --no-questions "
        "--predictions runs/eval/offdomain.shipped.pred.jsonl",
        f"askbetter eval runs/eval/offdomain.jsonl --adapter {out}/adapter --no-questions "
        f"--predictions {out}/offdomain.pred.jsonl",
    ]
    probes = (repo / "runs/eval/offdomain.jsonl").read_text().splitlines()
    assert probes[-5:] == ['{"id": "sense_probe.jsonl"}', '{"id": "domain_probe.jsonl"}',  # after the corpus probe's
                           '{"id": "domain_probe_2.jsonl"}', '{"id": "domain_probe_3.jsonl"}',
                           '{"id": "held-out turn"}']  # the written turns no build holds
    assert "no runs/eval/missing.pred.jsonl" in done.stderr  # nothing to compare against
    # calibrate writes into the copy, which leaves the optimizer's state behind
    assert sorted(p.name for p in (out / "adapter").iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert (repo / "runs" / "full" / "checkpoint" / "trainer_state.pt").exists()

    done = _judge(repo, str(repo / "runs/full/checkpoint"), str(out), "--test", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert [c for c in _calls(tmp_path) if c.startswith("askbetter")] == [
        f"askbetter eval data/test.unseen.jsonl --adapter {out}/adapter --no-questions "
        f"--json {out}/test.json --predictions {out}/test.pred.jsonl"]
    done = _judge(repo, str(repo / "runs/full/checkpoint"), str(out), "--test", cwd=repo)
    assert [c for c in _calls(tmp_path) if c.startswith("askbetter")] == []  # test.json is there


def test_a_changed_off_domain_probe_is_scored_again_for_both_adapters(repo: Path, tmp_path: Path) -> None:
    """The off-domain predictions are made again, the shipped adapter's too, once a probe changes
    (both would otherwise score an older file than the one they are compared on)."""
    assert _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo).returncode == 0
    _calls(tmp_path)
    assert _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo).returncode == 0
    calls = _calls(tmp_path)
    assert not [c for c in calls if c.startswith("askbetter") and "offdomain.jsonl" in c]  # the same probes: nothing again
    assert (f"python scripts/cell_figures.py runs/eval/offdomain.jsonl runs/eval/offdomain.shipped.pred.jsonl "
            f"{repo}/runs/full/judge/offdomain.pred.jsonl") in calls  # but read again
    (repo / "scripts" / "domain_probe.jsonl").write_text('{"id": "edited"}\n')
    assert _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo).returncode == 0
    again = [c for c in _calls(tmp_path) if c.startswith("askbetter eval runs/eval/offdomain.jsonl")]
    assert [c.split("--predictions ")[1] for c in again] == [
        "runs/eval/offdomain.shipped.pred.jsonl", f"{repo}/runs/full/judge/offdomain.pred.jsonl"]


def test_dev_is_compared_with_the_shipped_adapter_per_kind_and_with_paired_intervals(
        repo: Path, tmp_path: Path) -> None:
    shipped = repo / "runs" / "eval" / "dev.shipped.pred.jsonl"
    shipped.parent.mkdir(parents=True)
    shipped.write_text('{"id": "d1"}\n')
    done = _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo,
                  SHIPPED_DEV_PREDICTIONS="runs/eval/dev.shipped.pred.jsonl")
    assert done.returncode == 0, done.stderr
    candidate = f"{repo}/runs/full/judge/dev.pred.jsonl"
    readers = [c for c in _calls(tmp_path) if c.startswith("python scripts/") and "dev.shipped" in c]
    assert readers == [
        f"python scripts/compare_predictions.py shipped=runs/eval/dev.shipped.pred.jsonl candidate={candidate}",
        f"python scripts/paired_auc.py runs/eval/dev.shipped.pred.jsonl {candidate}"]
    assert (repo / "runs" / "full" / "judge" / "dev.paired.txt").read_text() == "accuracy 50.0%\n"


def test_an_interrupted_copy_is_made_again(repo: Path, tmp_path: Path) -> None:
    out = repo / "runs" / "full" / "judge"
    (out / "adapter.partial").mkdir(parents=True)
    (out / "adapter.partial" / "stale").write_text("from the copy a stop cut short")
    assert _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo).returncode == 0
    assert not (out / "adapter.partial").exists()
    assert sorted(p.name for p in (out / "adapter").iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]


@pytest.mark.parametrize("args", [(), ("only-one",), ("a", "b", "--tests"), ("a", "b", "--test", "c")])
def test_wrong_arguments_print_the_usage_and_run_nothing(repo: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _judge(repo, *args, cwd=repo)
    assert done.returncode == 2 and done.stderr.startswith("usage: bash scripts/judge_adapter.sh")
    assert _calls(tmp_path) == []


def test_another_dev_file_is_calibrated_on_and_greeted_beside_itself(repo: Path, tmp_path: Path) -> None:
    """DEV_FILE (run s48's dev with AmbigNQ's passages as statements): the threshold is picked on
    it and the greetings go before its own conversations, not dev.unseen's."""
    decl = {"DEV_FILE": "data/decl/dev.jsonl", "SHIPPED_DEV_PREDICTIONS": "runs/eval/dev.decl.missing.jsonl"}
    alone = _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo, DEV_FILE="data/decl/dev.jsonl",
                   SHIPPED_DEV_PREDICTIONS="")
    assert alone.returncode == 2 and "needs SHIPPED_DEV_PREDICTIONS" in alone.stderr  # not dev.unseen's
    done = _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo, **decl)
    assert done.returncode == 0, done.stderr
    out = repo / "runs" / "full" / "judge"
    calls = _calls(tmp_path)
    assert calls[0] == f"askbetter calibrate data/decl/dev.jsonl --adapter {out}/adapter --predictions {out}/dev.pred.jsonl"
    assert "python scripts/smalltalk_prefix.py write data/decl/dev.jsonl data/decl/dev.greet.jsonl" in calls
    assert any(c.startswith("askbetter eval data/decl/dev.greet.jsonl ") for c in calls)

    # the same OUT_DIR judged again on dev.unseen would keep the decl file's threshold and scores
    again = _judge(repo, "runs/full/checkpoint", "runs/full/judge", cwd=repo)
    assert again.returncode == 2 and "was judged on data/decl/dev.jsonl, not data/dev.unseen.jsonl" in again.stderr
    assert _calls(tmp_path) == []


def test_the_shipped_adapters_dev_predictions_are_made_when_missing_or_stale(repo: Path, tmp_path: Path) -> None:
    """Without SHIPPED_DEV_PREDICTIONS the script scores the shipped adapter on dev itself, and again
    once dev or the shipped weights are newer than those predictions (another build or a ship)."""
    env = {k: v for k, v in os.environ.items() if k != "SHIPPED_DEV_PREDICTIONS"}
    (repo / "data").mkdir()
    (repo / "data" / "dev.unseen.jsonl").write_text('{"id": "dev"}\n')
    weights = repo / "clarifier" / "adapter" / "adapter_model.safetensors"
    weights.parent.mkdir(parents=True)
    weights.write_text("shipped")
    made = "askbetter eval data/dev.unseen.jsonl --adapter bundled --no-questions --predictions " \
           "runs/eval/dev.unseen.shipped.pred.jsonl"

    def run() -> list[str]:
        done = subprocess.run(["bash", "scripts/judge_adapter.sh", "runs/full/checkpoint", "runs/full/judge"],
                              cwd=repo, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return [c for c in _calls(tmp_path) if "dev.unseen.jsonl --adapter bundled" in c]

    assert run() == [made]
    assert run() == []  # fresh: kept
    predictions = repo / "runs" / "eval" / "dev.unseen.shipped.pred.jsonl"
    os.utime(predictions, (1, 1))  # older than the weights, as after a ship
    assert run() == [made]
    os.utime(predictions, (1, 1))
    os.utime(weights, (0, 0))
    os.utime(repo / "data" / "dev.unseen.jsonl", (2, 2))  # a rebuilt dev
    assert run() == [made]
