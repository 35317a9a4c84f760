"""Tests of the smoke runtime (a package, so that its Ray head is torn down after it)."""
