"""What hardened grading runs for Lab 8, and how it checks each graded cell.

For every autograded cell of ``source/lab8`` there is a probe (kernel side: call the student's
functions, emit the results) and a check (grader side, in a clean process: rebuild the same
inputs, compute the course's reference, compare). Inputs derive from ``seed``, which the instructor
may set per grading run (``--seed``), so they cannot be known in advance from this public file.
Cells listed in :data:`RUN_CELLS` are the instructor's own code cells the probes need; training,
evaluation and plotting cells are not run when grading (no check depends on them).
"""
from __future__ import annotations

import random

import torch

from attention_course.grading.probes import close, python, tensor

RUN_CELLS = ("setup", "reader_step")          # locked code cells run before the student's cells


def _seeded(seed: int, offset: int) -> torch.Generator:
    return torch.Generator().manual_seed(1000 * seed + offset)


# ---- task 1: additive scores -------------------------------------------------------------------

SCORES_PROBE = """
_g = torch.Generator().manual_seed(1000 * {seed} + 81)
_q, _k, _v = torch.randn(3, 5, generator=_g), torch.randn(3, 7, 5, generator=_g), torch.randn(5, generator=_g)
_course_emit({{"random": _course_call(additive_scores, _q, _k, _v)}})
"""


def check_scores(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.attention import additive_scores

    g = _seeded(seed, 81)
    q, k, v = torch.randn(3, 5, generator=g), torch.randn(3, 7, 5, generator=g), torch.randn(5, generator=g)
    data, why = tensor(values["random"], shape=(3, 7))
    if data is None:
        return False, why
    return close(data, additive_scores(q, k, v).flatten().tolist()), "scores differ from the reference"


# ---- task 1: masked weights --------------------------------------------------------------------

WEIGHTS_PROBE = """
_g = torch.Generator().manual_seed(1000 * {seed} + 82)
_s = torch.randn(3, 7, generator=_g) * 5
_m = torch.rand(3, 7, generator=_g) > 0.4
_m[:, 1] = True
_course_emit({{"random": _course_call(masked_attention_weights, _s, _m),
              "huge": _course_call(masked_attention_weights, torch.tensor([[1e4, -1e4, 3e4]]),
                                   torch.tensor([[True, True, False]])),
              "empty_row": _course_call(masked_attention_weights, torch.zeros(2, 3),
                                        torch.tensor([[True, False, False], [False, False, False]]))}})
"""


def check_weights(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.attention import masked_attention_weights

    g = _seeded(seed, 82)
    s = torch.randn(3, 7, generator=g) * 5
    m = torch.rand(3, 7, generator=g) > 0.4
    m[:, 1] = True
    data, why = tensor(values["random"], shape=(3, 7))
    if data is None:
        return False, why
    if not close(data, masked_attention_weights(s, m).flatten().tolist()):
        return False, "weights differ from the reference"
    if any(w != 0 for w, keep in zip(data, m.flatten().tolist()) if not keep):
        return False, "padded columns must get exactly zero weight"
    huge, why = tensor(values["huge"], shape=(1, 3))
    if huge is None or not close(huge, [1.0, 0.0, 0.0]):
        return False, "huge scores are not handled (expected [1, 0, 0]) " + why
    if values["empty_row"] != {"kind": "error", "type": "ValueError"}:
        return False, "a row with no real column must raise ValueError"
    return True, ""


# ---- task 2: context ---------------------------------------------------------------------------

CONTEXT_PROBE = """
_g = torch.Generator().manual_seed(1000 * {seed} + 83)
_w = torch.softmax(torch.randn(3, 7, generator=_g), -1)
_h = torch.randn(3, 7, 4, generator=_g)
_course_emit({{"random": _course_call(attention_context, _w, _h)}})
"""


def check_context(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.attention import attention_context

    g = _seeded(seed, 83)
    w = torch.softmax(torch.randn(3, 7, generator=g), -1)
    h = torch.randn(3, 7, 4, generator=g)
    data, why = tensor(values["random"], shape=(3, 4))
    if data is None:
        return False, why
    return close(data, attention_context(w, h).flatten().tolist()), "context differs from the reference"


# ---- task 3: one decoder step ------------------------------------------------------------------

SMALL_READER = 'dict(kind="attention", hidden=6, attention=5, embed=4)'

STEP_PROBE = """
torch.manual_seed(1000 * {seed} + 3)
_r = build_reader(%s).eval()
_b = make_strips([2, 3], count=3, seed=1000 * {seed} + 5, split="val")
_out = {{}}
with torch.no_grad():
    _mem = _r.encode(_b.columns, _b.mask)
    _prev = torch.tensor([SOS, 4, 7])
    try:
        _state = _r.start(_mem)
        for _t in range(3):
            _logits, _state, _w = decoder_step(_r, _mem, _state, _prev)
            _out[f"logits{{_t}}"], _out[f"weights{{_t}}"] = _course_call(lambda: _logits), _course_call(lambda: _w)
            _out[f"state{{_t}}"] = _course_call(lambda: list(_state))
    except BaseException as _e:
        _out["error"] = type(_e).__name__
_course_emit(_out)
""" % SMALL_READER


def _small_reader(seed: int, offset: int, kind: str = "attention"):
    from attention_course.models import build_reader

    torch.manual_seed(1000 * seed + offset)
    config = dict(kind=kind, hidden=6, embed=4) | ({"attention": 5} if kind == "attention" else {})
    return build_reader(config).eval()


def check_step(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.data import SOS, make_strips

    if "error" in values:
        return False, f"decoder_step raised {values['error']}"
    reader = _small_reader(seed, 3)
    batch = make_strips([2, 3], count=3, seed=1000 * seed + 5, split="val")
    with torch.no_grad():
        memory = reader.encode(batch.columns, batch.mask)
        prev = torch.tensor([SOS, 4, 7])
        state = reader.start(memory)
        for t in range(3):
            logits, state, weights = reader.step(memory, state, prev)
            got, why = tensor(values.get(f"logits{t}", {}), shape=tuple(logits.shape))
            if got is None or not close(got, logits.flatten().tolist()):
                return False, f"step {t + 1}: logits differ from the reference {why}".strip()
            got, why = tensor(values.get(f"weights{t}", {}), shape=tuple(weights.shape))
            if got is None or not close(got, weights.flatten().tolist()):
                return False, f"step {t + 1}: weights differ from the reference {why}".strip()
            parts = python(values.get(f"state{t}", {"kind": "none", "value": None}))
            if not isinstance(parts, list) or len(parts) != len(state):
                return False, f"step {t + 1}: the state should be a pair (weights, context)"
            for mine, ref in zip(parts, state):
                got, why = tensor(mine, shape=tuple(ref.shape))
                if got is None or not close(got, ref.flatten().tolist()):
                    return False, f"step {t + 1}: the new state differs from the reference {why}".strip()
    return True, ""


# ---- task 3: greedy decoding -------------------------------------------------------------------

GREEDY_CASES = ((11, "attention", [1, 4], 5, 6, 0.0), (12, "attention", [1, 4], 5, 6, 0.4),
                (13, "attention", [1, 4], 5, 6, 0.8), (14, "fixed", [3], 4, 5, 0.0))

GREEDY_PROBE = """
_out = {{}}
for _i, (_off, _kind, _lengths, _count, _max_len, _bump) in enumerate(%r):
    torch.manual_seed(1000 * {seed} + _off)
    _cfg = dict(kind=_kind, hidden=6, embed=4) | ({{"attention": 5}} if _kind == "attention" else {{}})
    _r = build_reader(_cfg).eval()
    if _bump:
        with torch.no_grad():
            _r.readout_mlp[-1].bias[EOS] += _bump
    _b = make_strips(_lengths, count=_count, seed=1000 * {seed} + _off, split="test")
    _out[str(_i)] = _course_call(greedy_decode, _r, _b.columns, _b.mask, _max_len)
_course_emit(_out)
""" % (GREEDY_CASES,)


def check_greedy(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.data import EOS, decode_tokens, make_strips

    for i, (off, kind, lengths, count, max_len, bump) in enumerate(GREEDY_CASES):
        reader = _small_reader(seed, off, kind)
        if bump:
            with torch.no_grad():
                reader.readout_mlp[-1].bias[EOS] += bump
        batch = make_strips(lengths, count=count, seed=1000 * seed + off, split="test")
        ref_tokens, ref_weights = reader.greedy(batch.columns, batch.mask, max_len)
        ref_texts = [decode_tokens(r) for r in ref_tokens]
        answer = python(values.get(str(i), {"kind": "none", "value": None}))
        if isinstance(answer, dict) and answer.get("kind") == "error":
            return False, f"greedy_decode raised {answer['type']}"
        if not isinstance(answer, tuple) or len(answer) != 2:
            return False, "greedy_decode should return (texts, weights)"
        texts, weights = answer
        if texts != ref_texts:
            return False, f"case {i + 1}: readings differ from the reference"
        got, why = tensor(weights, shape=tuple(ref_weights.shape))
        if got is None:
            return False, f"case {i + 1}: {why}"
        width = ref_weights.shape[1] * ref_weights.shape[2]
        for b, text in enumerate(texts):
            rows = min(len(text) + 1, ref_weights.shape[1]) * ref_weights.shape[2]
            if not close(got[b * width: b * width + rows], ref_weights[b].flatten()[:rows].tolist()):
                return False, f"case {i + 1}: attention weights differ from the reference"
    return True, ""


# ---- task 4: edit distance and rates -----------------------------------------------------------

def _edit_cases(seed: int) -> list[tuple[str, str]]:
    rng = random.Random(1000 * seed + 84)
    cases = [("", ""), ("5", ""), ("", "5"), ("12", "21"), ("1111111111", "1"),
             ("0123456789", "9876543210")]
    return cases + [("".join(rng.choice("0123") for _ in range(rng.randint(0, 12))),
                     "".join(rng.choice("0123") for _ in range(rng.randint(0, 12)))) for _ in range(200)]


EDIT_PROBE = """
_course_emit({"distances": [_course_call(edit_distance, _a, _b) for _a, _b in %s]})
"""


def edit_probe(seed: int) -> str:
    return EDIT_PROBE % repr(_edit_cases(seed))


def check_edit(values: dict, seed: int) -> tuple[bool, str]:
    from rapidfuzz.distance import Levenshtein

    got = values.get("distances", [])
    cases = _edit_cases(seed)
    if len(got) != len(cases):
        return False, "edit_distance was not run on every case"
    for (a, b), value in zip(cases, got):
        if value.get("kind") == "error":
            return False, f"edit_distance raised {value['type']}"
        if value.get("kind") != "int":
            return False, f"edit_distance should return an int, got {value.get('kind')}"
        if value["value"] != Levenshtein.distance(a, b):
            return False, "edit_distance is wrong on some pairs of strings"
    return True, ""


def _rate_cases(seed: int):
    rng = random.Random(1000 * seed + 85)
    targets = ["".join(rng.choice("0123456789") for _ in range(rng.randint(0, 9))) for _ in range(50)]
    preds = [s[:-1] if i % 3 == 0 else (s + "7" if i % 3 == 1 else s) for i, s in enumerate(targets)]
    return [([""], [""]), (["12"], [""]), (["1234567"], ["12"]), (preds, targets)]


RATES_PROBE = """
_course_emit({"cer": [_course_call(character_error_rate, _p, _t) for _p, _t in %s],
              "exact": [_course_call(exact_accuracy, _p, _t) for _p, _t in %s]})
"""


def rates_probe(seed: int) -> str:
    cases = repr(_rate_cases(seed))
    return RATES_PROBE % (cases, cases)


def check_rates(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course import metrics

    for name, reference in (("cer", metrics.character_error_rate), ("exact", metrics.exact_accuracy)):
        got = values.get(name, [])
        cases = _rate_cases(seed)
        if len(got) != len(cases):
            return False, f"{name} was not run on every case"
        for (p, t), value in zip(cases, got):
            if value.get("kind") == "error":
                return False, f"{name} raised {value['type']}"
            if value.get("kind") != "float":
                return False, f"{name} should return a float, got {value.get('kind')}"
            if abs(value["value"] - reference(p, t)) > 1e-12:
                return False, f"{name} is wrong for {len(t)} reading(s)"
    return True, ""


# ---- task 5: results by length -----------------------------------------------------------------

RESULTS_PROBE = """
torch.manual_seed(1000 * {seed} + 15)
_r = build_reader(%s).eval()
with torch.no_grad():
    _r.readout_mlp[-1].bias[EOS] += 1.0
_course_emit({{"table": _course_call(results_by_length, _r, [1, 3, 9], 6, 1000 * {seed} + 7)}})
""" % SMALL_READER


def check_results(values: dict, seed: int) -> tuple[bool, str]:
    from attention_course.data import EOS
    from attention_course.training import evaluate_reader

    reader = _small_reader(seed, 15)
    with torch.no_grad():
        reader.readout_mlp[-1].bias[EOS] += 1.0
    reference = evaluate_reader(reader, [1, 3, 9], count=6, seed=1000 * seed + 7)
    table = python(values.get("table", {"kind": "none", "value": None}))
    if isinstance(table, dict) and table.get("kind") == "error":
        return False, f"results_by_length raised {table['type']}"
    if not isinstance(table, dict) or sorted(table) != [1, 3, 9]:
        return False, "results_by_length should return a dict keyed by the lengths"
    for length in (1, 3, 9):
        row = table[length]
        if not isinstance(row, dict):
            return False, f"length {length}: expected a dict of results"
        for key in ("exact", "cer"):
            if not isinstance(row.get(key), float) or abs(row[key] - reference[length][key]) > 1e-9:
                return False, f"length {length}: {key} differs from the reference"
    return True, ""


# ---- task 6: attention map ---------------------------------------------------------------------

LETTERS = {"five": "five", "empty": "no", "two": "two"}

MAP_PROBE = """
_w = torch.rand(5, 40, generator=torch.Generator().manual_seed(1000 * {seed} + 86))
_course_emit({{"five": _course_call(attention_map, _w, "12345", 33), "empty": _course_call(attention_map, _w, "", 17),
              "two": _course_call(attention_map, _w, "12", 9)}})
"""


def check_map(values: dict, seed: int) -> tuple[bool, str]:
    w = torch.rand(5, 40, generator=_seeded(seed, 86))
    for key, expected in (("five", w[:5, :33]), ("empty", w[:1, :17]), ("two", w[:3, :9])):
        got, why = tensor(values.get(key, {}), shape=tuple(expected.shape))
        if got is None or not close(got, expected.flatten().tolist()):
            return False, f"attention_map, reading of {LETTERS[key]} characters: {why or 'values differ'}"
    return True, ""


# grade_id -> (probe source for a seed, check)
PROBES = {
    "task1_scores_test": (lambda seed: SCORES_PROBE.format(seed=seed), check_scores),
    "task1_weights_test": (lambda seed: WEIGHTS_PROBE.format(seed=seed), check_weights),
    "task2_context_test": (lambda seed: CONTEXT_PROBE.format(seed=seed), check_context),
    "task3_step_test": (lambda seed: STEP_PROBE.format(seed=seed), check_step),
    "task3_greedy_test": (lambda seed: GREEDY_PROBE.format(seed=seed), check_greedy),
    "task4_edit_test": (edit_probe, check_edit),
    "task4_rates_test": (rates_probe, check_rates),
    "task5_results_test": (lambda seed: RESULTS_PROBE.format(seed=seed), check_results),
    "task6_map_test": (lambda seed: MAP_PROBE.format(seed=seed), check_map),
}
