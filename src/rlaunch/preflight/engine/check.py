"""What a rule sees: the spec, the world (world scope only) and derived sizes computed once.

Derived sizes are None when they are undefined (a non-positive count, a world that does not
divide); the rule that owns that problem reports it and the rules that depend on the size skip.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rlaunch.memo import Memo, per_object
from rlaunch.preflight.engine.world import World
from rlaunch.spec.artifacts import Artifact, ModelFacts
from rlaunch.spec.parallelism import Parallelism, dimensions
from rlaunch.spec.roleplan import RolePlan, role_parallelism
from rlaunch.spec.run import RunSpec

# A trainer role's counts: its footprint and every parallel size (rlaunch.spec.parallelism), so a
# size added to ParallelSizes is checked without another edit. Other integers of a role (a LoRA
# rank may be 0) carry their own bounds in the model.
AUX_COUNTS = ("num_nodes", "num_gpus_per_node")
POLICY_COUNTS = AUX_COUNTS + tuple(name for name, _ in dimensions())
REFERENCE_COUNTS = POLICY_COUNTS
ROLLOUT_COUNTS = (
    "num_engines", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
    "expert_parallel_size",
)
ALLOCATION_COUNTS = ("num_nodes", "gpus_per_node")
BATCH_COUNTS = (
    "train_batch_size", "policy_mini_batch_size", "micro_train_batch_size_per_gpu",
    "micro_forward_batch_size_per_gpu", "n_samples_per_prompt", "eval_batch_size",
)


T = TypeVar("T")
_UNKNOWN: Any = object()
"""`Check.derived`'s mark of a value not computed yet (a value may be None)."""


@per_object
def usable_facts(facts: ModelFacts) -> bool:
    """Whether every count among a model's facts is at least 1 (kept per facts object: every plan
    of a search asks about the same model's)."""
    return all(value > 0 for _, value in facts.counts())


Counts = list[tuple[str, int]]
_NONPOSITIVE: Memo[tuple[str, int, int], tuple[Any, tuple[str, ...], Counts]] = Memo(4096)
"""A section's path and the identities of the names of the counts read and of the section ->
the section and the names, held (no other object takes their identities while the entry
lives), and its counts below 1: parse_spec hands the plans of a search equal sections as the
very same objects. (A tuple's hash is not cached: the names' identity spares hashing eight
strings.)"""


def _nonpositive(prefix: str, section: Any, names: tuple[str, ...]) -> list[tuple[str, int]]:
    """`(path, value)` of the counts `names` of `section` (at `prefix`) below 1. The list is
    shared: callers copy it before adding to it."""
    key = (prefix, id(names), id(section))
    known = _NONPOSITIVE.get(key)
    if known is not None:
        return known[2]
    found = [(f"{prefix}.{name}", value) for name in names
             if (value := getattr(section, name)) < 1]
    _NONPOSITIVE.put(key, (section, names, found))
    return found


def forget_counts() -> None:
    """Empty the memo of counts below 1 (run_preflight's cold start)."""
    _NONPOSITIVE.clear()


def _use_kl(check: Check) -> bool:
    kl = check.spec.algorithm.kl
    return kl.use_kl_loss or kl.use_kl_in_reward


def _usable_model_facts(check: Check) -> ModelFacts | None:
    facts = getattr(check.spec.model, "facts", None)
    if facts is None:
        return None
    return facts if usable_facts(facts) else None


def _settings_read(check: Check) -> dict[str, Any]:
    """The SkyRL settings `Check.setting` has read for a part beside the plan, by name (filled
    as they are asked for)."""
    return {}


