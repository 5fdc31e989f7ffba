"""Parts of the training loop: encoding, bucketing, collation, the answer logits and the losses."""

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from askbetter.clarifier.train import (
    AnswerLogits,
    CheckpointMismatch,
    Encoded,
    TrainConfig,
    answer_logits,
    at_answer_positions,
    check_head,
    check_resumable,
    collate,
    encode,
    make_batches,
    pair_margin_loss,
    peak_memory_mb,
    plan_digests,
    rng_state,
    set_rng_state,
    weighted_loss,
)
from example_factory import example
from tiny_model import tiny_llama


class ChatTokenizer:
    """One id per character; remembers the last chat it laid out."""

    eos_token_id = 0

    def __init__(self) -> None:
        self.chat: list[dict[str, str]] = []

    def __call__(self, text: str, add_special_tokens: bool = False):
        return type("Out", (), {"input_ids": [ord(c) for c in text]})()

    def decode(self, ids) -> str:
        return "".join(chr(i) for i in ids)

    def convert_tokens_to_ids(self, token: str) -> int:
        return 1

    def apply_chat_template(self, chat, add_generation_prompt: bool, tokenize: bool) -> list[int]:
        self.chat = chat
        return [ord(c) for m in chat for c in m["content"]]


def _items(lengths: list[int]) -> list[Encoded]:
    return [Encoded(list(range(1, n + 1)), n_prompt=n - 2) for n in lengths]


@pytest.mark.parametrize("setting, sees_passage", [("pre", False), ("post", True)])
def test_encode_shows_passages_to_post_examples_only(setting: str, sees_passage: bool) -> None:
    ex = example(1, setting, "Which one?", "ambiguous")
    ex["documents"] = [{"id": "d1", "text": "the passage"}]
    tokenizer = ChatTokenizer()
    item = encode(ex, tokenizer, TrainConfig(max_input_tokens=200))
    assert ("[1] the passage" in tokenizer.chat[-1]["content"]) is sees_passage
    assert tokenizer.decode(item.input_ids[item.n_prompt:]) == "Which one?\x01"


def test_batches_cover_every_item_once_and_respect_the_token_budget() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(10, 300) for _ in range(200)]
    items = _items(lengths)
    cfg = TrainConfig(batch_tokens=1024, max_batch_size=8)
    batches = make_batches(items, cfg, random.Random(1))
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(items)))
    for b in batches:
        assert len(b) <= 8
        assert max(lengths[i] for i in b) * len(b) <= 1024 or len(b) == 1


def test_batches_are_deterministic_given_the_seed() -> None:
    items = _items([5, 50, 7, 80, 33, 12, 90, 41])
    cfg = TrainConfig(batch_tokens=100)
    assert make_batches(items, cfg, random.Random(3)) == make_batches(items, cfg, random.Random(3))


def test_collate_masks_prompt_and_padding_and_marks_the_first_answer_token() -> None:
    items = [Encoded([5, 6, 7, 8], n_prompt=2), Encoded([9, 10, 11], n_prompt=1)]
    batch = collate(items, pad_id=0, multiple=8)
    assert batch["input_ids"].shape == (2, 8)
    assert batch["labels"][0].tolist() == [-100, -100, 7, 8, -100, -100, -100, -100]
    assert batch["labels"][1].tolist() == [-100, 10, 11, -100, -100, -100, -100, -100]
    assert batch["attention_mask"][1].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert batch["first"][0].nonzero().flatten().tolist() == [2]
    assert batch["first"][1].nonzero().flatten().tolist() == [1]


def full_logits(model, batch):
    """What `answer_logits` stands for: the model's own forward over every position."""
    return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits


def test_answer_logits_are_the_models_own_at_the_answer_positions_and_the_loss_the_full_ones() -> None:
    """The head runs at the positions that predict an answer token only: there its logits are the
    model's own forward's, and the weighted loss (the first answer token counting 3 times) is the
    one computed over the full logits, row by row."""
    torch.manual_seed(0)
    model = tiny_llama().eval()
    items = [Encoded(list(range(1, 7)), 3), Encoded(list(range(2, 6)), 2)]  # answers 4-6 and 4-5
    batch = collate(items, pad_id=0, multiple=4)
    answer = answer_logits(model, batch)
    assert answer.rows.tolist() == [0, 0, 0, 1, 1]
    assert answer.targets.tolist() == [4, 5, 6, 4, 5]
    assert answer.first.tolist() == [True, False, False, True, False]
    full = full_logits(model, batch)
    assert torch.allclose(answer.logits, torch.cat([full[0, 2:5], full[1, 1:3]]), atol=1e-5)
    per_token = [torch.nn.functional.cross_entropy(full[r, p], torch.tensor(t)) for r, p, t in
                 [(0, 2, 4), (0, 3, 5), (0, 4, 6), (1, 1, 4), (1, 2, 5)]]
    expected = (3 * per_token[0] + per_token[1] + per_token[2] + 3 * per_token[3] + per_token[4]) / 9
    assert weighted_loss(answer, 3.0).item() == pytest.approx(expected.item(), rel=1e-5)
    assert weighted_loss(answer, 1.0).item() == pytest.approx(torch.stack(per_token).mean().item(), rel=1e-5)


