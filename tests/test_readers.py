"""Readers: shapes, masks, greedy decoding, training determinism, save/load, the command line."""
import json

import pytest
import torch

from attention_course.data import EOS, PAD, make_strips
from attention_course.models import ReaderConfig, build_reader
from attention_course.reader_cli import main as cli, parse_lengths
from attention_course.training import (
    TrainConfig, evaluate_reader, format_results, load_reader, save_reader, train_reader)

SMALL = dict(hidden=6, attention=5, embed=4)


@pytest.mark.parametrize("kind", ["attention", "fixed"])
def test_teacher_forced_logits_shape(kind):
    torch.manual_seed(0)
    reader = build_reader(dict(kind=kind, **SMALL))
    b = make_strips([2, 4], 3, seed=0)
    logits = reader(b.columns, b.mask, b.targets)
    assert logits.shape == (3, b.targets.shape[1], 11)


def test_attention_never_lands_on_padding():
    torch.manual_seed(1)
    reader = build_reader(dict(kind="attention", **SMALL)).eval()
    b = make_strips([1, 6], 4, seed=2)
    tokens, weights = reader.greedy(b.columns, b.mask, max_len=5)
    assert weights.shape[:2] == tokens.shape and weights.shape[2] == b.mask.shape[1]
    assert torch.all(weights[~b.mask.unsqueeze(1).expand_as(weights)] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))


def test_greedy_respects_step_cap_and_stops_on_eos():
    torch.manual_seed(2)
    reader = build_reader(dict(kind="attention", **SMALL)).eval()
    b = make_strips(3, 2, seed=0)
    with torch.no_grad():
        reader.readout_mlp[-1].bias[EOS] += 50.0           # stop at once
    tokens, _ = reader.greedy(b.columns, b.mask, max_len=7)
    assert tokens.shape == (2, 1) and torch.all(tokens == EOS)
    with torch.no_grad():
        reader.readout_mlp[-1].bias[EOS] -= 100.0          # never stop
    tokens, _ = reader.greedy(b.columns, b.mask, max_len=7)
    assert tokens.shape == (2, 7) and not torch.any((tokens == PAD) | (tokens == EOS))


def test_wrong_input_shape_is_explained():
    reader = build_reader(dict(kind="attention", **SMALL))
    with pytest.raises(ValueError, match=r"\(B, N, 8\)"):
        reader.encode(torch.zeros(2, 10, 7), torch.ones(2, 10, dtype=torch.bool))
    with pytest.raises(ValueError, match="kind"):
        build_reader(dict(kind="transformer"))


def test_training_is_deterministic_and_learns():
    cfg = ReaderConfig(kind="attention", **SMALL)
    train = TrainConfig(steps=25, batch=16, noise=0.1)
    r1, log1 = train_reader(cfg, train, seed=3, progress=False)
    r2, log2 = train_reader(cfg, train, seed=3, progress=False)
    assert log1.losses == log2.losses
    assert sum(log1.losses[-5:]) < sum(log1.losses[:5])


def test_save_load_roundtrip_and_cli(tmp_path, capsys):
    path = tmp_path / "r.pt"
    assert cli(["train", "--reader", "fixed-context", "--steps", "3", "--seed", "1",
                "--set", "hidden=6", "--set", "embed=4", "--out", str(path)]) == 0
    reader = load_reader(path)
    assert reader.config.hidden == 6 and not reader.training
    again = load_reader(path)
    a = evaluate_reader(reader, [2, 3], count=8, seed=5)
    assert a == evaluate_reader(again, [2, 3], count=8, seed=5)
    capsys.readouterr()
    assert cli(["evaluate", str(path), "--lengths", "2-3", "--count", "8", "--seed", "5",
                "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {str(k): v for k, v in a.items()}
    assert "| 3 |" in format_results({"fixed": a}, floor=0.01)


def test_checkpoint_from_another_device_loads_on_cpu(tmp_path):
    reader = build_reader(dict(kind="attention", **SMALL))
    path = save_reader(reader, tmp_path / "r.pt")
    assert next(load_reader(path, device="cpu").parameters()).device.type == "cpu"
    torch.save({"weights": 1}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="not a reader checkpoint"):
        load_reader(tmp_path / "bad.pt")


def test_cli_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        cli(["train", "--set", "colour=3", "--out", "x.pt"])
    assert "unknown reader setting" in capsys.readouterr().err
    assert parse_lengths("1-3,9") == [1, 2, 3, 9]


def test_location_prior_favours_one_digit_to_the_right():
    reader = build_reader(dict(kind="attention", **SMALL))
    prev = torch.zeros(2, 40)
    prev[0, 3], prev[1, 20] = 1.0, 1.0
    prior = reader.location_prior(prev)                      # (B, N) log-probabilities
    assert prior.shape == (2, 40) and torch.isfinite(prior).all()
    cfg = reader.config
    assert prior[0].argmax() == 3 + cfg.prior_mean and prior[1].argmax() == 20 + cfg.prior_mean
    assert prior[0, :3].max() < -10, "the prior never moves attention to the left"
    plain = build_reader(dict(kind="attention", location_prior=False, **SMALL))
    assert torch.equal(plain.location_prior(prev), torch.zeros(2, 40))
