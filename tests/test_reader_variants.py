"""The designs of Lab 8's attention reader that only the benchmark measures
(``benchmarks/reader_variants.py``): overrides of the lab's reader, not fields of its config."""
from dataclasses import fields

import pytest
import torch

from attention_course.core.readers import AttentionReader, ReaderConfig, build_reader
from attention_course.data import make_strips
from attention_course.tasks.readers import LAB_READERS
from benchmarks.lab8_reference import lab8
from benchmarks.reader_variants import SWITCHES, VariantConfig, VariantReader, step_with_decoder_state

SMALL = dict(hidden=6, attention=5, embed=4)


def variant(**switches) -> VariantReader:
    return build_reader(VariantConfig(kind="attention", **SMALL, **switches))


def test_the_lab_config_holds_no_variant_switch():
    lab_fields = {f.name for f in fields(ReaderConfig)}
    assert not lab_fields & set(SWITCHES), "a benchmark-only switch is back in the lab's config"
    with pytest.raises(TypeError, match="decoder_state"):
        ReaderConfig(decoder_state=True)


def test_a_variant_at_the_labs_defaults_is_the_labs_reader():
    """Same seed, same weights in the same order, same start and prior: the overrides change
    nothing until a switch is turned."""
    torch.manual_seed(0)
    lab = build_reader(LAB_READERS["attention"])
    torch.manual_seed(0)
    same = build_reader(VariantConfig(**LAB_READERS["attention"].to_dict()))
    assert type(lab) is AttentionReader and type(same) is VariantReader
    a, b = lab.state_dict(), same.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    strips = make_strips(3, 2, seed=1)
    m1, m2 = lab.encode(strips.columns, strips.mask), same.encode(strips.columns, strips.mask)
    for x, y in zip(lab.start(m1), same.start(m2), strict=True):
        assert torch.equal(x, y)


def test_a_flat_start_has_looked_nowhere():
    reader = variant(start_at_first_column=False)
    b = make_strips(2, 3, seed=0)
    weights, context = reader.start(reader.encode(b.columns, b.mask))
    assert torch.equal(weights, torch.zeros_like(weights))
    prior = reader.location_prior(weights)                   # (B, N), flat
    assert torch.equal(prior, torch.full_like(prior, prior[0, 0].item()))


def test_without_a_prior_the_scores_are_left_alone():
    prev = torch.zeros(2, 40)
    prev[0, 3], prev[1, 20] = 1.0, 1.0
    assert torch.equal(variant(location_prior=False).location_prior(prev), torch.zeros(2, 40))
    assert variant().location_prior(prev)[0].argmax() == 3 + ReaderConfig.prior_mean


def test_states_can_carry_the_column_embedding():
    """``skip_embedding`` appends each column's embedding to its state (D = 2H + E); the decoder's
    first context is as wide, and the summary stays 2H."""
    reader = variant(skip_embedding=True)
    b = make_strips([1, 3], 2, seed=2)
    memory = reader.encode(b.columns, b.mask)
    hidden, embed = reader.config.hidden, reader.config.embed
    assert memory.states.shape == (2, b.columns.shape[1], 2 * hidden + embed)
    assert memory.summary.shape == (2, 2 * hidden)
    torch.testing.assert_close(memory.states[..., 2 * hidden:],
                               reader.encoder.embed(b.columns, b.mask))
    _, context = reader.start(memory)
    assert context.shape == (2, 2 * hidden + embed)


def test_a_decoder_state_carries_from_step_to_step():
    reader = variant(decoder_state=True)
    b = make_strips(2, 3, seed=4)
    memory = reader.encode(b.columns, b.mask)
    state = reader.start(memory)
    assert state[2].shape == (3, reader.config.decoder_hidden)
    token = torch.zeros(3, dtype=torch.long)
    logits, state, weights = step_with_decoder_state(reader, memory, state, token, lab=lab8())
    assert logits.shape == (3, 11) and weights.shape == memory.mask.shape
    assert float(state[2].abs().sum()) > 0, "the GRU state did not move"


def test_switches_belong_to_the_attention_reader():
    with pytest.raises(ValueError, match="decoder_state.*kind='fixed'"):
        VariantConfig(kind="fixed", decoder_state=True)
    assert type(build_reader(VariantConfig(kind="fixed", **SMALL))).__name__ == "FixedContextReader"
