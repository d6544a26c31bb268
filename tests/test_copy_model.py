"""The text data and copy model of Sections 8.1-8.2."""
import numpy as np
import pytest
import torch

from attention_course.tasks.copy_model import (SHOWCASE, CopyTraining, alignment, diagonal_counts,
                                        text_splits, train_copy_model, training_strings)
from attention_course.data.text import (EOS, PAD, SOS, VOCAB_SIZE, decode, encode, load_text,
                                        make_copy_batch, normalise, sample_windows)
from attention_course.core.copy_model import CopyConfig, CopyModel


def test_text_is_normalised_and_the_showcase_is_unseen():
    text = load_text()
    assert set(text) <= set(" abcdefghijklmnopqrstuvwxyz") and "  " not in text
    assert len(text) > 3000 and SHOWCASE not in text and len(SHOWCASE) == 40
    train, held_out = text_splits()
    assert train + held_out == text and len(held_out) > 400
    assert normalise("Hello,  World!\n42x") == "hello world x"


def test_unknown_text_and_characters_are_explained():
    with pytest.raises(FileNotFoundError, match="harbour_town"):
        load_text("no-such-text")
    with pytest.raises(ValueError, match="a-z and space"):
        encode("Capital")


def test_copy_batch_shifts_the_target_right():
    b = make_copy_batch(["ab", "cde"])
    assert b.source.shape == (2, 3) and b.target.shape == b.decoder_input.shape == (2, 4)
    assert b.source_mask.tolist() == [[True, True, False], [True, True, True]]
    assert b.decoder_input[0].tolist() == [SOS, *encode("ab"), PAD]
    assert b.target[0].tolist() == [*encode("ab"), EOS, PAD]
    assert decode(b.target[1]) == "cde" and decode([*encode("xy"), EOS, *encode("z")]) == "xy"
    with pytest.raises(ValueError, match="non-empty"):
        make_copy_batch(["ok", ""])


def test_windows_and_training_strings():
    gen = torch.Generator().manual_seed(0)
    text = load_text()
    windows = sample_windows(text, 50, 3, 7, gen)
    assert all(3 <= len(w) <= 7 and w in text for w in windows)
    with pytest.raises(ValueError, match="min_len"):
        sample_windows(text, 1, 8, 3, gen)
    strings = training_strings(text, CopyTraining(steps=100, batch=10), step=0, generator=gen)
    assert len(strings) == 10 and max(map(len, strings)) <= 8      # curriculum starts short


@pytest.mark.parametrize("attention", [True, False])
def test_copy_model_shapes_and_masked_weights(attention):
    torch.manual_seed(0)
    model = CopyModel(CopyConfig(width=8, embed=4, attention=attention))
    batch = make_copy_batch(["harbour", "sea"])
    logits, weights = model(batch)
    assert logits.shape == (2, 8, VOCAB_SIZE)
    if attention:
        assert weights.shape == (2, 8, 7)
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8))
        assert torch.all(weights[1, :, 3:] == 0)                    # padding gets no weight
    else:
        assert weights is None
        with pytest.raises(ValueError, match="no alignment"):
            alignment(model, "abc")


def test_odd_width_is_refused():
    with pytest.raises(ValueError, match="even"):
        CopyConfig(width=7)


def test_diagonal_counts():
    assert diagonal_counts(np.eye(5)) == {"rows": 5, "on_diagonal": 5, "one_off": 0, "further": 0}
    shifted = np.roll(np.eye(5), 1, axis=1)                      # row t peaks at t+1 (last wraps)
    assert diagonal_counts(shifted) == {"rows": 5, "on_diagonal": 0, "one_off": 4, "further": 1}


def test_short_training_learns_something():
    config = CopyConfig(width=8, embed=8)
    short = CopyTraining(steps=5, batch=16, max_len=10)
    longer = CopyTraining(steps=80, batch=16, max_len=10)
    _, first = train_copy_model(config, short)
    _, second = train_copy_model(config, longer)
    assert second["final_loss"] < first["final_loss"] - 0.3
