# BUILD-file macros shared by experiments/ (loaded by pants.toml's build_file_prelude_globs).
#
# Every experiment launches a full run and, before it, a smoke of it: the same geometry,
# runtime and artifact handoffs, a dev version and a couple of steps. The pair is written once
# here so that the smoke cannot drift from the run it stands for.


# This file's own target (build-support/BUILD).
PRELUDE = "build-support:prelude"

# The default of a macro's required argument: Python's own "missing 1 required keyword-only
# argument" would stop Pants with a TypeError naming neither the target nor the fix, so a
# missing one is said by _require instead. (A tuple: prelude globals must be hashable.)
_MISSING = ("<missing>",)


def _require(macro, name, **arguments):
    """Refuse a macro call that leaves out a required argument, naming the call and each one."""
    missing = sorted(key for key, value in arguments.items() if value is _MISSING)
    if name is _MISSING:
        missing.insert(0, "name")
    if missing:
        call = "%s(name=%r)" % (macro, name) if name not in (None, _MISSING) else macro + "()"
        raise ValueError(
            "%s: missing argument%s %s: give %s"
            % (call, "s" if len(missing) > 1 else "", ", ".join(missing),
               ", ".join("%s=..." % key for key in missing))
        )


def _refuse_set_by_macro(macro, name, fields, keys, why):
    """Refuse fields the macro sets itself (given twice, rl_run raised a bare TypeError)."""
    given = sorted(key for key in keys if key in fields)
    if given:
        raise ValueError(
            "%s(name=%r): %s %s set by the macro (%s); remove %s"
            % (macro, name, ", ".join(given), "is" if len(given) == 1 else "are", why,
               ", ".join("%s=%r" % (key, fields[key]) for key in given))
        )


def grpo_algorithm(*, environment=_MISSING, learning_rate=_MISSING, kl_loss_coef=_MISSING,
                   max_training_steps=_MISSING):
    """GRPO with a k3 KL loss to the reference (SkyRL's usual recipe): one epoch, temperature
    1.0, clip ratio 0.2, synchronous. Every number that differs between experiments is an
    argument, so nothing about them is implicit."""
    _require("grpo_algorithm", None, environment=environment, learning_rate=learning_rate,
             kl_loss_coef=kl_loss_coef, max_training_steps=max_training_steps)
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


def _check_run_name(macro, name, run_name):
    if type(run_name) is not str or not run_name:
        raise ValueError(
            "%s(name=%r): run_name must be a non-empty string, got %r" % (macro, name, run_name)
        )


def _check_smoke_arguments(macro, name, run_name, algorithm, smoke_steps):
    """A wrong argument of a macro that makes a smoke would surface as a bare Python error
    inside it (`run_name + "-smoke"`, `"%d steps" % smoke_steps`) or as a silently odd name
    (`None-lr0.001`); say which macro call and which argument instead."""
    _check_run_name(macro, name, run_name)
    if type(algorithm) is not dict:
        raise ValueError(
            "%s(name=%r): algorithm must be a dict such as grpo_algorithm(...), got %r"
            % (macro, name, algorithm)
        )
    if type(smoke_steps) is not int or smoke_steps < 1:
        raise ValueError(
            "%s(name=%r): smoke_steps must be a whole number of training steps >= 1, got %r"
            % (macro, name, smoke_steps)
        )


def rl_run_with_smoke(*, name=_MISSING, run_name=_MISSING, algorithm=_MISSING,
                      smoke_steps=_MISSING, seed=_MISSING, smoke_name="smoke", **fields):
    """`rl_run(name=...)` plus `rl_run(name=smoke_name, smoke_of=":<name>")`: the smoke is the
    same run with version `dev`, the name `<run_name>-smoke` and `smoke_steps` training steps;
    every other field (`version`, `description`, the artifacts, plan and execution) is the
    full run's. `smoke_name` tells apart the smokes of several runs in one BUILD file."""
    _require("rl_run_with_smoke", name, run_name=run_name, algorithm=algorithm,
             smoke_steps=smoke_steps, seed=seed)
    _refuse_set_by_macro("rl_run_with_smoke", name, fields, ("smoke_of",),
                         "the smoke :%s is the smoke of :%s" % (smoke_name, name))
    _check_smoke_arguments("rl_run_with_smoke", name, run_name, algorithm, smoke_steps)
    # The runs are made here: a change here changes them (`--changed-dependents`).
    fields = dict(fields, dependencies=list(fields.get("dependencies", [])) + [PRELUDE])
    rl_run(name=name, run_name=run_name, algorithm=algorithm, seed=seed, **fields)
    smoke_fields = dict(fields)
    smoke_fields["version"] = "dev"
    smoke_fields["description"] = (
        "%d steps of :%s: same geometry, runtime and handoffs." % (smoke_steps, name)
    )
    rl_run(
        name=smoke_name,
        run_name=run_name + "-smoke",
        algorithm=dict(algorithm, max_training_steps=smoke_steps),
        seed=seed,
        smoke_of=":" + name,
        **smoke_fields,
    )