class cached_property(Generic[T]):  # noqa: N801 - used like functools.cached_property
    """functools.cached_property without its per-access lock (Python 3.11 takes one on the
    first access of every instance, which costs more than most rules). A Check is used by one
    thread."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = self.compute(instance)
        instance.__dict__[self.name] = value  # later reads find the plain attribute
        return value


class PlanFields:
    """A role plan's fields as plain attributes, with its `parallelism` and `geometry`: what
    `Check.plan` is (`model` is the RolePlan itself). Rules read the plan about a hundred times
    a spec. A pydantic model's attribute read goes through BaseModel's `__getattr__` hook, which
    CPython 3.11 cannot specialize: about 250 instructions a read, against about 20 for a plain
    object's (callgrind, benchmarks/preflight_throughput.py: 3% of a random plan's parse and
    preflight). Read-only by convention, as the frozen model is."""

    def __init__(self, plan: RolePlan) -> None:
        self.__dict__.update(plan.__dict__)  # pydantic keeps a model's fields in its __dict__
        self.model = plan

    def parallelism(self, role: str) -> Parallelism | None:
        """`RolePlan.parallelism`, from the fields read once."""
        return role_parallelism(self, role)

    def geometry(self) -> dict:
        return self.model.geometry()


class Check:
    """One spec under preflight. Rules read `spec`, `world` and the cached derived values."""

    def __init__(self, spec: RunSpec, world: World | None = None,
                 shared: dict[Any, Any] | None = None) -> None:
        self.spec = spec
        plan = spec.role_plan
        self.plan = PlanFields(plan) if plan is not None else plan
        """`spec.role_plan`'s fields, read once (`PlanFields`): most rules start from the plan.
        (A spec copied without its plan, as a test of the rules beside the plan makes, has
        none: a rule that reads it fails.)"""
        self.world = world
        self._derived: dict[Any, Any] = {}
        self._shared: dict[Any, Any] = {} if shared is None else shared
        """`shared`'s values (see there): run_preflight hands every spec with the same values
        beside the plan the same dict, at spec scope; a Check of its own has its own."""
        self._layouts: dict[str, Parallelism | None] = {}

    def derived(self, compute: Callable[[Check], T]) -> T:
        """`compute(self)`, computed once per Check: a value several rules derive from the spec
        (placement groups, the memory picture), kept beside the rules' module that owns it. A
        lookup with a default, not a `try`: each value is missed once per plan, and raising and
        catching the KeyError costs five lookups."""
        value = self._derived.get(compute, _UNKNOWN)
        if value is _UNKNOWN:
            value = self._derived[compute] = compute(self)
        return value

    def shared(self, compute: Callable[[Check], T]) -> T:
        """`compute(self)`, computed once per distinct part of the spec beside the role plan
        (every RunSpec field but `role_plan`, each the very same object; run_preflight keeps
        them): a value `compute` derives from those alone, never from `plan`, a value derived
        from it, or the world. A search's plans share it, as they share the rules' outcomes that
        read nothing of the plan."""
        value = self._shared.get(compute, _UNKNOWN)
        if value is _UNKNOWN:
            value = self._shared[compute] = compute(self)
        return value

    def setting(self, name: str) -> Any:
        """`spec.skyrl_setting(name)`, read once per distinct part beside the plan (`settings`
        and `runtime` are in it): the rules that read the plan read their settings here."""
        values = self.shared(_settings_read)
        value = values.get(name, _UNKNOWN)
        if value is _UNKNOWN:
            value = values[name] = self.spec.skyrl_setting(name)
        return value

    @cached_property
    def artifacts(self) -> list[tuple[str, Artifact]]:
        """`(field_path, artifact)` of every artifact, dependencies included (RunSpec.artifacts)."""
        return list(self.spec.artifacts())

    @cached_property
    def slots(self) -> dict[str, Artifact]:
        return self.spec.slots()

    # -- counts ---------------------------------------------------------------------------------

    @cached_property
    def nonpositive_role_counts(self) -> list[tuple[str, int]]:
        """`(path, value)` of every role-plan and allocation count below 1."""
        plan = self.plan
        found: list[tuple[str, int]] = []
        groups: list[tuple[str, object, tuple[str, ...]]] = [
            ("role_plan.policy", plan.policy, POLICY_COUNTS),
            ("role_plan.rollout", plan.rollout, ROLLOUT_COUNTS),
            ("execution.allocation", self.spec.execution.allocation, ALLOCATION_COUNTS),
        ]
        if plan.reference is not None:
            groups.append(("role_plan.reference", plan.reference, REFERENCE_COUNTS))
        if plan.critic is not None:
            groups.append(("role_plan.critic", plan.critic, AUX_COUNTS))
        for prefix, section, names in groups:
            found += _nonpositive(prefix, section, names)
        return found

    @cached_property
    def roles_ok(self) -> bool:
        return not self.nonpositive_role_counts

    @cached_property
    def nonpositive_batch_counts(self) -> list[tuple[str, int]]:
        batch = self.plan.batch
        found = list(_nonpositive("role_plan.batch", batch, BATCH_COUNTS))
        if batch.critic_mini_batch_size is not None and batch.critic_mini_batch_size < 1:
            found.append(("role_plan.batch.critic_mini_batch_size", batch.critic_mini_batch_size))
        return found

    @cached_property
    def batch_ok(self) -> bool:
        return self.roles_ok and not self.nonpositive_batch_counts

    # -- algorithm ------------------------------------------------------------------------------

    @cached_property
    def use_kl(self) -> bool:
        return self.shared(_use_kl)

    @cached_property
    def facts(self) -> ModelFacts | None:
        """The policy model's facts when present and usable (every count positive)."""
        return self.shared(_usable_model_facts)

    # -- data parallel sizes ----------------------------------------------------------------------

    def parallelism(self, role: str) -> Parallelism:
        """A trainer role's parallelism (rlaunch.spec.parallelism): the reference's own sizes
        (trainer.ref), the policy's for the policy and the critic (the critic is FSDP only, and
        its SP is rendered from the policy's). Asked only for a role the plan has."""
        known = self._layouts.get(role)
        if known is not None:
            return known
        found = self._layouts[role] = self.plan.parallelism(role)
        if found is None:
            raise ValueError(f"the {role}'s parallelism is asked for, but role_plan.{role} is "
                             "null (rules ask only for roles the plan has)")
        return found

    def _dp_of(self, role: str) -> int | None:
        if not self.roles_ok or getattr(self.plan, role) is None:
            return None
        return self.parallelism(role).data_parallel

    @cached_property
    def policy_dp(self) -> int | None:
        """Policy DP when the policy world divides into whole replicas, else None."""
        return self._dp_of("policy")

    @cached_property
    def reference_dp(self) -> int | None:
        """Reference DP when the reference is used (KL) and its world divides into whole
        replicas of its own parallel sizes, else None."""
        return self._dp_of("reference") if self.use_kl else None

    @cached_property
    def critic_dp(self) -> int | None:
        return self._dp_of("critic")

    def lcm_terms(self, *, with_critic: bool) -> list[tuple[str, int | None]]:
        """`(name, DP)` of the enabled trainer roles, for SkyRL's lcm of DP sizes; a DP is None
        when it is undefined."""
        terms = [("policy DP", self.policy_dp)]
        if self.plan.critic is not None and with_critic:
            terms.append(("critic DP", self.critic_dp))
        if self.use_kl and self.plan.reference is not None:
            terms.append(("reference DP", self.reference_dp))
        return terms

    @staticmethod
    def lcm_equation(terms: list[tuple[str, int]]) -> str:
        """`lcm(policy DP 8, reference DP 8) = 8`."""
        shown = ", ".join(f"{name} {dp}" for name, dp in terms)
        return f"lcm({shown}) = {math.lcm(*(dp for _, dp in terms))}"

    # -- paths ------------------------------------------------------------------------------------

    @cached_property
    def store_prefix(self) -> str | None:
        """The spec's store prefix, else the world's (None at spec scope)."""
        declared = self.spec.execution.store_prefix
        if declared is not None:
            return declared
        return self.world.store_prefix if self.world is not None else None
