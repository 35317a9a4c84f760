"""Pants backend for rlaunch: RL experiments as build targets.

A thin adapter, CPython 3.9 compatible: it turns targets into a JSON RunSpec and runs the rlaunch
library in Pants processes on the project runtime. It never imports pydantic, ray, torch or rlaunch.
"""
