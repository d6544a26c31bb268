"""The chapters' measurements and the lecture notes' helpers: what a page computes to show an idea,
apart from the models it shows it on (those are in :mod:`attention_course.core`). Each module
names the pages that use it.

Chapter 8:

- :mod:`~attention_course.notes.routes` -- steps to cross a distance, by kind of layer (8.5, 12.1);
- :mod:`~attention_course.notes.positions` -- binary codes, similarity of codes by gap (8.6);
- :mod:`~attention_course.notes.gradient_flow` -- gradient norms through deep pre- and post-norm
  stacks (8.7);
- :mod:`~attention_course.notes.block_cost` -- a block's operations, FLOPs, training state, saved
  activations and peak memory (8.7, 8.8, the exercises).

Chapter 12:

- :mod:`~attention_course.notes.tokens` -- byte-pair encoding written out, the library's BPE,
  embeddings as a lookup (12.3);
- :mod:`~attention_course.notes.search` -- greedy decoding, beam search and top-k sampling over
  any next-token distribution (12.4);
- :mod:`~attention_course.notes.model_size` -- parameter counts of transformer stacks (12.4);
- :mod:`~attention_course.notes.long_attention` -- sparse patterns, low-rank and random-feature
  attention (12.5);
- :mod:`~attention_course.notes.vision` -- patches, windows and patch merging (12.6);
- :mod:`~attention_course.notes.cost` -- FLOP counts and best times of a call.
"""
