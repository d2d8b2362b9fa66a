"""Moved to :mod:`exo_core.seams.decision`; this name stays only for the benchmarks, which still import it."""

from exo_core.seams.decision import *  # noqa: F403
from exo_core.seams.decision import __all__ as __all__
