"""Concurrent summarization of LLM agent chains under byte budgets."""
