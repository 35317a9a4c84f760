from __future__ import annotations

from rlaunch_pants.origins import name_line

BUILD = '''role_plan(
    name="plan",
    strategy="fsdp",
)
rl_run_with_smoke(name="grpo", run_name="grpo-run")
_run("tp8", "a broken one")
rl_run(name="grpo-2", smoke_of=":grpo")
'''


def test_the_line_of_the_targets_name() -> None:
    assert name_line(BUILD, "plan") == 2
    assert name_line(BUILD, "grpo") == 5  # a macro given name=: its call
    assert name_line(BUILD, "tp8") == 6  # a helper given the name: the only literal


def test_no_line_when_it_is_not_unique_or_not_written() -> None:
    assert name_line(BUILD, "smoke") is None  # made by a macro: its name is nowhere here
    assert name_line("hf_model(repo_id='a')\nhf_model(repo_id='b')\n", "models") is None
    assert name_line('x(name="a")\ny(name="a")\n', "a") is None
