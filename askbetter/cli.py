"""The `askbetter` command line: `ingest`, `ask`, `chat`, `demo` here, and the clarification
model's `data build`, `train`, `calibrate` and `eval` from `askbetter.cli_model`.

Each subcommand is one `add_<name>(subparsers)` function that declares its arguments and sets its
handler (`args.handler(args) -> exit code`); `SUBCOMMANDS` lists this module's, and
`_model_subcommands()` imports the others' when the parser is built. Options left unset fall
back to the settings' environment variables (see `askbetter.settings`). Errors the user can fix
(a missing model package, Chroma unreachable or locked, an empty question, a bad setting) print
one line and exit 1, without a traceback.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from askbetter.settings import MAX_TOP_K, Settings
from askbetter.text import displayable, encodes_as_utf8, is_blank

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from askbetter.graph.context import Context

PROMPT = "you> "


class UsageError(ValueError):
    """Bad input on the command line (an empty question, ...)."""


# ---------------------------------------------------------------- shared options and helpers


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", help="Chroma collection (ASKBETTER_COLLECTION)")
    parser.add_argument("--chroma-path", type=Path, help="Chroma folder (ASKBETTER_CHROMA_PATH)")


def _run_options(parser: argparse.ArgumentParser) -> None:
    _store_options(parser)
    parser.add_argument("--adapter", help='clarifier adapter: "bundled", a folder, or "none" (ASKBETTER_ADAPTER)')
    parser.add_argument("--threshold", type=float, help="ask when the score reaches this (ASKBETTER_THRESHOLD)")
    parser.add_argument("--top-k", type=int, help=f"passages to retrieve, 1 to {MAX_TOP_K} (ASKBETTER_TOP_K)")
    parser.add_argument("--max-rounds", type=int, help="questions per user turn (ASKBETTER_MAX_ROUNDS)")
    parser.add_argument("--pre-check", action=argparse.BooleanOptionalAction, help="check before retrieval")
    parser.add_argument("--post-check", action=argparse.BooleanOptionalAction, help="check after retrieval")


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the options given on the command line, checked
    as the graph checks its run context (`Settings.validate`)."""
    names = ("base_model", "collection", "chroma_path", "adapter", "threshold", "top_k", "max_rounds",
             "pre_check", "post_check", "ask_mode")
    given = {name: getattr(args, name, None) for name in names}
    try:
        settings = Settings.from_env(option_label=_option, **given)
    except ValueError as exc:  # a bad environment variable or option value
        raise UsageError(str(exc)) from exc
    if given["chroma_path"] is not None and settings.chroma_host:
        raise UsageError(f"--chroma-path names a local folder, but ASKBETTER_CHROMA_HOST={settings.chroma_host} "
                         "points at a Chroma server: unset it, or leave out --chroma-path")
    return settings


def _option(name: str) -> str:
    """The command-line option that sets the setting `name`."""
    return "--" + name.replace("_", "-")


def require_text(text: str, what: str = "question") -> str:
    if is_blank(text):
        raise UsageError(f'the {what} is empty: type one, e.g. askbetter ask "How do I turn on sync?"')
    require_utf8(text, what)
    return text.strip()


def require_utf8(text: str, what: str) -> None:
    """UsageError when `text` came from bytes that are not UTF-8 (Python keeps them as lone
    surrogates, which the models' tokenizers refuse)."""
    if not encodes_as_utf8(text):
        raise UsageError(f"the {what} is not UTF-8 text: set the terminal's encoding to UTF-8")


def read_undecodable_as_escapes(stream: TextIO) -> None:
    """Have `stream` (a text stream read with `input()`) keep the bytes it cannot decode as
    surrogate escapes, which `require_utf8` reports, as Python's stdin does under the C and POSIX
    locales only: elsewhere (en_US.UTF-8, or PYTHONIOENCODING set) it raises UnicodeDecodeError."""
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="surrogateescape")


