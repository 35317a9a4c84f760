"""Issue 13 through the real ./pants: dependency cycles are named instead of hanging, empty
references and bad macro arguments get a message instead of a Python error, `package` refuses
what `check` refuses, and a small BUILD fuzz never produces a traceback or a hang."""

from __future__ import annotations

import ast
import collections
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pants_scratch import ScratchRepo

BUILD = "experiments/countdown/BUILD"
# Pants is given this long per command; a cycle used to hang it forever.
BOUNDED = 300
TRIED: collections.Counter = collections.Counter()


@pytest.fixture(scope="module")
def scratch(scratch_copy: ScratchRepo, repo_root: Path) -> Iterator[ScratchRepo]:
    """The session's scratch copy (its pantsd shared with other modules) with the broken
    recipes of tests/fixtures/broken added as broken/, removed again at the end."""
    repo = scratch_copy.view()
    shutil.copytree(repo_root / "tests" / "fixtures" / "broken", repo.root / "broken")
    repo.commit_all("the broken recipes added")
    try:
        yield repo
    finally:
        shutil.rmtree(repo.root / "broken")
        repo.commit_all("the broken recipes removed")


def pants(scratch: ScratchRepo, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [str(scratch.root / "pants"), *args], cwd=scratch.root, env=scratch.env,
        capture_output=True, text=True, timeout=BOUNDED, check=False,
    )
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def edited(scratch: ScratchRepo, *edits: tuple[str, str]) -> str:
    original = (scratch.root / BUILD).read_text()
    text = original
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    scratch.write(BUILD, text)
    return original


def check_with(scratch: ScratchRepo, *edits: tuple[str, str]) -> tuple[int, str]:
    original = edited(scratch, *edits)
    try:
        return pants(scratch, "check", "experiments/countdown:launch")
    finally:
        scratch.write(BUILD, original)


SFT_DEPS = 'deps={"data": ":countdown_data", "tokenizer": ":char_tokenizer"}'


def test_a_target_that_depends_on_itself_is_named(scratch: ScratchRepo) -> None:
    code, output = check_with(
        scratch, (SFT_DEPS, 'deps={"data": ":sft_model", "tokenizer": ":char_tokenizer"}')
    )
    assert code == 1
    assert (
        "InvalidFieldException: Dependency cycle in the deps of built_artifact targets: "
        "experiments/countdown:sft_model -> experiments/countdown:sft_model. An artifact cannot "
        "be built from itself; remove the dep that closes the cycle (in "
        "experiments/countdown/BUILD)."
    ) in output


