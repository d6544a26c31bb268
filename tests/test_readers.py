"""Readers: shapes, masks, greedy decoding, training determinism, save/load, the command line.

The attention reader has no step of its own; these tests give it the Lab 8 reference step (the
instructor's), as the benchmarks do.
"""
import json
import multiprocessing
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace

import pytest
import torch

from attention_course.core.readers import ReaderConfig, build_reader
from attention_course.core.seq2seq import decode_greedily
from attention_course.data import EOS, PAD, make_strips
from attention_course.paths import RESULTS as BOOK_RESULTS
from attention_course.seeds import seed_everything
from attention_course.devices import available_cpus
from attention_course_instructor.grading.checks import reference_namespace
from attention_course.tasks.fitting import fit
from attention_course.tasks.readers import (LAB_READERS, LAB_TRAINING, SPACED, TrainConfig,
                                            batch_plan, curriculum_length, format_results,
                                            load_reader, reader_logits, save_reader,
                                            style_of_batch, train_reader, train_readers)
from conftest import REPO

SMALL = dict(hidden=6, attention=5, embed=4)
LAB8 = reference_namespace("lab8")


def greedy(reader, batch, max_len):
    memory = reader.encode(batch.columns, batch.mask)
    return decode_greedily(reader, memory, reader.start(memory), len(batch), max_len, reader.tokens,
                           step=LAB8.reader_step)


@pytest.mark.parametrize("kind", ["attention", "fixed"])
def test_teacher_forced_logits_shape(kind):
    torch.manual_seed(0)
    reader = build_reader(dict(kind=kind, **SMALL))
    b = make_strips([2, 4], 3, seed=0)
    logits = reader_logits(reader, b.columns, b.mask, b.targets, LAB8.reader_step)
    assert logits.shape == (3, b.targets.shape[1], 11)


def test_attention_never_lands_on_padding():
    torch.manual_seed(1)
    reader = build_reader(dict(kind="attention", **SMALL)).eval()
    b = make_strips([1, 6], 4, seed=2)
    tokens, weights = greedy(reader, b, max_len=5)
    assert weights.shape[:2] == tokens.shape and weights.shape[2] == b.mask.shape[1]
    assert torch.all(weights[~b.mask.unsqueeze(1).expand_as(weights)] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))


def test_greedy_respects_step_cap_and_stops_on_eos():
    torch.manual_seed(2)
    reader = build_reader(dict(kind="attention", **SMALL)).eval()
    b = make_strips(3, 2, seed=0)
    with torch.no_grad():
        reader.readout_mlp[-1].bias[EOS] += 50.0           # stop at once
    tokens, _ = greedy(reader, b, max_len=7)
    assert tokens.shape == (2, 1) and torch.all(tokens == EOS)
    with torch.no_grad():
        reader.readout_mlp[-1].bias[EOS] -= 100.0          # never stop
    tokens, _ = greedy(reader, b, max_len=7)
    assert tokens.shape == (2, 7) and not torch.any((tokens == PAD) | (tokens == EOS))


@pytest.mark.parametrize("kind, embedding", [
    ("attention", {}), ("fixed", {}),
    ("attention", {"embed_layers": 2, "embed_kernel": 5}),   # the lab's: padding must not leak in
    ("attention", {"image_channels": 3, "embed_layers": 2})])
def test_a_strip_is_encoded_the_same_alone_and_in_a_padded_batch(kind, embedding):
    torch.manual_seed(4)
    reader = build_reader(dict(kind=kind, **SMALL, **embedding)).eval()
    b = make_strips([1, 7], 5, seed=3)
    short = int(b.mask.sum(1).argmin())
    n = int(b.mask[short].sum())
    assert n < b.mask.shape[1], "the batch should pad its shortest strip"
    with torch.no_grad():
        together = reader.encode(b.columns, b.mask)
        alone = reader.encode(b.columns[short:short + 1, :n], b.mask[short:short + 1, :n])
    torch.testing.assert_close(together.states[short, :n], alone.states[0])
    torch.testing.assert_close(together.summary[short], alone.summary[0])