def test_check_head_refuses_a_model_whose_forward_scales_its_logits() -> None:
    model = tiny_llama().train()
    check_head(model, [1, 2, 3])  # a plain causal LM: its logits are its output embeddings'
    assert model.training  # put back as it was
    forward = model.forward
    model.forward = lambda *args, **kwargs: SimpleNamespace(logits=forward(*args, **kwargs).logits * 30)
    with pytest.raises(ValueError, match="computes its logits otherwise"):
        check_head(model, [1, 2, 3])


def _first_answers(log_clear: list[float], clear_id: int = 3) -> AnswerLogits:
    """One first-answer position per row whose log P(token `clear_id`) is given."""
    logits = torch.full((len(log_clear), 5), -1e4)
    for r, lp in enumerate(log_clear):
        logits[r, clear_id] = lp
        logits[r, 0] = torch.log(-torch.expm1(torch.tensor(lp)))  # the rest of the mass
    n = len(log_clear)
    return AnswerLogits(logits, torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.bool), torch.arange(n))


def test_pair_margin_loss_asks_clear_members_to_lead_their_unit_by_the_margin() -> None:
    units = torch.tensor([0, 0, 1, 1])
    clear = torch.tensor([True, False, True, False])
    # unit 0: the clear one leads by 0.2 nats (hinge 0.8); unit 1: by 2 nats (no loss)
    answer = _first_answers([-0.5, -0.7, -0.1, -2.1])
    loss = pair_margin_loss(answer, units, clear, clear_id=3, margin=1.0)
    assert loss.item() == pytest.approx((0.8 + 0.0) / 2, abs=1e-4)
    # no unit (-1) or no pair of both labels: nothing to compare
    alone = pair_margin_loss(answer, torch.tensor([-1, -1, 1, 2]), clear, clear_id=3)
    assert alone.item() == 0.0


def test_the_pair_margin_over_padded_rows_of_several_answer_tokens_is_the_full_logits_one() -> None:
    """Two contrast pairs and a row of no unit, each padded and with answers of one to three tokens:
    the hinge reads log P(CLEAR) where each row's first answer token is predicted, as over the
    model's full logits, and the loss and its gradients are the full logits' (the head at every
    position, before session 44)."""
    model = tiny_llama().eval()
    items = [Encoded(list(range(1, 7)), 3, clear=True, unit=0), Encoded(list(range(2, 6)), 2, unit=0),
             Encoded(list(range(1, 9)), 5, clear=True, unit=1), Encoded(list(range(3, 8)), 4, unit=1),
             Encoded([4, 5, 6], 2)]
    batch = collate(items, pad_id=0, multiple=4)
    clear_id, margin = 7, 5.0

    def losses(answer: AnswerLogits) -> tuple[torch.Tensor, torch.Tensor]:
        return weighted_loss(answer, 3.0), pair_margin_loss(answer, batch["unit"], batch["clear"], clear_id, margin)

    model.zero_grad()
    loss, pair = losses(answer_logits(model, batch))
    (loss + pair).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    full = full_logits(model, batch)
    log_clear = [torch.log_softmax(full[r, e.n_prompt - 1], -1)[clear_id] for r, e in enumerate(items)]
    expected = (torch.relu(margin - (log_clear[0] - log_clear[1]))
                + torch.relu(margin - (log_clear[2] - log_clear[3]))) / 2
    assert pair.item() == pytest.approx(expected.item(), rel=1e-5) and expected.item() > 0
    full_loss, full_pair = losses(at_answer_positions(full, batch))
    assert (full_loss.item(), full_pair.item()) == pytest.approx((loss.item(), pair.item()), rel=1e-5)
    (full_loss + full_pair).backward()
    for ours, theirs in zip(grads, (p.grad for p in model.parameters()), strict=True):
        assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_encode_marks_clear_answers_and_a_margin_needs_contrast_pairs() -> None:
    cfg = TrainConfig(max_input_tokens=200)
    assert encode(example(1, "pre", None, "clear"), ChatTokenizer(), cfg).clear
    assert not encode(example(2, "pre", "Which one?", "ambiguous"), ChatTokenizer(), cfg).clear
    with pytest.raises(ValueError, match="contrast_pairs"):
        TrainConfig(pair_margin_weight=0.5)