def test_a_two_target_cycle_is_named_a_b_a(scratch: ScratchRepo) -> None:
    code, output = check_with(
        scratch,
        ('    kind="tokenizer",\n', '    kind="tokenizer",\n    deps={"m": ":sft_model"},\n'),
    )
    assert code == 1
    # The cycle is named from the target whose deps were read first, so either rotation.
    sft, tokenizer = "experiments/countdown:sft_model", "experiments/countdown:char_tokenizer"
    assert any(
        f"Dependency cycle in the deps of built_artifact targets: {a} -> {b} -> {a}. An "
        f"artifact cannot be built from itself; remove the dep that closes the cycle (in "
        f"experiments/countdown/BUILD)." in output
        for a, b in ((sft, tokenizer), (tokenizer, sft))
    ), output[-1500:]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('    runtime="experiments/runtimes:rlaunch-smoke-0.1.0",\n', '    runtime="",\n'),
         "The 'runtime' field in target experiments/countdown:launch is an empty string. Give "
         "the address of a rl_runtime target (e.g. ':name'), or leave the field out where it "
         "is optional."),
        (('    eval_data=":countdown_data",\n', '    eval_data="",\n'),
         "The 'eval_data' field in target experiments/countdown:launch is an empty string."),
        (("    smoke_steps=2,\n", "    smoke_steps='1',\n"),
         "rl_run_with_smoke(name='launch'): smoke_steps must be a whole number of training "
         "steps >= 1, got '1'"),
        (("    algorithm=grpo_algorithm(", "    algorithm=None, _unused=grpo_algorithm("),
         "rl_run_with_smoke(name='launch'): algorithm must be a dict such as "
         "grpo_algorithm(...), got None"),
        (("num_attention_heads=4,", "num_attention_heads=10**30,"),
         "model.facts.num_attention_heads: Value error, integers must lie within +-2**53 (got "
         "1000000000000000000000000000000) in experiments/countdown/BUILD:37 "
         "(experiments/countdown:sft_model): facts.num_attention_heads"),
        # rl_sweep_runs checked none of its arguments: "%d steps" % '2' was a bare TypeError.
        (('[0.001, 0.01]},\n    smoke_steps=2,', '[0.001, 0.01]},\n    smoke_steps="2",'),
         "rl_sweep_runs(name='sweep'): smoke_steps must be a whole number of training steps "
         ">= 1, got '2'"),
        # None + "-smoke" was a bare TypeError; a sweep made runs named None-lr0.0003-...
        (('run_name="countdown-grpo"', "run_name=None"),
         "rl_run_with_smoke(name='launch'): run_name must be a non-empty string, got None"),
        # An unknown builder passed check; the launch stopped at building the artifact.
        (('builder="countdown_data"', 'builder="2"'),
         "'2' of countdown_data@2026.11.30 is not a registered builder (adopt, char_tokenizer, "
         "countdown_data, greedy_eval, hf_snapshot, prompt_parquet, sft_model)"),
        # A name longer than a path segment passed check; the launch could not make its root.
        (('run_name="countdown-grpo"', 'run_name="x" * 5000'),
         f"error PATH001 name: name {'x' * 60!r}... is not a safe path segment: it is 5000 "
         "characters long; a path segment holds at most 255"),
        # The smoke runtime refused another task only once launched (in its load_config).
        (('grpo_algorithm(environment="countdown"', 'grpo_algorithm(environment="2"'),
         "error RT004 algorithm.environment, runtime.profile: algorithm.environment '2': "
         "runtime profile smoke has no task 2 (it has countdown)"),
        # Python's own "missing 1 required keyword-only argument" named no target.
        (("    smoke_steps=2,\n    **_COUNTDOWN,\n)\n\n\n# A sweep",
          "    **_COUNTDOWN,\n)\n\n\n# A sweep"),
         "rl_run_with_smoke(name='launch'): missing argument smoke_steps: give smoke_steps=..."),
        # rl_run got smoke_of twice: "got multiple values for keyword argument 'smoke_of'".
        (("    smoke_steps=2,\n    **_COUNTDOWN,\n)\n\n\n# A sweep",
          "    smoke_steps=2,\n    smoke_of=':x',\n    **_COUNTDOWN,\n)\n\n\n# A sweep"),
         "rl_run_with_smoke(name='launch'): smoke_of is set by the macro (the smoke :smoke is "
         "the smoke of :launch); remove smoke_of=':x'"),
        (("    algorithm=grpo_algorithm(", "    algorithm='dict', _unused=grpo_algorithm("),
         "rl_run_with_smoke(name='launch'): algorithm must be a dict such as "
         "grpo_algorithm(...), got 'dict'"),
        (("kl_loss_coef=0.001,\n                             max_training_steps=60",
          "\n                             max_training_steps=60"),
         "grpo_algorithm(): missing argument kl_loss_coef: give kl_loss_coef=..."),
        # Builder configs reached the builder unread: these passed check and failed the launch.
        (('        "n_layers": 2,', '        "n_layers": 10**30,'),
         "error ART010 model.config.n_layers: model.config.n_layers of sft_model@2026.11.30.1 "
         "(builder sft_model): Value error, integers must lie within +-2**53 (got "
         "1000000000000000000000000000000) in experiments/countdown/BUILD:37 "
         "(experiments/countdown:sft_model): config.n_layers"),
        (('        "d_model": 64,', '        "d_model": -1,'),
         "error ART010 model.config.d_model: model.config.d_model of sft_model@2026.11.30.1 "
         "(builder sft_model): Input should be greater than 0 (got -1) in "
         "experiments/countdown/BUILD:37 (experiments/countdown:sft_model): config.d_model"),
        # A type the builder cannot read is refused at BUILD parse, from schema.json's
        # builder_configs (the plugin); values in range are preflight's (ART010, above).
        (('        "seed": 7,', '        "seed": "1",'),
         "experiments/countdown/BUILD:36: The 'config' field in target "
         "experiments/countdown:sft_model does not fit builder 'sft_model': config.seed must be "
         "an integer, but was '1'."),
    ],
    ids=["runtime-empty", "eval_data-empty", "smoke_steps-str", "algorithm-none",
         "facts-int-too-big", "sweep-smoke_steps-str", "run_name-none",
         "builder-unregistered", "run_name-too-long", "environment-unknown-to-the-runtime",
         "smoke_steps-missing", "smoke_of-given", "algorithm-str", "grpo-kl-missing",
         "sft-n_layers-huge", "sft-d_model-negative", "sft-seed-str"],
)
def test_bad_build_values_get_a_message_not_a_python_error(scratch, edit, message) -> None:
    code, output = check_with(scratch, edit)
    assert code != 0
    assert message in output, output[-2000:]
    assert "Traceback (most recent call last)" not in output


