"""exo_core: the slim, portable core of Exo.

Depends only on the standard library, aiohttp, pynacl and numpy. Nothing heavy
is imported here: importing ``exo_core`` must stay cheap on a small board.
"""

__version__ = "0.1.0"
