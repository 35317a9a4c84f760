"""The RunSpec schema: pydantic models for artifacts, runtime, role plan, execution, run."""

from rlaunch.spec.artifacts import (
    AdoptedArtifact,
    Artifact,
    ArtifactKind,
    BuiltArtifact,
    HFDataset,
    HFModel,
    ModelFacts,
    RunExport,
    fingerprint,
    identity,
)
from rlaunch.spec.base import canonical_json, fingerprint_of
from rlaunch.spec.execution import Allocation, Execution, WandbIdentity
from rlaunch.spec.io import SpecError, dump_spec, dumps_spec, load_spec, loads_spec, parse_spec
from rlaunch.spec.roleplan import (
    AuxRole, BatchPlan, Placement, PolicyRole, ReferenceRole, RolePlan, RolloutRole,
)
from rlaunch.spec.run import (
    SCHEMA_VERSION,
    Algorithm,
    CheckpointPolicy,
    KLSettings,
    Lengths,
    ResumePolicy,
    RunSpec,
    SmokeOf,
)
from rlaunch.spec.runtime import GitPin, RuntimePin, runtime_fingerprint

__all__ = [
    "AdoptedArtifact", "Algorithm", "Allocation", "Artifact", "ArtifactKind", "AuxRole",
    "BatchPlan", "BuiltArtifact", "CheckpointPolicy", "Execution", "GitPin", "HFDataset",
    "HFModel", "KLSettings", "Lengths", "ModelFacts", "Placement", "PolicyRole", "ReferenceRole",
    "ResumePolicy", "RolePlan", "RunExport", "RolloutRole", "RunSpec", "RuntimePin",
    "SCHEMA_VERSION",
    "SmokeOf", "SpecError", "WandbIdentity", "canonical_json", "dump_spec", "dumps_spec",
    "fingerprint", "fingerprint_of", "identity", "load_spec", "loads_spec", "parse_spec",
    "runtime_fingerprint",
]
