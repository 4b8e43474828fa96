"""The experiment runner: every script goes through it, it records provenance, and the layout check can fail.

* every script an ``experiment.toml`` declares runs its ``main`` through
  :func:`experiments.runner.run` (checked in its source, then by calling ``main`` with the
  runner stopped at its first step);
* a script made by ``python -m experiments new`` measures, writes its provenance record
  beside its data, renders from the committed data, and writes elsewhere with ``--out``;
* ``python -m experiments check`` fails where a data file has no record or a file is not
  declared (on copies of the tree, never the tree itself).
"""

from __future__ import annotations

import importlib
import inspect
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

import experiments  # noqa: E402
from experiments import __main__ as cli  # noqa: E402
from experiments import runner  # noqa: E402
from experiments.__main__ import layout_problems, new  # noqa: E402


class _Stopped(Exception):
    """Raised by the runner's first step in the test that every script reaches it."""


def _scripts():
    return [pytest.param(e, id=e.name) for e in experiments.experiments()]


@pytest.mark.parametrize("experiment", _scripts())
def test_every_experiment_script_goes_through_the_runner(experiment, monkeypatch):
    module = importlib.import_module(experiment.module)
    source = inspect.getsource(module.main)
    assert "run(__file__" in source, (f"{experiment.module}.main does not call experiments.runner.run "
                                      "(see docs/contributing.md, 'Adding an experiment')")

    def stop(*args, **kwargs):
        raise _Stopped

    monkeypatch.setattr(runner, "parser_for", stop)
    before = len(runner.RUNS)
    with pytest.raises(_Stopped):
        module.main(["--help"])
    assert runner.RUNS[before:] == [experiment.module]


