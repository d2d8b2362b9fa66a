"""exo_edge: what makes Exo run well on a small board (local GGUF model, int8 ONNX embedder)."""