# Sweeps: one declaration, one rl_run per point.
#
# A point is a dict of overrides keyed by field path ("algorithm.learning_rate",
# "algorithm.kl.kl_loss_coef", "seed", "role_plan"); `grid` crosses lists of values, `points`
# lists the points one by one. Every point gets its own target and identity, named from its
# values in a fixed order and form (`<run_name>-lr0.0003-kl0.001`), so an identity stays the same
# as long as the point does. One smoke stands for every point of the same geometry (role plan and
# runtime), not one per point.

# Short labels of the usual keys (a tuple: Pants keeps prelude globals in a hashable map).
_LABELS = (
    ("learning_rate", "lr"),
    ("kl_loss_coef", "kl"),
    ("max_training_steps", "steps"),
    ("role_plan", "plan"),
    ("temperature", "temp"),
    ("n_samples_per_prompt", "n"),
)


def _label_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, str):
        return value.split(":")[-1].split("/")[-1]
    return str(value)


def _point_label(point, keys):
    return "-".join(
        dict(_LABELS).get(key.split(".")[-1], key.split(".")[-1].replace("_", ""))
        + _label_value(point[key])
        for key in keys
    )


def _grid_points(grid):
    points = [{}]
    for key in sorted(grid):
        points = [dict(point, **{key: value}) for point in points for value in grid[key]]
    return points


def _with_override(fields, path, value):
    head, _, rest = path.partition(".")
    if not rest:
        return dict(fields, **{head: value})
    inner = fields.get(head)
    if not isinstance(inner, dict):
        _sweep_fail("sweep point key %r: field %r is not a dict in the run's fields"
                    % (path, head))
    return dict(fields, **{head: _with_override(inner, rest, value)})


def _sweep_fail(message):
    raise ValueError(message)


def rl_sweep_runs(*, name=_MISSING, run_name=_MISSING, algorithm=_MISSING,
                  smoke_steps=_MISSING, seed=_MISSING, grid=None, points=None, max_parallel=4,
                  **fields):
    """An `rl_sweep` named `name` over `grid` (a dict of field path -> list of values, crossed)
    or `points` (a list of dicts of field path -> value): one `rl_run` per point, named
    `<name>-<label>` with the run name `<run_name>-<label>`, one dev smoke per distinct role plan
    and runtime (`<name>-smoke`, with `smoke_steps` steps), every other field shared."""
    _require("rl_sweep_runs", name, run_name=run_name, algorithm=algorithm,
             smoke_steps=smoke_steps, seed=seed)
    _refuse_set_by_macro("rl_sweep_runs", name, fields, ("smoke_of",),
                         "one smoke per geometry, :%s-smoke, stands for every point" % name)
    _check_smoke_arguments("rl_sweep_runs", name, run_name, algorithm, smoke_steps)
    if (grid is None) == (points is None):
        _sweep_fail("rl_sweep_runs(name=%r): give exactly one of grid= and points=" % name)
    chosen = _grid_points(grid) if grid is not None else [dict(point) for point in points]
    if not chosen or not all(chosen):
        _sweep_fail("rl_sweep_runs(name=%r): every point needs at least one value" % name)
    keys = sorted(set(key for point in chosen for key in point))
    for point in chosen:
        missing = [key for key in keys if key not in point]
        if missing:
            _sweep_fail("rl_sweep_runs(name=%r): point %r does not set %s (every point sets the "
                        "same keys)" % (name, point, ", ".join(missing)))
    # The runs are made here: a change here changes them (`--changed-dependents`).
    shared = dict(fields, algorithm=algorithm, seed=seed,
                  dependencies=list(fields.get("dependencies", [])) + [PRELUDE])
    labels = []
    smokes = {}
    for point in chosen:
        label = _point_label(point, keys)
        if label in labels:
            _sweep_fail("rl_sweep_runs(name=%r): two points are both labelled %r"
                        % (name, label))
        labels.append(label)
        point_fields = shared
        for key in keys:
            point_fields = _with_override(point_fields, key, point[key])
        rl_run(name="%s-%s" % (name, label), run_name="%s-%s" % (run_name, label),
               **point_fields)
        geometry = (point_fields.get("role_plan"), point_fields.get("runtime"))
        if geometry not in smokes:
            smokes[geometry] = (label, point_fields)
    smoke_names = []
    for index, geometry in enumerate(sorted(smokes, key=str)):
        label, point_fields = smokes[geometry]
        suffix = "" if len(smokes) == 1 else "-%d" % (index + 1)
        smoke_fields = dict(point_fields)
        smoke_fields["version"] = "dev"
        smoke_fields["description"] = (
            "%d steps of :%s-%s, standing for every point of its geometry."
            % (smoke_steps, name, label)
        )
        smoke_fields["algorithm"] = dict(point_fields["algorithm"],
                                         max_training_steps=smoke_steps)
        rl_run(name="%s-smoke%s" % (name, suffix), run_name="%s-smoke%s" % (run_name, suffix),
               smoke_of=":%s-%s" % (name, label), **smoke_fields)
        smoke_names.append(":%s-smoke%s" % (name, suffix))
    rl_sweep(
        name=name,
        description="Sweep %s over %s: %d points." % (run_name, ", ".join(keys), len(chosen)),
        dependencies=smoke_names + [":%s-%s" % (name, label) for label in labels],
        max_parallel=max_parallel,
    )


