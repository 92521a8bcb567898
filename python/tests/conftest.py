"""Fixtures of the llm_oracle pytest suite (python/tests/CMakeLists.txt sets the environment)."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

SHARED = pathlib.Path(os.environ.get("ORACLE_SHARED_DIR", pathlib.Path(__file__).resolve().parents[2] / ".." / "shared"))
STORIES = SHARED / "models" / "stories260K" / "stories260K.bin"
SMOLLM2 = SHARED / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _tool(var):
    path = os.environ.get(var)
    if not path or not os.path.exists(path):
        pytest.fail(f"${var} is not set to a built binary (run the suite through ctest)")
    return path


@pytest.fixture(scope="session")
def stories_path():
    assert STORIES.exists(), f"fixture {STORIES} is missing (tests need ../shared)"
    return str(STORIES)


@pytest.fixture(scope="session")
def stories(stories_path):
    import llm_oracle
    return llm_oracle.Model(stories_path)


@pytest.fixture(scope="session")
def smollm2_path():
    assert SMOLLM2.exists(), f"fixture {SMOLLM2} is missing"
    return str(SMOLLM2)


@pytest.fixture(scope="session")
def oracle_cli():
    path = _tool("ORACLE_BIN")

    def run(*args, ok=(0,)):
        out = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        assert out.returncode in ok, f"exit {out.returncode}: {out.stderr}"
        return json.loads(out.stdout) if "--json" in args else out.stdout
    return run


@pytest.fixture(scope="session")
def probe(tmp_path_factory):
    """probe(OP, args...): api_probe (the C++ API through libllm_oracle). numpy arrays
    are written as raw files; "@OUT" marks the output file, read back as out_dtype;
    without it the probe's stdout is returned."""
    path = _tool("ORACLE_API_PROBE")
    work = tmp_path_factory.mktemp("probe")
    counter = [0]

    def call(op, *args, out_dtype=np.float32):
        argv, out_file = [path, op], None
        for a in args:
            counter[0] += 1
            if isinstance(a, str) and a == "@OUT":
                out_file = work / f"out{counter[0]}.bin"
                argv.append(str(out_file))
            elif isinstance(a, np.ndarray):
                f = work / f"in{counter[0]}.bin"
                np.ascontiguousarray(a).tofile(f)
                argv.append(str(f))
            else:
                argv.append(str(a))
        res = subprocess.run(argv, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        call.last_stdout = res.stdout
        return np.fromfile(out_file, dtype=out_dtype) if out_file else res.stdout
    return call