def test_the_layout_test_fails_on_a_script_with_its_own_command_line(tmp_path):
    # negative control of the test above: a main that parses its own arguments is caught by the source check
    script = tmp_path / "own_parser.py"
    script.write_text("import argparse\n\ndef main(argv=None):\n    argparse.ArgumentParser().parse_args(argv)\n")
    spec = importlib.util.spec_from_file_location("own_parser", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "run(__file__" not in inspect.getsource(module.main)


def _load(path: Path):
    return cli._load_script(path)


def test_new_writes_a_skeleton_that_measures_records_and_renders(tmp_path):
    written = new("toy_example", tmp_path, title="A toy example")
    folder = tmp_path / "experiments" / "toy_example"
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert names == {"experiments/toy_example/toy_example.py", "experiments/toy_example/experiment.toml",
                     "experiments/toy_example/README.md", "tests/test_experiment_toy_example.py",
                     "experiments/toy_example/toy_example.json", "experiments/toy_example/toy_example.provenance.json"}
    compile((tmp_path / "tests" / "test_experiment_toy_example.py").read_text(), "test", "exec")
    (experiment,) = experiments.experiments(tmp_path)
    assert (experiment.name, experiment.render, experiment.run) == ("toy_example", ("--render",), ())
    record = json.loads((folder / "toy_example.provenance.json").read_text())
    assert record["command"] == "python -m experiments.toy_example.toy_example" and record["seed"] == 0
    assert record["argv"] == [] and record["samples"] == 1000
    page = (folder / "README.md").read_text()
    assert "| 1000 |" in page and "# A toy example" in page
    # the page is what the committed data give: rendering again changes nothing
    assert _load(folder / "toy_example.py").main(["--render"]) == 0
    assert (folder / "README.md").read_text() == page
    assert layout_problems(tmp_path) == []
    with pytest.raises(ValueError, match="exists already"):
        new("toy_example", tmp_path)
    with pytest.raises(ValueError, match="identifier"):
        new("Not-A-Name", tmp_path)
    (tmp_path / "experiments" / "runner.py").write_text("")
    with pytest.raises(ValueError, match="is taken"):
        new("runner", tmp_path)  # a module of the package, and this test's own file


def test_out_writes_elsewhere_and_leaves_the_folder_as_it_was(tmp_path):
    new("toy_example", tmp_path)
    folder = tmp_path / "experiments" / "toy_example"
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    out = tmp_path / "elsewhere"
    # a script's own argument (--samples) beside the runner's (--out)
    assert _load(folder / "toy_example.py").main(["--samples", "50", "--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "toy_example.json", "toy_example.provenance.json"]
    assert json.loads((out / "toy_example.json").read_text())["samples"] == 50
    assert json.loads((out / "toy_example.provenance.json").read_text())["argv"] == ["--samples", "50", "--out",
                                                                                      str(out)]


def test_out_takes_a_declared_output_outside_the_folder_too(tmp_path):
    new("toy_example", tmp_path)
    folder = tmp_path / "experiments" / "toy_example"
    note = tmp_path / "NOTE.md"
    note.write_text("committed note\n")
    toml = folder / "experiment.toml"
    toml.write_text(toml.read_text() + 'outputs = ["README.md", "../../NOTE.md"]\n')
    script = folder / "toy_example.py"
    script.write_text(script.read_text().replace(
        '    write_block(HERE / "README.md"',
        '    job.output("../../NOTE.md").write_text("rendered note\\n")\n    write_block(HERE / "README.md"'))
    out = tmp_path / "elsewhere"
    assert _load(script).main(["--render", "--out", str(out)]) == 0
    assert note.read_text() == "committed note\n"
    assert (out / "repository" / "NOTE.md").read_text() == "rendered note\n"
    assert not (out / "README.md").exists()  # the page did not change: write_block left it alone


def test_the_runner_records_a_data_file_the_measurement_left_without_record(tmp_path):
    new("toy_example", tmp_path, measure=False)
    folder = tmp_path / "experiments" / "toy_example"
    script = folder / "toy_example.py"
    script.write_text(script.read_text().replace("    job.record(DATA, seed=SEED, samples=job.args.samples)\n", ""))
    module = _load(script)
    assert module.main([]) == 0
    record = json.loads((folder / "toy_example.provenance.json").read_text())
    assert record["command"] == "python -m experiments.toy_example.toy_example" and record["seed"] == 0
    # a render never writes a record
    (folder / "toy_example.provenance.json").unlink()
    with pytest.raises(FileNotFoundError):
        module.main(["--render"])
    assert not (folder / "toy_example.provenance.json").exists()


def test_a_script_writes_outside_its_folder_only_where_its_toml_says(tmp_path):
    new("toy_example", tmp_path)
    folder = tmp_path / "experiments" / "toy_example"
    job = runner.Job(module="experiments.toy_example.toy_example", folder=folder, out=folder, args=None,
                     render_only=True, experiment=runner.experiment_of(folder / "toy_example.py"))
    with pytest.raises(ValueError, match="not declared in the outputs"):
        job.output("../../README.md")
    with pytest.raises(ValueError, match="not declared in the outputs"):
        job.declared(tmp_path / "README.md")
    assert job.declared(folder / "figure.png") == (folder / "figure.png").resolve()
    scoreboard = ROOT / "experiments" / "scoreboard" / "scoreboard.py"
    job = runner.Job(module="experiments.scoreboard.scoreboard", folder=scoreboard.parent, out=scoreboard.parent,
                     args=None, render_only=True, experiment=runner.experiment_of(scoreboard))
    assert job.output("../../replica/common/validity_table.json") == ROOT / "replica" / "common" / "validity_table.json"


def _package_copy(tmp_path) -> Path:
    """A tree with the experiments package alone (no topic), to add one and run it as a subprocess."""
    (tmp_path / "experiments").mkdir()
    for name in ("__init__.py", "__main__.py", "pages.py", "provenance.py", "runner.py"):
        shutil.copy(ROOT / "experiments" / name, tmp_path / "experiments" / name)
    return tmp_path


def test_the_check_passes_on_a_new_skeleton_and_fails_on_a_render_that_writes_undeclared_files(tmp_path):
    root = _package_copy(tmp_path)
    new("toy_example", root)
    experiment = experiments.find("toy_example", root)
    ok, diff = cli.check(experiment, root)
    assert ok, diff
    script = root / "experiments" / "toy_example" / "toy_example.py"
    stray = '    (HERE / "stray.txt").write_text("not declared")\n'
    script.write_text(script.read_text().replace('    write_block(HERE / "README.md"',
                                                 stray + '    write_block(HERE / "README.md"'))
    ok, diff = cli.check(experiment, root)
    assert not ok and "does not declare as outputs or figures: experiments/toy_example/stray.txt" in diff


def _tree_copy(tmp_path) -> Path:
    """The experiments (with the sweep records they read) copied, to break on purpose."""
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments",
                    ignore=shutil.ignore_patterns("__pycache__", "*.sqlite*"))
    goals = tmp_path / "benchmarks" / "goals"
    goals.mkdir(parents=True)
    for path in (ROOT / "benchmarks" / "goals").glob("sweep_*.json"):
        shutil.copy(path, goals / path.name)
    return tmp_path


def test_the_committed_tree_declares_and_records_every_file():
    assert layout_problems(ROOT) == []


def test_the_check_fails_on_a_data_file_without_provenance(tmp_path):
    root = _tree_copy(tmp_path)
    assert layout_problems(root) == []
    (root / "experiments" / "top_k" / "top_k_exact.provenance.json").unlink()
    problems = layout_problems(root)
    assert problems == ["experiments/top_k: data top_k_exact.csv has no provenance record beside it "
                        "(top_k_exact.provenance.json)",
                        "experiments/top_k: data top_k_exact.json has no provenance record beside it "
                        "(top_k_exact.provenance.json)"]


def test_the_check_fails_on_an_undeclared_file(tmp_path):
    root = _tree_copy(tmp_path)
    (root / "experiments" / "zipf" / "zipf_extra.csv").write_text("a,b\n1,2\n")
    problems = layout_problems(root)
    assert len(problems) == 1 and problems[0].startswith("experiments/zipf: zipf_extra.csv is not declared")


def test_the_check_fails_on_paths_outside_the_folder_and_the_repository(tmp_path):
    root = _tree_copy(tmp_path)
    toml = root / "experiments" / "capacity" / "experiment.toml"
    text = toml.read_text()
    toml.write_text(text.replace('name = "capacity_d512"\nmeasures = ["capacity"]\nwall_time = "25 min"\n'
                                 'checked_by = "pc_of_d"\nrun = []',
                                 'name = "capacity_d512"\nmeasures = ["capacity"]\nwall_time = "25 min"\n'
                                 'checked_by = "pc_of_d"\nrun = ["/tmp/capacity_d512_store"]'))
    sphere = root / "experiments" / "sphere" / "experiment.toml"
    sphere.write_text(sphere.read_text().replace('data = ["sphere_optimal.json"',
                                                 'data = ["../top_k/top_k_unknown.json", "sphere_optimal.json"'))
    problems = layout_problems(root)
    assert any("capacity/capacity_d512: run argument '/tmp/capacity_d512_store'" in p for p in problems), problems
    assert any("sphere/sphere_optimal: reads experiments/top_k/top_k_unknown.json" in p for p in problems), problems


def test_the_command_line_check_exits_1_on_a_layout_problem(tmp_path, monkeypatch, capsys):
    root = _tree_copy(tmp_path)
    (root / "experiments" / "zipf" / "zipf.provenance.json").unlink()
    monkeypatch.setattr(cli, "check", lambda experiment, root: (True, ""))  # the pages are not what is tested
    monkeypatch.setattr(cli, "coverage_problems", lambda *args, **kwargs: [])
    assert cli._check(["zipf"], root) == 1
    out = capsys.readouterr().out
    assert "LAYOUT experiments/zipf: data zipf.json has no provenance record beside it" in out
    (root / "experiments" / "zipf" / "zipf.provenance.json").write_text("{}\n")
    assert cli._check(["zipf"], root) == 0
