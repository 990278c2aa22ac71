"""Answering a question from retrieved chunks: extractive (offline) or by an LLM."""
