"""Settings of an OpenAI-compatible LLM endpoint (answerer, judge, ragas metrics).

Values come from the pipeline config (``llm_*`` scalars or an ``llm:`` mapping,
see :meth:`LLMSettings.from_mapping`) and fall back to the usual environment variables:

- ``base_url``: ``OPENAI_BASE_URL`` (else ``https://api.openai.com/v1``)
- ``api_key``:  the variable named by ``api_key_env`` (default ``OPENAI_API_KEY``)
- ``model``:    ``RAGSWEEP_LLM_MODEL``, ``OPENAI_MODEL``, ``LOCAL_LLM_MODEL`` (else ``gpt-4o-mini``)

The api key is a :class:`pydantic.SecretStr`: it never shows in ``repr``,
``model_dump`` of :meth:`LLMSettings.public_dict` (the one to write to manifests),
logs or cache keys. Every settings object registers its key with
:mod:`ragsweep.llm.redact`, which masks it in every log record of the process
(libraries echoing an endpoint's error body included).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SecretStr, field_validator

from ragsweep.core.cache_files import default_cache_dir
from ragsweep.core.keys import digest
from ragsweep.core.knob import Knob, Stage, knobs_of_model
from ragsweep.llm.redact import register_secret

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
MODEL_ENV_VARS = ("RAGSWEEP_LLM_MODEL", "OPENAI_MODEL", "LOCAL_LLM_MODEL")


def default_llm_cache_dir() -> str:
    """Beside the parse and embedding caches (``RAGSWEEP_CACHE_DIR``), not in the working directory."""
    return str(default_cache_dir() / "llm")


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = DEFAULT_BASE_URL
    model: str = Field(default=DEFAULT_MODEL, min_length=1)
    api_key: SecretStr = Field(default=SecretStr(""), repr=False)
    api_key_env: str = Field(default="OPENAI_API_KEY", min_length=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    timeout: float = Field(default=60.0, gt=0)  # seconds, per attempt
    max_retries: int = Field(default=3, ge=0)  # openai client: backoff on 408/409/429/5xx/timeouts
    # the most calls in flight; fewer while the endpoint times out or rate-limits (ragsweep.llm.endpoint)
    concurrency: int = Field(default=4, ge=1, le=64)
    # the most bytes of a chat reply read; a bigger one is that call's error, never cached
    max_reply_bytes: int = Field(default=1_000_000, ge=1_000)
    cache: bool = True
    cache_dir: str = Field(default_factory=default_llm_cache_dir, min_length=1)
    # USD per 1,000 tokens, for the costs shown; None: no price set (a cost is then "no price set", never $0)
    price_per_1k_prompt: float | None = Field(default=None, ge=0.0)
    price_per_1k_completion: float | None = Field(default=None, ge=0.0)
    json_mode: bool = True  # send response_format=json_object for structured replies (judge)
    # embeddings for ragas AnswerRelevancy / AnswerCorrectness similarity:
    # "minilm" = offline all-MiniLM-L6-v2; "endpoint" = the endpoint's /embeddings with embedding_model
    embeddings: Literal["minilm", "endpoint"] = "minilm"
    embedding_model: str = Field(default="text-embedding-3-small", min_length=1)

    def model_post_init(self, __context: Any) -> None:
        register_secret(self.api_key.get_secret_value())

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

    # ------------------------------------------------------------ construction
    @classmethod
    def from_mapping(
        cls,
        values: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        prefix: str = "llm_",
    ) -> "LLMSettings":
        """Build from a pipeline-config mapping, with the environment as fallback.

        With the default ``prefix="llm_"`` only ``llm_*`` keys are read (``llm_model``,
        ``llm_base_url``, ...), plus a nested ``llm:`` mapping of plain field names, so a
        whole ``PipelineConfig.scalars()`` can be passed without the splitter's
        ``max_tokens`` or the embedder's ``model`` leaking in. ``prefix=""`` reads plain
        field names (a dedicated dict). Unknown keys are ignored; ``None`` values too.
        """
        env = os.environ if env is None else env
        fields = set(cls.model_fields)
        values = values or {}
        data: dict[str, object] = {}
        match values:
            case {"llm": Mapping() as nested} if prefix:
                data.update({k: v for k, v in nested.items() if k in fields and v is not None})
        for key, value in values.items():
            if value is None or not isinstance(key, str) or not key.startswith(prefix):
                continue
            name = key[len(prefix) :]
            if name in fields:
                data[name] = value
        if "base_url" not in data and env.get("OPENAI_BASE_URL"):
            data["base_url"] = env["OPENAI_BASE_URL"]
        if "model" not in data:
            for var in MODEL_ENV_VARS:
                if env.get(var):
                    data["model"] = env[var]
                    break
        settings = cls.model_validate(data)
        if settings.api_key.get_secret_value():
            return settings
        return settings.with_updates(api_key=env.get(settings.api_key_env, ""))

    # ------------------------------------------------------------ views
    @property
    def priced(self) -> bool:
        """Whether a price is set (``llm_price_per_1k_prompt`` or ``llm_price_per_1k_completion``)."""
        return self.price_per_1k_prompt is not None or self.price_per_1k_completion is not None

    def api_key_value(self) -> str:
        """The key for the client only. Endpoints without auth get a placeholder."""
        return self.api_key.get_secret_value() or "no-key"

    def public_dict(self) -> dict[str, JsonValue]:
        """Everything but the secret, for manifests and reports."""
        out = self.model_dump(exclude={"api_key"})
        out["api_key_set"] = bool(self.api_key.get_secret_value())
        return out

    def fingerprint(self) -> str:
        """Hash of what changes a reply (endpoint, model, parameters); no secret."""
        keep = {k: getattr(self, k) for k in ("base_url", "model", "temperature", "max_tokens")}
        return digest(json.dumps(keep, sort_keys=True), 16)

    def cache_path(self) -> Path:
        return Path(self.cache_dir) / "responses.sqlite"

    def with_updates(self, **changes: object) -> "LLMSettings":
        # validated (model_copy would not: a str api_key, concurrency=0), and the new key registered
        return type(self).model_validate({**self.model_dump(), **changes})

    def __str__(self) -> str:  # never the key
        return f"LLMSettings(model={self.model!r}, base_url={self.base_url!r})"


# ------------------------------------------------------------ the llm_* knobs
def _check_url(value: str | None) -> str | None:
    if value is not None and not re.match(r"^https?://\S+$", value):
        raise ValueError("must be an http:// or https:// URL, or null")
    return value


# the line a bad ``$llm_<field>`` gets; its type, bounds and default are the field's own
_KNOB_MESSAGES = {
    "base_url": "must be an http:// or https:// URL, or null",
    "model": "must be a non-empty string, or null",
    "api_key": "must be a string, or null",
    "api_key_env": "must be the name of an environment variable, or null",
    "temperature": "must be a number from 0 to 2, or null",
    "max_tokens": "must be an integer >= 1, or null",
    "timeout": "must be a number of seconds > 0, or null",
    "max_retries": "must be an integer >= 0, or null",
    "concurrency": "must be an integer from 1 to 64, or null",
    "max_reply_bytes": "must be an integer >= 1000 (bytes), or null",
    "cache": "must be true or false, or null",
    "cache_dir": "must be a non-empty path, or null",
    "price_per_1k_prompt": "must be a number >= 0, or null",
    "price_per_1k_completion": "must be a number >= 0, or null",
    "json_mode": "must be true or false, or null",
    "embeddings": "must be 'minilm' or 'endpoint', or null",
    "embedding_model": "must be a non-empty string, or null",
}
# what each changes: the answers and the LLM metrics, how the calls go, or only the costs shown
_RUN_ONLY = ("api_key", "api_key_env", "timeout", "max_retries", "concurrency", "max_reply_bytes", "cache", "cache_dir")
_KNOB_STAGES: dict[str, Stage] = {name: "run" if name in _RUN_ONLY else "answer" for name in LLMSettings.model_fields}
_KNOB_STAGES |= {"price_per_1k_prompt": "cost", "price_per_1k_completion": "cost"}

KNOBS: tuple[Knob, ...] = knobs_of_model(
    LLMSettings, "llm_", _KNOB_MESSAGES, _KNOB_STAGES, base_url={"check": _check_url}, api_key={"default": None}
)
