# BUILD-file macros shared by experiments/ (loaded by pants.toml's build_file_prelude_globs).
#
# Every experiment launches a full run and, before it, a smoke of it: the same geometry,
# runtime and artifact handoffs, a dev version and a couple of steps. The pair is written once
# here so that the smoke cannot drift from the run it stands for.


# This file's own target (build-support/BUILD).
PRELUDE = "build-support:prelude"


def grpo_algorithm(*, environment, learning_rate, kl_loss_coef, max_training_steps):
    """GRPO with a k3 KL loss to the reference (SkyRL's usual recipe): one epoch, temperature
    1.0, clip ratio 0.2, synchronous. Every number that differs between experiments is an
    argument, so nothing about them is implicit."""
    return dict(
        advantage_estimator="grpo",
        kl=dict(use_kl_loss=True, use_kl_in_reward=False, kl_loss_coef=kl_loss_coef,
                kl_estimator_type="k3"),
        learning_rate=learning_rate,
        epochs=1,
        max_training_steps=max_training_steps,
        temperature=1.0,
        clip_ratio=0.2,
        fully_async=False,
        environment=environment,
    )


def rl_run_with_smoke(*, name, run_name, algorithm, smoke_steps, seed, **fields):
    """`rl_run(name=...)` plus `rl_run(name="smoke", smoke_of=":<name>")`: the smoke is the
    same run with version `dev`, the name `<run_name>-smoke` and `smoke_steps` training steps;
    every other field (`version`, `description`, the artifacts, plan and execution) is the
    full run's."""
    # A wrong argument here would surface as a bare Python error inside the macro; say which
    # run and which argument instead.
    if type(algorithm) is not dict:
        raise ValueError(
            "rl_run_with_smoke(name=%r): algorithm must be a dict such as grpo_algorithm(...), "
            "got %r" % (name, algorithm)
        )
    if type(smoke_steps) is not int or smoke_steps < 1:
        raise ValueError(
            "rl_run_with_smoke(name=%r): smoke_steps must be a whole number of training steps "
            ">= 1, got %r" % (name, smoke_steps)
        )
    # The runs are made here: a change here changes them (`--changed-dependents`).
    fields = dict(fields, dependencies=list(fields.get("dependencies", [])) + [PRELUDE])
    rl_run(name=name, run_name=run_name, algorithm=algorithm, seed=seed, **fields)
    smoke_fields = dict(fields)
    smoke_fields["version"] = "dev"
    smoke_fields["description"] = (
        "%d steps of :%s: same geometry, runtime and handoffs." % (smoke_steps, name)
    )
    rl_run(
        name="smoke",
        run_name=run_name + "-smoke",
        algorithm=dict(algorithm, max_training_steps=smoke_steps),
        seed=seed,
        smoke_of=":" + name,
        **smoke_fields,
    )
