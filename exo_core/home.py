"""Moved to :mod:`exo_core.seams.home`; this name stays only for the benchmarks, which still import it."""

from exo_core.seams.home import *  # noqa: F403
from exo_core.seams.home import __all__ as __all__