def test_image_rows_are_pooled_in_pairs_by_their_maximum():
    """The embedding pools the image convolutions' rows in pairs with a reshape (a CPU-cheap
    max-pool): the same numbers as max_pool2d over (2, 1) windows."""
    torch.manual_seed(6)
    encoder = build_reader(dict(kind="attention", image_channels=3, **SMALL)).encoder
    b = make_strips([2, 3], 2, seed=4)
    keep = b.mask.unsqueeze(1).float()                                    # (B, 1, N)
    x = (b.columns.transpose(1, 2) * keep).unsqueeze(1)                   # (B, 1, 8, N)
    for conv in encoder.image_convs:
        x = encoder.activation(conv(x)) * keep.unsqueeze(1)
    x = torch.nn.functional.max_pool2d(x, (2, 1)).flatten(1, 2)           # (B, 4 * 2c, N)
    for conv in encoder.column_convs:
        x = encoder.activation(conv(x)) * keep
    torch.testing.assert_close(encoder.embed(b.columns, b.mask), x.transpose(1, 2))


def test_the_embedding_units_keep_learning_when_their_input_turns_negative():
    """A leaky ReLU (the readers' default) passes a gradient below zero; a plain one does not,
    so a unit that is negative on every input never recovers (lab8_variants.md)."""
    for slope, learns in ((0.1, True), (0.0, False)):
        encoder = build_reader(dict(kind="attention", embed_slope=slope, **SMALL)).encoder
        conv = encoder.column_convs[0]
        with torch.no_grad():
            conv.bias.fill_(-100.0)                          # every unit below zero everywhere
        b = make_strips(2, 2, seed=1)
        encoder.embed(b.columns, b.mask).sum().backward()
        assert bool(conv.weight.grad.abs().sum() > 0) is learns, slope


def test_the_first_step_starts_at_the_left_edge():
    """The Lab 8 attention reader starts with its weight on column 0, so its first prior favours
    columns about one move in and lets the content scores reach further only against it. The
    first context is zero and as wide as a column state."""
    b = make_strips(2, 3, seed=0)
    reader = build_reader(dict(kind="attention", **SMALL))
    memory = reader.encode(b.columns, b.mask)
    weights, context = reader.start(memory)
    assert torch.equal(weights[:, 0], torch.ones(3)) and float(weights[:, 1:].abs().sum()) == 0
    assert torch.equal(context, torch.zeros(3, memory.states.shape[-1]))
    first = reader.location_prior(weights)                   # (B, N)
    assert first[:, 25:].max() < -10, "from column 0 the prior cannot reach column 25"
    assert int(first[0].argmax()) == round(reader.config.prior_mean)


def test_wrong_input_shape_is_explained():
    reader = build_reader(dict(kind="attention", **SMALL))
    with pytest.raises(ValueError, match=r"\(B, N, 8\)"):
        reader.encode(torch.zeros(2, 10, 7), torch.ones(2, 10, dtype=torch.bool))
    with pytest.raises(ValueError, match="kind"):
        build_reader(dict(kind="transformer"))


def test_training_is_deterministic_and_learns():
    cfg = ReaderConfig(kind="attention", **SMALL)
    train = TrainConfig(steps=25, batch=16, noise=0.1)
    r1, log1 = train_reader(cfg, train, seed=3, progress=False, step=LAB8.reader_step)
    r2, log2 = train_reader(cfg, train, seed=3, progress=False, step=LAB8.reader_step)
    assert log1.losses == log2.losses and len(log1.losses) == 25
    assert sum(log1.losses[-5:]) < sum(log1.losses[:5])


def test_zero_steps_train_nothing_and_make_no_optimiser():
    """What Lab 8's autograded run asks for: the reader as its seed initialises it, with no
    optimiser made (torch's first one imports its compiler, a second of every graded kernel)."""
    def refused(*args, **kwargs):
        raise AssertionError("an optimiser was made for zero steps")

    record = fit(torch.nn.Linear(2, 1), lambda step: torch.ones(1, 2), lambda m, x: m(x).sum(), 0,
                 0.1, optimizer=refused)
    assert record["losses"] == [] and record["train_seconds"] == 0.0
    cfg = ReaderConfig(kind="attention", **SMALL)
    reader, log = train_reader(cfg, TrainConfig(steps=0), seed=3, progress=False, step=LAB8.reader_step)
    assert log.losses == [] and not reader.training
    seed_everything(3)
    initialised = build_reader(cfg)
    assert all(torch.equal(a, b) for a, b in zip(reader.state_dict().values(),
                                                 initialised.state_dict().values()))


