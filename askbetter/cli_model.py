"""The clarification model's subcommands: `data build`, `train`, `calibrate` and `eval`.

Added to the parser by `askbetter.cli._model_subcommands`; every `TrainConfig` field is a `train`
option, so the knobs on the command line are the fields in `askbetter.clarifier.train_config`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from askbetter.clarifier.examples import check_examples_file, check_limit
from askbetter.clarifier.prompt import PROMPT_STYLES
from askbetter.clarifier.source_common import SPLITS
from askbetter.cli import UsageError, check_adapter, settings_from
from askbetter.settings import nearest_existing
from askbetter.text import writes_through


def add_data(subparsers: Any) -> None:
    parser = subparsers.add_parser("data", help="build the clarification data (train/dev/test JSONL)")
    actions = parser.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="convert the raw datasets into the example schema")
    build.add_argument("raw_dir", type=Path, metavar="RAW_DIR", help="the raw datasets, e.g. ../shared/data")
    build.add_argument("--out", type=Path, default=Path("data"),
                       help="output folder (default: data); a build there already is replaced, other files stay")
    build.add_argument("--seed", type=int, default=13, help="split and sampling seed (default: 13)")
    written = build.add_mutually_exclusive_group()
    written.add_argument("--written", type=Path, default=None, metavar="DIR",
                         help="a folder of written turns (JSONL, ids <scenario>-<variant number>; their "
                              "source becomes 'written') added beside the datasets (default: the project's, "
                              "clarifier/written)")
    written.add_argument("--no-written", action="store_true",
                         help="the datasets alone (the build before session 49 added written turns)")
    build.set_defaults(handler=cmd_data_build)


def cmd_data_build(args: argparse.Namespace) -> int:
    from askbetter.clarifier.data_build import build_dataset, format_counts
    from askbetter.clarifier.source_written import FOLDER, files_of

    check_output_folders(out=args.out)
    # the splits move in one after another: one that could not would leave a mix of two builds
    if taken := [path for path in (args.out / f"{split}.jsonl" for split in SPLITS) if path.is_dir()]:
        raise UsageError(f"--out {args.out}: {taken[0]} is a folder, where the build writes a split: move it "
                         "away, or name another --out")
    written = None if args.no_written else args.written or FOLDER
    try:
        if written is not None:
            files_of(written)  # before the raw data is read
    except FileNotFoundError as exc:
        raise UsageError(f"--written {written}: {exc}") from exc
    report = build_dataset(args.raw_dir, args.out, seed=args.seed, progress=True, written=written)
    print(format_counts(report))
    print("wrote " + ", ".join(str(path) for path in report.files.values()))
    return 0


class _StoreTuple(argparse.Action):
    """Store a `nargs="+"` option's values as a tuple, the type of the TrainConfig field."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, tuple(values))


