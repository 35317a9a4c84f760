"""Tiny models for the smoke runtime: a char tokenizer and a small causal transformer."""
