"""Runtime rules (rlaunch/preflight/rules/runtime.py) against the runtime catalog."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.preflight.rules.runtime import SMOKE_RUNTIME

GIT = {"repo": "NovaSky-AI/SkyRL", "commit": "c" * 40}


def test_rt001_exactly_one_exact_pin() -> None:
    assert messages(example(edits={"runtime.package": "skyrl"}), "RT001") == [
        "runtime.package 'skyrl' is not an exact pin name==X.Y.Z"
    ]
    assert messages(example(edits={"runtime.package": "skyrl>=0.3"}), "RT001") == [
        "runtime.package 'skyrl>=0.3' is not an exact pin name==X.Y.Z"
    ]
    both = example(edits={"runtime.git": GIT})
    assert messages(both, "RT001") == [
        "runtime.package and runtime.git are both set; exactly one pins the runtime"
    ]
    neither = example(edits={"runtime.package": None})
    assert messages(neither, "RT001") == [
        "runtime.package and runtime.git are both null; exactly one pins the runtime"
    ]
    wrong_package = example(edits={"runtime.package": "verl==0.3.0"})
    assert messages(wrong_package, "RT001") == [
        "runtime.package 'verl==0.3.0' is not the skyrl package of profile skyrl"
    ]
    short_commit = example(edits={"runtime.package": None, "runtime.git": dict(GIT, commit="c0")})
    assert messages(short_commit, "RT001") == [
        "runtime.git.commit 'c0' is not a 40-hex commit sha"
    ]
    assert messages(example(), "RT001") == []
    assert messages(example(edits={"runtime.package": None, "runtime.git": GIT}), "RT001") == []


def test_rt002_profile_and_release_known() -> None:
    assert messages(example(edits={"runtime.profile": "verl"}), "RT002") == [
        "runtime.profile 'verl' is not in the runtime catalog (skyrl, smoke)"
    ]
    assert messages(example(edits={"runtime.package": "skyrl==0.2.9"}), "RT002") == [
        "runtime.package 'skyrl==0.2.9': the catalog knows skyrl 0.3.0, 0.4.0 only, so nothing"
        " about this release can be proven"
    ]
    [git] = findings(example(edits={"runtime.package": None, "runtime.git": GIT}), "RT002")
    assert (git.severity, git.message) == (
        "warning",
        f"runtime.git.commit {'c' * 40} is not catalogued for profile skyrl: its entrypoints are"
        " assumed from the releases and its fixes cannot be proven",
    )
    assert messages(example(), "RT002") == []
    assert messages(example(edits={"runtime": SMOKE_RUNTIME}), "RT002") == []


def test_rt003_entrypoint_exists() -> None:
    data = example(edits={"runtime.entrypoint": "skyrl.train.entrypoints.main"})
    [finding] = findings(data, "RT003")
    assert finding.message == (
        "runtime.entrypoint 'skyrl.train.entrypoints.main' is not an entrypoint of skyrl 0.3.0"
        " (skyrl.train.entrypoints.main_base, skyrl.train.entrypoints.main_generate)"
    )
    assert finding.fix == "Set runtime.entrypoint to skyrl.train.entrypoints.main_base."
    smoke_with_skyrl_entrypoint = example(edits={
        "runtime": dict(SMOKE_RUNTIME, entrypoint="skyrl.train.entrypoints.main_base"),
    })
    assert messages(smoke_with_skyrl_entrypoint, "RT003") == [
        "runtime.entrypoint 'skyrl.train.entrypoints.main_base' is not an entrypoint of rlaunch"
        " 0.1.0 (rlaunch.runtimes.smoke)"
    ]
    assert messages(example(), "RT003") == []


def test_rt006_eval_entrypoint_has_eval() -> None:
    evaluate = {"runtime.entrypoint": "skyrl.train.entrypoints.main_generate"}
    assert messages(example(edits=evaluate), "RT006") == []
    assert messages(example(edits=evaluate), "RT003") == []
    broken = example(edits=dict(evaluate, eval_data=None, settings={
        "trainer.eval_interval": 0, "trainer.dump_eval_results": False}))
    assert [(f.paths, f.message, f.fix) for f in findings(broken, "RT006")] == [
        (("eval_data", "runtime.entrypoint"),
         "eval_data is null, but runtime.entrypoint skyrl.train.entrypoints.main_generate only"
         " evaluates: it scores the model on the eval data and has nothing else to do",
         "Set eval_data to the dataset to score the model on."),
        (("settings.trainer.eval_interval", "runtime.entrypoint"),
         "settings trainer.eval_interval 0 <= 0: skyrl.train.entrypoints.main_generate loads no"
         " eval dataset then (BasePPOExp.get_eval_dataset) and stops at its assert on the GPUs",
         "Set trainer.eval_interval to a positive number (SkyRL's default is 5), or remove the"
         " setting."),
        (("settings.trainer.dump_eval_results", "runtime.entrypoint"),
         "settings trainer.dump_eval_results is false: skyrl.train.entrypoints.main_generate"
         " then writes no per-sample results, and the eval report is made of them",
         "Remove the setting trainer.dump_eval_results (SkyRL's default is true)."),
    ]
    # A training run is not judged by it: the same settings are a training run's choice.
    training = example(edits={"eval_data": None, "settings": {"trainer.eval_interval": 0}})
    assert messages(training, "RT006") == []


def test_rt004_profile_supports_strategy_and_backends() -> None:
    smoke = {"runtime": SMOKE_RUNTIME, "algorithm.environment": "countdown"}
    data = example(edits=dict(smoke, **{"role_plan.rollout.backend": "sglang"}))
    assert messages(data, "RT004") == [
        "role_plan.rollout.backend 'sglang': runtime profile smoke has no rollout backend"
        " sglang (it has vllm)"
    ]
    assert messages(example(edits=smoke), "RT004") == []


def test_rt004_smoke_runs_its_task_and_estimators_only() -> None:
    """rlaunch.runtimes.smoke.config.load_config refuses another task or estimator, but only
    in the launched job: preflight says so before anything starts."""
    data = example(edits={"runtime": SMOKE_RUNTIME, "algorithm.environment": "2",
                          "algorithm.advantage_estimator": "gae"})
    assert messages(data, "RT004") == [
        "algorithm.environment '2': runtime profile smoke has no task 2 (it has countdown)",
        "algorithm.advantage_estimator 'gae': runtime profile smoke has no advantage estimator"
        " gae (it has grpo, rloo)",
    ]
    # SkyRL's tasks are not catalogued: its handoff check reads skyrl-gym's registry.
    assert messages(example(edits={"algorithm.environment": "2"}), "RT004") == []
    assert messages(example("megatron-moe-5x8"), "RT004") == []


def test_rt005_required_fixes_contained() -> None:
    unknown = example(edits={"runtime.required_fixes": ["gradient-accumulation-loss-scale"]})
    assert messages(unknown, "RT005") == [
        "runtime.required_fixes[0] 'gradient-accumulation-loss-scale' is not a catalogued fix id"
        " (batch-lcm-dp-validation, inference-ep-validation, max-ckpts-zero-rejected,"
        " final-checkpoint-on-train-end)"
    ]
    smoke = example(edits={"runtime": dict(SMOKE_RUNTIME,
                                           required_fixes=["final-checkpoint-on-train-end"])})
    assert messages(smoke, "RT005") == [
        "runtime.required_fixes[0] 'final-checkpoint-on-train-end' is not in smoke 0.1.0"
    ]
    unproven = example(edits={"runtime.package": None, "runtime.git": GIT,
                              "runtime.required_fixes": ["inference-ep-validation"]})
    assert messages(unproven, "RT005") == [
        "runtime.required_fixes[0] 'inference-ep-validation' cannot be proven: the pinned"
        " runtime is not in the catalog"
    ]
    contained = example(edits={"runtime.required_fixes": ["inference-ep-validation",
                                                          "max-ckpts-zero-rejected"]})
    assert messages(contained, "RT005") == []


def test_rt001_refuses_a_git_repo_no_tool_accepts() -> None:
    spec = example(edits={"runtime.package": None, "runtime.git": dict(GIT, repo="a\nb")})
    assert messages(spec, "RT001") == [
        "runtime.git.repo 'a\\nb' is not a repository URL or owner/name: it is empty or holds "
        "whitespace or control characters, which no git or pip requirement accepts"
    ]
    assert messages(example(edits={"runtime.package": None, "runtime.git": GIT}), "RT001") == []
