"""Parameter counts of transformer stacks (Section 12.4: published configurations)."""
from __future__ import annotations


def transformer_parameters(layers: int, width: int, vocab: int, context: int, mlp: int | None = None,
                           segment_types: int = 0) -> int:
    """Parameters of a stack of post- or pre-norm blocks with embeddings (weights and biases).

    Per block: Q, K, V and output projections 4 (d^2 + d); MLP d*m + m + m*d + d; two layer norms
    4d. Embeddings: tokens V d, positions N d, segment types S d, plus one final/embedding layer
    norm 2d.
    """
    d, m = width, mlp or 4 * width
    block = 4 * (d * d + d) + (d * m + m + m * d + d) + 4 * d
    return layers * block + (vocab + context + segment_types) * d + 2 * d
