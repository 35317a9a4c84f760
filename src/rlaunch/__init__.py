"""rlaunch: RL post-training experiments declared as build targets.

Models, datasets, tokenizers, the RL runtime, the role plan and the placement are pinned specs;
preflight proves a launch sound before any GPU is paid for, and one launch YAML is rendered and
submitted through an executor plugin. This package is the library: it never imports Pants.
"""

from rlaunch import compiled

__version__ = "0.1.0"

compiled.install()