def test_weight_decay_averaging_and_the_schedule_reach_the_training():
    cfg = ReaderConfig(kind="attention", **SMALL)
    plain = TrainConfig(steps=8, batch=8)
    weights = lambda r: torch.cat([p.detach().flatten() for p in r.parameters()])
    base, log = train_reader(cfg, plain, seed=5, progress=False, step=LAB8.reader_step)
    decayed, decayed_log = train_reader(cfg, replace(plain, weight_decay=0.5), seed=5,
                                        progress=False, step=LAB8.reader_step)
    averaged, averaged_log = train_reader(cfg, replace(plain, weight_average=0.9), seed=5,
                                          progress=False, step=LAB8.reader_step)
    assert averaged_log.losses == log.losses                    # the same training ...
    assert not torch.allclose(weights(averaged), weights(base))  # ... read with other weights
    assert decayed_log.losses[0] == log.losses[0] and decayed_log.losses != log.losses
    _, cycled_log = train_reader(cfg, replace(plain, schedule="one-cycle"), seed=5,
                                 progress=False, step=LAB8.reader_step)
    assert cycled_log.losses[0] == log.losses[0] and cycled_log.losses != log.losses


def test_wider_spacings_come_after_the_curriculum_and_short_strips_more_often():
    train = TrainConfig(steps=1000, spaced=SPACED, short_bias=True)
    rng = torch.Generator().manual_seed(0)
    early = {style_of_batch(i, train, rng) for i in range(300)}
    late = [style_of_batch(i, train, rng) for i in range(300, 1000)]
    assert early == {train.style}, "no wide spacing while the length curriculum runs"
    assert 0.4 < late.count(SPACED) / len(late) < 0.6
    lengths = [curriculum_length(i, train, rng) for i in range(300, 1000)]
    share = {n: lengths.count(n) / len(lengths) for n in (1, 8)}
    assert 0.3 < share[1] < 0.45 and 0.02 < share[8] < 0.08, share      # 1/L: 0.37 and 0.05
    plain = [curriculum_length(i, TrainConfig(steps=1000), rng) for i in range(300, 1000)]
    assert 0.08 < plain.count(1) / len(plain) < 0.17                      # uniform: 0.125
    assert all(t.spaced == SPACED for t in LAB_TRAINING.values())


def test_the_committed_lab8_results_come_from_todays_recipes():
    """The book's Lab 8 results page draws the committed benchmark tables: they must have been
    measured with the readers and training recipes the lab uses now."""
    results = BOOK_RESULTS                  # shipped in the package, beside the page's other inputs
    readers = json.loads((results / "lab8_readers.json").read_text())
    todays = json.loads(json.dumps({name: asdict(t) for name, t in LAB_TRAINING.items()}))
    assert readers["training"] == todays, "re-run python -m benchmarks.lab8_readers"
    assert readers["readers"] == {name: c.to_dict() for name, c in LAB_READERS.items()}
    maps = json.loads((results / "lab8_maps.json").read_text())
    assert maps["steps"] == LAB_TRAINING["attention"].steps, "re-run python -m benchmarks.lab8_maps"


def test_the_committed_variants_table_has_a_row_for_every_variant():
    """lab8_variants.md measures every variant the benchmark names now, in its order; the last
    rows' steps follow the pace of the committed lab8_readers.json, so a new pace means a re-run."""
    from benchmarks import lab8_variants

    table = (REPO / "benchmarks" / "results" / "lab8_variants.md").read_text()
    rows = re.findall(r"^\| (.+?) \| \d+ \|", table, re.M)
    assert rows == list(lab8_variants.variants()), "re-run python -m benchmarks.lab8_variants"


