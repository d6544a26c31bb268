"""Generated scenes, the captioner of Section 8.3, its maps and the occlusion experiment."""
import numpy as np
import pytest
import torch

from attention_course.tasks.captioner import (half_mass_cells, named_thing, occlude, occlude_shape,
                                           occlusion_effects, summarise_effects, word_maps)
from attention_course.data.scenes import (BACKGROUND, EOS, PAD, SIZE, SOS, WORDS, encode_caption,
                                          make_caption_batch, random_scenes)
from attention_course.core.captioner import CELL, GRID, Captioner, CaptionerConfig


def test_scenes_are_reproducible_and_captions_follow_the_layout():
    scenes = random_scenes(200, seed=3)
    assert [s.caption() for s in scenes[:5]] == [s.caption() for s in random_scenes(5, seed=3)]
    for s in scenes:
        words = s.caption()
        assert words[0] == "a" and words[-3] == "a" and len(words) in (7, 8)
        assert (s.first.colour, s.first.shape) != (s.second.colour, s.second.shape)
        if s.relation == "left":
            assert words[3:5] == ["left", "of"] and s.first.x < s.second.x
        else:
            assert words[3] == "above" and s.first.y < s.second.y
        assert not (s.first.mask() & s.second.mask()).any()          # the shapes never touch
        assert s.first.mask().sum() > 30 and s.second.mask().sum() > 30


def test_caption_batch_and_vocabulary():
    scenes = random_scenes(3, seed=0)
    b = make_caption_batch(scenes)
    assert b.images.shape == (3, 3, SIZE, SIZE) and b.images.dtype == torch.float32
    t = b.target.shape[1]
    assert b.decoder_input.shape == (3, t) and (b.decoder_input[:, 0] == SOS).all()
    for row, scene in zip(b.target, scenes):
        n = len(scene.caption())
        assert row[n] == EOS and (row[n + 1:] == PAD).all()
        assert [WORDS[i] for i in row[:n]] == scene.caption()
    with pytest.raises(ValueError, match="vocabulary"):
        encode_caption(["a", "purple", "circle"])


def test_captioner_shapes_and_weights():
    torch.manual_seed(0)
    model = Captioner(CaptionerConfig(features=8, hidden=8, attention=8, embed=4))
    batch = make_caption_batch(random_scenes(2, seed=1))
    logits, weights = model(batch)
    t = batch.target.shape[1]
    assert logits.shape == (2, t, len(WORDS)) and weights.shape == (2, t, GRID * GRID)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, t))
    ids, generated = model.generate(batch.images, max_words=4)
    assert ids.shape[0] == 2 and ids.shape[1] <= 4 and generated.shape[2] == GRID * GRID


def test_half_mass_cells():
    assert half_mass_cells(np.full(36, 1 / 36)) == 18
    assert half_mass_cells(np.eye(36)[5]) == 1
    assert half_mass_cells([0.3, 0.1, 0.3, 0.3]) == 2
    assert half_mass_cells([0.49, 0.02, 0.49]) == 2


def test_occlusions_touch_only_what_they_name():
    scene = random_scenes(1, seed=5)[0]
    image = scene.image()
    out = occlude(image, [0, GRID + 1])
    changed = (out != image).any(0)
    assert not changed[CELL:2 * CELL, :CELL].any()                   # cell (1, 0) untouched
    np.testing.assert_allclose(out[:, :CELL, :CELL], np.broadcast_to(np.array(BACKGROUND, dtype=np.float32)[:, None, None], (3, CELL, CELL)))
    gone = occlude_shape(image, scene.first)
    assert np.allclose(gone[:, scene.first.mask()], np.array(BACKGROUND)[:, None], atol=1e-6)
    assert (gone[:, scene.second.mask()] == image[:, scene.second.mask()]).all()
    words = scene.caption()
    assert named_thing(scene, 1) is scene.first and named_thing(scene, len(words) - 1) is scene.second
    assert named_thing(scene, 0) is None


def test_maps_and_effects_of_an_untrained_model_are_well_formed():
    torch.manual_seed(0)
    model = Captioner(CaptionerConfig(features=8, hidden=8, attention=8, embed=4)).eval()
    scene = random_scenes(1, seed=2)[0]
    for m in word_maps(model, scene):
        assert m["map"].shape == (GRID, GRID) and abs(m["map"].sum() - 1) < 1e-5
        assert 1 <= m["half_cells"] <= 18 and m["peak"] == pytest.approx(m["map"].max())
    rows = occlusion_effects(model, random_scenes(2, seed=4))
    assert len(rows) == sum(len(s.caption()) for s in random_scenes(2, seed=4))
    assert all(np.isnan(r["shape_change"]) == (r["kind"] == "function") for r in rows)
    summary = summarise_effects(rows)
    assert set(summary) == {"object", "function"} and "shape_fell" not in summary["function"]
