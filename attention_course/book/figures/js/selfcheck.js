// A self-check question: a choice among options or a number, checked in the browser with
// feedback on the answer given. Mirrors attention_course.book.figures.selfcheck.SelfCheck.judge.
import * as common from "./common.js";

const LETTERS = "abcdefghij";
const VERDICT = { correct: "Correct.", wrong: "Not quite.", invalid: "No answer yet." };

// A number as a reader may type it: "0.67", "0,67", "2/3", "-1.5e3", " 12 ".
export function parseNumber(text) {
  const t = String(text).trim().replace(/\s+/g, "").replace(",", ".");
  const fraction = t.match(/^(-?[\d.]+)\/([\d.]+)$/);
  if (fraction) return Number(fraction[1]) / Number(fraction[2]);
  return t === "" || !/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t) ? NaN : Number(t);
}

// The verdict ("correct", "wrong" or "invalid") and the feedback for one response: for a choice
// the index of the option picked (or null), for a number the text typed.
export function judge(spec, response) {
  if (spec.kind === "choice") {
    if (response === null || response === undefined || response === "") {
      return { verdict: "invalid", text: "Choose one of the options, then check it." };
    }
    const option = spec.options[Number(response)];
    return { verdict: option.correct ? "correct" : "wrong", text: option.why };
  }
  const value = parseNumber(response);
  if (!Number.isFinite(value)) {
    return { verdict: "invalid", text: "Type a number, such as 0.25 or 1/4, then check it." };
  }
  const near = (x) => Math.abs(value - x) <= spec.tolerance;
  if (near(spec.answer)) return { verdict: "correct", text: spec.right };
  const mistake = spec.mistakes.find((m) => near(m.value));
  if (mistake) return { verdict: "wrong", text: mistake.why };
  return { verdict: "wrong", text: value < spec.answer ? spec.low : spec.high };
}

// Text with `code` spans, as nodes.
function inline(text) {
  return String(text).split(/`([^`]*)`/).map((part, i) => (i % 2 ? common.h("code", {}, part) : part));
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "course-selfcheck");
  root.setAttribute("role", "group");
  const key = Math.random().toString(36).slice(2, 8);
  const spec = {
    kind: model.get("kind"), options: model.get("options"), answer: model.get("answer"),
    tolerance: model.get("tolerance"), mistakes: model.get("mistakes"), right: model.get("right"),
    low: model.get("low"), high: model.get("high"),
  };
  root.append(common.h("p", { class: "selfcheck-outcome" }, model.get("outcome")));
  const promptId = `course-selfcheck-prompt-${key}`;
  let read;
  if (spec.kind === "choice") {
    const legend = common.h("legend", { id: promptId }, inline(model.get("prompt")));
    const inputs = spec.options.map((option, i) => {
      const id = `course-selfcheck-${key}-${i}`;
      return [common.h("input", { type: "radio", name: `course-selfcheck-${key}`, id, value: String(i),
                                  "data-answer": String(i) }),
              common.h("label", { for: id }, [`(${LETTERS[i]}) `, ...inline(option.text)])];
    });
    root.append(common.h("fieldset", {}, [legend, ...inputs.map((pair) => common.h("div", { class: "option" }, pair))]));
    read = () => { const picked = inputs.find(([input]) => input.checked); return picked ? picked[0].value : null; };
  } else {
    root.append(common.h("p", { id: promptId, class: "selfcheck-prompt" }, inline(model.get("prompt"))));
    const id = `course-selfcheck-${key}-value`;
    const input = common.h("input", { type: "text", inputmode: "decimal", autocomplete: "off", id, size: 10,
                                      "data-answer": "number", "aria-describedby": promptId });
    const unit = model.get("unit");
    root.append(common.h("div", { class: "control" }, [common.h("label", { for: id }, "Your answer"), input,
                                                          ...(unit ? [common.h("span", {}, unit)] : [])]));
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") check(); });
    read = () => input.value;
  }
  const button = common.h("button", { type: "button", class: "selfcheck-check" }, "Check");
  const feedback = common.h("p", { class: "selfcheck-feedback", role: "status", "aria-live": "polite" });
  const answer = common.h("details", { class: "selfcheck-answer" }, [
    common.h("summary", {}, "Show the answer"), common.h("p", {}, inline(model.get("explanation")))]);
  root.append(common.h("div", { class: "controls" }, [button]), feedback, answer);
  el.append(root);

  function check() {
    const { verdict, text } = judge(spec, read());
    feedback.dataset.verdict = verdict;
    feedback.replaceChildren(common.h("strong", {}, VERDICT[verdict]), " ", ...inline(text));
  }
  button.addEventListener("click", check);
}

export default { render };
