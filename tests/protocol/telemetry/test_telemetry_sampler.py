"""The NVML sampler: no GPU, a fake NVML through the one seam, odd NVML returns."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runner import run_atlas, snapshot

from atlas_files.protocol import telemetry as telemetrymod
from atlas_files.protocol.telemetry import nvml
from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.storage import schemas
from atlas_files.storage.record import Record

# A stand-in for nvidia-ml-py: 2 GPUs; GPU 0 does not support power readings and runs 3
# processes. Written as a module source so the same fake serves in this process (through
# nvml.load_library) and in a child process (first on PYTHONPATH, imported as pynvml).
FAKE_PYNVML = '''
MIB = 1024 * 1024
NVML_TEMPERATURE_GPU = 0
CALLS = {"init": 0, "shutdown": 0}


class NVMLError(Exception):
    def __init__(self, value):
        self.value = value

    def __str__(self):
        return {3: "Not Supported", 9: "Driver Not Loaded"}.get(self.value, "Unknown Error")


class NVMLError_NotSupported(NVMLError):
    def __init__(self):
        super().__init__(3)


class _S:
    def __init__(self, **kw):
        self.__dict__.update(kw)


GPUS = [
    {"uuid": "GPU-0a0a0a0a", "name": "Fake H200", "used": 70000 * MIB,
     "total": 143771 * MIB, "util": (87, 41), "temp": 64, "power": None, "limit": 700000,
     "procs": [(4101, 20000 * MIB, "python"), (4102, 30000 * MIB, "train"),
               (4103, 20000 * MIB, "serve")]},
    {"uuid": "GPU-1b1b1b1b", "name": "Fake H200", "used": 4 * MIB, "total": 143771 * MIB,
     "util": (0, 0), "temp": 31, "power": 72500, "limit": 700000, "procs": []},
]
NAMES = {pid: name for g in GPUS for pid, _, name in g["procs"]}


def nvmlInit():
    CALLS["init"] += 1


def nvmlShutdown():
    CALLS["shutdown"] += 1


def nvmlSystemGetDriverVersion():
    return "999.01"


def nvmlDeviceGetCount():
    return len(GPUS)


def nvmlDeviceGetHandleByIndex(i):
    return i


def nvmlDeviceGetUUID(h):
    return GPUS[h]["uuid"]


def nvmlDeviceGetName(h):
    return GPUS[h]["name"].encode()  # old bindings answer bytes


def nvmlDeviceGetMemoryInfo(h):
    g = GPUS[h]
    return _S(used=g["used"], total=g["total"], free=g["total"] - g["used"])


def nvmlDeviceGetUtilizationRates(h):
    return _S(gpu=GPUS[h]["util"][0], memory=GPUS[h]["util"][1])


def nvmlDeviceGetTemperature(h, sensor):
    return GPUS[h]["temp"]


def nvmlDeviceGetPowerUsage(h):
    if GPUS[h]["power"] is None:
        raise NVMLError_NotSupported()
    return GPUS[h]["power"]


def nvmlDeviceGetEnforcedPowerLimit(h):
    return GPUS[h]["limit"]


def nvmlDeviceGetComputeRunningProcesses(h):
    return [_S(pid=pid, usedGpuMemory=mem) for pid, mem, _ in GPUS[h]["procs"]]


def nvmlDeviceGetGraphicsRunningProcesses(h):
    return []


def nvmlSystemGetProcessName(pid):
    return NAMES[pid]
'''

EXPECTED_GPUS = [
    {"index": 0, "uuid": "GPU-0a0a0a0a", "name": "Fake H200", "memory_used_mib": 70000,
     "memory_total_mib": 143771, "utilization_gpu_pct": 87, "utilization_memory_pct": 41,
     "temperature_c": 64, "power_w": None, "power_limit_w": 700.0,
     "processes": [
         {"pid": 4101, "name": "python", "kinds": ["compute"], "memory_used_mib": 20000},
         {"pid": 4102, "name": "train", "kinds": ["compute"], "memory_used_mib": 30000},
         {"pid": 4103, "name": "serve", "kinds": ["compute"], "memory_used_mib": 20000},
     ],
     "unread": {"power_w": "Not Supported"}},
    {"index": 1, "uuid": "GPU-1b1b1b1b", "name": "Fake H200", "memory_used_mib": 4,
     "memory_total_mib": 143771, "utilization_gpu_pct": 0, "utilization_memory_pct": 0,
     "temperature_c": 31, "power_w": 72.5, "power_limit_w": 700.0, "processes": [],
     "unread": {}},
]


def fake_module() -> Any:
    mod = types.ModuleType("fake_pynvml")
    exec(compile(FAKE_PYNVML, "fake_pynvml", "exec"), mod.__dict__)  # noqa: S102
    return mod


def fake_on_path(folder: Path, source: str = FAKE_PYNVML) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pynvml.py").write_text(source)
    return folder


def _real_nvml_works() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001
        return False
    pynvml.nvmlShutdown()
    return True


# -- without a GPU -------------------------------------------------------------------------


def test_no_gpu_sampler_says_unavailable_with_reason_and_exits_0(record: Record) -> None:
    if _real_nvml_works():
        pytest.skip("this machine has a working NVML; the forced case below still runs")
    before = snapshot(record.root)
    text = run_atlas("telemetry", "sample", record=record.root)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("nvml: unavailable (")
    assert len(text.stdout.strip()) > len("nvml: unavailable ()")
    assert "Traceback" not in text.stderr
    res = run_atlas("telemetry", "sample", "--json", record=record.root)
    assert res.returncode == 0, res.stderr
    data = res.json()
    assert data["nvml"]["available"] is False
    assert data["nvml"]["reason"]
    assert data["gpus"] == []
    assert snapshot(record.root) == before  # a machine never writes its own row


def test_missing_binding_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    # A pynvml that cannot be imported (as when nvidia-ml-py is absent) comes first.
    path = fake_on_path(tmp_path / "nobinding", "raise ImportError('no module pynvml')\n")
    # A child process: PYTHONPATH is read when an interpreter starts, not by the command.
    res = run_atlas("telemetry", "sample", "--json", env={"PYTHONPATH": str(path)},
                    process=True)
    assert res.returncode == 0, res.stderr
    assert res.json()["nvml"] == {
        "available": False, "driver_version": None,
        "reason": "nvidia-ml-py is not installed: no module pynvml",
    }


def test_driver_not_loaded_is_unavailable_and_shut_down_is_not_called() -> None:
    mod = fake_module()

    def init() -> None:
        raise mod.NVMLError(9)

    mod.nvmlInit = init
    data = nvml.sample(load=lambda: mod)
    assert data["nvml"] == {"available": False, "reason": "Driver Not Loaded",
                            "driver_version": None}
    assert data["gpus"] == []
    assert nvml.describe(data) == ["nvml: unavailable (Driver Not Loaded)"]


# -- a fake NVML through the one seam -------------------------------------------------------


def test_fake_nvml_through_the_seam_gives_exact_values_and_nulls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_module()
    monkeypatch.setattr(nvml, "load_library", lambda: mod)
    data = nvml.sample()
    assert data["nvml"] == {"available": True, "reason": None, "driver_version": "999.01"}
    assert data["gpus"] == EXPECTED_GPUS
    assert mod.CALLS == {"init": 1, "shutdown": 1}
    lines = nvml.describe(data)
    assert lines[0] == "nvml: driver 999.01, 2 GPUs"
    assert "n/a" in lines[1] and "3 processes" in lines[1]


def test_probe_writes_the_fake_gpus_into_the_row_exactly(
        record: Record, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no per-user probes or approvals of the host
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    fake = fake_on_path(tmp_path / "fakenvml")
    command = (f"PYTHONPATH={shlex.quote(str(fake))} {shlex.quote(sys.executable)} "
               "-m atlas_files telemetry sample --json")
    probemod.add_machine(record, "fakebox", "local", timeout="60s")
    # The prober's own command for the machine (atlas.yaml's would need its approval).
    probes = tmp_path / "probes.yaml"
    probes.write_text(json.dumps({"fakebox": {"probe": command, "timeout": "60s"}}))
    res = run_atlas("telemetry", "probe", "fakebox", "--probes", str(probes),
                    record=record.root, identity="prober-1")
    assert res.returncode == 0, res.stderr
    assert "fakebox: reachable, 2 GPUs" in res.stdout
    row = json.loads((record.root / "telemetry" / "fakebox.json").read_text())
    assert schemas.errors("telemetry", row) == []
    assert row["reachable"] is True and row["error"] is None
    assert row["observer"] == "prober-1" and row["machine"] == "fakebox"
    assert row["nvml"]["driver_version"] == "999.01"
    assert row["gpus"] == EXPECTED_GPUS
    listed = run_atlas("telemetry", "ls", "--json", record=record.root).json()
    assert [m["gpus"] for m in listed["machines"]] == [EXPECTED_GPUS]
    usage = telemetrymod.resource_usage(record, "fakebox.gpu0")
    assert usage is not None
    assert (usage["memory_used_mib"], usage["memory_total_mib"]) == (70000, 143771)
    assert [g["resource"] for g in telemetrymod.busy_gpus(record)] == ["fakebox.gpu0"]


def test_importing_the_package_does_not_load_nvml() -> None:
    code = ("import sys, atlas_files.protocol.telemetry, atlas_files.cli.telemetry; "
            "print('pynvml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# -- odd NVML returns -----------------------------------------------------------------------


class _Odd(Exception):
    pass


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**70),
    st.floats(allow_nan=True), st.text(max_size=30), st.binary(max_size=30),
    st.lists(st.integers(), max_size=3),
)
RAISES = st.sampled_from(["not-supported", "nvml-unknown", "type-error", "odd"])
BEHAVIOUR = st.one_of(ODD_VALUES.map(lambda v: ("value", v)), RAISES.map(lambda e: ("raise", e)))
FIELDS = ("uuid", "name", "memory", "used", "total", "util_gpu", "util_mem", "temp", "power",
          "limit", "procs", "pid", "pmem", "pname", "count", "driver")


def _odd_lib(spec: dict[str, tuple[str, Any]]) -> Any:
    mod = fake_module()

    def get(field: str, normal: Any) -> Any:
        kind, value = spec.get(field, ("normal", None))
        if kind == "normal":
            return normal
        if kind == "value":
            return value
        raise {"not-supported": mod.NVMLError_NotSupported(), "nvml-unknown": mod.NVMLError(999),
               "type-error": TypeError("struct mismatch"), "odd": _Odd("weird")}[value]

    s = mod._S
    mod.nvmlDeviceGetCount = lambda: get("count", 2)
    mod.nvmlSystemGetDriverVersion = lambda: get("driver", "1.0")
    mod.nvmlDeviceGetUUID = lambda h: get("uuid", "GPU-x")
    mod.nvmlDeviceGetName = lambda h: get("name", "Fake")
    mod.nvmlDeviceGetMemoryInfo = lambda h: get(
        "memory", s(used=get("used", 1), total=get("total", 2)))
    mod.nvmlDeviceGetUtilizationRates = lambda h: s(gpu=get("util_gpu", 1),
                                                    memory=get("util_mem", 1))
    mod.nvmlDeviceGetTemperature = lambda h, sensor: get("temp", 40)
    mod.nvmlDeviceGetPowerUsage = lambda h: get("power", 1000)
    mod.nvmlDeviceGetEnforcedPowerLimit = lambda h: get("limit", 1000)
    mod.nvmlDeviceGetComputeRunningProcesses = lambda h: get(
        "procs", [s(pid=get("pid", 7), usedGpuMemory=get("pmem", 1024 * 1024))])
    mod.nvmlSystemGetProcessName = lambda pid: get("pname", "p")
    return mod


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), BEHAVIOUR, max_size=6))
def test_odd_nvml_returns_never_crash_and_always_fit_the_schema(
        spec: dict[str, tuple[str, Any]]) -> None:
    mod = _odd_lib(spec)
    data = nvml.sample(load=lambda: mod)
    assert mod.CALLS["shutdown"] == mod.CALLS["init"] == 1
    row = {"machine": "m", "observed_at": "2026-01-01T00:00:00Z", "observer": "p",
           "reachable": True, "error": None, "nvml": data["nvml"], "gpus": data["gpus"]}
    assert schemas.errors("telemetry", row) == []
    nvml.describe(data)  # the text rendering copes too
    if not data["nvml"]["available"] or not data["gpus"]:
        return
    power = spec.get("power")
    for gpu in data["gpus"]:
        if power == ("raise", "not-supported"):
            assert gpu["power_w"] is None
            assert gpu["unread"]["power_w"] == "Not Supported"
        elif power is None:
            assert gpu["power_w"] == 1.0


def test_the_row_schema_is_valid_2020_12_and_refuses_a_silent_unreachable_row() -> None:
    import jsonschema

    schema = schemas.load("telemetry")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "outside prober" in schema["description"]
    row = {"machine": "m", "observed_at": "2026-01-01T00:00:00Z", "observer": "p",
           "reachable": False, "error": None, "gpus": []}
    assert schemas.errors("telemetry", row)  # unreachable needs its reason
    assert schemas.errors("telemetry", {**row, "error": "exited 255"}) == []