def test_the_step_log_is_cut_back_to_the_checkpoint_step(tmp_path) -> None:
    from askbetter.clarifier.train import _truncate_log

    log = tmp_path / "train_log.jsonl"
    log.write_text("".join(f'{{"step": {s}, "loss": 1.0}}\n' for s in [1, 2, 3, 4, 5]) + '{"step": 6, "lo')
    _truncate_log(log, 3)
    assert log.read_text().splitlines() == [
        f'{{"step": {s}, "loss": 1.0}}' for s in [1, 2, 3]]
    _truncate_log(tmp_path / "absent.jsonl", 3)
    assert not (tmp_path / "absent.jsonl").exists()
    # a damaged line, bytes that are not UTF-8, is dropped as a cut one is (a UnicodeDecodeError
    # traceback stopped the resumed run once its model had loaded)
    log.write_bytes(b'{"step": 1, "loss": 1.0}\n\xff\xfe{"step": 2}\n{"step": 2, "loss": 1.0}\n')
    _truncate_log(log, 3)
    assert log.read_text().splitlines() == [f'{{"step": {s}, "loss": 1.0}}' for s in [1, 2]]


def test_a_unit_lands_in_one_batch_and_the_budget_still_holds() -> None:
    rng = random.Random(2)
    lengths = [rng.randint(10, 300) for _ in range(120)]
    items = _items(lengths)
    units = [[i, i + 1, i + 2] for i in range(0, 30, 3)] + [[i] for i in range(30, 120)]
    cfg = TrainConfig(batch_tokens=1024, max_batch_size=8)
    batches = make_batches(items, cfg, random.Random(1), units)
    assert sorted(i for b in batches for i in b) == list(range(120))
    where = {i: n for n, b in enumerate(batches) for i in b}
    for u in units:
        assert len({where[i] for i in u}) == 1
    for b in batches:
        assert len(b) <= 8
        assert max(lengths[i] for i in b) * len(b) <= 1024


def test_singleton_units_batch_like_no_units() -> None:
    items = _items([5, 50, 7, 80, 33, 12, 90, 41])
    cfg = TrainConfig(batch_tokens=100)
    units = [[i] for i in range(len(items))]
    assert make_batches(items, cfg, random.Random(3), units) == make_batches(items, cfg, random.Random(3))


def test_a_resumed_run_keeps_the_peak_memory_of_the_processes_before_it():
    now = peak_memory_mb("cpu")["peak_rss_mb"]
    assert now > 0
    assert peak_memory_mb("cpu", {"peak_rss_mb": now + 1000}) == {"peak_rss_mb": now + 1000}
    assert peak_memory_mb("cpu", {"peak_rss_mb": 1})["peak_rss_mb"] >= now


def test_without_the_resource_module_training_imports_and_records_no_peak_rss() -> None:
    """`resource` is Unix only: on Windows `askbetter train` failed at import. Now the resident
    peak is None there, and a resumed run keeps the one an earlier process measured."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['resource'] = None\n"  # `import resource` raises ImportError
            "from askbetter.clarifier.train import peak_memory_mb\n"
            "print(peak_memory_mb('cpu'), peak_memory_mb('cpu', {'peak_rss_mb': 7}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "{'peak_rss_mb': None} {'peak_rss_mb': 7}"


def test_a_checkpoint_resumes_only_the_batches_it_trained_on(tmp_path) -> None:
    examples = [example(i, "pre", None, "clear") for i in range(4)]
    digests = plan_digests([[0, 1], [2]], examples)
    done = digests[2]
    assert len(digests) == 3 and digests[1] == plan_digests([[0, 1]], examples)[1]
    assert done == plan_digests([[0, 1], [2]], list(examples))[2]
    others = [plan_digests(plan, examples)[2]
              for plan in ([[1, 0], [2]], [[0, 1], [3]], [[0], [1, 2]])]
    assert done not in others and len(set(others + digests)) == 6
    check_resumable({"step": 2, "plan_digest": done}, digests, tmp_path)
    check_resumable({"step": 2}, digests, tmp_path)  # written before digests were recorded
    with pytest.raises(CheckpointMismatch, match="other training batches"):
        check_resumable({"step": 2, "plan_digest": others[0]}, digests, tmp_path)
    # a checkpoint past the end of this plan (a run of fewer --epochs) is no IndexError
    with pytest.raises(CheckpointMismatch, match="at step 3, past the 2 steps of this run"):
        check_resumable({"step": 3, "plan_digest": others[0]}, digests, tmp_path)


def test_the_random_state_a_checkpoint_keeps_draws_the_same_dropout_masks_again() -> None:
    """The helpers' round trip; that a resumed run trains exactly as an unbroken one is
    tests/integration/test_train_resume.py's bit-for-bit comparison."""
    saved = rng_state("cpu")
    mask = torch.nn.functional.dropout(torch.ones(64), 0.5)
    set_rng_state(saved, "cpu")
    assert torch.equal(torch.nn.functional.dropout(torch.ones(64), 0.5), mask)


