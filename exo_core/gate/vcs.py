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

from collections.abc import Sequence

from exo_core.gate.axes import Axes, Finding
from exo_core.gate.scope import Scope

__all__ = ["classify_git", "classify_gh", "finding"]

_GIT_GLOBAL_WITH_ARG = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
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


def classify_git(argv: Sequence[str], scope: Scope) -> list[Finding]:
    """Findings for one ``git …`` command."""
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in _GIT_GLOBAL_WITH_ARG and args:
            args.pop(0)
    if not args:
        return [finding("git.read", "run git")]
    sub, rest = args[0], args[1:]
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
    if sub == "config" and not flags & {"--get", "--list", "-l", "--get-all"}:
        return [finding("git.config", "change git settings", "recoverable")]
    if sub in _GIT_LOCAL:
        return [finding("git.change", "commit changes" if sub == "commit" else f"git {sub}", "reversible")]
    return [finding("git.other", f"git {sub}", "recoverable", reason="a git command the gate does not know")]


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