def test_the_readme_quotes_the_committed_notebook_times():
    """The README's times for a student's full run of each lab, and for grading one Lab 8
    submission, are the committed measurements."""
    readme = " ".join((REPO / "README.md").read_text().split())
    said = re.search(r"\(Lab 8: (\d+) s, `benchmarks/results/lab8_timing.md`; Lab 12: (\d+) s",
                     readme)
    assert said, "the README should state both labs' full-run times"
    results = REPO / "benchmarks" / "results"
    for seconds, table in zip(said.groups(), ("lab8_timing.md", "lab12.md")):
        run = re.search(r"\| complete notebook, as a student runs it \| (\d+) \|",
                        (results / table).read_text())
        assert run and run[1] == seconds, f"README says {seconds} s, {table} says {run and run[1]}"
    graded = re.search(r"One Lab 8 submission takes about (\d+) s through `nbgrader autograde`", readme)
    table = re.search(r"\| autograde one submission \(mean of 3, nbgrader autograde\) \| (\d+) \|",
                      (results / "lab8_timing.md").read_text())
    assert graded and table and graded[1] == table[1], (graded, table)


def test_spaced_batches_draw_their_own_lengths_and_leave_the_others_alone():
    """With ``spaced_lengths`` a spaced batch holds strips of those lengths; the other batches
    keep the curriculum's; without it the plan is the curriculum's and style_of_batch's."""
    train = TrainConfig(steps=1000, spaced=SPACED, spaced_lengths=(1, 2, 3))
    rng = torch.Generator().manual_seed(0)
    plan = [batch_plan(i, train, rng) for i in range(300, 1000)]
    spaced = {n for n, style in plan if style is SPACED}
    others = {n for n, style in plan if style is not SPACED}
    assert spaced == {1, 2, 3} and others == set(range(1, 9)), (spaced, others)
    plain = replace(train, spaced_lengths=None)
    one, two = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert ([batch_plan(i, plain, one) for i in range(1000)]
            == [(curriculum_length(i, plain, two), style_of_batch(i, plain, two))
                for i in range(1000)])


def test_the_lab_text_names_the_spacings_the_readers_train_on():
    """Lab 8's task 5 states the spacing augmentation and the steps in numbers: LAB_TRAINING's."""
    text = " ".join((REPO / "source" / "lab8" / "lab8.md").read_text().split())
    said = re.search(r"half the batches are spaced more widely than the test strips \(gaps up to "
                     r"(\d+) columns, blank leads up to (\d+), sometimes no blank tail\)", text)
    assert said, "task 5 should state the spacing augmentation (gaps, leads, tails)"
    assert (int(said[1]), int(said[2])) == (SPACED.gap[1], SPACED.lead[1])
    assert SPACED.tail[0] == 0 and all(t.spaced_share == 0.5 for t in LAB_TRAINING.values())
    assert "those batches hold strips of every length" in text, \
        "task 5 should state the lengths of the spaced batches"
    assert all(t.spaced_lengths is None for t in LAB_TRAINING.values())
    steps = re.search(r"so it takes more of them \((\d+) against (\d+)\)", text)
    assert steps, "task 5 should state both readers' numbers of steps"
    assert (int(steps[1]), int(steps[2])) == (LAB_TRAINING["fixed-context"].steps,
                                              LAB_TRAINING["attention"].steps)


def test_the_attention_reader_needs_a_step_to_train():
    with pytest.raises(TypeError, match="no step of its own"):
        train_reader(ReaderConfig(kind="attention", **SMALL), TrainConfig(steps=1), progress=False)


def started_processes(monkeypatch) -> list:
    """Record every process a spawn context starts from now on, with the reader config it was
    given (start() drops its arguments), through the test's own monkeypatch."""
    started = []
    process = multiprocessing.get_context("spawn").Process
    start = process.start
    monkeypatch.setattr(process, "start",
                        lambda self: started.append((self, self._args[0])) or start(self))
    return started


