# SPDX-License-Identifier: MIT
"""The library's include graph against the layer order of
docs/architecture.md: a module includes only its own and lower layers; and
nothing is left out of the build by accident (every source named in
CMakeLists.txt, every test folder in tests/CMakeLists.txt); and tests reach
the library's internals only through tests/internal.h, which includes the
internal headers (a prototype of a baton__ hook written in a test would
still link after the hook's signature changed). A module's private headers
(PRIVATE) are included by its own files only: another module goes through
the narrow header the owner gives it.

Run by CTest (test `layers`): check_layers.py SOURCE_DIR. Standard library
only; exits 1 naming every violation. The check shows it can fail first (a
lower module including a higher one in a scratch tree must be caught)."""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# Public headers owned by a module of another name.
HEADER_OWNER = {"error": "common", "baton": None}  # baton.h: the umbrella
# Headers only their own module includes (tests reach them through
# tests/internal.h). src/coro's control block and thread state: src/sched
# switches through src/coro/hop.h, src/seq through src/coro/jump.h.
PRIVATE = {"coro": {"coro_internal.h"}}


def read_layers(doc):
    """{module: layer} from the table between the layers markers."""
    text = open(doc).read()
    m = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    assert m, f"{doc}: no layers table"
    layers = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            for mod in cells[1].split(","):
                layers[mod.strip()] = int(cells[0])
    return layers


def module_of_include(inc, src_file):
    """The module an include names, or None for system and own headers."""
    if inc.startswith("baton/"):
        name = inc[len("baton/"):-2]
        return HEADER_OWNER.get(name, name)
    if inc.startswith("../"):
        return inc.split("/")[1]
    return None


