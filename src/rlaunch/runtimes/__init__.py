"""RL runtimes that consume a launch YAML.

`smoke/` is our CPU runtime; `skyrl` hands the launch to SkyRL. What each runtime profile offers
(entrypoints, strategies, fixes by release) is in `rlaunch.spec.catalog`, where preflight and the
executors read it too.
"""