DATASETS = "experiments/datasets/BUILD"
# The config is one dict shared by the train and test prompts (_GSM8K_PROMPTS): Pants reports
# whichever of the two targets it reads first.
PROMPTS_TARGET = (r"experiments/datasets/BUILD:(37|38|48|49): The 'config' field in target "
                  r"experiments/datasets:gsm8k-(train|test)-prompts does not fit builder "
                  r"'prompt_parquet': ")


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (('    "template": "{question}', '    "tmplate": "{question}'),
         "config.tmplate is not a key of it; did you mean 'template'? (its keys: task, template, "
         "ground_truth, env_class, reward_method); config.template is missing."),
        (('{"column": "answer",', '{"column": ["answer"],'),
         "config.ground_truth.column must be a string, but was ('answer',)."),
        (('    "ground_truth": {"column": "answer", "extract": "final_answer"},\n', ''),
         "config.ground_truth is missing (write it; null if it has none)."),
    ],
    ids=["key-typo", "column-list", "ground_truth-deleted"],
)
def test_a_prompt_builder_config_is_checked_by_check(scratch: ScratchRepo, edit, problem) -> None:
    original = (scratch.root / DATASETS).read_text()
    assert edit[0] in original
    scratch.write(DATASETS, original.replace(edit[0], edit[1], 1))
    try:
        code, output = pants(scratch, "check", "experiments/qwen2.5-1.5b-gsm8k:grpo")
    finally:
        scratch.write(DATASETS, original)
    assert code == 1
    assert re.search(PROMPTS_TARGET + re.escape(problem), output), output[-3000:]


def test_rl_eval_run_names_a_run_name_that_is_no_string(scratch: ScratchRepo) -> None:
    build = "experiments/qwen2.5-1.5b-gsm8k/BUILD"
    original = (scratch.root / build).read_text()
    scratch.write(build, original.replace('run_name="gsm8k-grpo-eval-qwen2.5-1.5b"',
                                          "run_name=None", 1))
    try:
        code, output = pants(scratch, "check", "experiments/qwen2.5-1.5b-gsm8k:grpo-eval")
    finally:
        scratch.write(build, original)
    assert code == 1
    # None + "-smoke" inside the macro was a bare TypeError naming no call.
    assert ("rl_eval_run(name='grpo-eval'): run_name must be a non-empty string, got None"
            in output), output[-1500:]


