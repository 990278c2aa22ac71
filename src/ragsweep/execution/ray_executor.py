"""A run's work as Ray tasks: parse tasks (one per document the parse cache lacks,
:mod:`~ragsweep.execution.parse_tasks`), embed tasks (:mod:`~ragsweep.execution.embed_tasks`), and
retrieve tasks, each building its index group's DocumentStore and answering a shard of cases.

A retrieve task runs :func:`~ragsweep.pipeline.retrieval.retrieve` on a worker; its DocumentStore comes from
the content-keyed caches (parse, embeddings, served lists) under ``RAGSWEEP_CACHE_DIR``, which the
driver passes to every worker as an absolute path: on a cluster of several machines it must be a
path all nodes see. Served lists do not depend on which shard asked for them
(:mod:`ragsweep.pipeline.stable_order`), and the shards come back in the cases' order, so a run
on Ray gives the numbers of a run in one process. A worker that dies mid-task is replaced and
its task run again (``max_retries``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from ragsweep.core.cache_files import default_cache_dir
from ragsweep.core.reachability import unreachable
from ragsweep.datasets.schema import Case
from ragsweep.execution.base import (
    CONFIG_FAILURES,
    ConfigRef,
    EmbedTask,
    EmbedTaskInfo,
    Executor,
    ExecutorError,
    ExecutorInfo,
    IndexWork,
    RetrieveTask,
    RetrieveTaskInfo,
    TaskRecord,
)
from ragsweep.execution.parse_tasks import ParseDispatch
from ragsweep.execution.registry import ExecutorSettings, register_executor
from ragsweep.execution.shards import merge, split
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch
from ragsweep.pipeline.retrieval import Retrieved, retrieve

if TYPE_CHECKING:
    from ray import ObjectRef

MAX_RETRIES = 3  # a task whose worker process died is run again this many times
FORWARDED_PREFIXES = ("RAGSWEEP_", "PATHWAY_")  # the knobs a worker must see as the driver does
_T = TypeVar("_T")


def worker_env() -> dict[str, str]:
    """What every worker's environment gets from the driver: the cache dir (absolute) and the knobs."""
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}
    env["RAGSWEEP_CACHE_DIR"] = str(default_cache_dir().resolve())
    return env


def retrieve_shard(
    ref: ConfigRef, corpus: Corpus, cases: list[Case], ks: list[int], fresh: bool, *after: EmbedTaskInfo
) -> tuple[Retrieved, RetrieveTaskInfo]:
    """A task: one index group's store asked for a shard of cases (on a worker). Returns the
    :class:`Retrieved` and the worker's pid and seconds (the per-task times a benchmark reads).
    ``after``: the embed tasks' results, which Ray waits for before it starts this task."""
    started = time.perf_counter()
    retrieved = retrieve(ref.load(), corpus, cases, ks, progress=False, fresh=fresh)
    seconds = time.perf_counter() - started
    split, embed = retrieved.timings["split"], retrieved.timings["embed"]
    return retrieved, {"pid": os.getpid(), "cases": len(cases), "seconds": seconds, "split": split, "embed": embed}


