"""The footprint audit (``exo bench footprint``): does Exo fit the small board?

exod (and the device client, when this tree has it) run a scripted conversation
— a voice question, an approval by button, an answer spoken — under a memory
limit (512 MB by default) and pinned to one core. Reported against docs/benchmarks.md ("Budgets at a glance"):

* ``startup_s``: ``exo serve`` start to a healthy ``GET /health`` (under the limit).
* ``idle_rss_mb``: exod's RSS after it has idled (no turn yet; models load lazily).
* ``peak_rss_mb``: over the run, the largest sum of the peak RSS (``VmHWM``)
  of the processes alive together — an upper bound of their simultaneous peak
  that does not add up processes which never overlapped (the device starts
  one speech-to-text child per utterance). The sampled simultaneous RSS
  (``peak_rss_concurrent_mb``, every 50 ms), the plain sum of every process's
  peak (``peak_rss_sum_mb``) and the memory cgroup's own peak are reported too.
* ``model_loaded``: the local GGUF file was mapped into exod (``/proc/PID/maps``).
* disk use of the installation (virtual environment, sources, model files) and
  of a store holding 10,000 nodes.

How the limit is enforced, in order of preference (the one used is reported as
``limit.method``): ``systemd-run --scope -p MemoryMax=`` when systemd runs the
machine; else a memory cgroup (v2, then v1) made beside the caller's own, which
every process of the run joins before it executes; else ``prlimit --as`` (a
virtual-address limit: looser in meaning, stated as such). One core: ``taskset
-c CPU`` (or ``sched_setaffinity`` without util-linux).

With ``--json`` the result printed starts with ``completed``, ``idle_rss_mb``,
``peak_rss_mb``, ``startup_s`` and ``model_loaded``; more keys follow.

Modules: :mod:`~exo_edge.footprint.limits` (memory and CPU limits),
:mod:`~exo_edge.footprint.sampling` (``/proc`` sampling),
:mod:`~exo_edge.footprint.scenario` (the parts and the conversation),
:mod:`~exo_edge.footprint.run` (one run, disk use) and
:mod:`~exo_edge.footprint.cli` (arguments, report, ``main``).
"""

from __future__ import annotations

from exo_edge.footprint.cli import build_parser, main, report
from exo_edge.footprint.limits import Limit, choose_limit
from exo_edge.footprint.run import FootprintResult, run_footprint

__all__ = ["Limit", "FootprintResult", "choose_limit", "run_footprint", "report", "build_parser", "main"]
