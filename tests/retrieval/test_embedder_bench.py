"""The real int8 ONNX embedder (``@pytest.mark.model``) and ``exo bench retrieval`` on a small slice."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from exo_core.retrieval import Retriever
from exo_core.store import Store
from exo_edge.embedder import OnnxEmbedder
from exo_edge.vectors import VectorIndex
from retrieval_kit import make_store, model_files_present

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
needs_model = pytest.mark.skipif(
    not model_files_present(), reason="int8 embedder files absent: run `exo models fetch` (docs/models.md)"
)
needs_data = pytest.mark.skipif(
    not (DATA / "locomo" / "locomo-dev.json").is_file(),
    reason="../shared/data (LoCoMo, LongMemEval) is not on this machine",
)


@pytest.mark.model
@needs_model
def test_int8_vectors_are_unit_deterministic_and_close_to_fp32() -> None:
    int8 = OnnxEmbedder.from_home(None)
    fp32 = OnnxEmbedder.from_home(None, precision="fp32")
    assert int8 is not None and fp32 is not None
    texts = ["Keeps replies short", "A much longer sentence about sourdough bread and its slow rise", "x"]
    a = int8.embed(texts)
    assert a.shape == (3, 384) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([int8.embed([t]) for t in texts])
    assert np.array_equal(a, alone)  # a vector depends on its text only, not its batch
    cos = (a * fp32.embed(texts)).sum(axis=1)
    assert cos.min() > 0.9
    assert int8.model_id.startswith("paraphrase-minilm-l3-v2:int8:") and int8.model_id != fp32.model_id


@pytest.mark.model
@needs_model
def test_embeddings_find_a_belief_no_word_matches(tmp_path: Path) -> None:
    from exo_core.ledger import create_signing_key

    store: Store = make_store(tmp_path / "store", create_signing_key(tmp_path / "keys"))
    emb = OnnxEmbedder.from_home(None)
    dense = VectorIndex(store.root / "indexes" / "vectors.sqlite", emb)
    r = Retriever(store, dense=dense, today=lambda: "2025-01-01")
    assert not r.lexical.search("concise answers", 10)  # BM25 has nothing
    got = [i for i, _ in r.retrieve("concise answers", record=False).ranking]
    assert got[0] == "taste/short-replies"
    r.close()


@needs_data
def test_exo_bench_retrieval_prints_the_metrics_json(tmp_path: Path) -> None:
    locomo = json.loads((DATA / "locomo" / "locomo-dev.json").read_text())
    sample = locomo[1]
    sample["qa"] = sample["qa"][:40]
    (tmp_path / "locomo.json").write_text(json.dumps([sample]))
    lme = json.loads(lzma.open(DATA / "longmemeval" / "longmemeval-s-dev.json.xz").read())
    questions = [q for q in lme["questions"] if not q["question_id"].endswith("_abs")][:3]
    keep = {s for q in questions for s in q["haystack_session_ids"]}
    (tmp_path / "lme.json").write_text(
        json.dumps({"sessions": {k: lme["sessions"][k] for k in keep}, "questions": questions})
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "bench",
            "retrieval",
            "--locomo",
            str(tmp_path / "locomo.json"),
            "--longmemeval",
            str(tmp_path / "lme.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    systems = ("bm25", "embed", "fused") if model_files_present() else ("bm25",)
    assert tuple(data["locomo"]) == systems and tuple(data["longmemeval"]) == systems
    for system in systems:
        assert set(data["locomo"][system]) <= {"cat1-4", "cat5"}
        assert set(data["locomo"][system]["cat1-4"]) == {"hit@5", "hit@10", "recall@5", "recall@10"}
        assert set(data["longmemeval"][system]) == {"any@1", "any@5", "any@10", "all@5", "all@10"}
        values = [v for m in data["locomo"][system].values() for v in m.values()]
        values += list(data["longmemeval"][system].values())
        assert all(0.0 <= v <= 1.0 for v in values)
