"""Lab 12's counting baselines compared (issue 52): interpolated Kneser-Ney with one discount, as the
lab fits it, against modified Kneser-Ney (three discounts set from the counts of counts), on the
lab's characters and on its tokens (the lab's 128 BPE merges, and 512).

    python -m benchmarks.lab12_ngrams        # about 2 minutes on 2 cores (characters: 42 s)

For each kind of symbol, one fit counts the training split once; every order (at least to 10, on
while validation improves) is scored with each of the lab's discounts and with modified
Kneser-Ney, and each family's best on validation is scored once on test. Bits per character are
a token model's bits over the split's characters. Seconds: counting and the whole grid, one
process. Writes ``benchmarks/results/lab12_ngrams.md`` and ``lab12_ngrams.json``.
"""
from __future__ import annotations

import json
import platform
import time

from attention_course.data.python_docs import MADE_WITH, split_topics
from attention_course.tasks.ngram_baselines import DISCOUNTS, MODIFIED, best_kneser_ney
from attention_course_instructor.grading.checks import reference_namespace
from benchmarks.report import machine, markdown_table, write

MERGES = (128, 512)            # the lab's, and the larger vocabulary issue 52 tried for the model
FAMILIES = {"one discount": lambda d: d != MODIFIED, "modified": lambda d: d == MODIFIED}


def best_of_each_family(symbols: dict, alphabet: int, per_char: dict) -> tuple[dict, float]:
    """{family: {order, discount, val_bpc, test_bpc}} in bits per character, and the seconds."""
    began = time.perf_counter()
    found = best_kneser_ney(symbols["train"], symbols["val"], discounts=DISCOUNTS + (MODIFIED,),
                            alphabet=alphabet)
    model, best = found["model"], {}
    for family, member in FAMILIES.items():
        row = min((r for r in found["table"] if member(r["discount"])), key=lambda r: r["val_bpc"])
        test = model.text_bpc(symbols["test"], row["order"], row["discount"])
        best[family] = {"order": row["order"], "discount": row["discount"],
                        "val_bpc": row["val_bpc"] * per_char["val"], "test_bpc": test * per_char["test"]}
    return best, time.perf_counter() - began


def measure() -> dict:
    ref, splits = reference_namespace("lab12"), split_topics()
    chars = {name: len(part) for name, part in splits.items()}
    kinds = {}
    text = {name: part.text for name, part in splits.items()}
    kinds["characters"] = best_of_each_family(text, 256, {"val": 1.0, "test": 1.0})
    for merges in MERGES:
        learned = ref.learn_bpe(splits["train"].text, merges)
        ids = {name: ref.bpe_encode(part.text, learned) for name, part in splits.items()}
        per_char = {name: len(ids[name]) / chars[name] for name in ("val", "test")}
        kinds[f"tokens, {merges} merges"] = best_of_each_family(ids, 256 + merges, per_char)
        print(merges, json.dumps(kinds[f"tokens, {merges} merges"]), flush=True)
    return {"machine": f"{machine()}, Python {platform.python_version()}", "text": MADE_WITH,
            "sizes": chars, "discounts": list(DISCOUNTS),
            "kinds": {kind: {"best": best, "seconds": seconds} for kind, (best, seconds) in kinds.items()}}


def report(results: dict) -> str:
    rows = []
    for kind, found in results["kinds"].items():
        for family, best in found["best"].items():
            discount = ("three, from the counts" if best["discount"] == MODIFIED else best["discount"])
            rows.append([kind, family, best["order"], discount, f"{best['val_bpc']:.4f}",
                         f"{best['test_bpc']:.4f}"])
    gains = []
    for kind, found in results["kinds"].items():
        one, modified = found["best"]["one discount"], found["best"]["modified"]
        gains.append([kind, f"{modified['val_bpc'] - one['val_bpc']:+.4f}",
                      f"{modified['test_bpc'] - one['test_bpc']:+.4f}", f"{found['seconds']:.0f}"])
    best = min(((kind, family, b) for kind, f in results["kinds"].items() for family, b in f["best"].items()),
               key=lambda t: t[2]["val_bpc"])
    return "\n".join([
        "# Lab 12: the counting baselines, one discount against modified Kneser-Ney", "",
        f"Written by `python -m benchmarks.lab12_ngrams` on {results['machine']}. Text: Python "
        f"{results['text']}'s documentation as the course ships it, {results['sizes']['train']:,d} / "
        f"{results['sizes']['val']:,d} / {results['sizes']['test']:,d} characters of train / validation / "
        "test. No seeds: counting is deterministic. Each family's best order (and discount, for one "
        f"discount: one of {', '.join(map(str, results['discounts']))}) is chosen on validation and "
        "scored once on test; bits per character.", "",
        markdown_table(["symbols", "Kneser-Ney", "order", "discount", "validation bpc", "test bpc"], rows), "",
        "Modified minus one discount (negative: modified is better), and the seconds one fit and its "
        "grid took:", "",
        markdown_table(["symbols", "validation", "test", "seconds"], gains), "",
        f"The best counting model on validation: {best[1]} Kneser-Ney of {best[0]}, order "
        f"{best[2]['order']}, validation {best[2]['val_bpc']:.4f}, test {best[2]['test_bpc']:.4f} bits "
        "per character.", ""])


def main():
    results = measure()
    write("lab12_ngrams.json", json.dumps(results, indent=1))
    write("lab12_ngrams.md", report(results))


if __name__ == "__main__":
    main()
