"""Self-check questions: a choice among options, or a number, checked in the reader's browser.

A question is a :class:`SelfCheck` widget built by the same toolkit as the figures, so it works in
the static book without a kernel: the reader picks an option (or types a number), presses
*Check*, and reads feedback that says why that answer is right or wrong; *Show the answer* gives
the worked answer. The questions' words live in ``self_checks.yml`` beside this module, keyed by
number (``"8.1.1"``); a page makes each one with :func:`self_check`, passing the numbers it
computed, which fill the placeholders of the text (``{ratio:.2f}``) and give a numeric question its
answer. In print (the PDF edition) a question is listed with its options, and its answer with the
reasons is collected at the end of the chapter (:meth:`SelfCheck.static_html`).

:meth:`SelfCheck.judge` is the reference of the browser's check (``js/selfcheck.js``), which the
browser test compares option by option.
"""
from __future__ import annotations

import html
import math
import re
from functools import lru_cache
from pathlib import Path

import traitlets

from attention_course.book.figures.base import CourseFigure

QUESTIONS = Path(__file__).resolve().parent / "self_checks.yml"
LETTERS = "abcdefghij"
KINDS = ("choice", "number")


@lru_cache(maxsize=None)
def load_questions(path: Path = QUESTIONS) -> dict:
    """Every question's text by number, as written in ``self_checks.yml``."""
    import yaml

    return yaml.safe_load(path.read_text())["questions"]


def parse_number(text: str) -> float:
    """A number as a reader may type it ("0.67", "0,67", "2/3"); NaN for anything else."""
    t = re.sub(r"\s+", "", str(text)).replace(",", ".", 1)
    fraction = re.fullmatch(r"(-?[\d.]+)/([\d.]+)", t)
    if fraction:
        try:
            return float(fraction[1]) / float(fraction[2])
        except (ValueError, ZeroDivisionError):
            return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", t, flags=re.I):
        return math.nan
    return float(t)


