"""What one simple shell command does, on the four axes.

:func:`classify_command` first sees through prefixes that run another
command (``sudo``, ``env``, ``nohup``, ``timeout``, ``xargs`` …), then looks
the command up: file operations (judged by whether their paths lie in the
workspace), network clients (judged by method and host), mail, publishing,
package managers, interpreters, services, containers and clouds, and ``git``
and ``gh`` (:mod:`exo_core.gate.vcs`). Output redirections are file writes.

A command the gate does not know is ``recoverable`` and ``private`` (it
runs and is logged): asking about every unknown program would train the
person to approve by reflex (§7). Code whose text the gate cannot see —
something piped into ``sh``, ``eval`` of a variable — is ``irreversible``
and asks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from exo_core.gate.axes import Finding
from exo_core.gate.scope import Scope, url_host
from exo_core.gate.shell import SimpleCommand, parse_shell
from exo_core.gate.vcs import classify_gh, classify_git, finding

__all__ = ["classify_command", "unwrap", "write_finding"]

_READ_ONLY = frozenset(
    """
ls cat head tail less more grep egrep fgrep rg ag ack wc sort uniq cut tr diff cmp comm file stat which whereis
type echo printf pwd whoami id date cal true false test [ basename dirname realpath readlink du df free uptime ps
pgrep top htop printenv hostname uname jq yq column nl od hexdump xxd md5sum sha256sum sha1sum sha512sum cksum
tree seq sleep wait yes tac rev fold fmt expr bc man help history cd pushd popd export set unset read : alias
locale tty lsblk lscpu lsusb ip ifconfig ping dig nslookup host whois traceroute env getent groups last w who
awk gawk mawk tput clear sed shellcheck ruff mypy pylint flake8 tsc nproc arch lsof
""".split()
)
_WRITERS = frozenset(
    {
        "touch",
        "mkdir",
        "tee",
        "truncate",
        "mkfifo",
        "ln",
        "install",
        "cp",
        "mv",
        "tar",
        "zip",
        "unzip",
        "gzip",
        "gunzip",
        "bzip2",
        "xz",
        "unxz",
        "patch",
        "chmod",
        "chown",
        "chgrp",
        "split",
    }
)
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm"})
_DISK = frozenset({"mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "blkdiscard", "cryptsetup"})
_MAILERS = frozenset({"mail", "mailx", "sendmail", "mutt", "neomutt", "msmtp", "swaks", "s-nail", "ssmtp"})
_HTTP = frozenset({"curl", "wget", "http", "https", "xh", "httpie", "aria2c"})
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "deno", "bun", "lua", "Rscript"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "fish", "busybox"})
_RUNNERS = frozenset(
    {
        "make",
        "pytest",
        "tox",
        "nox",
        "cargo",
        "go",
        "mvn",
        "gradle",
        "cmake",
        "ninja",
        "just",
        "npx",
        "uv",
        "poetry",
        "hatch",
        "pre-commit",
        "jest",
        "vitest",
        "ctest",
        "source",
        ".",
    }
)
_PACKAGES = frozenset(
    {
        "pip",
        "pip3",
        "npm",
        "yarn",
        "pnpm",
        "apt",
        "apt-get",
        "dnf",
        "yum",
        "pacman",
        "brew",
        "apk",
        "snap",
        "flatpak",
        "gem",
        "conda",
        "pipx",
    }
)
_PUBLISH = {
    "npm": "publish",
    "yarn": "publish",
    "pnpm": "publish",
    "cargo": "publish",
    "gem": "push",
    "twine": "upload",
    "poetry": "publish",
    "flit": "publish",
    "docker": "push",
    "podman": "push",
    "helm": "push",
    "hatch": "publish",
    "uv": "publish",
}
_SERVICES = frozenset(
    {
        "kill",
        "pkill",
        "killall",
        "systemctl",
        "service",
        "shutdown",
        "reboot",
        "poweroff",
        "halt",
        "launchctl",
        "crontab",
        "at",
        "renice",
        "umount",
        "mount",
        "iptables",
        "ufw",
        "useradd",
        "userdel",
        "passwd",
        "visudo",
        "sysctl",
    }
)
_CLOUD = frozenset(
    {
        "aws",
        "gcloud",
        "az",
        "doctl",
        "terraform",
        "tofu",
        "pulumi",
        "kubectl",
        "helm",
        "flyctl",
        "heroku",
        "vercel",
        "netlify",
        "stripe",
    }
)
_NET_RAW = frozenset({"nc", "ncat", "netcat", "socat", "telnet", "ftp", "lftp", "sftp"})
_REMOTE_COPY = frozenset({"scp", "rsync"})
_PREFIX_OPTS_WITH_ARG = {
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-n", "-I", "-P", "-d", "-L", "-s", "-E", "-a"},
    "watch": {"-n", "-d"},
    "taskset": set(),
    "nohup": set(),
    "time": set(),
    "command": set(),
    "exec": {"-a"},
    "builtin": set(),
    "chronic": set(),
    "flock": {"-w", "-E"},
    "setsid": set(),
    "caffeinate": set(),
    "unbuffer": set(),
    "torsocks": set(),
}
_SEND_WORDS = re.compile(
    r"requests\.(post|put|patch|delete)|urlopen|smtplib|sendmail|http\.client|fetch\(|"
    r"rmtree|os\.remove|unlink\(|subprocess|os\.system|child_process|socket\."
)

Rule = Callable[[list[str], SimpleCommand, Scope], list[Finding]]


def unwrap(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` without the prefixes that run another command; returns (command, prefixes seen)."""
    words, prefixes = list(argv), []
    while words:
        name = words[0].rsplit("/", 1)[-1]
        if name not in _PREFIX_OPTS_WITH_ARG:
            break
        prefixes.append(name)
        words.pop(0)
        with_arg = _PREFIX_OPTS_WITH_ARG[name]
        while words and (words[0].startswith("-") or name == "env" and "=" in words[0]):
            opt = words.pop(0)
            if opt == "--":
                break
            if opt in with_arg and words:
                words.pop(0)
        if name == "timeout" and words:
            words.pop(0)  # the duration
        if name in ("taskset", "flock") and words:
            words.pop(0)  # the mask / lock file
    return words, prefixes


def classify_command(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    """Findings for one simple command (never empty for a command that runs something)."""
    words, prefixes = unwrap(cmd.argv)
    shift = len(cmd.argv) - len(words)
    dynamic = {i - shift for i in cmd.dynamic if i >= shift}
    if "xargs" in prefixes and words:
        dynamic.add(len(words))
        words.append("{xargs}")  # the arguments xargs adds are only known at run time
    cmd = SimpleCommand(tuple(words), cmd.redirects, cmd.piped_in, frozenset(dynamic))
    argv = words
    out: list[Finding] = []
    for r in cmd.redirects:
        if r.op in (">", ">>", ">|", "<>") and not r.target.isdigit() and r.target != "-":
            out.append(
                write_finding(
                    r.target, scope, "overwrite" if r.op in (">", ">|") else "append to", overwrite=r.op in (">", ">|")
                )
            )
    if not argv:
        if prefixes:
            out.append(finding("shell.read", " ".join(prefixes)))
        return out
    name = argv[0].rsplit("/", 1)[-1]
    if cmd.word_is_dynamic(0) or name == "eval" and any(cmd.dynamic):
        out.append(
            finding(
                "shell.opaque",
                "run a command chosen at run time",
                "irreversible",
                reason="the command is not known until it runs",
            )
        )
    elif name in _SHELLS or name in _INTERPRETERS and (cmd.piped_in or len(argv) == 1):
        out.extend(_shell_or_interpreter(name, argv, cmd, scope))
    else:
        rule = _RULES.get(name) or _rule_by_set(name)
        # Rules see the command by its name (/usr/bin/crontab is crontab); an unknown one keeps its path.
        out.extend(rule(argv, cmd, scope) if rule is _unknown else rule([name, *argv[1:]], cmd, scope))
    if "xargs" in prefixes:
        out = [_at_least(f, "recoverable") for f in out]
    if {"sudo", "doas"} & set(prefixes):
        out = [_at_least(f, "recoverable", " (as root)") if f.axes.reversibility != "none" else f for f in out]
    return out


def _at_least(f: Finding, level: str, suffix: str = "") -> Finding:
    return Finding(f.key, f.axes.at_least(reversibility=level), f.summary + suffix, f.reason, f.destination)


def _rule_by_set(name: str) -> Rule:
    for names, rule in _SET_RULES:
        if name in names or name.startswith(("mkfs.", "python3.")) and names in (_DISK, _INTERPRETERS):
            return rule
    return _unknown


def _unknown(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if argv[0].startswith(("./", "../")) or argv[0].endswith((".sh", ".py")):
        return [finding("exec.program", f"run {argv[0]}", "recoverable", reason="runs a local program")]
    return [finding("shell.unknown", f"run {argv[0]}", "recoverable", reason="a command the gate does not know")]


def _shell_or_interpreter(name: str, argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    inline = "-c" in argv[1:] or "-e" in argv[1:]
    if inline and name in _SHELLS:
        return []  # its script was parsed and classified as nested commands
    if cmd.stdin_script and name in _SHELLS:
        return []  # a heredoc script: parsed as nested commands
    if cmd.piped_in or len(argv) == 1 or argv[1:] in (["-"], ["-s"]):
        return [
            finding(
                "shell.opaque",
                f"pipe text into {name} and run it",
                "irreversible",
                reason="the code it runs is produced at run time and cannot be checked",
            )
        ]
    return _interpreter(argv, cmd, scope)


def _read(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    name = argv[0]
    if name in ("sed", "perl") and any(a.startswith("-i") or a == "--in-place" for a in argv[1:]):
        files = [a for a in argv[2:] if not a.startswith("-")][-1:] or ["."]
        return [write_finding(files[0], scope, "edit")]
    if name == "env" and len(argv) > 1:
        return _unknown(argv[1:], cmd, scope)
    return [finding("shell.read", f"{name}")]


def write_finding(target: str, scope: Scope, verb: str = "write", *, overwrite: bool = False) -> Finding:
    """A file write to ``target``: reversible in the workspace; outside it recoverable, or
    irreversible when it replaces the whole file (nothing keeps the old content)."""
    if target in ("/dev/null", "/dev/stdout", "/dev/stderr"):
        return finding("shell.read", f"{verb} {target}")
    if target.startswith("/dev/"):
        return finding("disk.write", f"{verb} the device {target}", "irreversible", reason="writes a raw device")
    if scope.inside(target):
        return finding("file.write", f"{verb} {target}", "reversible", reason="inside the workspace")
    return finding(
        "file.write.outside",
        f"{verb} {target} (outside the workspace)",
        "irreversible" if overwrite else "recoverable",
        reason="outside the workspace, where nothing keeps the old content",
    )


def _writer(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    paths = [a for a in argv[1:] if not a.startswith("-")]
    name = argv[0]
    if name in ("cp", "install", "ln", "tar") and paths:
        paths = paths[-1:] if name != "tar" else ["."]
    return [write_finding(p, scope, name) for p in (paths or ["."])]


def _deleter(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    name = argv[0]
    flags = "".join(a.lstrip("-") for a in argv[1:] if a.startswith("-") and a != "--")
    recursive = name == "rm" and ("r" in flags or "R" in flags or "recursive" in flags)
    out = []
    for i, raw in enumerate(argv[1:], start=1):
        if raw.startswith("-"):
            continue
        dynamic = cmd.word_is_dynamic(i)
        inside = not dynamic and scope.inside(raw) and raw.strip("/") not in ("", "~", ".", "..", "*")
        if name in ("shred", "srm"):
            out.append(finding("file.shred", f"shred {raw}", "irreversible", reason="overwritten beyond recovery"))
        elif inside:
            out.append(finding("file.delete", f"delete {raw}", "recoverable", reason="inside the workspace"))
        else:
            why = "a path decided at run time" if dynamic else "outside the workspace"
            out.append(
                finding(
                    "file.delete.outside",
                    f"{name}{' -r' if recursive else ''} {raw}",
                    "irreversible",
                    reason=f"{why}: nothing keeps a copy",
                )
            )
    return out or [finding("shell.read", name)]


def _find(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    roots = [a for a in argv[1:] if not a.startswith(("-", "(", "!", ")"))][:1] or ["."]
    if "-delete" in argv:
        # find deletes what matches *below* its root, so judge a path inside the root.
        below = roots[0].rstrip("/") + "/match"
        return [
            Finding(f.key, f.axes, f"find {roots[0]} -delete", f.reason)
            for f in _deleter(["rm", "-r", below], SimpleCommand(("rm", "-r", below)), scope)
        ]
    for flag in ("-exec", "-execdir", "-ok", "-okdir"):
        if flag in argv:
            inner = argv[argv.index(flag) + 1 :]
            inner = inner[: next((k for k, a in enumerate(inner) if a in (";", "+")), len(inner))]
            if inner:
                dyn = frozenset(k for k, a in enumerate(inner) if "{}" in a)
                return classify_command(SimpleCommand(tuple(inner), dynamic=dyn), scope)
    return [finding("shell.read", "find files")]


def _dd(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    target = next((a[3:] for a in argv[1:] if a.startswith("of=")), "")
    return [write_finding(target, scope, "dd to")] if target else [finding("shell.read", "dd")]


def _disk(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    return [
        finding(
            "disk.format", f"{argv[0]}: change a disk or partition", "irreversible", reason="erases what the disk held"
        )
    ]


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
    "-P",
    "--directory-prefix",
}
_HTTPIE = frozenset({"http", "https", "xh", "httpie"})


def _http(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    name = argv[0]
    method, urls, out_file = "GET", [], ""
    i = 1
    while i < len(argv):
        a = argv[i]
        key, has_eq, value = a.partition("=")
        nxt = value if has_eq and key.startswith("--") else (argv[i + 1] if i + 1 < len(argv) else "")
        step = 1 if has_eq and key.startswith("--") else 2
        if key in ("-X", "--request", "--method"):
            method = nxt.upper()
        elif key in ("-o", "--output", "--output-document", "-O") and name not in _HTTPIE:
            out_file, step = (nxt, step) if key != "-O" else (".", 1)
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
            if a.startswith("-"):
                pass
            elif name in _HTTPIE and urls and (m := re.match(r"^[\w.-]+(==|:=@|:=|=@|=|@)", a)):
                if m.group(1) != "==":  # data fields make httpie send a POST; '==' is a query parameter
                    method = "POST" if method == "GET" else method
            elif name in _HTTPIE and a.isupper() and a.isalpha() and not urls:
                method = a
            elif "://" in a or url_host(a):
                urls.append(a)
        i += step
    if name == "wget" and not out_file:
        out_file = "."
    hosts = [url_host(u) or "" for u in urls] or [""]
    remote = [h for h in hosts if not h or not scope.local_host(h)]
    out: list[Finding] = [write_finding(out_file, scope, "download to")] if out_file else []
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


def _net_raw(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    hosts = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()]
    host = hosts[0].split("@")[-1].split(":")[0] if hosts else ""
    if host and scope.local_host(host):
        return [finding("net.loopback", f"{argv[0]} {host}", "recoverable")]
    return [
        finding(
            "net.send",
            f"{argv[0]} to {host or 'a remote host'}",
            "irreversible",
            "leaves",
            reason="raw network traffic leaves the machine",
            destination=host,
        )
    ]


def _ssh(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
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
    if host and scope.local_host(host):
        return [finding("ssh.loopback", f"ssh to {host}", "recoverable")]
    base = finding(
        "ssh.remote",
        f"run a command on {host or 'a remote host'}",
        "recoverable",
        "leaves",
        reason="runs on another machine",
        destination=host,
    )
    if len(words) < 2:
        return [base]
    parsed = parse_shell(" ".join(words[1:]))
    inner = [f for c in parsed.commands for f in classify_command(c, Scope())]
    lifted = [
        Finding(f.key, f.axes.at_least(exposure="leaves"), f"{f.summary} on {host}", f.reason, host) for f in inner
    ]
    return [base, *lifted]


def _remote_copy(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    paths = [a for a in argv[1:] if not a.startswith("-")]
    remote = [p for p in paths if re.match(r"^([\w.-]+@)?[\w.-]+:", p) and not p.startswith("/")]
    out = []
    if remote and paths and paths[-1] in remote:
        host = paths[-1].split(":")[0].split("@")[-1]
        if not scope.local_host(host):
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
        out.append(write_finding(paths[-1], scope, f"{argv[0]} into"))
    if "--delete" in argv or any(a.startswith("--delete") for a in argv):
        out.append(
            finding(
                "file.delete.outside",
                f"{argv[0]} --delete",
                "irreversible",
                reason="deletes files missing from the source",
            )
        )
    return out or [finding("net.read", argv[0])]


def _mail(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    to = next((a for a in argv[1:] if "@" in a and not a.startswith("-")), "")
    return [
        finding(
            "mail.send",
            f"send mail{' to ' + to if to else ''}",
            "irreversible",
            "leaves",
            third_party="affects",
            reason="mail reaches another person and cannot be unsent",
            destination=to,
        )
    ]


def _package(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    name = argv[0]
    verbs = [a for a in argv[1:] if not a.startswith("-")]
    if _PUBLISH.get(name) in verbs:
        return [_publish(name)]
    if not verbs or verbs[0] in (
        "list",
        "show",
        "search",
        "info",
        "view",
        "outdated",
        "freeze",
        "ls",
        "why",
        "config",
        "--version",
        "help",
        "audit",
        "check",
    ):
        return [finding("package.read", f"{name} {verbs[0] if verbs else ''}".strip())]
    if verbs[0] in ("test", "run", "exec", "start", "build", "x"):
        return [finding("exec.program", f"{name} {verbs[0]}", "recoverable", reason="runs project code")]
    return [finding("package.install", f"{name} {verbs[0]}", "recoverable", reason="changes installed software")]


def _publish(name: str) -> Finding:
    return finding(
        "package.publish",
        f"publish with {name}",
        "irreversible",
        "public",
        third_party="affects",
        reason="a published version is downloaded by others and cannot be replaced",
    )


def _interpreter(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if "-m" in argv[1:]:
        rest = argv[argv.index("-m") + 1 :]
        if rest:
            return classify_command(SimpleCommand(tuple(rest)), scope)
    for flag in ("-c", "-e", "-E", "--eval"):
        if flag in argv[1:] and argv.index(flag) + 1 < len(argv):
            code = argv[argv.index(flag) + 1]
            if _SEND_WORDS.search(code):
                return [
                    finding(
                        "exec.inline",
                        f"run inline {argv[0]} code that touches the network or files",
                        "irreversible",
                        reason="inline code with side effects the gate cannot follow",
                    )
                ]
            return [finding("exec.inline", f"run inline {argv[0]} code", "reversible")]
    return [finding("exec.program", f"run {' '.join(argv[:2])}", "recoverable", reason="runs a local program")]


def _runner(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if _PUBLISH.get(argv[0]) in argv[1:2]:
        return [_publish(argv[0])]
    return [finding("exec.program", f"run {' '.join(argv[:2])}", "recoverable", reason="runs project code")]


def _service(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    name = argv[0]
    if name == "crontab" and "-r" in argv or name in ("userdel", "iptables") and len(argv) > 1:
        return [finding("system.change", f"{' '.join(argv[:2])}", "irreversible", reason="removes system state")]
    if name in ("systemctl", "service") and any(v in argv for v in ("status", "list-units", "is-active", "show")):
        return [finding("shell.read", f"{name} status")]
    return [finding("system.change", f"{' '.join(argv[:2])}", "recoverable", reason="changes running services")]


def _cloud(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    words = [a for a in argv[1:] if not a.startswith("-")]
    text = " ".join(words)
    name = argv[0]
    if re.search(
        r"\b(list|describe|get|show|ls|logs|plan|status|whoami|version|validate|fmt|init)\b|\blist-", text
    ) and not re.search(r"\b(delete|rm|destroy|terminate|remove|create|apply|run|deploy|put|cp|sync)\b", text):
        return [finding("cloud.read", f"{name} {text}".strip())]
    third = "affects" if name == "stripe" else "none"
    cost = "free" if name in ("kubectl", "helm") else "paid"
    if re.search(r"\b(delete|rm|destroy|terminate|remove|purge|rb)\b|delete-|terminate-", text):
        return [
            finding(
                "cloud.delete",
                f"{name} {text}",
                "irreversible",
                "leaves",
                cost,
                third,
                reason="deletes cloud resources",
            )
        ]
    return [
        finding(
            "cloud.change",
            f"{name} {text}",
            "recoverable",
            "leaves",
            cost,
            third,
            reason="changes billed cloud resources",
        )
    ]


def _container(argv: list[str], cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    verbs = [a for a in argv[1:] if not a.startswith("-")]
    verb = verbs[0] if verbs else ""
    if verb == "push":
        return [_publish(argv[0])]
    if verb in ("ps", "images", "inspect", "logs", "version", "info", "stats", "top", "history", "search"):
        return [finding("container.read", f"{argv[0]} {verb}")]
    if verb in ("rm", "rmi", "prune", "kill") or "prune" in verbs or verbs[:2] == ["volume", "rm"]:
        return [
            finding(
                "container.delete",
                f"{argv[0]} {' '.join(verbs[:2])}",
                "irreversible",
                reason="removed containers and volumes lose their data",
            )
        ]
    if verb == "login":
        return [finding("net.login", f"{argv[0]} login", "recoverable", "leaves")]
    return [finding("container.run", f"{argv[0]} {verb}".strip(), "recoverable")]


_RULES: dict[str, Rule] = {
    "git": lambda a, c, s: classify_git(a, s),
    "gh": lambda a, c, s: classify_gh(a, s),
    "find": _find,
    "dd": _dd,
    "ssh": _ssh,
    "mosh": _ssh,
    "docker": _container,
    "podman": _container,
    "twine": lambda a, c, s: [_publish("twine")] if "upload" in a else [finding("package.read", "twine")],
}
_SET_RULES: list[tuple[frozenset[str], Rule]] = [
    (_READ_ONLY, _read),
    (_WRITERS, _writer),
    (_DELETERS, _deleter),
    (_DISK, _disk),
    (_MAILERS, _mail),
    (_HTTP, _http),
    (_NET_RAW, _net_raw),
    (_REMOTE_COPY, _remote_copy),
    (_PACKAGES, _package),
    (_INTERPRETERS, _interpreter),
    (_RUNNERS, _runner),
    (_SERVICES, _service),
    (_CLOUD, _cloud),
]