def violations(root, layers):
    """(file, include, why) for every include that breaks the order."""
    out = []
    for base in ("src", "include/baton"):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for f in files:
                if not f.endswith((".c", ".h", ".S")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if base == "src":
                    mod = rel.split(os.sep)[1]
                else:
                    name = f[:-2]
                    mod = HEADER_OWNER.get(name, name)
                if mod is None:
                    continue
                if mod not in layers:
                    out.append((rel, "", f"module {mod!r} is not in the layers table"))
                    continue
                for line in open(path, errors="replace"):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    other = module_of_include(m.group(1), rel)
                    if other is None or other == mod:
                        continue
                    if os.path.basename(m.group(1)) in PRIVATE.get(other, ()):
                        out.append((rel, m.group(1),
                                    f"{m.group(1)} is private to {other}"))
                        continue
                    if other not in layers:
                        out.append((rel, m.group(1), f"{other!r} is not in the layers table"))
                    elif layers[other] >= layers[mod]:
                        out.append((rel, m.group(1),
                                    f"{mod} (layer {layers[mod]}) includes {other} "
                                    f"(layer {layers[other]})"))
    return out


# A declaration at file scope of a baton__ function or variable: a return
# or variable type, then the name, then `(`, `;` or an attribute.
HAND_DECL = re.compile(r"^(?:extern\s+)?(?:const\s+|unsigned\s+|struct\s+\w+\s+)*"
                       r"\w+[\s*]+baton__\w+\s*(?:\(|;|\[|__attribute__)")


def hand_declared(root):
    """(file, line) for every baton__ hook a test declares itself instead
    of including tests/internal.h (tests/ and bindings/*/tests)."""
    out = []
    dirs = [os.path.join(root, "tests")]
    bindings = os.path.join(root, "bindings")
    if os.path.isdir(bindings):
        dirs += [os.path.join(bindings, b, "tests") for b in sorted(os.listdir(bindings))]
    for top in dirs:
        for dirpath, _, files in os.walk(top):
            for f in files:
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if not f.endswith((".c", ".h")) or rel == os.path.join("tests", "internal.h"):
                    continue
                for line in open(path, errors="replace"):
                    if HAND_DECL.match(line) and "{" not in line:
                        out.append((rel, line.strip()))
    return out


def test_tests_declare_no_internal_hooks(tmp_path=None):
    """No test declares a baton__ hook by hand; shown able to fail on a
    scratch tree first."""
    from pathlib import Path
    if tmp_path is not None:
        scratch = Path(tmp_path) / "decl"
        (scratch / "tests" / "m").mkdir(parents=True)
        (scratch / "tests" / "m" / "test_m.c").write_text(
            "extern int baton__knob __attribute__((weak));\n"
            "uint64_t baton__count(void);\n"
            "\tx = baton__count();\n")
        bad = hand_declared(str(scratch))
        assert [b[1] for b in bad] == ["extern int baton__knob __attribute__((weak));",
                                       "uint64_t baton__count(void);"], bad
    bad = hand_declared(ROOT)
    assert not bad, "declare these in tests/internal.h (from the library's headers): " + \
        "; ".join(f"{f}: {l}" for f, l in bad)


def test_library_follows_the_layers():
    layers = read_layers(os.path.join(ROOT, "docs", "architecture.md"))
    bad = violations(ROOT, layers)
    assert not bad, "\n".join(f"{f}: #include {i}: {why}" for f, i, why in bad)


def test_every_src_folder_has_a_layer():
    layers = read_layers(os.path.join(ROOT, "docs", "architecture.md"))
    folders = {d for d in os.listdir(os.path.join(ROOT, "src"))
               if os.path.isdir(os.path.join(ROOT, "src", d))}
    assert folders <= set(layers), folders - set(layers)


def test_a_cycle_is_caught(tmp_path):
    """The check can fail: a lower module including a higher one is named."""
    from pathlib import Path
    tmp_path = Path(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(
        "<!-- layers:begin -->\n| layer | modules |\n|---|---|\n"
        "| 0 | low |\n| 1 | high |\n<!-- layers:end -->\n")
    for mod, inc in (("low", '#include "../high/high.h"'), ("high", '#include "../low/low.h"')):
        d = tmp_path / "src" / mod
        d.mkdir(parents=True)
        (d / f"{mod}.c").write_text(inc + "\n")
    (tmp_path / "include" / "baton").mkdir(parents=True)
    bad = violations(str(tmp_path), read_layers(str(tmp_path / "docs" / "architecture.md")))
    assert [b[0] for b in bad] == [os.path.join("src", "low", "low.c")]
    assert "low (layer 0) includes high (layer 1)" in bad[0][2]


def test_a_private_include_is_caught(tmp_path):
    """The check can fail: another module including a private header of a
    lower one is named; its narrow header is allowed."""
    from pathlib import Path
    tmp_path = Path(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(
        "<!-- layers:begin -->\n| layer | modules |\n|---|---|\n"
        "| 0 | coro |\n| 1 | seq |\n<!-- layers:end -->\n")
    files = {("coro", "coro.c"): '#include "coro_internal.h"',
             ("seq", "bad.c"): '#include "../coro/coro_internal.h"',
             ("seq", "good.c"): '#include "../coro/jump.h"'}
    for (mod, name), inc in files.items():
        d = tmp_path / "src" / mod
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(inc + "\n")
    (tmp_path / "include" / "baton").mkdir(parents=True)
    bad = violations(str(tmp_path), read_layers(str(tmp_path / "docs" / "architecture.md")))
    assert [b[0] for b in bad] == [os.path.join("src", "seq", "bad.c")], bad
    assert "private to coro" in bad[0][2]


def test_every_source_is_listed_in_cmake():
    """No globs: each .c and .S under src/ is named in CMakeLists.txt, so a
    file added is added on purpose (and one removed is noticed). The
    assembly switch is named by architecture (switch_${_baton_arch}.S)."""
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    assert "file(GLOB" not in cmake
    missing = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            if f.endswith(".S"):
                rel = os.path.join(os.path.dirname(rel), "switch_${_baton_arch}.S")
            elif not f.endswith(".c"):
                continue
            if rel not in cmake:
                missing.append(rel)
    assert not missing, f"not in CMakeLists.txt: {missing}"


def test_every_test_folder_is_built():
    """tests/CMakeLists.txt names its folders (no glob): each folder of
    tests/ with a CMakeLists.txt must be in that list, or its tests would
    silently not run (tests/consumer is a project of its own, run by
    install_consumer)."""
    text = open(os.path.join(ROOT, "tests", "CMakeLists.txt")).read()
    m = re.search(r"foreach\(_m ([^)]*)\)\s*\n\s*add_subdirectory\(\$\{_m\}\)", text)
    assert m, "tests/CMakeLists.txt: no foreach over the test folders"
    listed = set(m.group(1).split())
    tests = os.path.join(ROOT, "tests")
    present = {d for d in os.listdir(tests)
               if os.path.isfile(os.path.join(tests, d, "CMakeLists.txt"))} - {"consumer"}
    assert present == listed, f"not built: {present - listed}; missing: {listed - present}"
    assert "GLOB" not in text


def main():
    global ROOT
    if len(sys.argv) > 1:
        ROOT = os.path.abspath(sys.argv[1])
    checks = [test_a_cycle_is_caught, test_a_private_include_is_caught,
              test_library_follows_the_layers,
              test_every_src_folder_has_a_layer, test_every_source_is_listed_in_cmake,
              test_every_test_folder_is_built, test_tests_declare_no_internal_hooks]
    failed = 0
    for check in checks:
        try:
            if check in (test_a_cycle_is_caught, test_a_private_include_is_caught,
                         test_tests_declare_no_internal_hooks):
                with tempfile.TemporaryDirectory() as tmp:
                    check(tmp)
            else:
                check()
        except AssertionError as e:
            failed += 1
            print(f"FAIL {check.__name__}: {e}")
        else:
            print(f"ok   {check.__name__}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