def _inline(text: str) -> str:
    """Text with `code` spans as HTML."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text, quote=False))


class SelfCheck(CourseFigure):
    """One question. ``kind`` "choice": ``options`` [{text, correct, why}], exactly one correct;
    "number": ``answer`` within ``tolerance``, ``mistakes`` [{value, why}] that say what a
    likely wrong number came from, ``low``/``high`` for any other number below or above it."""

    js_module = "selfcheck"
    number = traitlets.Unicode("").tag(sync=True)
    outcome = traitlets.Unicode("").tag(sync=True)
    kind = traitlets.Unicode("choice").tag(sync=True)
    prompt = traitlets.Unicode("").tag(sync=True)
    options = traitlets.List([]).tag(sync=True)
    answer = traitlets.Float(0.0).tag(sync=True)
    tolerance = traitlets.Float(0.0).tag(sync=True)
    unit = traitlets.Unicode("").tag(sync=True)
    mistakes = traitlets.List([]).tag(sync=True)
    right = traitlets.Unicode("").tag(sync=True)
    low = traitlets.Unicode("").tag(sync=True)
    high = traitlets.Unicode("").tag(sync=True)
    explanation = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", f"Self-check {kwargs.get('number', '')}".strip())
        super().__init__(**kwargs)
        self.validate()

    def validate(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.title}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.prompt or not self.explanation:
            raise ValueError(f"{self.title}: a question needs a prompt and an explanation")
        if self.kind == "choice":
            if len(self.options) < 2 or sum(bool(o.get("correct")) for o in self.options) != 1:
                raise ValueError(f"{self.title}: a choice needs two or more options, one correct")
            if not all(o.get("text") and o.get("why") for o in self.options):
                raise ValueError(f"{self.title}: every option needs its text and why")
        else:
            if not (math.isfinite(self.answer) and self.tolerance > 0):
                raise ValueError(f"{self.title}: a number needs a finite answer and a tolerance")
            if not (self.right and self.low and self.high):
                raise ValueError(f"{self.title}: a number needs feedback when right, low and high")
            for mistake in self.mistakes:
                if abs(mistake["value"] - self.answer) <= self.tolerance:
                    raise ValueError(f"{self.title}: the mistake {mistake['value']} is accepted "
                                     "as the answer")

    def judge(self, response) -> tuple[str, str]:
        """The verdict ("correct", "wrong", "invalid") and the feedback on one response: the
        index of the option picked (None if none), or the text typed."""
        if self.kind == "choice":
            if response is None or response == "":
                return "invalid", "Choose one of the options, then check it."
            option = self.options[int(response)]
            return ("correct" if option["correct"] else "wrong"), option["why"]
        value = parse_number(response)
        if not math.isfinite(value):
            return "invalid", "Type a number, such as 0.25 or 1/4, then check it."
        if abs(value - self.answer) <= self.tolerance:
            return "correct", self.right
        for mistake in self.mistakes:
            if abs(value - mistake["value"]) <= self.tolerance:
                return "wrong", mistake["why"]
        return "wrong", self.low if value < self.answer else self.high

    def answer_text(self) -> str:
        """The right answer in words: "(b) ..." or the number and its unit."""
        if self.kind == "choice":
            i = next(i for i, o in enumerate(self.options) if o["correct"])
            return f"({LETTERS[i]}) {self.options[i]['text']}"
        shown = f"{self.answer:.0f}" if self.answer == round(self.answer) else f"{self.answer:.4g}"
        return shown + (f" {self.unit}" if self.unit else "")

    def static_html(self) -> str:
        """The question as it is printed, with its answer beside it in a hidden block that the
        PDF edition moves to the end of the chapter."""
        if self.kind == "choice":
            body = "<ol type='a'>" + "".join(f"<li>{_inline(o['text'])}</li>"
                                             for o in self.options) + "</ol>"
            reasons = "<ul>" + "".join(
                f"<li>({LETTERS[i]}) {'right' if o['correct'] else 'wrong'}: {_inline(o['why'])}</li>"
                for i, o in enumerate(self.options)) + "</ul>"
        else:
            unit = f" ({html.escape(self.unit)})" if self.unit else ""
            body = f"<p class='selfcheck-blank'>Answer{unit}: ____________</p>"
            reasons = ""
        number = html.escape(self.number)
        return (f"<div class='course-selfcheck-static' data-number='{number}'>"
                f"<p class='selfcheck-title'><strong>{html.escape(self.title)}</strong> "
                f"<span class='selfcheck-outcome'>({html.escape(self.outcome)})</span></p>"
                f"<p>{_inline(self.prompt)}</p>{body}"
                f"<div class='selfcheck-answer' data-number='{number}' hidden>"
                f"<p><strong>{number}</strong> {_inline(self.answer_text().rstrip('.'))}. "
                f"{_inline(re.sub(r'^[(][a-j][)][.] ', '', self.explanation))}</p>{reasons}</div></div>")


def _fill(value, values: dict):
    if isinstance(value, str):
        return value.format(**values)
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


def _number(value, values: dict) -> float:
    """A number of a question: a literal, or the name of a value the page computed."""
    return float(values[value]) if isinstance(value, str) else float(value)


def outcome_text(outcome: str, start: Path | None = None) -> str:
    """What a question practises, in words: the outcome's text from the book's ``outcomes.yml``
    where the page runs inside the book (its folder or one above), else its id."""
    import yaml

    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents[:2]):
        data = folder / "outcomes.yml"
        if data.exists():
            found = yaml.safe_load(data.read_text())["outcomes"].get(outcome)
            if found:
                return f"Practises: {found['text']}"
    return f"Practises: {outcome}"


def self_check(number: str, **values) -> SelfCheck:
    """The question ``number`` of ``self_checks.yml``, its text filled with ``values`` (numbers
    the page computed) and, for a numeric question, its answer and likely mistakes read from them."""
    spec = dict(load_questions()[number])
    kind = spec.get("kind", "choice")
    args = {"number": number, "kind": kind, "outcome": outcome_text(spec["outcome"]),
            "prompt": _fill(spec["prompt"], values), "explanation": _fill(spec["explanation"], values)}
    if kind == "choice":
        args["options"] = [{"text": _fill(o["text"], values), "correct": bool(o.get("correct")),
                            "why": _fill(o["why"], values)} for o in spec["options"]]
    else:
        args.update(answer=_number(spec["answer"], values), tolerance=float(spec["tolerance"]),
                    unit=spec.get("unit", ""), right=_fill(spec["right"], values),
                    low=_fill(spec["low"], values), high=_fill(spec["high"], values),
                    mistakes=[{"value": _number(m["value"], values), "why": _fill(m["why"], values)}
                              for m in spec.get("mistakes", [])])
    return SelfCheck(**args)