# Eval stages: a report artifact scoring models (model artifacts or runs' exports) on an eval
# dataset with the task's reward (builder greedy_eval, rlaunch.builders.countdown_eval).
def rl_eval(*, name=_MISSING, models=_MISSING, data=_MISSING, environment=_MISSING,
            rows=_MISSING, max_new_tokens=_MISSING, version=_MISSING, description=None):
    """A `built_artifact` of kind `report` named `name`: each entry of `models` (slot ->
    address of a model target or of an rl_run, whose export is scored) answers the first `rows`
    problems of `data`'s eval split greedily, scored by `environment`'s reward.
    `./pants run` of it launches the runs it reads first (unless they finished), then builds
    the report; it is cached by fingerprint like any artifact."""
    _require("rl_eval", name, models=models, data=data, environment=environment, rows=rows,
             max_new_tokens=max_new_tokens, version=version)
    if type(models) is not dict or not models or "data" in models:
        raise ValueError(
            "rl_eval(name=%r): models must be a non-empty dict of slot -> model or rl_run "
            "address (not named 'data'), got %r" % (name, models)
        )
    built_artifact(
        name=name,
        description=description or "Eval report of %s on %s." % (", ".join(sorted(models)),
                                                                   data),
        builder="greedy_eval",
        kind="report",
        config={"environment": environment, "rows": rows, "max_new_tokens": max_new_tokens},
        deps=dict(models, data=data),
        version=version,
        dependencies=[PRELUDE],
    )


# Eval stages on GPUs: a run on a runtime whose entrypoint only evaluates (SkyRL's
# skyrl.train.entrypoints.main_generate) scores its `model` (a model, or a run's export) on its
# `eval_data` and trains nothing; the SkyRL adapter turns SkyRL's dump into report.json and
# samples.jsonl in the run's export folder (docs/pipelines.md, "Eval stages on GPUs").
def rl_eval_run(*, name=_MISSING, run_name=_MISSING, runtime=_MISSING, smoke_name=_MISSING,
                **fields):
    """An `rl_run` named `name` on the eval-only `runtime`, and its smoke `smoke_name`: the
    same eval at version `dev` (SkyRL 0.3.0's eval entrypoint reads no row or step limit, and a
    greedy eval of a test split takes minutes, so the smoke is the eval itself). Every other
    field is an rl_run's; the run's geometry, batch and algorithm are checked as any run's."""
    _require("rl_eval_run", name, run_name=run_name, runtime=runtime, smoke_name=smoke_name)
    _refuse_set_by_macro("rl_eval_run", name, fields, ("smoke_of",),
                         "the smoke :%s is the smoke of :%s" % (smoke_name, name))
    _check_run_name("rl_eval_run", name, run_name)
    if type(runtime) is not str or not runtime:
        raise ValueError(
            "rl_eval_run(name=%r): runtime must be the address of an rl_runtime whose "
            "entrypoint only evaluates (e.g. experiments/runtimes:skyrl-0.3.0-eval), got %r"
            % (name, runtime)
        )
    fields = dict(fields, runtime=runtime,
                  dependencies=list(fields.get("dependencies", [])) + [PRELUDE])
    rl_run(name=name, run_name=run_name, **fields)
    smoke_fields = dict(fields)
    smoke_fields["version"] = "dev"
    smoke_fields["description"] = "The eval :%s at version dev: same geometry, runtime and " \
        "handoffs." % name
    rl_run(name=smoke_name, run_name=run_name + "-smoke", smoke_of=":" + name, **smoke_fields)