class _Saves:
    """The model, optimizer and scheduler of `_save_checkpoint`, as far as it uses them."""

    peft_config = {"default": type("Config", (), {"base_model_name_or_path": "base"})()}

    def save_pretrained(self, folder: str, save_embedding_layers: bool) -> None:
        Path(folder).mkdir(parents=True)
        (Path(folder) / "adapter_model.safetensors").write_text("weights")

    def state_dict(self) -> dict:
        return {}


def _meta(steps: int, **options) -> dict:
    """A run's clarifier config at `steps` of 3, trained with TrainConfig(**options)."""
    return {"prompt_style": "tuned",
            "training": {"steps": steps, "planned_steps": 3, "config": TrainConfig(**options).to_json()}}


def test_a_kill_while_a_checkpoint_is_replaced_leaves_a_whole_one_to_resume(tmp_path, monkeypatch) -> None:
    from pathlib import Path

    from askbetter.clarifier.train import _recover_checkpoint, _save_checkpoint

    ckpt, saves = tmp_path / "checkpoint", _Saves()
    meta = _meta(steps=1)
    _save_checkpoint(saves, saves, saves, {"step": 1}, ckpt, meta)
    rename = Path.rename

    def killed_before_the_new_one_moves_in(self, target):
        if self.name == "checkpoint.tmp":
            raise KeyboardInterrupt
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", killed_before_the_new_one_moves_in)
    with pytest.raises(KeyboardInterrupt):
        _save_checkpoint(saves, saves, saves, {"step": 2}, ckpt, meta)
    monkeypatch.undo()
    _recover_checkpoint(ckpt)
    assert torch.load(ckpt / "trainer_state.pt")["step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
    _save_checkpoint(saves, saves, saves, {"step": 3}, ckpt, meta)  # and the next one replaces it
    assert torch.load(ckpt / "trainer_state.pt")["step"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]

    (tmp_path / "checkpoint.old").mkdir()  # killed after the second rename: the old one left aside
    _recover_checkpoint(ckpt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
    assert torch.load(ckpt / "trainer_state.pt")["step"] == 3


@pytest.mark.parametrize("name", ["lr", "first_token_weight", "stratum_power", "pair_margin_weight"])
def test_an_infinite_option_value_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a finite number, not inf"):
        TrainConfig(**{name: float("inf")})


def test_a_seed_torch_cannot_take_is_refused() -> None:
    """torch's seed is a 64-bit number: a larger --seed stopped the run with torch's traceback
    ("Overflow when unpacking long long"); the bounds themselves are seeds torch takes."""
    for seed in (-(2**63), -5, 2**64 - 1):
        TrainConfig(seed=seed)
        torch.Generator().manual_seed(seed)
    for seed in (2**64, -(2**63) - 1, 10**23):
        with pytest.raises(ValueError, match=f"seed must lie in \\[{-(2**63)}, {2**64 - 1}\\], not {seed}"):
            TrainConfig(seed=seed)


def test_a_run_without_dev_examples_finishes_without_scikit_learn(tmp_path, monkeypatch) -> None:
    """`--dev-examples 0` (every GPU job's option) picks no threshold, so the end of the run needs
    none of the metrics' packages: the lent GPU machine has torch, transformers and peft, and
    `scripts/gpu_carry.py` carries no scikit-learn."""
    import sys

    from peft import LoraConfig, get_peft_model

    from askbetter.clarifier.local import adapter_config
    from askbetter.clarifier.train import TrainConfig, finish
    from tiny_model import tiny_llama, tiny_tokenizer

    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")
                 or m in ("askbetter.clarifier.calibrate", "askbetter.clarifier.metrics")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # `import sklearn` raises ImportError
    model = get_peft_model(tiny_llama(), LoraConfig(r=2, target_modules=["q_proj"]))
    cfg = TrainConfig(out_dir=tmp_path / "run", dev_examples=0)
    out = finish(model, tiny_tokenizer(), cfg, _meta(steps=1), tmp_path / "dev.jsonl", [])
    assert out == tmp_path / "run" / "adapter" and (out / "adapter_model.safetensors").is_file()
    assert adapter_config(out)["training"]["steps"] == 1
