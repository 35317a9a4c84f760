"""Tests of rlaunch.preflight.rules."""
