"""RunSpec -> launch YAML: the one boundary between rlaunch and the RL runtime.

`render_launch` writes the document described in docs/launch-yaml.md; `load_launch` reads it
back as a typed `LaunchDocument`, which is how executors, adapters and runtimes see it.
"""

from rlaunch.render.document import (
    INPUT_SLOTS,
    LAUNCH_SCHEMA_VERSION,
    SECTIONS,
    RenderError,
    input_entry,
    launch_document,
)
from rlaunch.render.launchdoc import LaunchDocument, LaunchError
from rlaunch.render.output import (
    dumps_launch,
    load_launch,
    loads_launch,
    render_launch,
    render_to_file,
    write_atomically,
)
from rlaunch.render.skyrl import skyrl_cli_args, skyrl_subtree

__all__ = [
    "INPUT_SLOTS", "LAUNCH_SCHEMA_VERSION", "LaunchDocument", "LaunchError", "RenderError",
    "SECTIONS", "dumps_launch", "input_entry", "launch_document", "load_launch", "loads_launch",
    "render_launch", "render_to_file", "skyrl_cli_args", "skyrl_subtree", "write_atomically",
]