def add_train(subparsers: Any) -> None:
    from askbetter.clarifier.train_config import TrainConfig  # not .train: it imports torch

    parser = subparsers.add_parser(
        "train", help="LoRA-train the clarifier (resumes from OUT_DIR/checkpoint)",
        description="Every option is a field of askbetter.clarifier.train.TrainConfig.")
    for f in dataclasses.fields(TrainConfig):
        default, text = f.default, f.metadata["help"]
        flag = "--" + f.name.replace("_", "-")
        if isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", action=_StoreTuple, default=default,
                                help=f"{text} (default: {' '.join(default) or 'none'})")
        elif isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                help=f"{text} (default: {'on' if default else 'off'})")
        elif default is None or default == "":
            parser.add_argument(flag, default=default, help=text)
        else:
            parser.add_argument(flag, type=type(default), default=default, help=f"{text} (default: {default})")
    parser.set_defaults(handler=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from askbetter.clarifier.train_config import TrainConfig

    names = {f.name for f in dataclasses.fields(TrainConfig)}
    values = {k: v for k, v in vars(args).items() if k in names}
    try:
        cfg = TrainConfig(**values)
    except ValueError as exc:  # an option value out of range
        raise UsageError(str(exc)) from exc
    check_output_folders(out_dir=cfg.out_dir)
    cfg.data_files()
    settings = settings_from(args)
    from askbetter.clarifier.train import resume_hint, train  # once the arguments passed: it imports torch

    try:
        train(cfg, settings)  # which logs where it wrote the adapter, and its threshold
    except KeyboardInterrupt:  # `main` says what was kept: here, the checkpoint's step
        raise KeyboardInterrupt(resume_hint(cfg.out_dir)) from None
    return 0


def add_calibrate(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="pick an adapter's decision threshold on labelled examples and store it with the adapter")
    parser.add_argument("file", type=Path, metavar="FILE.jsonl", help="labelled examples, e.g. data/dev.jsonl")
    parser.add_argument("--adapter", required=True, help='"bundled" or an adapter folder (its config is updated)')
    parser.add_argument("--limit", type=int, help="use the first N examples")
    parser.add_argument("--predictions", type=Path, metavar="OUT.jsonl",
                        help="also write per-example scores and decisions at the new threshold")
    parser.set_defaults(handler=cmd_calibrate)


def check_output_files(examples: Path | None, /, *, spare: Iterable[Path] = (), **paths: Path | None) -> None:
    """UsageError, before any model loads, for an output option (`--json=PATH`...) whose file
    could not be written (a folder, under a file, or where the user may not write), or that names
    the `examples` file read, if any (the run would write over its own data), one of the adapter's
    files in `spare` (the adapter it scores with), or another output's file (one would overwrite
    the other). A device or a pipe is written in place (`writes_through`), overwriting nothing:
    several outputs may name it (`--json /dev/null --predictions /dev/null`)."""
    _check_outputs(paths, folders=False)
    seen = {} if examples is None else {examples.resolve(): "the examples file"}
    seen.update(dict.fromkeys((file.resolve() for file in spare), "a file of the adapter"))
    for option, path in paths.items():
        if path is None or writes_through(path):
            continue
        flag = f"--{option.replace('_', '-')}"
        taken = seen.setdefault(path.resolve(), f"the file of {flag}")
        if taken != f"the file of {flag}":
            raise UsageError(f"{flag} {path} is {taken}, which it would overwrite: name another file")


def adapter_inputs(adapter: Path, *, clarifier_config: bool = True) -> list[Path]:
    """The adapter folder's files a run reads and no output may overwrite: its PEFT config and
    weights, and its clarifier config unless `clarifier_config` is False (calibrate writes it)."""
    from askbetter.clarifier.assets import ADAPTER_CONFIG, ADAPTER_WEIGHTS, CLARIFIER_CONFIG

    names = [ADAPTER_CONFIG, ADAPTER_WEIGHTS, *([CLARIFIER_CONFIG] if clarifier_config else [])]
    return [adapter / name for name in names]


def check_output_folders(**paths: Path) -> None:
    """UsageError, before any data is read or model loads, for an output folder option
    (`--out-dir DIR`...) that could not be written: a file, under a file, or where the user may
    not write."""
    _check_outputs(paths, folders=True)


def _check_outputs(paths: Mapping[str, Path | None], folders: bool) -> None:
    """What `check_output_files` (`folders` False) and `check_output_folders` check. Writing
    needs permission on the path when it exists, else on the nearest folder above it; an output
    file that exists needs it on its folder too, where its temp file is written
    (`askbetter.text.write_lines`), unless it is a device or a pipe, written in place
    (`writes_through`); writing into a folder needs permission to enter it (search) too."""
    wanted, other = ("folder", "file") if folders else ("file", "folder")
    for option, path in paths.items():
        if path is None:
            continue
        flag = f"--{option.replace('_', '-')} {path}"
        if path.exists():
            if path.is_dir() != folders:
                raise UsageError(f"{flag} is a {other}: name a {wanted}")
            through = not folders and writes_through(path)  # a device or a pipe (/dev/stdout): written in place
            if not folders and path.is_symlink() and not through:  # the temp file would replace the link
                raise UsageError(f"{flag} is a link to a file, which the output would replace with a file: "
                                 "name the file itself")
            places = [path] if folders or through else [path, path.absolute().parent]
        else:  # absolute: a relative path's parents end before the working folder's (`.` has none)
            places = [nearest_existing(path.absolute())]
            if not places[0].is_dir():
                raise UsageError(f"{flag}: {places[0]} is a file, not a folder")
        for writable in places:
            if not os.access(writable, os.W_OK):
                raise UsageError(f"{flag}: no permission to write there")
            if writable.is_dir() and not os.access(writable, os.X_OK):
                raise UsageError(f"{flag}: no permission to enter {writable}")


def check_examples_and_limit(file: Path, limit: int | None) -> None:
    """What `calibrate` and `eval` check of the examples they read before any model loads: the
    file is there, and `--limit` is a positive number."""
    try:
        check_limit(limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    check_examples_file(file)


def cmd_calibrate(args: argparse.Namespace) -> int:
    check_examples_and_limit(args.file, args.limit)
    settings = settings_from(args)
    from askbetter.clarifier.assets import CLARIFIER_CONFIG, require_adapter

    try:
        folder = require_adapter(settings.adapter, "calibrate")
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    # the adapter's clarifier config is an output too: where the threshold is stored
    check_output_files(args.file, spare=adapter_inputs(folder, clarifier_config=False),
                       adapter=folder / CLARIFIER_CONFIG, predictions=args.predictions)
    from askbetter.clarifier.calibrate import run_calibrate  # once the arguments passed: it imports torch
    from askbetter.clarifier.evaluate import fmt_decimal, fmt_percent

    try:
        record = run_calibrate(args.file, adapter=args.adapter, limit=args.limit, settings=settings,
                               predictions_out=args.predictions)
    except ValueError as exc:  # an empty file, examples of one label
        raise UsageError(str(exc)) from exc
    print(f"threshold {fmt_decimal(record['threshold'])} on {record['n']} examples: accuracy "
          f"{fmt_percent(record['accuracy'])}, AUC {fmt_decimal(record['auc'])}; stored with {args.adapter}")
    return 0


def add_eval(subparsers: Any) -> None:
    parser = subparsers.add_parser("eval", help="evaluate the clarifier on any JSONL file in the example schema")
    parser.add_argument("file", type=Path, metavar="FILE.jsonl")
    parser.add_argument("--adapter", help='"bundled" (default), an adapter folder, or "none"')
    parser.add_argument("--base-model", help="Hugging Face id or folder (default: ASKBETTER_BASE_MODEL)")
    parser.add_argument("--limit", type=int, help="evaluate the first N examples")
    parser.add_argument("--json", type=Path, dest="json_out", metavar="OUT", help="write the report as JSON")
    parser.add_argument("--prompt-style", choices=PROMPT_STYLES,
                        help="default: the one the adapter was trained on, zero-shot without one")
    parser.add_argument("--predictions", type=Path, metavar="OUT.jsonl", help="write per-example predictions")
    parser.add_argument("--no-questions", action="store_true", help="classification only: skip question generation")
    parser.add_argument("--baselines", action="store_true",
                        help="also score always/never-clarify and the prompted base model; print one table")
    parser.add_argument("--markdown", type=Path, metavar="OUT.md", help="with --baselines: write the table")
    parser.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    if args.markdown is not None and not args.baselines:
        raise UsageError("--markdown writes the --baselines table: add --baselines")
    if args.predictions is not None and args.baselines:
        raise UsageError("--predictions is not written with --baselines: run eval without --baselines for them")
    if args.prompt_style is not None and args.baselines:
        raise UsageError("--prompt-style is not used with --baselines: the base model runs zero-shot and "
                         "few-shot, the adapter in the style it was trained on")
    check_examples_and_limit(args.file, args.limit)
    settings = settings_from(args)
    try:
        if args.baselines:  # as run_baselines checks it (an adapter there), before the model libraries import
            from askbetter.clarifier.assets import require_adapter

            folder: Path | None = require_adapter(settings.adapter, "--baselines")
        else:
            folder = check_adapter(settings)
        spare = [] if folder is None else adapter_inputs(folder)
        check_output_files(args.file, spare=spare, json=args.json_out, predictions=args.predictions,
                           markdown=args.markdown)
        return _evaluate(args, settings)
    except ValueError as exc:  # an empty file
        raise UsageError(str(exc)) from exc


def _evaluate(args: argparse.Namespace, settings: Any) -> int:
    from askbetter.clarifier.baselines import format_table, run_baselines
    from askbetter.clarifier.evaluate import format_report, run_eval

    if args.baselines:
        reports = run_baselines(args.file, limit=args.limit, adapter=args.adapter, json_out=args.json_out,
                                markdown_out=args.markdown, base_model=args.base_model, settings=settings,
                                generate_questions=not args.no_questions)
        print(format_table(reports))
        return 0
    report = run_eval(args.file, adapter=args.adapter, base_model=args.base_model, limit=args.limit,
                      json_out=args.json_out, prompt_style=args.prompt_style, settings=settings,
                      predictions_out=args.predictions, generate_questions=not args.no_questions)
    print(format_report(report))
    return 0
