"""Record the bundled adapter's decisions on a handful of test-split examples.

`tests/integration/test_adapter.py` checks that the shipped adapter still makes them. Examples
are taken in file order, two per (setting, label), among those whose score is at least 0.15 away
from the threshold, so that bf16/fp32 differences across CPUs cannot flip a decision. The examples
come from the test split less those the shipped adapter trained on (`clarifier/adapter/trained_on.txt`):

    make data   # writes data/test.unseen.jsonl
    python scripts/record_adapter_decisions.py data/test.unseen.jsonl tests/fixtures/adapter_decisions.jsonl
"""

import argparse
import json
from pathlib import Path

from askbetter.clarifier.examples import check_documents, read_examples
from askbetter.clarifier.local import LocalClarifier

MARGIN = 0.15
PER_CELL = 2


def main(test_file: Path, out: Path) -> None:
    clarifier = LocalClarifier.from_settings(adapter="bundled")
    cells: dict[tuple[str, bool], int] = {}
    rows = []
    for ex in read_examples(test_file):
        key = (ex["setting"], ex["clarification"] is not None)
        if cells.get(key, 0) >= PER_CELL:
            continue
        score = clarifier.score(ex["messages"], check_documents(ex))
        if abs(score - clarifier.threshold) < MARGIN:
            continue
        cells[key] = cells.get(key, 0) + 1
        rows.append({**ex, "recorded": {"score": round(score, 4),
                                        "needs_clarification": score >= clarifier.threshold}})
        if len(rows) == 4 * PER_CELL:
            break
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"recorded {len(rows)} decisions at threshold {clarifier.threshold:.3f} in {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test_file", type=Path,
                        help="the examples to pick from, data/test.unseen.jsonl")
    parser.add_argument("out", type=Path, help="the file of recorded decisions to write")
    args = parser.parse_args()
    main(args.test_file, args.out)
