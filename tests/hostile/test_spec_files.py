"""Issue 13 items 4 and 5: hostile spec files get one clear error (exit 2), never a traceback,
and numbers that cannot train do not pass."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.spec import SpecError, dumps_spec, load_spec, loads_spec, parse_spec
from rlaunch.spec.examples import worked_example

BASE = worked_example("colocated-1x8")


def problems_of(edit) -> list[str]:
    data = copy.deepcopy(BASE)
    edit(data)
    with pytest.raises(SpecError) as caught:
        parse_spec(data, "run.yaml")
    return caught.value.problems


@pytest.mark.parametrize(
    ("section", "key", "value", "problem"),
    [
        ("algorithm", "learning_rate", float("inf"),
         "algorithm.learning_rate: Input should be a finite number (got Infinity)"),
        ("algorithm", "temperature", -1.0,
         "algorithm.temperature: Input should be greater than or equal to 0 (got -1.0)"),
        ("algorithm", "clip_ratio", float("nan"),
         "algorithm.clip_ratio: Input should be a finite number (got NaN)"),
        ("algorithm", "clip_ratio", 1.5,
         "algorithm.clip_ratio: Input should be less than 1 (got 1.5)"),
        (None, "seed", 1e30, "seed: Input should be a valid integer (got 1e+30)"),
        (None, "seed", -3, "seed: Input should be greater than or equal to 0 (got -3)"),
        (None, "seed", 2**32,
         "seed: Input should be less than 4294967296 (got 4294967296)"),
    ],
)
def test_numbers_that_cannot_train_are_refused_by_name(section, key, value, problem):
    def edit(data):
        (data[section] if section else data)[key] = value
    assert problems_of(edit) == [problem]


def test_kl_coefficient_must_be_finite_and_not_negative():
    assert problems_of(lambda d: d["algorithm"]["kl"].update(kl_loss_coef=float("inf"))) == [
        "algorithm.kl.kl_loss_coef: Input should be a finite number (got Infinity)"
    ]
    assert problems_of(lambda d: d["algorithm"]["kl"].update(kl_loss_coef=-0.1)) == [
        "algorithm.kl.kl_loss_coef: Input should be greater than or equal to 0 (got -0.1)"
    ]


@pytest.mark.parametrize(("value", "shown"), [(True, "true"), ("2", '"2"'), (2.0, "2.0")])
def test_types_are_strict_as_in_build_files(value, shown):
    def edit(data):
        data["execution"]["allocation"]["num_nodes"] = value
    assert problems_of(edit) == [
        f"execution.allocation.num_nodes: Input should be a valid integer (got {shown})"
    ]


def test_integers_beyond_json_range_are_refused():
    def edit(data):
        data["execution"]["allocation"]["disk_gb_per_node"] = 10**20
    (problem,) = problems_of(edit)
    assert problem == ("execution.allocation.disk_gb_per_node: Value error, integers must lie "
                       "within +-2**53 (got 100000000000000000000)")


def test_a_yaml_exponent_without_a_dot_is_a_number():
    text = json.dumps(BASE).replace('"learning_rate": 1e-06', '"learning_rate": 1e-6')
    # YAML 1.1 would read `1e-6` as a string; strict types would then refuse a learning rate
    # everybody writes this way.
    assert '"learning_rate": 1e-6' in text
    path_spec = parse_spec(BASE)
    from_yaml = load_spec_text(text, "run.yaml")
    assert from_yaml.algorithm.learning_rate == path_spec.algorithm.learning_rate == 1e-6


def load_spec_text(text: str, name: str):
    return loads_spec(text, name)


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def spec_yaml() -> str:
    return dumps_spec(parse_spec(BASE))


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("utf16.yaml", lambda: spec_yaml().encode("utf-16"),
         "the file is UTF-16 text; rlaunch reads UTF-8 only. Save it as UTF-8 "
         "(e.g. `iconv -f UTF-16 -t UTF-8`)."),
        ("latin1.yaml", lambda: spec_yaml().replace("name: colocated", "name: c\u00f6located")
         .encode("latin-1"),
         "the file is not UTF-8 text (byte 0xf6 on line"),
        ("digits.yaml", lambda: spec_yaml().replace("seed: 42", "seed: " + "7" * 5000).encode(),
         "it holds an integer of more than 4300 digits; no field takes one. Write the number "
         "the field documents."),
        ("deep.yaml", lambda: ("seed: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(),
         "it nests 100000 levels of brackets; a document may nest at most 100. Write the "
         "document in its documented shape."),
        ("deep.json", lambda: ("[" * 100_000 + "]" * 100_000).encode(),
         "it nests 100000 levels of brackets"),
        ("twice.yaml", lambda: (spec_yaml() + "seed: 43\n").encode(),
         "key 'seed' is written twice (lines "),
        ("surrogate.yaml", lambda: spec_yaml().replace("name: colocated-1x8",
                                                       'name: "\\uD83D-run"').encode(),
         "it holds a string that is not Unicode text ('\\\\ud83d-run': an unpaired surrogate "
         "escape); write the character itself, or a \\U0001xxxx escape."),
        ("twice.json", lambda: b'{"seed": 1, "seed": 2}',
         "key 'seed' is written twice in one object; JSON readers would silently keep the last "
         "one. Keep one of them."),
    ],
)
def test_unreadable_spec_files_get_one_clear_problem_and_exit_2(tmp_path, name, content,
                                                                 problem):
    path = write(tmp_path, name, content())
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (found,) = caught.value.problems
    assert found.startswith(problem)
    for command in (["preflight", str(path)], ["render", str(path), "-o", "-"]):
        result = CliRunner().invoke(main, command)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.exit_code == 2, result.output
        assert f"{path}: not a valid RunSpec (1 problem(s))\n  - {problem}" in result.output


def test_a_directory_given_as_the_spec_is_named(tmp_path):
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path)
    assert caught.value.problems == ["it is a directory, not a file."]


def test_a_spec_path_longer_than_the_file_system_allows_is_named(tmp_path):
    # is_dir() itself raised OSError [Errno 36], a traceback from preflight, render and build.
    path = tmp_path / ("a" * 300 + ".yaml")
    for command in (["preflight", str(path)], ["render", str(path), "-o", "-"],
                    ["build", "--list", str(path)]):
        result = CliRunner().invoke(main, command)
        assert isinstance(result.exception, SystemExit), result.output
        assert result.exit_code == 2, result.output
        assert "  - cannot read the file: File name too long\n" in result.output


def test_a_nul_character_in_a_string_is_refused_by_every_command(tmp_path):
    # The spec fuzz found it: a NUL in a name or a store prefix reached pathlib in render and
    # status, a ValueError traceback ("embedded null byte").
    for path, value in (("name", "run\x00x"), ("execution.store_prefix", "/srv/a\x00b")):
        data = worked_example("colocated-1x8")
        section, _, key = path.rpartition(".")
        (data[section] if section else data)[key] = value
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(data))
        for command in (["preflight", str(spec)], ["render", str(spec), "-o", "-"],
                        ["status", str(spec), "--store", str(tmp_path / "store")]):
            result = CliRunner().invoke(main, command)
            assert isinstance(result.exception, SystemExit), (command, result.exception)
            # status says so as an error of its own (exit 1), the others as a bad spec (2).
            assert result.exit_code == (1 if command[0] == "status" else 2), result.output
            assert "not a valid RunSpec (1 problem(s))" in result.output
            assert (f"  - {path}: Value error, strings must not hold a NUL character (\\x00): no "
                    "path, URL or tool downstream accepts one") in result.output
