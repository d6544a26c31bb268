"""Ops and models, and their configurations: what the labs and the chapters build on (what the
chapters measure with them is in :mod:`attention_course.notes`).

- :mod:`~attention_course.core.shapes` -- shape checks that name the expected shape;
- :mod:`~attention_course.core.seq2seq` -- the encoder-decoder protocol (memory, start, step) and
  its one greedy loop with one end-of-string rule;
- :mod:`~attention_course.core.readers` -- the column encoder and the two digit readers of Lab 8
  (the attention reader's step is the student's);
- :mod:`~attention_course.core.stacked_gru` -- GRUs run side by side with a hand-written
  backward pass (the readers' encoder: the same values as ``nn.GRU``, in less time);
- :mod:`~attention_course.core.copy_model` and :mod:`~attention_course.core.captioner` -- the
  recurrent models of Sections 8.1-8.3;
- :mod:`~attention_course.core.transformer` -- self-attention, masks, position codes, the block;
- :mod:`~attention_course.core.char_decoder` -- the small decoder-only transformer of Section 12.4.
"""
