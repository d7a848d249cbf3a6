from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command_as_written():
    readme = (ROOT / "README.md").read_text()
    ci_commands = [
        line
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.startswith("python3.11 -m venv")
    ]
    assert len(ci_commands) == 1
    assert f"\n{ci_commands[0]}\n" in readme
