"""What ``git`` and ``gh`` commands do, on the four axes.

``git push`` writes to a remote others read, so it is public unless the
policy names the remote as the person's own; a forced push or a deleted
remote branch rewrites what others already have (irreversible, third party).
Local history changes are reversible or recoverable; commands that throw
away uncommitted work (``reset --hard``, ``clean -f``, ``checkout -- .``)
are irreversible. ``gh`` subcommands that comment, review, merge or create
write where others read and notify them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from exo_core.gate.axes import Axes, Finding
from exo_core.gate.scope import Scope

__all__ = ["classify_git", "classify_gh", "finding"]

_GIT_GLOBAL_WITH_ARG = frozenset({"--namespace", "--super-prefix", "--list-cmds"})
_GIT_READ = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "ls-files",
        "rev-parse",
        "describe",
        "shortlog",
        "grep",
        "reflog",
        "ls-remote",
        "cat-file",
        "show-ref",
        "for-each-ref",
        "whatchanged",
        "help",
        "version",
        "count-objects",
        "fsck",
        "check-ignore",
        "name-rev",
        "range-diff",
        "merge-base",
        "cherry",
        "rev-list",
        "ls-tree",
        "var",
        "request-pull",
        "format-patch",
        "archive",
        "bundle",
        "diff-tree",
        "diff-index",
    }
)
_GIT_LOCAL = frozenset(
    {
        "add",
        "commit",
        "merge",
        "cherry-pick",
        "revert",
        "mv",
        "init",
        "clone",
        "fetch",
        "stash",
        "apply",
        "am",
        "submodule",
        "worktree",
        "notes",
        "switch",
        "checkout",
        "restore",
        "tag",
        "branch",
        "remote",
        "config",
        "pull",
        "sparse-checkout",
        "lfs",
        "bisect",
        "rm",
        "mergetool",
        "difftool",
    }
)
_GIT_RECOVERABLE = frozenset(
    {"rebase", "reset", "gc", "prune", "update-ref", "filter-branch", "filter-repo", "replace", "repack"}
)


def finding(
    key: str,
    summary: str,
    reversibility: str = "none",
    exposure: str = "private",
    cost: str = "free",
    third_party: str = "none",
    *,
    reason: str = "",
    destination: str = "",
) -> Finding:
    """A :class:`Finding` from plain values (the rule tables read better this way)."""
    return Finding(key, Axes(reversibility, exposure, cost, third_party), summary, reason, destination)


def classify_git(argv: Sequence[str], scope: Scope, *, ctx: Any = None) -> list[Finding]:
    """Findings for one ``git …`` command.

    ``ctx`` (an :class:`exo_core.gate.targets.Ctx`) lets the rule judge the folders git works in and the
    scripts it runs (``rebase -x``, ``submodule foreach``); without it those parts ask.
    """
    args = list(argv[1:])
    hidden: list[Finding] = []
    where: list[str] = []
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        key, eq, value = opt.partition("=")
        if key == "-c" or opt.startswith("-c") and len(opt) > 2:
            if eq and key == "-c":
                setting = value
            elif opt != "-c":
                setting = opt[2:]
            elif args:
                setting = args.pop(0)
            else:
                setting = ""
            hidden += _risky_setting(*setting.partition("=")[::2], how="git -c")
        elif key == "--config-env":
            hidden.append(_exec(f"git --config-env {value}", "a setting taken from the environment"))
        elif key == "--exec-path" and eq:
            hidden.append(_exec("git --exec-path: git programs from another folder", "runs programs from that folder"))
        elif key in ("-C", "--git-dir", "--work-tree"):
            if eq:
                where.append(value)
            elif args:
                where.append(args.pop(0))
            else:
                where.append("")
        elif opt in _GIT_GLOBAL_WITH_ARG and args:
            args.pop(0)
    if not args:
        return hidden or [finding("git.read", "run git")]
    sub, rest = args[0], args[1:]
    found = _git_sub(sub, rest, scope, ctx)
    if any(_HELPER.match(a) for a in rest):
        hidden.append(_exec(f"git {sub} through a remote helper (::)", "a transport like ext:: runs a program"))
    for a in rest:
        runs_program = a.split("=", 1)[0] in ("--upload-pack", "--receive-pack", "--exec")
        if runs_program or a == "-u" and sub in ("clone", "fetch", "pull", "ls-remote"):
            hidden.append(_exec(f"git {sub} {a.split('=', 1)[0]}: runs a program", "git runs it in a shell"))
    if ctx is not None and any(f.axes.reversibility != "none" for f in found):
        for folder in where:
            if not ctx.inside(folder):
                hidden.append(
                    finding(
                        "file.write.outside",
                        f"git {sub} in {folder} (outside the workspace)",
                        "irreversible",
                        reason="changes a repository outside the workspace",
                    )
                )
    return hidden + found


def _git_sub(sub: str, rest: list[str], scope: Scope, ctx: Any) -> list[Finding]:
    flags = {a for a in rest if a.startswith("-")}
    runs = _git_runs(sub, rest, ctx)
    if runs is not None:
        return runs
    flags = {a for a in rest if a.startswith("-")}
    if sub == "push":
        return [_git_push(rest, scope)]
    if sub == "send-email":
        return [
            finding(
                "mail.send",
                "send patches by mail",
                "irreversible",
                "leaves",
                third_party="affects",
                reason="mail goes to other people",
            )
        ]
    if sub in _GIT_READ and not (sub == "reflog" and rest[:1] in (["expire"], ["delete"])):
        return [finding("git.read", f"git {sub}")]
    forced_clean = "--force" in flags or any(f[1:2] != "-" and "f" in f[1:] for f in flags)
    if sub == "reset" and "--hard" in flags or sub == "clean" and forced_clean:
        return [
            finding(
                "git.discard",
                f"git {sub}: discard uncommitted work",
                "irreversible",
                reason="uncommitted changes are not in any commit",
            )
        ]
    if sub == "clean":
        return [finding("git.read", "git clean (dry run)")]
    if sub in ("checkout", "restore") and _discards(sub, rest):
        return [
            finding(
                "git.discard",
                f"git {sub}: discard changes to files",
                "irreversible",
                reason="uncommitted changes are not in any commit",
            )
        ]
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        return [finding("git.read", f"git stash {rest[0]}")]
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return [finding("git.history", f"git stash {rest[0]}", "recoverable")]
    if sub == "branch" and flags & {"-d", "-D", "--delete", "-m", "-M", "-f", "--force"}:
        return [finding("git.history", "delete or rename a branch", "recoverable")]
    if sub == "tag" and flags & {"-d", "--delete", "-f"}:
        return [finding("git.history", "delete or move a tag", "recoverable")]
    if sub == "commit" and "--amend" in flags:
        return [finding("git.history", "amend the last commit", "recoverable")]
    if sub in _GIT_RECOVERABLE:
        return [finding("git.history", f"git {sub}: rewrite local history", "recoverable")]
    if sub == "config" and not flags & {"--get", "--list", "-l", "--get-all", "--get-regexp", "--show-origin"}:
        words = [a for a in rest if not a.startswith("-")]
        if words[:1] in (["get"], ["list"]):
            return [finding("git.read", "git config get")]
        if words[:1] in (["set"],):
            words = words[1:]
        risky: list[Finding] = []
        if words:
            setting_value = words[1] if len(words) > 1 else ""
            risky = _risky_setting(words[0], setting_value, how="git config")
        return risky or [finding("git.config", "change git settings", "recoverable")]
    if sub == "config":
        return [finding("git.read", "read git settings")]
    if sub in ("clone", "init") and any(a.startswith(("--template", "-c", "--config")) for a in rest):
        settings = [rest[k + 1] for k, a in enumerate(rest[:-1]) if a in ("-c", "--config")]
        settings += [a.split("=", 1)[1] for a in rest if a.startswith("--config=")]
        risky = [f for s in settings for f in _risky_setting(*s.partition("=")[::2], how=f"git {sub} -c")]
        if any(a.startswith("--template") for a in rest):
            risky.append(_exec(f"git {sub} --template: hooks from another folder", "a template installs git hooks"))
        if risky:
            return risky
    if sub in ("clone", "init", "worktree") and ctx is not None:
        words = [a for a in rest if not a.startswith("-")]
        target = _git_target(sub, words)
        if target:
            return [ctx.write_target(target, f"git {sub} into")]
    if sub in _GIT_LOCAL:
        return [finding("git.change", "commit changes" if sub == "commit" else f"git {sub}", "reversible")]
    if sub in ("credential", "credential-store", "credential-cache", "daemon", "instaweb", "web--browse"):
        return [_exec(f"git {sub}", "hands out credentials or serves the repository")]
    return [
        finding(
            "git.unknown",
            f"git {sub}",
            "irreversible",
            reason="not a git command the gate knows: an alias or a git-* program could run anything",
        )
    ]


_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
# Settings a person sets without thinking: none of them names a program git would run.
_SAFE_SETTING = re.compile(
    r"^(user\.|color\.|advice\.|i18n\.|column\.|log\.|format\.pretty$|pretty\.|pull\.|push\.default$|"
    r"push\.autosetupremote$|merge\.(ff|conflictstyle)$|rebase\.(autosquash|autostash|updaterefs)$|"
    r"init\.defaultbranch$|core\.(quotepath|autocrlf|safecrlf|filemode|abbrev|ignorecase|eol|whitespace|"
    r"compression|bigfilethreshold)$|commit\.(gpgsign|verbose|cleanup)$|tag\.(gpgsign|sort)$|branch\.|"
    r"remote\.[^.]+\.(url|pushurl|fetch|push|tagopt|prune)$|diff\.(renames|algorithm|colormoved|noprefix|"
    r"mnemonicprefix|context|indentheuristic)$|status\.|fetch\.(prune|prunetags|parallel)$|gc\.|maintenance\.auto$|"
    r"help\.autocorrect$|rerere\.|checkout\.|grep\.|blame\.|protocol\.version$|submodule\.recurse$)",
    re.IGNORECASE,
)


def _risky_setting(key: str, value: str, *, how: str) -> list[Finding]:
    lowered = key.lower()
    pager_off = lowered.startswith("pager.") and value.lower() in ("true", "false", "0", "1", "yes", "no", "on", "off")
    if pager_off or _SAFE_SETTING.match(lowered) and not value.startswith("!") and "::" not in value:
        return []
    return [_exec(f"{how} {key}: a setting that can run programs", "aliases, pagers, hooks and helpers run commands")]


def _exec(summary: str, reason: str) -> Finding:
    return finding("exec.hidden", summary, "irreversible", reason=reason)


def _git_target(sub: str, words: list[str]) -> str:
    if sub == "clone":
        return words[1] if len(words) > 1 else ""
    if sub == "init":
        return words[0] if words else ""
    return words[1] if words[:1] == ["add"] and len(words) > 1 else ""


def _git_runs(sub: str, rest: list[str], ctx: Any) -> list[Finding] | None:
    """Findings for the scripts a git subcommand runs (``rebase -x``, ``bisect run`` …), or ``None``."""
    scripts: list[str] = []
    for i, a in enumerate(rest):
        nxt = rest[i + 1] if i + 1 < len(rest) else ""
        key, eq, value = a.partition("=")
        if (
            sub == "rebase"
            and key in ("-x", "--exec")
            or sub == "filter-branch"
            and key.endswith("-filter")
            or sub == "difftool"
            and key in ("-x", "--extcmd")
        ):
            scripts.append(value if eq else nxt)
        elif sub == "grep" and (a.startswith("-O") or key == "--open-files-in-pager"):
            return [_exec("git grep -O: opens a program", "the pager it names runs")]
    if sub == "submodule" and rest[:1] == ["foreach"]:
        scripts.append(" ".join(a for a in rest[1:] if a != "--recursive"))
    if sub == "bisect" and rest[:1] == ["run"]:
        scripts.append(shlex.join(rest[1:]))
    if not scripts:
        return None
    if ctx is None or ctx.script is None:
        return [_exec(f"git {sub} runs a command", "git runs it in a shell")]
    out = [finding("git.history", f"git {sub}", "recoverable")]
    for script in scripts:
        out += ctx.script(script, ctx.child())
    return out


def _discards(sub: str, rest: list[str]) -> bool:
    if "--" in rest:
        return sub == "checkout" or "--staged" not in rest
    if sub == "restore":
        return "--staged" not in rest or "--worktree" in rest
    # checkout: "-f", or "." / paths without a branch switch flag
    return "-f" in rest or "--force" in rest or "." in rest


def _git_push(rest: list[str], scope: Scope) -> Finding:
    positional: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-o", "--push-option", "--repo", "--receive-pack", "--exec"):
            i += 2
            continue
        if a.startswith("--repo="):
            positional.insert(0, a.split("=", 1)[1])
        elif a.startswith("-"):
            flags.add(a.split("=", 1)[0])
        else:
            positional.append(a)
        i += 1
    remote = positional[0] if positional else "origin"
    refs = positional[1:]
    what = " ".join(r.lstrip("+") for r in refs) or "branch"
    if flags & {"-n", "--dry-run"}:
        return finding("git.read", f"dry run of a push to {remote}")
    exposure = "private" if scope.private_remote(remote) else "public"
    forced = bool(flags & {"-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror"}) or any(
        r.startswith("+") for r in refs
    )
    deleted = bool(flags & {"-d", "--delete", "--prune"}) or any(r.startswith(":") for r in refs)
    if forced or deleted:
        verb = "force-push" if forced else "delete"
        return finding(
            f"git.push.{'force' if forced else 'delete'}",
            f"{verb} {what} on {remote}",
            "irreversible",
            exposure,
            third_party="none" if exposure == "private" else "affects",
            reason="rewrites history others may already have",
            destination=remote,
        )
    return finding(
        "git.push",
        f"push {what} to {remote}",
        "recoverable",
        exposure,
        reason="a shared remote is read by others" if exposure == "public" else "the person's own remote",
        destination=remote,
    )


_GH_READ_VERBS = frozenset(
    {
        "list",
        "view",
        "status",
        "diff",
        "checks",
        "search",
        "browse",
        "watch",
        "download",
        "clone",
        "ls",
        "logs",
        "token",
    }
)
_GH_NOTIFY_VERBS = frozenset({"comment", "review", "merge", "delete", "lock", "transfer", "archive"})


def classify_gh(argv: Sequence[str], scope: Scope) -> list[Finding]:
    """Findings for one ``gh …`` command (GitHub's CLI)."""
    args = [a for a in argv[1:] if a not in ("-R", "--repo")]
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return [finding("gh.read", "gh")]
    group, verb = words[0], (words[1] if len(words) > 1 else "")
    if group == "api":
        return [_gh_api(args)]
    if group in ("auth", "config", "alias", "extension", "completion", "help", "codespace"):
        return [finding("gh.settings", f"gh {group} {verb}".strip(), "recoverable")]
    if verb in _GH_READ_VERBS or group in ("search", "browse", "status"):
        return [finding("gh.read", f"gh {group} {verb}".strip())]
    where = f"{group} {verb}".strip()
    if group == "release" and verb in ("create", "upload"):
        return [
            finding(
                "package.publish",
                "publish a release",
                "irreversible",
                "public",
                third_party="affects",
                reason="a published release is downloaded by others",
            )
        ]
    if verb in _GH_NOTIFY_VERBS:
        return [
            finding(
                f"gh.{group}.{verb}",
                f"gh {where}: write where others read",
                "irreversible",
                "public",
                third_party="affects",
                reason="others are notified and read it at once",
            )
        ]
    if group in ("pr", "issue", "repo", "release", "gist", "label", "project", "discussion") or group == "run":
        exposure = "leaves" if group in ("run", "workflow", "secret", "variable") else "public"
        third = "affects" if group in ("pr", "issue", "discussion") else "none"
        return [
            finding(
                f"gh.{group}.write",
                f"gh {where}",
                "recoverable",
                exposure,
                third_party=third,
                reason="changes what others see on GitHub",
            )
        ]
    return [finding(f"gh.{group}.write", f"gh {where}", "recoverable", "leaves", reason="a GitHub change")]


def _gh_api(args: list[str]) -> Finding:
    method = "GET"
    for i, a in enumerate(args):
        if a in ("-X", "--method") and i + 1 < len(args):
            method = args[i + 1].upper()
        elif a.startswith("--method="):
            method = a.split("=", 1)[1].upper()
        elif a in ("-f", "-F", "--field", "--raw-field", "--input") and method == "GET":
            method = "POST"
    if method == "GET":
        return finding("gh.read", "read from the GitHub API")
    return finding(
        "gh.api.write",
        f"{method} to the GitHub API",
        "irreversible",
        "public",
        third_party="affects",
        reason="a write through the API may post, merge or delete",
    )
