"""`dry-run`: write the launch YAML and say what would run; submit nothing.

`rlaunch launch` treats this executor (and `--dry-run` with any executor) as a dry run: nothing is
written to the ledger, so a dry run never makes a calendar version "launched".
The methods below exist so that the executor honours the plugin interface when called directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from rlaunch.clock import utc_now
from rlaunch.executors.base import Executor, Submission, entrypoint_argv, shell_command
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.status import AttemptStatus


class DryRunExecutor(Executor):
    name = "dry-run"

    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        argv = entrypoint_argv(launch, str(Path(launch_yaml_path).resolve()))
        names = launch.execution.env
        return [
            "executor: dry-run (nothing is submitted)",
            f"entrypoint: {shell_command(argv)}",
            "credentials forwarded by name: " + (", ".join(names) if names else "none"),
        ]

    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        for line in self.describe(launch_yaml_path, launch):
            self.options.say(line)
        return Submission(
            executor=self.name,
            submission_id=f"dry-run-{attempt_id}",
            address=None,
            attempt_id=attempt_id,
            submitted_at=utc_now(),
            entrypoint=entrypoint_argv(launch, str(Path(launch_yaml_path).resolve())),
        )

    def status(self, submission: Submission) -> AttemptStatus:
        return AttemptStatus.SUCCEEDED

    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        yield f"dry run {submission.submission_id}: nothing ran\n"

    def stop(self, submission: Submission) -> None:
        return None
