"""Hand-labelled `post` examples over the bundled corpus, with the passages the real retriever finds.

The bundled corpus (a fictional company with two offices and two products that share feature
names) is the demo's domain and unlike any training source: company documents, not Wikipedia,
stories, tables or rules. Each case below is a user turn (after an optional dialog), labelled by
what the corpus makes of it: ambiguous when its passages support several readings (two offices,
two products) and nothing in the dialog picks one; clear when one reading is meant, by the
question itself or by the dialog before it (`hard-negative`). The passages are the top
`Settings.top_k` chunks that a fresh in-memory Chroma collection of the corpus returns for the
user turns joined (a crude standalone query, so no model takes part in building the file).
The labels and reference questions are hand-written; 36 examples are a probe, not a measurement.

    python scripts/corpus_probe.py runs/eval/corpus_probe.jsonl
    askbetter eval runs/eval/corpus_probe.jsonl --no-questions --predictions runs/eval/corpus_probe.pred.jsonl
"""

import argparse
from dataclasses import dataclass
from pathlib import Path

from askbetter.clarifier.examples import Example, write_examples
from askbetter.clarifier.source_common import document, make_example
from askbetter.clarifier.types import Message
from askbetter.retrieval.corpus import ephemeral_corpus_collection
from askbetter.retrieval.store import ChromaRetriever
from askbetter.settings import Settings


@dataclass(frozen=True)
class Case:
    question: str
    clarification: str | None  # the reference question when the turn is ambiguous
    dialog: tuple[str, ...] = ()  # earlier turns, user and assistant alternating, user first

    @property
    def kind(self) -> str:
        if self.clarification:
            return "ambiguous"
        return "hard-negative" if self.dialog else "clear"


BOTH_PRODUCTS = "Do you mean Nimbus Cloud or Nimbus Desktop?"
BOTH_OFFICES = "Which office do you mean, Berlin or Boston?"

CASES: tuple[Case, ...] = (
    # one turn, two readings in the corpus
    Case("How do I turn on sync?", "Do you mean Sync in Nimbus Cloud or in Nimbus Desktop?"),
    Case("How do I do a reset?", "Do you want to reset a Nimbus Cloud workspace or Nimbus Desktop?"),
    Case("How do I export my data?", "Do you want to export from Nimbus Cloud or from Nimbus Desktop?"),
    Case("How do backups work?", BOTH_PRODUCTS),
    Case("How long are backups kept?", BOTH_PRODUCTS),
    Case("What is the price for a team?", "Do you mean Nimbus Desktop Team licenses or the Nimbus Cloud Team plan?"),
    Case("Where can I park?", BOTH_OFFICES),
    Case("When is the IT help desk open?", BOTH_OFFICES),
    Case("What is the office address?", BOTH_OFFICES),
    Case("How long does it take to get a new laptop?", BOTH_OFFICES),
    Case("On which days is lunch provided at the office?", BOTH_OFFICES),
    # one turn, one reading
    Case("How much can I spend per attendee on a client dinner?", None),
    Case("How do I turn on Sync in Nimbus Desktop?", None),
    Case("How do I export a Nimbus Cloud workspace?", None),
    Case("Where do I park at the Boston office?", None),
    Case("How do I reset my Halcyon account password?", None),
    Case("How many paid vacation days do I get per year?", None),
    Case("Who do I call when my laptop is stolen?", None),
    Case("Does Nimbus Desktop run on Linux?", None),
    Case("How many days do I have to submit an expense claim?", None),
    Case("How many days per week can I work from home?", None),
    Case("How long are Nimbus Cloud audit log entries kept?", None),
    Case("Can a Nimbus Cloud share link have a password?", None),
    Case("How much may a hotel in London cost per night?", None),
    Case("What is the customer support email address?", None),
    # the dialog picks the reading
    Case("How do I turn on sync?", None, (
        "I just installed Nimbus Desktop on my new laptop.",
        "Great! Nimbus Desktop runs on Windows and macOS. What can I help you with?")),
    Case("Where can I park?", None, (
        "I work in the Boston office.",
        "Thanks. What would you like to know about the Boston office?")),
    Case("How do I export everything?", None, (
        "I'm the admin of our Nimbus Cloud workspace.",
        "OK. How can I help?")),
    Case("When is the help desk open?", None, (
        "I'm in the Berlin office and my laptop broke.",
        "Sorry to hear that. The IT help desk can repair or replace it.")),
    Case("What is the price for a team?", None, (
        "We want to buy Nimbus Desktop for our team.",
        "Nimbus Desktop is sold as a one-time license.")),
    Case("How long are backups kept?", None, (
        "Our company uses Nimbus Cloud on the Team plan.",
        "Good to know. What do you need?")),
    # the dialog leaves both readings open
    Case("Where can I park?", BOTH_OFFICES, (
        "I'm new at Halcyon Works.",
        "Welcome! What would you like to know?")),
    Case("How do I turn on sync?", "Do you mean Sync in Nimbus Cloud or in Nimbus Desktop?", (
        "We use both Nimbus Cloud and Nimbus Desktop.",
        "Both are Halcyon Works products. What do you need?")),
    Case("How do I reset it?", "Do you want to reset a Nimbus Cloud workspace or Nimbus Desktop?", (
        "Can you compare Nimbus Cloud and Nimbus Desktop?",
        "Nimbus Cloud is a browser-based file workspace; Nimbus Desktop is a note-taking app.")),
    Case("How do I get there?", BOTH_OFFICES, (
        "I have a job interview at Halcyon Works next week.",
        "Good luck! Interviews take place in the office of the team you applied to.")),
    Case("How long is it kept?", "Do you mean Nimbus Cloud's backups or its Audit Log entries?", (
        "Our Nimbus Cloud workspace is on the Team plan, with the Audit Log and a daily backup.",
        "The Team plan includes both.")),
)


def _messages(case: Case) -> list[Message]:
    roles = ("user", "assistant")
    turns = [*case.dialog, case.question]
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(turns)]


def build(settings: Settings) -> list[Example]:
    """Every case as a `post` example over the passages retrieved for its user turns."""
    collection, _ = ephemeral_corpus_collection(settings, "askbetter-probe")
    retriever = ChromaRetriever(collection)
    examples = []
    for number, case in enumerate(CASES):
        messages = _messages(case)
        query = " ".join(m["content"] for m in messages if m["role"] == "user")
        passages = retriever.search(query, k=settings.top_k)
        docs = [document(p["id"], p["text"], p.get("title")) for p in passages]
        examples.append(make_example(f"corpus-probe-{number}", "corpus-probe", "post", messages,
                                     case.clarification, case.kind, docs))
    return examples


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the examples file to write")
    write_examples(parser.parse_args().out, build(Settings.from_env()))
