"""Registry validation: each bad case raises RegistryError with its own message naming file, module, key."""
import json

import pytest

from aiter_lite.jit import RegistryError, load_registry
from aiter_lite.jit.env import package_root

GOOD_ENTRY = {"sources": {"cpu": ["a.cpp"]}, "include_dirs": ["."], "flags": {"cxx": ["-O2"]}}


def load(tmp_path, data, text=None):
    (tmp_path / "a.cpp").write_text("// test source\n")
    path = tmp_path / "reg.json"
    path.write_text(text if text is not None else json.dumps(data))
    return load_registry([path], tmp_path)


def with_entry(**changes):
    entry = dict(GOOD_ENTRY, **changes)
    return {"modules": {"module_x": entry}}


def test_good_registry_loads(tmp_path):
    reg = load(tmp_path, with_entry())
    assert reg.get("module_x").backends == ("cpu",)


def test_shipped_registry_is_valid():
    root = package_root()
    reg = load_registry([root / "jit_config.json"], root / "csrc")
    assert {"module_causal_conv1d", "module_matmul"} <= set(reg.modules)
    for entry in reg:
        assert set(entry.backends) == {"cuda", "hip", "cpu"}


BAD_CASES = {
    "unknown entry key": (with_entry(sourcez=[]), ["unknown key", "sourcez", "module_x", "reg.json"]),
    "missing source file": (with_entry(sources={"cpu": ["nope.cpp"]}),
                            ["source file not found", "nope.cpp", "sources.cpu[0]", "module_x"]),
    "wrong type": (with_entry(include_dirs="."), ["expected a list of strings", "include_dirs", "module_x"]),
    "wrong flag type": (with_entry(flags={"cxx": "-O2"}), ["expected a list", "flags.cxx"]),
    "unknown backend": (with_entry(sources={"metal": ["a.cpp"]}), ["unknown backend 'metal'", "sources.metal"]),
    "unknown compiler": (with_entry(flags={"rustc": []}), ["unknown compiler 'rustc'", "flags.rustc"]),
    "non-identifier name": ({"modules": {"../evil": GOOD_ENTRY}}, ["not an identifier", "'../evil'"]),
    "unknown placeholder": (with_entry(sources={"cpu": ["{home}/a.cpp"]}),
                            ["unknown placeholder {home}", "sources.cpu[0]"]),
    "missing include dir": (with_entry(include_dirs=["nodir"]), ["include dir not found", "include_dirs[0]"]),
    "bad arch": (with_entry(sources={"cuda": [{"path": "a.cpp", "archs": ["sm90"]}]}),
                 ["invalid arch 'sm90'", "sources.cuda[0].archs[0]"]),
    "arch on cpu source": (with_entry(sources={"cpu": [{"path": "a.cpp", "archs": ["sm_90a"]}]}),
                           ["arch restrictions apply to cuda/hip sources only"]),
    "bad define": (with_entry(defines=["1BAD"]), ["invalid define '1BAD'", "defines[0]"]),
    "unknown top-level key": ({"modules": {}, "extra": 1}, ["unknown top-level key", "extra"]),
    "modules not an object": ({"modules": []}, ["expected an object of module name", "modules"]),
    "missing sources": (with_entry(sources=None) | {"modules": {"module_x": {"flags": {}}}},
                        ["missing required key", "sources"]),
    "empty source list": (with_entry(sources={"cpu": []}), ["empty source list", "sources.cpu"]),
    "schema version": ({"schema_version": 7, "modules": {}}, ["unsupported schema_version 7"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_registry(tmp_path, case):
    data, expected = BAD_CASES[case]
    with pytest.raises(RegistryError) as info:
        load(tmp_path, data)
    for fragment in expected:
        assert fragment in str(info.value), (case, str(info.value))


def test_bad_registry_messages_are_distinct(tmp_path):
    messages = set()
    for case, (data, _) in BAD_CASES.items():
        with pytest.raises(RegistryError) as info:
            load(tmp_path, data)
        messages.add(str(info.value).replace(str(tmp_path), ""))
    assert len(messages) == len(BAD_CASES)


def test_invalid_json(tmp_path):
    with pytest.raises(RegistryError, match="invalid JSON"):
        load(tmp_path, None, text="{not json")


def test_duplicate_module_across_files(tmp_path):
    (tmp_path / "a.cpp").write_text("")
    for name in ("one.json", "two.json"):
        (tmp_path / name).write_text(json.dumps(with_entry()))
    with pytest.raises(RegistryError, match="defined again"):
        load_registry([tmp_path / "one.json", tmp_path / "two.json"], tmp_path)


def test_unknown_module_lists_known(tmp_path):
    reg = load(tmp_path, with_entry())
    with pytest.raises(RegistryError, match="unknown module 'module_y'.*module_x"):
        reg.get("module_y")


def test_registry_strings_are_never_evaluated(tmp_path):
    # An AIter-style f-string/expression is just a (missing) file name here, never code.
    with pytest.raises(RegistryError, match="source file not found"):
        load(tmp_path, with_entry(sources={"cpu": ["__import__('os').system('false')"]}))
