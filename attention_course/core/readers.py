"""Digit-string readers: a bidirectional GRU keeps a state per column; two decoders read it.

* :class:`FixedContextReader` -- the baseline: the decoder sees one summary of the strip (the
  final states of both GRU directions) and must write every digit from it. Its step is given.
* :class:`AttentionReader` -- at every output step the decoder scores every column state, turns
  the scores into weights with a masked softmax, and reads the weighted mix of states. It holds
  the *learned pieces* only (query, keys, location terms, readout); the step that connects them is
  what Lab 8 asks students to write, so the reader is trained and decoded with the student's step
  (:func:`attention_course.tasks.readers.train_reader` takes it as an argument).

The attention decoder is deliberately *without a running recurrent state*: its query at step t is
built from the previous output token and the previous context, and its scores add a location term
computed from the previous weights (a convolution over them), so it can learn "move one digit to the
right" -- a rule that does not depend on how many digits came before. A fixed prior on the size of
that move (:meth:`AttentionReader.location_prior`) makes the alignment easy to find early in
training. Before the first step the decoder looks at column 0, the strip's left edge, so the first
prior expects the first digit near the start; trained with blank leads of up to 25 columns, the
content scores learn to find it further in. The encoder's backward GRU starts at each strip's own
last column, so end-of-string is read from where the strip ends, blank tail or not.
:class:`ReaderConfig` holds what Lab 8's readers use and nothing else. The designs the lab does
not use (a flat first prior, no prior, a GRU decoder state that could count, column states that
carry their embedding) are overrides of this reader in ``benchmarks/reader_variants.py``, and
``benchmarks/results/lab8_variants.md`` measures them.

Shapes: B strips, N columns, T output steps, D = 2 * encoder hidden, A attention width,
C = 11 classes (ten digits and end-of-string).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from attention_course.core.seq2seq import Tokens
from attention_course.core.stacked_gru import stacked_gru
from attention_course.data.strips import EOS, HEIGHT, NUM_CLASSES, PAD, SOS, VOCAB_SIZE


@dataclass(frozen=True)
class ReaderConfig:
    """Sizes of a reader. ``kind`` is ``"attention"`` or ``"fixed"``."""

    kind: str = "attention"
    embed: int = 32            # per-column embedding channels
    embed_kernel: int = 3      # width of each embedding convolution, in columns
    embed_layers: int = 1      # stacked embedding convolutions
    # > 0: first two 3x3 convolutions over the strip as an image (this many channels, then
    # twice as many): the same filters at every row, so a digit a row higher meets the same ones
    image_channels: int = 0
    # the embedding's nonlinearity: a leaky ReLU with this slope below zero (0: a plain ReLU,
    # whose units can stop learning for good; in lab8_variants.md the fixed-context reader
    # reads far worse with one, the attention reader worse)
    embed_slope: float = 0.1
    dropout: float = 0.0       # on the column embedding and on what the readout sees (training only)
    hidden: int = 64           # per direction of the bidirectional GRU
    attention: int = 64        # A, width of the additive attention
    token_embed: int = 16
    location_channels: int = 8
    location_kernel: int = 25  # previous weights seen up to 12 columns either side
    decoder_hidden: int = 128  # the fixed-context reader's GRU decoder
    # A fixed prior over how far attention moves right per step (a Gaussian over 0..max_shift
    # columns): its log is added to the scores, as in dynamic convolution attention.
    prior_mean: float = 10.0     # about one digit (8 columns) plus a gap
    prior_std: float = 4.0
    prior_max_shift: int = 20

    def to_dict(self) -> dict:
        return asdict(self)

    def reader_class(self) -> type:
        """The reader this config describes (a benchmark's variant config names its own)."""
        classes = {"attention": AttentionReader, "fixed": FixedContextReader}
        if self.kind not in classes:
            raise ValueError(f"config.kind must be 'attention' or 'fixed', got {self.kind!r}")
        return classes[self.kind]


@dataclass
class Memory:
    """What the encoder leaves for the decoder."""

    states: torch.Tensor   # (B, N, D)
    keys: torch.Tensor     # (B, N, A) projected states (attention reader) or empty
    mask: torch.Tensor     # (B, N) bool
    summary: torch.Tensor  # (B, D) final states of both directions


class ColumnEncoder(nn.Module):
    """Per-column embedding (stacked 1-D convolutions over columns, optionally after two 2-D ones
    over the strip as an image) and a bidirectional GRU.

    The two directions are two GRUs, and the backward one reads each strip's *own* columns from
    its last real column back (each strip reversed within its length): its states never see the
    padding that follows a shorter strip, so the states know where the strip really ends and a
    strip is encoded the same in any batch (what a packed sequence gives, and cheaper on a CPU).
    The two run side by side (:func:`~attention_course.core.stacked_gru.stacked_gru`, which is
    cheaper again than two ``nn.GRU`` calls); the ``nn.GRU`` modules hold their weights.
    """

    def __init__(self, embed: int, hidden: int, kernel: int = 3, layers: int = 1,
                 dropout: float = 0.0, image_channels: int = 0, slope: float = 0.1,
                 skip: bool = False):
        super().__init__()
        self.skip = skip
        self.slope = slope
        c, width = image_channels, HEIGHT
        self.image_convs = nn.ModuleList(
            [nn.Conv2d(1, c, 3, padding=1), nn.Conv2d(c, 2 * c, 3, padding=1)] if c else [])
        if c:
            width = 2 * c * (HEIGHT // 2)       # 2c channels of 4 rows once rows are pooled in 2
        self.column_convs = nn.ModuleList(
            [nn.Conv1d(width if i == 0 else embed, embed, kernel, padding=kernel // 2)
             for i in range(layers)])
        self.dropout = nn.Dropout(dropout)
        self.forward_gru = nn.GRU(embed, hidden, batch_first=True)
        self.backward_gru = nn.GRU(embed, hidden, batch_first=True)
        self.summary_width = 2 * hidden
        self.width = 2 * hidden + (embed if skip else 0)

    def embed(self, columns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """columns (B, N, 8) -> embedding (B, N, E). Padding columns are zeroed before every
        convolution, as a strip's own edge is, so no column near the end of a strip sees its
        batch's padding (a strip is embedded the same alone and in any batch)."""
        keep = mask.unsqueeze(1).to(columns.dtype)                  # (B, 1, N)
        x = columns.transpose(1, 2) * keep                          # (B, 8, N): rows as channels
        if len(self.image_convs):
            x = x.unsqueeze(1)                                      # (B, 1, 8, N): an image
            for conv in self.image_convs:
                x = self.activation(conv(x)) * keep.unsqueeze(1)    # (B, c or 2c, 8, N)
            b, c, rows, n = x.shape                                 # rows pooled in pairs
            x = x.view(b, c, rows // 2, 2, n).amax(3).flatten(1, 2)  # (B, 8c, N)
        for conv in self.column_convs:
            x = self.activation(conv(x)) * keep                     # (B, E, N)
        return x.transpose(1, 2)

    def activation(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.leaky_relu(x, self.slope)

    @staticmethod
    def reversal(mask: torch.Tensor) -> torch.Tensor:
        """(B, N) mask -> (B, N) column indices reversing each strip's real columns in place
        (padding columns stay where they are). Applying it twice restores the order."""
        n = mask.sum(-1, keepdim=True)                              # (B, 1)
        j = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
        return torch.where(j < n, n - 1 - j, j)                     # (B, N)

    def forward(self, columns: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """columns (B, N, 8), mask (B, N) (None: all real) -> states (B, N, D), summary (B, D)."""
        if columns.dim() != 3 or columns.shape[-1] != HEIGHT:
            raise ValueError(f"columns should have shape (B, N, {HEIGHT}), got {tuple(columns.shape)}")
        if mask is None:
            mask = torch.ones(columns.shape[:2], dtype=torch.bool, device=columns.device)
        x = self.dropout(self.embed(columns, mask))                 # (B, N, E)
        order = self.reversal(mask).unsqueeze(-1)                   # (B, N, 1)
        ahead, back = stacked_gru([self.forward_gru, self.backward_gru],
                                  [x, x.gather(1, order.expand_as(x))])   # (B, N, H) each
        back = back.gather(1, order.expand_as(back))                # columns in order
        last = (mask.sum(-1) - 1).view(-1, 1, 1).expand(-1, 1, ahead.shape[-1])
        summary = torch.cat([ahead.gather(1, last)[:, 0], back[:, 0]], dim=-1)   # (B, D)
        return torch.cat([ahead, back] + ([x] if self.skip else []), dim=-1), summary


class _Reader(nn.Module):
    tokens = Tokens(sos=SOS, eos=EOS, pad=PAD)

    def __init__(self, config: ReaderConfig):
        super().__init__()
        self.config = config
        self.encoder = self.column_encoder(config)
        self.token_embed = nn.Embedding(VOCAB_SIZE, config.token_embed)

    def column_encoder(self, config: ReaderConfig) -> ColumnEncoder:
        return ColumnEncoder(config.embed, config.hidden, config.embed_kernel, config.embed_layers,
                             config.dropout, config.image_channels, config.embed_slope)


class FixedContextReader(_Reader):
    """The fixed-context baseline: a GRU decoder that sees only the strip's summary."""

    def __init__(self, config: ReaderConfig):
        super().__init__(config)
        d = self.encoder.summary_width
        self.init = nn.Linear(d, config.decoder_hidden)
        self.cell = nn.GRUCell(config.token_embed + d, config.decoder_hidden)
        self.out = nn.Linear(config.decoder_hidden, NUM_CLASSES)

    def encode(self, columns, mask) -> Memory:
        states, summary = self.encoder(columns, mask)
        return Memory(states, states.new_zeros(0), mask, summary)

    def start(self, memory: Memory):
        return torch.tanh(self.init(memory.summary))                # (B, H_dec)

    def step(self, memory: Memory, state, prev_token):
        """(B,) previous token -> logits (B, C), new state (B, H_dec), zero weights (B, N)."""
        x = torch.cat([self.token_embed(prev_token), memory.summary], -1)
        state = self.cell(x, state)
        no_attention = memory.mask.new_zeros(memory.mask.shape, dtype=torch.float)
        return self.out(state), state, no_attention


class AttentionReader(_Reader):
    """An attention decoder over the column states (location-aware additive attention).

    Its per-step state is ``(prev_weights (B, N), prev_context (B, D))``. It has
    no ``step`` method: one step (query, keys, scores, masked weights, context, readout) is Lab 8's
    task 3, and the reader is trained and decoded with the step a student wrote.
    """

    def __init__(self, config: ReaderConfig):
        super().__init__(config)
        d, a = self.encoder.width, config.attention
        self.key_proj = nn.Linear(d, a, bias=False)
        self.location_conv = nn.Conv1d(1, config.location_channels, config.location_kernel,
                                       padding=config.location_kernel // 2)
        self.location_proj = nn.Linear(config.location_channels, a, bias=False)
        self.query_proj = nn.Linear(self.query_width(config.token_embed + d), a)
        self.v = nn.Parameter(torch.randn(a) / a ** 0.5)
        shifts = torch.arange(config.prior_max_shift + 1, dtype=torch.float)
        prior = torch.exp(-0.5 * ((shifts - config.prior_mean) / config.prior_std) ** 2)
        # conv1d correlates, so the kernel is the prior reversed: out[j] = sum_s prior[s] w[j - s]
        self.register_buffer("prior_kernel", (prior / prior.sum()).flip(0).view(1, 1, -1))
        self.readout_mlp = nn.Sequential(
            nn.Dropout(config.dropout), nn.Linear(d + config.token_embed, 128), nn.ReLU(),
            nn.Linear(128, NUM_CLASSES))

    def query_width(self, width: int) -> int:
        """The width of what the query is computed from: the previous token's embedding and
        the previous context, ``token_embed + D`` (a variant may put a layer in between)."""
        return width

    def encode(self, columns, mask) -> Memory:
        states, summary = self.encoder(columns, mask)
        return Memory(states, self.key_proj(states), mask, summary)

    def start(self, memory: Memory):
        """The decoder starts at the strip's left edge: all its weight on column 0 (so the first
        step's prior expects the first digit about one move in), and a zero context."""
        weights = torch.zeros_like(memory.mask, dtype=memory.states.dtype)
        weights[:, 0] = 1.0
        context = memory.states.new_zeros(memory.states.shape[0], memory.states.shape[-1])
        return weights, context

    def query(self, prev_token, prev_context):
        """(B,) previous token, (B, D) previous context -> (B, A) query."""
        return self.query_proj(torch.cat([self.token_embed(prev_token), prev_context], -1))

    def keys_at(self, memory: Memory, prev_weights):
        """Keys plus the location term from the previous weights: (B, N, A)."""
        loc = self.location_conv(prev_weights.unsqueeze(1)).transpose(1, 2)   # (B, N, channels)
        return memory.keys + self.location_proj(loc)

    def location_prior(self, prev_weights):
        """Log-prior of the next position given the previous weights: (B, N) -> (B, N).

        Never -inf: a floor of 1e-6 keeps every column reachable by its content score.
        """
        x = nn.functional.pad(prev_weights.unsqueeze(1), (self.config.prior_max_shift, 0))
        return torch.log(nn.functional.conv1d(x, self.prior_kernel).squeeze(1) + 1e-6)

    def readout(self, context, prev_token):
        """(B, D) context and (B,) previous token -> (B, C) logits."""
        return self.readout_mlp(torch.cat([context, self.token_embed(prev_token)], -1))


def build_reader(config: ReaderConfig | dict) -> _Reader:
    """Instantiate the reader a config describes."""
    if isinstance(config, dict):
        config = ReaderConfig(**config)
    return config.reader_class()(config)
