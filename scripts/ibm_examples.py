"""Turn IBM's public `query_clarification` request fixtures into examples for `askbetter eval`.

`../shared/data/ibm-query-clarification-format` holds three requests (chat messages plus
documents, from MTRAG-style conversations) of the closest public peer. Two carry their label in
the file name (`request_ambiguous`, `request_clear`); `request_with_documents` is the one whose
answer `expected_response.json` gives (a clarification question). All three are `post` examples
with their documents. `request_ambiguous` has no reference question in the fixtures, so its
example carries a placeholder one (it counts for the decision only; run eval with
`--no-questions`). Three examples are a probe, not a measurement.

    python scripts/ibm_examples.py ../shared/data/ibm-query-clarification-format runs/ibm.jsonl
    askbetter eval runs/ibm.jsonl --no-questions --predictions runs/ibm.pred.jsonl
"""

import argparse
import json
from pathlib import Path

from askbetter.clarifier.examples import Example, write_examples
from askbetter.clarifier.source_common import document, make_example

PLACEHOLDER_QUESTION = "Which one do you mean?"


def _example(folder: Path, name: str, clarification: str | None, kind: str) -> Example:
    request = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    docs = [document(d["doc_id"], d["text"]) for d in request["extra_body"]["documents"]]
    return make_example(f"ibm-{name}", "ibm-fixtures", "post", request["messages"],
                        clarification, kind, docs)


def main(folder: Path, out: Path) -> None:
    response = json.loads((folder / "expected_response.json").read_text(encoding="utf-8"))
    answer = json.loads(response["choices"][0]["message"]["content"])["clarification"]
    examples = [
        _example(folder, "request_ambiguous", PLACEHOLDER_QUESTION, "ambiguous"),
        _example(folder, "request_clear", None, "clear"),
        _example(folder, "request_with_documents", answer, "ambiguous"),
    ]
    write_examples(out, examples)
    print(f"wrote {len(examples)} examples to {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path,
                        help="the fixtures folder, ibm-query-clarification-format")
    parser.add_argument("out", type=Path, help="the examples file to write")
    args = parser.parse_args()
    main(args.folder, args.out)
