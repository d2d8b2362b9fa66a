"""The rules behind the TCP limits and the quiet log, without a network (issue 19, items 3 and 10)."""

from __future__ import annotations

import logging

import pytest

from exo_core.errors import ConfigError
from exo_core.server.limits import TCP_BACKLOG, ConnectionLimits, source_key, tcp_connection_cap
from exo_core.server.quietlog import QuietFilter, QuietLog
from exo_core.web.pairing import PairingCodes, PairingLockedError, PairingRefusedError


def test_a_source_is_an_ipv4_address_or_an_ipv6_64() -> None:
    assert source_key(("192.168.1.7", 5000)) == "192.168.1.7"
    assert source_key(("::ffff:192.168.1.7", 5000, 0, 0)) == "192.168.1.7"
    assert source_key(("2001:db8:1:2:aaaa::1", 5000, 0, 0)) == source_key(("2001:db8:1:2:bbbb::9", 1, 0, 0))
    assert source_key(("2001:db8:1:2::1", 5000, 0, 0)) != source_key(("2001:db8:1:3::1", 5000, 0, 0))
    assert source_key(("fe80::1%eth0", 1, 0, 2)) == "fe80::/64"
    assert source_key(None) == "None"


def test_the_tcp_cap_leaves_file_descriptors_for_everything_else() -> None:
    limits = ConnectionLimits(max_total=256)
    assert tcp_connection_cap(limits, 20000) == 256
    assert tcp_connection_cap(limits, 256) == 256 - 128 - TCP_BACKLOG
    assert tcp_connection_cap(ConnectionLimits(max_total=10_000), 1024) == 1024 - 256 - TCP_BACKLOG
    assert tcp_connection_cap(limits, 100) == 1
    with pytest.raises(ConfigError):
        ConnectionLimits(max_per_address=0)
    with pytest.raises(ConfigError):
        ConnectionLimits(header_timeout=0)


def test_quiet_log_writes_the_first_of_a_kind_then_one_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    quiet = QuietLog(logging.getLogger("quiet-test"), interval=10, max_kinds=3, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="quiet-test"):
        for _ in range(100_000):
            quiet.warning("flood", "refused %s", "x")
        now[0] = 11
        quiet.warning("flood", "refused %s", "y")
        for kind in ("a", "b", "c", "d"):
            quiet.warning(kind, kind)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["refused x", "flood: 99999 more like this in the last 11 s", "refused y", "a", "b", "c", "d"]
    assert len(quiet._windows) == 3, "the kinds it remembers are bounded"


def test_quiet_filter_passes_one_record_per_template() -> None:
    flt = QuietFilter(QuietLog(logging.getLogger("quiet-test"), interval=60))
    records = [
        logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "socket.accept() out of system resource", (), None)
        for _ in range(1000)
    ]
    assert sum(flt.filter(r) for r in records) == 1


def test_wrong_codes_lock_out_their_source_only_and_a_new_code_lifts_it() -> None:
    now = [100.0]
    codes = PairingCodes(max_failures=3, lockout=60, max_sources=4, clock=lambda: now[0])
    code = codes.issue().code
    for _ in range(2):
        with pytest.raises(PairingRefusedError):
            codes.redeem("ZZZZ-ZZZZ", source="10.0.0.66")
    with pytest.raises(PairingLockedError):
        codes.redeem("ZZZZ-ZZZZ", source="10.0.0.66")
    with pytest.raises(PairingLockedError):
        codes.redeem(code, source="10.0.0.66")
    codes.redeem(code, source="10.0.0.2")  # the owner, elsewhere, is not locked out
    now[0] += 61
    with pytest.raises(PairingRefusedError):
        codes.redeem("ZZZZ-ZZZZ", source="10.0.0.66")  # the lockout ended
    for i in range(50):
        with pytest.raises(PairingRefusedError):
            codes.redeem("ZZZZ-ZZZZ", source=f"10.1.0.{i}")
    assert len(codes._failures) <= 4, "per-source memory is bounded"
