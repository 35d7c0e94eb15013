"""Scenario loading: strict schema, one-line messages naming file and key, overrides."""

import textwrap

import pytest

from sim.errors import SimError
from sim.app.scenario import SCHEMA, Key, apply_overrides, load_scenario, schema_rst

SCENARIO = """\
name = "circle"
[model]
file = "robot.py"
parameters = { elements_per_link = 4, flexible = true }
[trajectory]
kind = "circle"
center = [0.0, 0.0, -0.7]
radius = 0.1
omega = 2
duration = 5.0
[damping]
ratio = 0.001
[transient]
step = 1e-3
[ked]
intervals = 512
modes = 4
"""


@pytest.fixture
def write(tmp_path):
    """write(text, name) -> path of a scenario file next to an empty model file."""
    (tmp_path / "robot.py").write_text("")

    def write(text=SCENARIO, name="a.toml"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path
    return write


def error(path, overrides=()):
    with pytest.raises(SimError) as info:
        load_scenario(path, overrides)
    message = str(info.value)
    assert "\n" not in message, "SimError message must be one line"
    return message


def test_valid_scenario_fills_defaults(write):
    scenario = load_scenario(write())
    assert scenario.data["transient"]["method"] is None, "default method: Newmark, generalized-alpha where it fails"
    assert scenario.data["transient"]["duration"] is None, "optional key without default"


def test_integer_given_for_float_becomes_float(write):
    omega = load_scenario(write()).data["trajectory"]["omega"]
    assert isinstance(omega, float) and omega == 2.0


def test_model_file_resolved_against_scenario_dir(write, tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    assert load_scenario(write()).model_file == (tmp_path / "robot.py").resolve()


def test_model_file_falls_back_to_cwd(write, tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "other.py").write_text("")
    (tmp_path / "scenarios").mkdir()
    path = write(SCENARIO.replace("robot.py", "models/other.py"), "scenarios/b.toml")
    monkeypatch.chdir(tmp_path)
    assert load_scenario(path).model_file == (tmp_path / "models" / "other.py").resolve()


def test_missing_model_file_names_key(write):
    message = error(write(SCENARIO.replace("robot.py", "nope.py")))
    assert "[model] file `nope.py` not found" in message


def test_model_parameters_and_analyses(write):
    scenario = load_scenario(write())
    assert scenario.model_parameters == {"elements_per_link": 4, "flexible": True}
    assert scenario.analyses == ("ked", "transient"), "execution order"


def test_name_defaults_to_file_stem(write):
    scenario = load_scenario(write(SCENARIO.replace('name = "circle"\n', ""), "my_run.toml"))
    assert scenario.name == "my_run"


def test_text_is_original(write):
    assert load_scenario(write()).text == SCENARIO


def test_unknown_key_suggests_close_match(write):
    path = write(SCENARIO.replace("intervals = 512", "intervalz = 512"))
    message = error(path)
    assert message == (f"{path}: unknown key `ked.intervalz`; did you mean `ked.intervals`?")


def test_unknown_table_suggests_close_match(write):
    message = error(write(SCENARIO + "[frequencis]\ncount = 3\n"))
    assert "unknown key `frequencis`; did you mean `frequencies`?" in message


def test_wrong_type(write):
    path = write(SCENARIO.replace("modes = 4", 'modes = "four"'))
    assert error(path) == f"{path}: [ked] modes must be an integer, got 'four'"


def test_negative_integer(write):
    path = write(SCENARIO.replace("intervals = 512", "intervals = -3"))
    assert error(path) == f"{path}: [ked] intervals must be a positive integer, got -3"


def test_zero_step(write):
    path = write(SCENARIO.replace("step = 1e-3", "step = 0.0"))
    assert error(path) == f"{path}: [transient] step must be a positive number, got 0.0"


def test_nan_rejected(write):
    path = write(SCENARIO.replace("radius = 0.1", "radius = nan"))
    assert error(path) == f"{path}: [trajectory] radius must be a finite number, got nan"


def test_infinite_rejected(write):
    path = write(SCENARIO.replace("center = [0.0, 0.0, -0.7]", "center = [0.0, inf, -0.7]"))
    assert "[trajectory] center must be a non-empty list of finite numbers" in error(path)


def test_boolean_is_not_a_number(write):
    path = write(SCENARIO.replace("ratio = 0.001", "ratio = true"))
    assert "[damping] ratio must be a finite number, got true" in error(path)


def test_choice_suggests_close_match(write):
    path = write(SCENARIO.replace("step = 1e-3", 'step = 1e-3\nmethod = "newmarc"'))
    assert "got 'newmarc'; did you mean `newmark`?" in error(path)


def test_missing_required_key(write):
    path = write(SCENARIO.replace("step = 1e-3\n", ""))
    assert error(path) == f"{path}: missing required key `transient.step`"


def test_trajectory_key_of_other_kind(write):
    path = write(SCENARIO.replace("radius = 0.1", "radius = 0.1\nperiod = 1.0"))
    assert "[trajectory] period is not used by kind `circle`" in error(path)


def test_trajectory_required_by_kind(write):
    path = write(SCENARIO.replace("radius = 0.1\n", ""))
    assert "missing key `trajectory.radius` (required by kind `circle`)" in error(path)


def test_trajectory_analysis_needs_trajectory(write):
    text = SCENARIO.split("[trajectory]")[0] + "[ked]\nintervals = 8\n"
    assert "[ked] needs a [trajectory] table" in error(write(text))


def test_scenario_without_analysis(write):
    text = SCENARIO.split("[transient]")[0]
    assert "no analysis to run" in error(write(text))


def test_model_parameter_must_be_scalar(write):
    path = write(SCENARIO.replace("flexible = true", "flexible = [1, 2]"))
    assert "[model.parameters] flexible must be a finite number, a boolean or a string" \
        in error(path)


def test_free_form_table_must_be_table(write):
    path = write('design = 3\n' + SCENARIO)
    assert error(path) == f"{path}: design must be a table, got 3"


def test_free_form_table_accepts_any_keys(write):
    scenario = load_scenario(write(SCENARIO + "[design]\nanything = { nested = 1 }\n"))
    assert scenario.data["design"] == {"anything": {"nested": 1}}


def test_sweep_grid_values_must_be_lists(write):
    path = write(SCENARIO + "[sweep]\nanalysis = 'ked'\nparameters = { a = [1.0], b = 2 }\n")
    assert "[sweep.parameters] b must be a non-empty list of finite numbers" in error(path)


def test_sweep_axis_keys_follow_axes(write):
    path = write(SCENARIO + "[sweep]\naxes = ['x', 'y']\nx = [0.0, 0.1, 3]\nz = [0.0, 0.1, 3]\n")
    assert "unknown key `sweep.z`" in error(path)
    path = write(SCENARIO + "[sweep]\naxes = ['x', 'y']\nx = [0.0, 0.1, 3]\n")
    assert "missing key `sweep.y`" in error(path)


def test_malformed_toml_reports_line(write):
    path = write(SCENARIO.replace("radius = 0.1", "radius = = 0.1"))
    message = error(path)
    assert message.startswith(f"{path}: invalid TOML") and "line 8" in message


def test_missing_scenario_file(tmp_path):
    assert "scenario file not found" in error(tmp_path / "missing.toml")


def test_overrides_apply_and_parse_values(write):
    scenario = load_scenario(write(), ["ked.intervals=256",
                                       "model.parameters.elements_per_link=2",
                                       "model.parameters.material=steel"])
    assert scenario.data["ked"]["intervals"] == 256
    assert scenario.model_parameters == {"elements_per_link": 2, "flexible": True,
                                         "material": "steel"}


def test_override_validated_and_named(write):
    assert error(write(), ["ked.intervals=-1"]) == \
        "--set ked.intervals: [ked] intervals must be a positive integer, got -1"


def test_override_unknown_key(write):
    assert "unknown key `ked.intervalz`; did you mean `ked.intervals`?" in \
        error(write(), ["ked.intervalz=3"])


def test_override_without_equals(write):
    assert "expected KEY=VALUE" in error(write(), ["ked.intervals"])


def test_apply_overrides_does_not_mutate():
    data = {"ked": {"intervals": 512}}
    result = apply_overrides(data, ["ked.intervals=8", "frequencies.count=3"])
    assert data == {"ked": {"intervals": 512}}
    assert result == {"ked": {"intervals": 8}, "frequencies": {"count": 3}}


def test_schema_is_data():
    def keys(schema):
        for spec in schema.values():
            yield from keys(spec) if isinstance(spec, dict) else [spec]
    assert all(isinstance(spec, Key) for spec in keys(SCHEMA))


def test_schema_reference_lists_every_key():
    text = schema_rst()
    assert "``damping.ratio``" in text and "``ked.damping_ratio``" not in text and "``transient.newton_max_iter``" in text


def test_damping_table_is_filled_when_absent(write):
    """Every analysis reads the one `[damping]` model: without the table, its defaults
    (undamped, 12 modes); with it, the values given."""
    damping = load_scenario(write(SCENARIO.replace("[damping]\nratio = 0.001\n", ""))).data["damping"]
    assert damping == {"ratio": 0.0, "eta": 0.0, "rayleigh_alpha": 0.0, "rayleigh_beta": 0.0, "modes": 12}
    assert load_scenario(write()).data["damping"]["ratio"] == 0.001
    assert "damping" not in load_scenario(write()).analyses, "a model, not an analysis"


@pytest.mark.parametrize("table", ["transient", "ked", "frf"])
@pytest.mark.parametrize("key, new, value", [("damping_ratio", "ratio", "0.02"), ("eta", "eta", "0.096"),
                                             ("rayleigh_alpha", "rayleigh_alpha", "3.0"),
                                             ("rayleigh_beta", "rayleigh_beta", "0.0002"),
                                             ("damping_modes", "modes", "6")])
def test_per_analysis_damping_keys_point_to_the_damping_table(write, table, key, new, value):
    """A damping key of an analysis table is refused with one line naming the file and the
    key and saying where its value goes now."""
    text = SCENARIO + '[frf]\ninputs = ["force:P:z"]\noutputs = ["displacement:P:z"]\n'
    path = write(text.replace(f"[{table}]\n", f"[{table}]\n{key} = {value}\n"))
    assert error(path) == (f"{path}: {table}.{key} is gone: damping is one model per robot, used by every "
                           f"analysis; set [damping] {new} = {value}")
    message = error(write(text), [f"{table}.{key}={value}"])
    assert message.startswith(f"--set {table}.{key}: {table}.{key} is gone") and f"[damping] {new} = {value}" in message


def test_damping_override(write):
    scenario = load_scenario(write(), ["damping.ratio=0.05", "damping.modes=4"])
    assert scenario.data["damping"]["ratio"] == 0.05 and scenario.data["damping"]["modes"] == 4
    assert error(write(), ["damping.zeta=0.1"]).startswith("--set damping.zeta: unknown key `damping.zeta`")
