"""Moved to :mod:`exo_core.seams.model`; this name stays only for the benchmarks, which still import it."""

from exo_core.seams.model import *  # noqa: F403
from exo_core.seams.model import __all__ as __all__
