"""RL runtimes that consume a launch YAML.

`catalog` describes what each runtime profile offers (entrypoints, strategies, rollout backends,
fixes by release) so that preflight can prove a pin before anything runs. The runtimes
themselves live beside it (`smoke/`: our CPU runtime).
"""