def unreachable_address(address: str) -> str | None:
    """Why nothing answers at a Ray address (``host:port``, ``ray://host:port``; ``auto`` and ``local``
    are Ray's to find): its host does not resolve or nothing listens at its port. None when a connection
    opens, or the address is not a host and port."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return unreachable(host.strip("[]"), int(port))


def wants_gpu(config: PipelineConfig, cluster_gpus: float) -> bool:
    """An index is embedded on a GPU when its embedder may use one and the cluster has one."""
    device = config.variables.embedder_device or "auto"
    return cluster_gpus > 0 and (device == "auto" or device.startswith("cuda"))


class RayExecutor(Executor):
    """Tasks on the Ray cluster at ``address`` (None: a local one started for this run)."""

    name = "ray"

    def __init__(self, owns_connection: bool):
        import ray

        self._ray = ray
        self._owns = owns_connection
        self._remote = ray.remote(retrieve_shard)
        self._corpus: tuple[str, ObjectRef[Corpus]] | None = None  # the corpus in the object store, by content hash
        # (embedder, text) -> the embed task embedding it
        self._embedding: dict[tuple[str, str], ObjectRef[EmbedTaskInfo]] = {}
        self._resources: dict[str, float] = {}  # the cluster's CPUs, GPUs, memory when the run ended
        self.tasks: list[TaskRecord] = []  # every task's stage, pid and seconds, in the order they came back
        # a parse task per document the parse cache lacks
        self.dispatch: Dispatch = ParseDispatch(ray, MAX_RETRIES, self.tasks)

    @classmethod
    def connect(cls, address: str | None) -> "RayExecutor":
        try:
            import ray
        except ImportError:
            raise ExecutorError("--executor ray: Ray is not installed (pip install 'ragsweep[ray]')") from None
        if ray.is_initialized():  # a caller (a test, a notebook) already connected: keep its connection
            return cls(owns_connection=False)
        if address is not None and (reason := unreachable_address(address)) is not None:  # not Ray's minutes of retries
            raise ExecutorError(f"--ray-address {address}: cannot connect to a Ray cluster: {reason}")
        try:
            ray.init(
                address=address,
                runtime_env={"env_vars": worker_env()},
                log_to_driver=False,
                include_dashboard=False if address is None else None,  # a local cluster: no dashboard; else Ray's
            )
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ExecutorError(f"--ray-address {address}: cannot connect to a Ray cluster: {err}") from None
        return cls(owns_connection=True)

    def close(self) -> None:
        self._resources = self._cluster_resources()
        if self._owns:
            self._ray.shutdown()

    def describe(self) -> ExecutorInfo:
        resources = self._resources or (self._cluster_resources() if self._ray.is_initialized() else {})
        return {"name": self.name, "resources": resources, "tasks": self.tasks}

    def _cluster_resources(self) -> dict[str, float]:
        """The cluster's CPUs, GPUs, memory... (Ray's function carries no annotations)."""
        resources: dict[str, float] = self._ray.cluster_resources()  # type: ignore[no-untyped-call]
        return resources

    def _resource(self, name: str) -> float:
        resources = self._cluster_resources()
        return float(resources[name]) if name in resources else 0.0

    def workers(self) -> int:
        return max(1, int(self._resource("CPU")))

    def submit(self, work: IndexWork) -> Callable[[], Retrieved]:
        """The group's tasks submitted now (its shards wait on Ray for the embed tasks they need);
        the call returned waits for them and merges the shards."""
        config, corpus, cases, ks, fresh = work.config, work.corpus, work.cases, work.ks, work.fresh
        ref = ConfigRef.of(config)
        embeds, after = self._embed_ahead(ref, config, corpus)
        shards = split(list(cases), self.workers())
        task = self._remote.options(num_cpus=1, max_retries=MAX_RETRIES)
        corpus_ref = self._corpus_ref(corpus)
        refs = [task.remote(ref, corpus_ref, shard, sorted(set(ks)), fresh, *after) for shard in shards]
        print(f"ray: {len(cases)} case(s) in {len(shards)} task(s)", file=sys.stderr)

        def gather() -> Retrieved:
            self.tasks.extend(_embed_record(info) for info in self._get(embeds))
            outcomes = self._get(refs)
            self.tasks.extend(_retrieve_record(info) for _, info in outcomes)
            return merge([c.id for c in cases], [part for part, _ in outcomes])

        return gather

    def _embed_ahead(
        self, ref: ConfigRef, config: PipelineConfig, corpus: Corpus
    ) -> tuple[list[ObjectRef[EmbedTaskInfo]], list[ObjectRef[EmbedTaskInfo]]]:
        """The group's chunk texts the shared cache lacks, embedded once, one batch per worker (a GPU
        each when the embedder may use one and the cluster has one). Returns this group's new embed tasks,
        and every embed task its shards must wait for (a text an earlier group's task is embedding is
        not embedded twice)."""
        # deferred: the embedding cache imports numpy, which a run served from the caches never needs
        from ragsweep.execution.embed_tasks import embed_batch, texts_to_embed

        embedder_id, missing = texts_to_embed(config, corpus)
        known = [self._embedding[(embedder_id, t)] for t in missing if (embedder_id, t) in self._embedding]
        earlier = list({id(r): r for r in known}.values())
        missing = [t for t in missing if (embedder_id, t) not in self._embedding]
        if not missing:
            return [], earlier
        gpu = wants_gpu(config, self._resource("GPU"))
        n_tasks = max(1, int(self._resource("GPU"))) if gpu else self.workers()
        task = self._ray.remote(embed_batch).options(num_cpus=1, num_gpus=1 if gpu else 0, max_retries=MAX_RETRIES)
        batches = split(missing, n_tasks)
        print(f"ray: {len(missing)} text(s) to embed in {len(batches)} task(s){' (1 GPU each)' if gpu else ''}",
              file=sys.stderr)  # fmt: skip
        refs = [task.remote(ref, b) for b in batches]
        self._embedding.update({(embedder_id, t): r for r, b in zip(refs, batches) for t in b})
        return refs, [*refs, *earlier]

    def _get(self, refs: list[ObjectRef[_T]]) -> list[_T]:
        try:
            fetch = self._ray.get  # the object store's fetch, not a mapping's lookup
            return fetch(refs)
        except self._ray.exceptions.RayTaskError as err:  # raised in a task: its own message, not Ray's trace
            if isinstance(
                err.cause, CONFIG_FAILURES
            ):  # a component's own one line: a sweep lists its configuration failed
                raise err.cause from None
            raise ExecutorError(f"--executor ray: a task failed: {type(err.cause).__name__}: {err.cause}") from None

    def _corpus_ref(self, corpus: Corpus) -> ObjectRef[Corpus]:
        """The corpus put once into the object store (a sweep asks for every index group with it)."""
        key = corpus.content_hash
        if self._corpus is None or self._corpus[0] != key:
            self._corpus = (key, self._ray.put(corpus))
        return self._corpus[1]


def _embed_record(info: EmbedTaskInfo) -> EmbedTask:
    return {"stage": "embed", **info}


def _retrieve_record(info: RetrieveTaskInfo) -> RetrieveTask:
    return {"stage": "retrieve", **info}


@contextmanager
def open_ray(settings: ExecutorSettings) -> Iterator[Executor]:
    """The cluster at ``--ray-address`` (none: a local one for this run); a connection this run opened is
    closed when it ends."""
    executor = RayExecutor.connect(settings.ray_address)
    try:
        yield executor
    finally:
        executor.close()


register_executor("ray", open_ray, settings=("ray_address",))
