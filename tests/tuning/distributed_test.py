import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 150


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(tuner_id, port, directory):
    env = {
        **os.environ,
        "KERASTUNER_TUNER_ID": tuner_id,
        "KERASTUNER_ORACLE_IP": "127.0.0.1",
        "KERASTUNER_ORACLE_PORT": str(port),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    command = [sys.executable, "-m", "tuning.search", "--recipe", "tiny_dyck_lstm"]
    command += ["--max-trials", "2", "--units", "4,8", "--num-layers", "1"]
    command += ["--directory", str(directory), "--project-name", "distributed"]
    command += ["--verbose", "0"]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.processes
def test_chief_and_worker_on_localhost_run_the_search_and_exit(tmp_path):
    port = free_port()
    chief = start("chief", port, tmp_path)
    worker = start("tuner0", port, tmp_path)
    outputs = {}
    try:
        for name, process in (("worker", worker), ("chief", chief)):
            outputs[name], _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        for process in (chief, worker):
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert worker.returncode == 0, outputs["worker"][-3000:]
    assert chief.returncode == 0, outputs["chief"][-3000:]
    assert "Tuner tuner0: no trials left" in outputs["worker"]
    assert "2 trials" in outputs["chief"]
    assert "Best recipe:" in outputs["chief"]
    project = tmp_path / "distributed"
    statuses = [
        json.loads(path.read_text())["status"]
        for path in sorted(project.glob("trial_*/trial.json"))
    ]
    assert statuses == ["COMPLETED", "COMPLETED"]
    # The worker trained both trials' models; the chief only served the oracle.
    assert len(list(project.glob("trial_*/checkpoint.weights.h5"))) == 2
