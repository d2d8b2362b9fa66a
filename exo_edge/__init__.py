"""exo_edge: what makes Exo run well on a small board (local GGUF model, int8 ONNX embedder).

Importing any part of ``exo_edge`` sets ``OMP_WAIT_POLICY=PASSIVE`` unless the
person set it. llama.cpp's OpenMP runtime reads it once, when ``llama_cpp``
is first imported, and every ``llama_cpp`` import in the project happens
after an ``exo_edge`` one. With the default (active) policy, threads spin
while they wait: on a busy 2-core machine two threads then generated 8-25x
slower than one (docs/benchmarks.md, "Generation speed").
"""

import os as _os

_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
