"""A pipeline as a Click main: SFT (a built model) -> GRPO -> a second GRPO stage from the
first one's export, on the smoke runtime.

    PYTHONPATH=src python examples/click_pipeline.py --version dev             # the plan
    PYTHONPATH=src python examples/click_pipeline.py --version dev --dry-run   # write YAMLs
    PYTHONPATH=src python examples/click_pipeline.py --version dev --run       # launch

main() returns only the terminal stage. Its model is `export_of(stage1)`, so launching it
launches stage 1 first (unless stage 1 finished with the same spec), exactly as
`./pants run experiments/countdown/chain:chain-grpo2` does for the BUILD version of this chain.
"""

from __future__ import annotations

import click

from rlaunch.experiment import export_of, rl_build_options
from rlaunch.spec import RunSpec, parse_spec

from click_experiment import countdown_run  # type: ignore[import-not-found]  # beside this file


@click.command()
@rl_build_options
@click.option("--steps", type=int, default=8, show_default=True, help="RL steps per stage.")
def main(version: str, steps: int) -> RunSpec:
    """Two GRPO stages on countdown; the second starts from the first one's export."""
    stage1 = countdown_run("countdown-click-stage1", version, steps=steps, sft_steps=300)
    stage2 = countdown_run("countdown-click-stage2", version, steps=steps, sft_steps=300)
    stage2["model"] = export_of(stage1)
    stage2["algorithm"]["learning_rate"] = 3e-4
    stage2["algorithm"]["kl"]["kl_loss_coef"] = 0.01
    return parse_spec(stage2, "examples/click_pipeline.py")


if __name__ == "__main__":
    main()
