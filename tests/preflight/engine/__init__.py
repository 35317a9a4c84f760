"""Tests of rlaunch.preflight.engine."""
