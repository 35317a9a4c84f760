"""Tests of rlaunch.preflight.launch_checks."""
