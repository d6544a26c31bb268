"""The committed checkpoints: small, documented, loadable, and reproducible by their recipes."""
import importlib.util
from dataclasses import replace

import pytest

from attention_course.tasks import pretrained
from attention_course.tasks.copy_model import CopyTraining
from attention_course.core.copy_model import CopyModel

NAMES = sorted(pretrained.RECIPES)
# Metrics of the reduced run that must come back within this distance (training on another
# machine or thread count changes float sums slightly; 120 steps amplify that a little).
TOLERANCE = {"final_loss": 0.1, "default": 0.1}
COUNTS = ("showcase_rows", "showcase_on_diagonal", "showcase_one_off", "showcase_further",
          "showcase_exact")


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_is_committed_small_and_documented(name):
    weights, meta = pretrained.paths(name)
    assert weights.exists() and weights.stat().st_size <= pretrained.MAX_BYTES
    record = pretrained.record(name)
    assert record["training"]["seed"] == 0 and record["command"].endswith(f"train {name}")
    python, flag, module, *_ = record["command"].split()            # python -m <module> train <name>
    assert (python, flag) == ("python", "-m") and importlib.util.find_spec(module), record["command"]
    assert record["config"] == pretrained.recipe(name).config.to_dict()
    assert record["training"] == pretrained.recipe(name).training.to_dict()
    assert record["metrics"] and record["reduced_metrics"]


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("copy-") and "fixed" not in n])
def test_loaded_copy_checkpoint_gives_its_recorded_alignment(name):
    model = pretrained.load_or_train(name)
    measured = pretrained.recipe(name).measure(model, reduced=True)
    recorded = pretrained.record(name)["metrics"]
    assert {k: measured[k] for k in COUNTS} == {k: recorded[k] for k in COUNTS}


def test_loaded_captioner_captions_as_recorded():
    model = pretrained.load_or_train("captioner")
    measured = pretrained.recipe("captioner").measure(model, reduced=True)
    assert measured["caption_exact"] >= pretrained.record("captioner")["metrics"]["caption_exact"] - 0.05


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_reduced_retraining_reproduces_the_recorded_metrics(name):
    _, metrics = pretrained.run_recipe(name, reduced=True)
    recorded = pretrained.record(name)["reduced_metrics"]
    assert set(metrics) == set(recorded)
    for key, value in recorded.items():
        if key in ("train_seconds", "continuation"):
            continue
        tol = TOLERANCE.get(key, TOLERANCE["default"])
        if key in COUNTS:
            tol = 3            # a count of rows out of 40
        assert abs(metrics[key] - value) <= tol, (key, metrics[key], value)


def test_missing_checkpoint_is_trained_by_its_recipe(tmp_path, monkeypatch):
    tiny = replace(pretrained.recipe("copy-w8"), name="tiny",
                   training=CopyTraining(steps=3, batch=4, max_len=6))
    monkeypatch.setitem(pretrained.RECIPES, "tiny", tiny)
    monkeypatch.setattr(pretrained, "CHECKPOINT_DIR", tmp_path)
    model = pretrained.load_or_train("tiny")
    assert isinstance(model, CopyModel) and not model.training


def test_unknown_recipe_lists_the_known_ones():
    with pytest.raises(KeyError, match="copy-w16"):
        pretrained.recipe("copy-w99")


def test_loaded_char_decoder_continues_as_recorded():
    model = pretrained.load_or_train("char-decoder")
    measured = pretrained.recipe("char-decoder").measure(model, reduced=False)
    recorded = pretrained.record("char-decoder")["metrics"]
    assert measured["continuation"] == recorded["continuation"]
    assert abs(measured["last_400_chars_loss"] - recorded["last_400_chars_loss"]) < 1e-3