def check_adapter(settings: Settings) -> Path | None:
    """Report an adapter folder that is missing, lacks a file or holds a corrupt one before any
    model loads, or LangGraph or torch imports (`resolve_adapter` reads the files' headers only,
    without torch); return the folder (None: no adapter)."""
    from askbetter.clarifier.assets import resolve_adapter

    return resolve_adapter(settings.adapter)


def build_graph(settings: Settings) -> Any:
    """The default graph with an in-memory checkpointer (its caller has checked the adapter:
    `check_adapter`). The Chroma collection is opened now, so an unreachable store, or a collection
    missing or empty, is reported before any model loads (and no collection is created)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.retrieval.store import ChromaRetriever

    retriever = ChromaRetriever.from_settings(settings)
    return create_clarifying_rag(retriever=retriever, settings=settings).compile(checkpointer=InMemorySaver())


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    print(f"askbetter: warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------- subcommands


def add_ingest(subparsers: Any) -> None:
    parser = subparsers.add_parser("ingest", help="add files or folders (.txt .md .pdf .jsonl) to the collection")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    _store_options(parser)
    parser.set_defaults(handler=cmd_ingest)


def cmd_ingest(args: argparse.Namespace) -> int:
    from askbetter.retrieval.ingest import find_files, ingest

    settings = settings_from(args)
    files = find_files(args.paths)  # before the store is opened: nothing to ingest writes nothing
    from askbetter.retrieval.store import open_collection  # once the paths passed: it imports LangChain

    collection = open_collection(settings)
    report = ingest(files, collection, settings.chunk_size, settings.chunk_overlap, progress=True)
    print(displayable(report.summary()))  # it names the corpus's files
    print(f"collection {settings.collection!r} now holds {collection.count()} chunks")
    return 0 if report.files_ingested else 1


def add_ask(subparsers: Any) -> None:
    parser = subparsers.add_parser("ask", help="ask one question; prints the decision path")
    parser.add_argument("question")
    _run_options(parser)
    parser.set_defaults(handler=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    question = require_text(args.question)
    settings = settings_from(args)
    check_adapter(settings)
    from askbetter.graph.context import default_context  # once the arguments passed: LangGraph takes a second
    from askbetter.graph.trace import TurnPrinter, run_turn

    graph = build_graph(settings)
    printer = TurnPrinter()
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    context: Context = {**default_context(settings), "ask_mode": "message"}  # one shot: a question ends the run
    result = run_turn(graph, {"messages": [("user", question)]}, config, context,
                      on_step=printer.step, on_token=printer.token)
    printer.outcome(result)
    return 0


def add_chat(subparsers: Any) -> None:
    parser = subparsers.add_parser("chat", help="talk in the terminal, one thread; /quit to leave")
    parser.add_argument("--ask-mode", choices=("interrupt", "message"), help="ASKBETTER_ASK_MODE")
    _run_options(parser)
    parser.set_defaults(handler=cmd_chat)


def cmd_chat(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    check_adapter(settings)
    from langgraph.types import Command  # once the arguments passed, as in cmd_ask

    from askbetter.graph.context import default_context
    from askbetter.graph.trace import TurnPrinter, run_turn
    from askbetter.retrieval.errors import RetrievalError

    context = default_context(settings)
    graph = build_graph(settings)
    printer = TurnPrinter()
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    print(f"askbetter chat ({context['ask_mode']} mode, collection {settings.collection!r}); "
          "Ctrl-C stops a turn, /quit leaves")
    paused = False  # interrupt mode: the graph waits for the reply to its question
    read_undecodable_as_escapes(sys.stdin)  # a line not in UTF-8 is reported, and the chat goes on
    while True:
        try:
            text = input(PROMPT).strip()
        except EOFError:
            print()
            return 0
        if text in ("/quit", "/exit"):
            return 0
        if is_blank(text):  # spaces, or nothing but control characters
            print("(type a question, or /quit)")
            continue
        try:
            require_utf8(text, "message")
        except UsageError as exc:  # this line is lost, not the chat
            print_error(exc)
            continue
        payload: Command | dict[str, Any] = Command(resume=text) if paused else {"messages": [("user", text)]}
        try:
            result = run_turn(graph, payload, config, context, on_step=printer.step, on_token=printer.token)
        except (RetrievalError, KeyboardInterrupt) as exc:  # the turn fails or is stopped, not the chat
            if isinstance(exc, RetrievalError):  # e.g. the Chroma server went away
                print_error(exc)
            else:  # Ctrl-C in a turn: its answer halts at once
                printer.stopped()
            # run_turn put the thread back (a question it was paused on waits again), unless the
            # Ctrl-C came once the turn had ended: ask it
            paused = bool(graph.get_state(config).interrupts)
            continue
        printer.outcome(result)
        paused = result.interrupt is not None


def add_demo(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="a scripted conversation over the bundled corpus")
    parser.add_argument("--adapter", help='clarifier adapter: "bundled", a folder, or "none"')
    parser.set_defaults(handler=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from askbetter.demo import run_demo

    settings = settings_from(args)
    check_adapter(settings)
    return run_demo(settings)


def _model_subcommands() -> list[Callable[[Any], None]]:
    from askbetter.cli_model import add_calibrate, add_data, add_eval, add_train

    return [add_data, add_train, add_calibrate, add_eval]


SUBCOMMANDS: list[Callable[[Any], None]] = [add_ingest, add_ask, add_chat, add_demo]


# ---------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="askbetter",
        description="A RAG agent that asks a clarification question when, and only when, a query needs one.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in [*SUBCOMMANDS, *_model_subcommands()]:
        add(subparsers)
    return parser


# what an interrupted command left, and how to go on (commands whose work is lost say nothing more;
# a command that knows more raises KeyboardInterrupt with its own, as `train` names its checkpoint)
_RESUME_HINTS = {
    "ingest": "the chunks stored so far are kept: run the same ingestion again to finish it",
    "train": "run the same command again to go on from its last checkpoint, if it wrote one",
    "data": "an earlier build in --out is kept whole",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    logging.basicConfig(level=logging.WARNING, format="askbetter: %(message)s")
    try:
        return args.handler(args)
    except KeyboardInterrupt as exc:
        hint = exc.args[0] if exc.args else _RESUME_HINTS.get(args.command, "")
        print(f"\ninterrupted{'; ' + hint if hint else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout's reader stopped reading (`askbetter ask ... | head -1`)
        # what is left to print goes nowhere, so that Python's flush at exit fails no more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print_error(exc)
        return 1


def print_error(exc: BaseException) -> None:
    print(f"askbetter: error: {displayable(str(exc))}", file=sys.stderr)


# the modules whose errors carry a message meant for the user, and those errors' names
_USER_ERRORS_OF: dict[str, tuple[str, ...]] = {
    "askbetter.retrieval.errors": ("RetrievalError",),
    "askbetter.clarifier.examples": ("ExampleFormatError",),
    "askbetter.clarifier.source_common": ("RawDataError",),
    "askbetter.clarifier.data_build": ("UnknownGroup",),
    "askbetter.clarifier.assets": ("ModelPackageMissing", "ModelNotFound"),
    "askbetter.clarifier.train": ("CheckpointMismatch", "CheckpointDamaged", "UnknownTargetModules",
                                  "UnsupportedHead"),
}


def _user_errors() -> tuple[type[BaseException], ...]:
    """Errors with a message meant for the user. Those of `_USER_ERRORS_OF` only once the command
    has imported their module, as only then can it have raised one: importing them costs (torch,
    LangChain, numpy), and a user error found in the arguments is reported before any is needed."""
    errors: list[type[BaseException]] = [
        UsageError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError]
    for module, names in _USER_ERRORS_OF.items():
        if module in sys.modules:
            errors += [getattr(sys.modules[module], name) for name in names]
    return tuple(errors)


if __name__ == "__main__":  # `python -m askbetter.cli`: run the module the others import, so that
    # the UsageError they raise is the one its `main` reports
    from askbetter.cli import main as imported_main

    sys.exit(imported_main())
