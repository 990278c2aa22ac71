"""ragsweep: an in-process Pathway RAG pipeline and its evaluator."""

__version__ = "0.1.0"
