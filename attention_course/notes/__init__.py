"""Helpers of the Chapter 12 lecture notes.

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