def test_a_reader_trained_alongside_in_a_second_process_is_the_one_trained_here(monkeypatch):
    """train_readers trains the fixed-context reader in a second process beside the attention
    reader (one torch thread each, on two CPUs); both come out as they do trained in turn."""
    if available_cpus() < 2:
        pytest.skip("training alongside needs two CPUs")
    sent = started_processes(monkeypatch)
    runs = {name: (replace(config, hidden=6, attention=5, embed=4, image_channels=2),
                   TrainConfig(steps=6, batch=4))
            for name, config in LAB_READERS.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started = time.monotonic()
        together = train_readers(runs, seed=4, step=LAB8.reader_step)
        kinds = [config.kind for _, config in sent]
        assert kinds == ["fixed"], "the fixed-context reader should train in a second process"
        with monkeypatch.context() as patch:   # in turn, as in a grader's sandbox: no temp folder
            patch.setattr(tempfile, "TemporaryDirectory", lambda: pytest.fail("a temp folder"))
            in_turn = train_readers(runs, seed=4, step=LAB8.reader_step, alongside=False)
        assert len(sent) == 1, "alongside=False trains every reader here"
    finally:
        torch.set_num_threads(threads)
    for name in runs:
        for (key, a), b in zip(together[0][name].state_dict().items(),
                               in_turn[0][name].state_dict().values()):
            assert torch.equal(a, b), f"{name}: {key} differs when trained alongside"
        assert together[1][name].losses == in_turn[1][name].losses
        assert not together[0][name].training
    # the second process's log is the reader's own, not a copy of this one's
    assert together[1]["fixed-context"].losses != together[1]["attention"].losses
    assert 0 < together[1]["fixed-context"].seconds < time.monotonic() - started


def test_an_error_here_stops_the_reader_training_alongside(monkeypatch):
    """When the reader trained here fails (a student's broken step, or an interrupt), the second
    process is stopped at once, not waited for, and the error is the one raised here."""
    if available_cpus() < 2:
        pytest.skip("training alongside needs two CPUs")
    sent = started_processes(monkeypatch)
    small = dict(hidden=6, attention=5, embed=4, image_channels=2)
    runs = {"fixed-context": (replace(LAB_READERS["fixed-context"], **small),
                              TrainConfig(steps=10**6, batch=4)),        # would run for hours
            "attention": (replace(LAB_READERS["attention"], **small), TrainConfig(steps=6))}

    def broken_step(reader, memory, state, prev_token):
        raise NotImplementedError("decoder_step is not written yet")

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.raises(NotImplementedError, match="not written yet"):
            train_readers(runs, seed=1, step=broken_step)
    finally:
        torch.set_num_threads(threads)
    assert len(sent) == 1 and sent[0][0].exitcode == -signal.SIGTERM, "it should be stopped"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks.reader_cli", *args],
                          capture_output=True, text=True, cwd=REPO)


def test_save_load_roundtrip_and_cli(tmp_path):
    path = tmp_path / "r.pt"
    done = cli("train", "--reader", "fixed-context", "--steps", "3", "--seed", "1",
               "--set", "hidden=6", "--set", "embed=4", "--out", str(path))
    assert done.returncode == 0, done.stderr
    reader = load_reader(path)
    assert reader.config.hidden == 6 and not reader.training
    again = load_reader(path)
    a = LAB8.results_by_length(reader, [2, 3], 8, 5)
    assert a == LAB8.results_by_length(again, [2, 3], 8, 5)
    done = cli("evaluate", str(path), "--lengths", "2-3", "--count", "8", "--seed", "5", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {str(k): v for k, v in a.items()}
    assert "| 3 |" in format_results({"fixed": a}, floor=0.01)
    assert format_results({"fixed": a}, 0.01, "SVM").splitlines()[0].endswith("| SVM |")


def test_checkpoint_from_another_device_loads_on_cpu(tmp_path):
    reader = build_reader(dict(kind="attention", **SMALL))
    path = save_reader(reader, tmp_path / "r.pt")
    assert next(load_reader(path, device="cpu").parameters()).device.type == "cpu"
    torch.save({"weights": 1}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="not a reader checkpoint"):
        load_reader(tmp_path / "bad.pt")


def test_cli_rejects_bad_arguments():
    done = cli("train", "--set", "colour=3", "--out", "x.pt")
    assert done.returncode != 0 and "unknown reader setting" in done.stderr
    assert cli("evaluate", "x.pt", "--lengths", "3-x").returncode != 0


def test_location_prior_favours_one_digit_to_the_right():
    reader = build_reader(dict(kind="attention", **SMALL))
    prev = torch.zeros(2, 40)
    prev[0, 3], prev[1, 20] = 1.0, 1.0
    prior = reader.location_prior(prev)                      # (B, N) log-probabilities
    assert prior.shape == (2, 40) and torch.isfinite(prior).all()
    cfg = reader.config
    assert prior[0].argmax() == 3 + cfg.prior_mean and prior[1].argmax() == 20 + cfg.prior_mean
    assert prior[0, :3].max() < -10, "the prior never moves attention to the left"
