"""Commands that change the system or the world: services, processes, schedules, packages, containers, clouds.

Stopping services, killing every process (``kill -9 -1``), powering off and
scheduling code to run later (``crontab -``, ``at``, ``systemd-run``) ask:
they outlive the command and are not undone by running something else. A
container run that mounts host folders outside the workspace, the Docker
socket, or drops the container's walls (``--privileged``, ``--pid=host``) is
the host itself, so it asks. Packages and project runners are logged.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from exo_core.gate.axes import Finding
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx
from exo_core.gate.vcs import finding

__all__ = ["PUBLISH", "SYSTEM_RULES"]

Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]

PUBLISH = {
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
_PACKAGES = [
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
]
_RUNNERS = "pytest tox nox cargo go mvn gradle cmake ninja just npx uv poetry hatch pre-commit jest vitest ctest"
_CLOUD = "aws gcloud az doctl terraform tofu pulumi kubectl helm flyctl heroku vercel netlify stripe"


def _stop(what: str, reason: str) -> Finding:
    return finding("system.change", what, "irreversible", reason=reason)


def _kill(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if name != "kill":
        return [_stop(f"{' '.join(argv[:3])}: kill processes by name", "may stop exod or the person's programs")]
    args = argv[1:]
    if args[:1] in (["-l"], ["-L"]):
        return [finding("shell.read", "kill -l")]
    if args and args[0] in ("-s", "-n"):
        args = args[2:]
    elif args and args[0].startswith("-") and args[0] != "--":
        args = args[1:]  # the signal
    targets = [a for a in args if a != "--"]
    if any(t in ("-1", "1", "0") or t.startswith(("-", "$", "`")) for t in targets):
        return [_stop(f"kill {' '.join(targets)}: every process or a whole group", "stops programs it cannot name")]
    return [finding("system.change", f"kill {' '.join(targets)}", "recoverable", reason="stops a process")]


_SYSTEMCTL_READ = frozenset(
    [
        "status",
        "show",
        "list-units",
        "list-unit-files",
        "list-timers",
        "list-sockets",
        "is-active",
        "is-enabled",
        "is-failed",
        "cat",
        "help",
    ]
)
_SYSTEMCTL_SOFT = frozenset(
    ["start", "restart", "reload", "try-restart", "reload-or-restart", "enable", "daemon-reload"]
)


def _systemctl(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    verbs = [a for a in argv[1:] if not a.startswith("-")]
    if argv[0] == "systemctl":
        verb = verbs[0] if verbs else ""
    elif len(verbs) > 1:
        verb = verbs[1]
    else:
        verb = ""
    if argv[0] == "systemctl" and not verbs or verb in _SYSTEMCTL_READ:
        return [finding("shell.read", f"{argv[0]} {verb}".strip())]
    if verb in _SYSTEMCTL_SOFT:
        return [finding("system.change", f"{argv[0]} {verb}", "recoverable", reason="changes running services")]
    return [_stop(f"{argv[0]} {verb}: stop or change services", "stopped or disabled services stay so")]


def _power(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if argv[0] in ("init", "telinit") and argv[1:2] not in (["0"], ["6"], ["1"], ["s"], ["S"]):
        return [finding("shell.read", argv[0])]
    return [_stop(f"{' '.join(argv[:2])}: power off or restart", "everything running stops")]


def _schedule(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if name == "crontab" and argv[1:] in (["-l"], ["-u", "root", "-l"]) or name in ("atq",):
        return [finding("shell.read", f"{name} -l")]
    if name == "launchctl" and argv[1:2] in (["list"], ["print"]):
        return [finding("shell.read", "launchctl list")]
    return [_stop(f"{' '.join(argv[:2])}: schedule or remove code that runs later", "runs later, unseen")]


def _system_change(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if name == "sysctl" and not any(a == "-w" or "=" in a or a in ("-p", "--load", "--system") for a in argv[1:]):
        return [finding("shell.read", "sysctl")]
    if name in ("mount", "umount") and len(argv) == 1:
        return [finding("shell.read", name)]
    return [_stop(f"{' '.join(argv[:2])}: change the system", "changes the machine for every program")]


def _ip(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    changes = {"add", "del", "delete", "set", "flush", "change", "replace", "down", "up"}
    if changes & set(argv[1:]) or argv[0] == "ifconfig" and len(argv) > 2:
        return [_stop(f"{' '.join(argv[:3])}: change the network", "may cut this machine off")]
    return [finding("shell.read", argv[0])]


_MOUNT_OPTS = ("-v", "--volume", "--mount")
_HOST_FLAGS = re.compile(r"^--(privileged|pid=host|ipc=host|userns=host|uts=host|cap-add|device|security-opt)")


def _container_escapes(argv: list[str], ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        key, eq, value = a.partition("=")
        if not eq and key in _MOUNT_OPTS and i + 1 < len(argv):
            value = argv[i + 1]
            i += 1
        if _HOST_FLAGS.match(a) or a in ("--pid", "--ipc", "--userns") and argv[i + 1 : i + 2] == ["host"]:
            out.append(_stop(f"{argv[0]} {a}: a container with the host's powers", "the container can change the host"))
        elif key in _MOUNT_OPTS and value:
            source = value.split(":", 1)[0] if key != "--mount" else _mount_source(value)
            host_path = source.startswith(("/", "~", ".", "$"))
            if host_path and (
                "docker.sock" in source or not ctx.inside(source, "$" in source and "$PWD" not in source)
            ):
                out.append(
                    _stop(f"{argv[0]} mounts {source} (outside the workspace)", "the container can change host files")
                )
        elif key == "--volumes-from":
            out.append(_stop(f"{argv[0]} --volumes-from", "shares another container's files"))
        i += 1
    return out


def _mount_source(spec: str) -> str:
    for part in spec.split(","):
        key, _, value = part.partition("=")
        if key in ("source", "src"):
            return value
    return ""


def _package(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    verbs = [a for a in argv[1:] if not a.startswith("-")]
    if PUBLISH.get(name) in verbs:
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


def _runner(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if PUBLISH.get(argv[0]) in argv[1:2]:
        return [_publish(argv[0])]
    return [finding("exec.program", f"run {' '.join(argv[:2])}", "recoverable", reason="runs project code")]


def _cloud(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
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


def _container(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    verbs = [a for a in argv[1:] if not a.startswith("-")]
    verb = verbs[0] if verbs else ""
    if verb == "push":
        return [_publish(argv[0])]
    if verb in ("ps", "images", "inspect", "logs", "version", "info", "stats", "top", "history", "search"):
        return [finding("container.read", f"{argv[0]} {verb}")]
    volumes_gone = "down" in verbs and ("-v" in argv or "--volumes" in argv)
    if verb in ("rm", "rmi", "prune", "kill") or "prune" in verbs or verbs[:2] == ["volume", "rm"] or volumes_gone:
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
    if verb in ("run", "create") or verbs[:2] in (["container", "run"], ["container", "create"]):
        escapes = _container_escapes(argv, ctx)
        if escapes:
            return escapes
    return [finding("container.run", f"{argv[0]} {verb}".strip(), "recoverable")]


SYSTEM_RULES: dict[str, Rule] = {
    **{n: _package for n in _PACKAGES},
    **{n: _runner for n in _RUNNERS.split()},
    **{n: _cloud for n in _CLOUD.split()},
    **{n: _kill for n in ("kill", "pkill", "killall", "killall5", "skill", "slay")},
    **{n: _power for n in ("shutdown", "reboot", "poweroff", "halt", "init", "telinit")},
    **{n: _schedule for n in ("crontab", "at", "batch", "atq", "atrm", "systemd-run", "launchctl")},
    **{n: _system_change for n in ("mount", "umount", "swapon", "swapoff", "losetup", "iptables", "ip6tables")},
    **{n: _system_change for n in ("nft", "ufw", "firewall-cmd", "useradd", "userdel", "usermod", "groupadd")},
    **{n: _system_change for n in ("passwd", "chpasswd", "chsh", "visudo", "sysctl", "modprobe", "insmod")},
    **{n: _system_change for n in ("rmmod", "setcap", "update-alternatives", "hostnamectl", "timedatectl")},
    **{n: _ip for n in ("ip", "ifconfig")},
    "systemctl": _systemctl,
    "service": _systemctl,
    "renice": lambda a, c, x: [finding("system.change", "renice", "recoverable")],
    "docker": _container,
    "podman": _container,
    "twine": lambda a, c, x: [_publish("twine")] if "upload" in a else [finding("package.read", "twine")],
}
