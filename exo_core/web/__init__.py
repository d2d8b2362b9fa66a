"""The laptop over the LAN: the web page exod serves, pairing, browser sessions, taste rows."""

from exo_core.web.cookies import WebAuth
from exo_core.web.pairing import PairingCodes
from exo_core.web.routes import static_dir, tcp_routes, unix_routes
from exo_core.web.taste import TasteRows

__all__ = ["WebAuth", "PairingCodes", "TasteRows", "tcp_routes", "unix_routes", "static_dir"]
