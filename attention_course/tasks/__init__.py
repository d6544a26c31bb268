"""Training tasks: data in, trained model and measurements out. A model's task module has the
name of its model's module in :mod:`attention_course.core` (``core.copy_model`` is trained by
``tasks.copy_model``).

- :mod:`~attention_course.tasks.fitting` -- the one training loop and the base of every training
  config (:class:`~attention_course.tasks.fitting.TrainingConfig`);
- :mod:`~attention_course.tasks.readers` -- training, saving and loading the Lab 8 digit readers
  (with the student's step), their evaluation strips and results table;
- :mod:`~attention_course.tasks.digit_floor` -- Lab 8's isolated-digit floor, which the readers are
  compared with;
- :mod:`~attention_course.tasks.copy_model` -- the copy model of Sections 8.1-8.2: training, copies,
  alignment matrices;
- :mod:`~attention_course.tasks.captioner` -- the captioner of Section 8.3: training, attention
  maps, the occlusion intervention;
- :mod:`~attention_course.tasks.char_decoder` -- the character decoder of Section 12.4: training
  and generation with a key/value cache;
- :mod:`~attention_course.tasks.ngram_baselines` -- Lab 12's n-gram baselines (interpolated
  Kneser-Ney over characters or token ids, as ``nltk.lm`` scores it, every order and discount
  from one count, and modified Kneser-Ney) and the hashes of runs of text that the data split uses;
- :mod:`~attention_course.tasks.lm_verdict` -- Lab 12's verdict: a model's margin over the n-gram
  on test, its 95% interval over seeds and resampled test topics, and what it says; the mixture of
  the two that the lab's optional task shows;
- :mod:`~attention_course.tasks.pretrained` -- the committed checkpoints of the book's models and
  the recipes that rebuild them (``python -m attention_course.tasks.pretrained``).
"""
