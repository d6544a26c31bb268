"""Designs of Lab 8's attention reader that the lab does not use, as overrides of its reader.

``lab8_variants.py`` measures each against the lab's reader. A :class:`VariantConfig` is the lab's
:class:`~attention_course.core.readers.ReaderConfig` plus four switches, whose defaults are the
lab's design; :class:`VariantReader` is the lab's attention reader with each switch's override:

* ``start_at_first_column=False`` -- before the first step the reader has looked nowhere (zero
  weights), so the first step's prior is flat;
* ``location_prior=False`` -- no prior on the move: plain location-aware attention;
* ``decoder_state=True`` -- a GRU decoder state between the previous token and context and the
  query, so the reader could count digits (its step is :func:`step_with_decoder_state`);
* ``skip_embedding=True`` -- each column's state also carries its embedding (D = 2H + E).

Parameters are created in the same order as in the lab's reader, so a variant with every switch at
its default is the lab's reader, weight for weight, from the same seed.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attention_course.core.readers import AttentionReader, ColumnEncoder, Memory, ReaderConfig


@dataclass(frozen=True)
class VariantConfig(ReaderConfig):
    """A Lab 8 reader config with the variants' switches (defaults: the lab's design)."""

    start_at_first_column: bool = True    # the first step's prior: from column 0, or flat
    location_prior: bool = True           # the fixed prior on the move, or none
    decoder_state: bool = False           # a GRU state (width decoder_hidden) under the query
    skip_embedding: bool = False          # column states carry their embedding: D = 2H + E

    def __post_init__(self):
        changed = [name for name, lab in SWITCHES.items() if getattr(self, name) != lab]
        if changed and self.kind != "attention":
            raise ValueError(f"{', '.join(changed)} change the attention reader only; "
                             f"got kind={self.kind!r}")

    def reader_class(self) -> type:
        return VariantReader if self.kind == "attention" else super().reader_class()


SWITCHES = {"start_at_first_column": True, "location_prior": True, "decoder_state": False,
            "skip_embedding": False}


class VariantReader(AttentionReader):
    """Lab 8's attention reader with the overrides its :class:`VariantConfig` switches on. Its
    per-step state is ``(prev_weights (B, N), prev_context (B, D)[, h (B, H_dec)])``."""

    config: VariantConfig

    def column_encoder(self, config: VariantConfig) -> ColumnEncoder:
        return ColumnEncoder(config.embed, config.hidden, config.embed_kernel, config.embed_layers,
                             config.dropout, config.image_channels, config.embed_slope,
                             skip=config.skip_embedding)

    def query_width(self, width: int) -> int:
        if not self.config.decoder_state:
            return width
        self.cell = nn.GRUCell(width, self.config.decoder_hidden)
        return self.config.decoder_hidden

    def start(self, memory: Memory):
        weights, context = super().start(memory)
        if not self.config.start_at_first_column:
            weights = torch.zeros_like(weights)
        if self.config.decoder_state:
            return weights, context, context.new_zeros(len(context), self.config.decoder_hidden)
        return weights, context

    def location_prior(self, prev_weights):
        if not self.config.location_prior:
            return torch.zeros_like(prev_weights)        # (B, N): no effect on the scores
        return super().location_prior(prev_weights)


def step_with_decoder_state(reader: VariantReader, memory: Memory, state, prev_token, lab):
    """Lab 8's decoder step with the GRU decoder state in the query (the variant that can count);
    ``lab`` holds the lab's reference functions (``benchmarks.lab8_reference.lab8()``)."""
    prev_weights, prev_context, h = state
    h = reader.cell(torch.cat([reader.token_embed(prev_token), prev_context], -1), h)  # (B, H_dec)
    query = reader.query_proj(h)                                                       # (B, A)
    scores = (lab.additive_scores(query, reader.keys_at(memory, prev_weights), reader.v)
              + reader.location_prior(prev_weights))                                   # (B, N)
    weights = lab.masked_attention_weights(scores, memory.mask)                        # (B, N)
    context = lab.attention_context(weights, memory.states)                            # (B, D)
    return reader.readout(context, prev_token), (weights, context, h), weights