def test_package_refuses_what_check_refuses(scratch: ScratchRepo) -> None:
    code, output = pants(scratch, "package", "broken:batch-100-by-64")
    assert code != 0
    assert (
        "broken:batch-100-by-64 is not packaged: `./pants check broken:batch-100-by-64` refuses "
        "it (a launch YAML is written only for a run that passes its preflight)."
    ) in output
    assert "BATCH003" in output
    assert not list((scratch.root / "dist").glob("broken/batch-100-by-64/launch.yaml"))


def test_a_change_to_the_prelude_selects_the_runs_its_macros_make(scratch: ScratchRepo) -> None:
    prelude = "build-support/experiments.py"
    original = (scratch.root / prelude).read_text()
    scratch.write(prelude, original.replace("temperature=1.0", "temperature=0.9"))
    try:
        code, output = pants(scratch, "--changed-since=HEAD", "--changed-dependents=transitive",
                             "list")
    finally:
        scratch.write(prelude, original)
    assert code == 0, output
    listed = output.split()
    assert "experiments/countdown:launch" in listed and "experiments/countdown:smoke" in listed
    assert "experiments/qwen2.5-1.5b-gsm8k:grpo" in listed


# -- a small BUILD fuzz: one literal of the countdown BUILD replaced by a hostile one --------

# A whole value: not the first piece of an implicitly concatenated string ("a" "b" across lines),
# whose replacement would be a Python syntax error, reported by Pants, not a field value.
LITERAL = re.compile(
    r'(?<==)(-?\d+(?:\.\d+)?(?:e-?\d+)?|"[^"\n]*"|True|False|None)(?=[,)]|\n(?!\s*"))'
)
HOSTILE = ["None", "True", "-1", "0", "1e30", "10**30", 'float("inf")', 'float("nan")', '""',
           '"2"', "[]", "{}", '"x" * 5000', "2.5"]


def equal_by_value(literal: str, value: str) -> bool:
    """Whether two literals of other types are equal to Python (`1` and `True`). Pants keeps a
    BUILD file's earlier parse when the new one is equal to it, so pantsd cannot see such an
    edit, nor the edit that undoes it: the first one it parsed stays (it then refused the
    restored `1` as "but was True" in the tests that came after)."""
    try:
        before, after = ast.literal_eval(literal), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return False
    return type(before) is not type(after) and before == after


def literal_sites(text: str) -> list[tuple[int, int]]:
    """Every literal field value but a target's `name`: Pants 2.17 reads names before any plugin
    code runs, and `name=True` stops it with a TypeError naming no target (docs/spec-format.md)."""
    return [match.span() for match in LITERAL.finditer(text)
            if not re.search(r"\bname=$", text[max(0, match.start() - 6): match.start()])]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_build_fuzz_never_tracebacks_or_hangs(scratch: ScratchRepo, data) -> None:
    original = (scratch.root / BUILD).read_text()
    start, end = data.draw(st.sampled_from(literal_sites(original)))
    value = data.draw(st.sampled_from(HOSTILE))
    assume(not equal_by_value(original[start:end], value))
    TRIED[value] += 1
    scratch.write(BUILD, original[:start] + value + original[end:])
    try:
        code, output = pants(scratch, "check", "experiments/countdown:launch")
    finally:
        scratch.write(BUILD, original)
    where = f"{original[max(0, start - 40):end]!r} -> {value}"
    # 0 clean, 1 findings or a BUILD error, 2 a spec out of the format (docs/spec-format.md: every
    # command that reads a spec exits 2 on one, e.g. 10**30 where integers lie within +-2**53).
    assert code in (0, 1, 2), f"{where}: exit {code}\n{output[-1500:]}"
    if code == 2:
        assert "not a valid RunSpec" in output, f"{where}: exit 2\n{output[-1500:]}"
    assert "Traceback (most recent call last)" not in output, f"{where}\n{output[-3000:]}"
    if code:
        assert "experiments/countdown" in output, f"{where}: no target named\n{output[-1500:]}"
