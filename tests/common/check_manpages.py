# SPDX-License-Identifier: MIT
"""Every public symbol of baton has its section-3 manual page.

Run by CTest (test `manpages`, registered when Doxygen is found):
check_manpages.py INCLUDE_DIR MAN3_DIR. The symbols are read from the
public headers INCLUDE_DIR/*.h (include/baton): every function declared
with BATON_API, every public static inline function, every typedef named
baton_*, every struct and enum baton_* defined there (names beginning
baton__ or ending in _ are internal). For each, MAN3_DIR/<name>.3 must
exist and be non-empty; a page that is a `.so` link must lead to a page
that exists and names the symbol. Every page that is not a link (a
header's, a struct's) must render without a warning (groff -man -ww, or
man -l when groff is missing), and a header's page must carry its header's
example and rules. Standard library only; exits 1 naming every fault. The
check shows it can fail first: a scratch header naming a symbol with no
page, a link to no page and a page troff warns about must all be caught."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FUNC_RE = re.compile(r"\bBATON_API\b[^;(]*?\b(baton_\w+)\s*\(")
INLINE_RE = re.compile(r"\bstatic\s+inline\b[^;(]*?\b(baton_\w+)\s*\(")
TYPEDEF_RE = re.compile(r"\btypedef\b[^;]*?\(\s*\*\s*(baton_\w+)\s*\)|"
                        r"\btypedef\b[^;{]*?(?:\{[^{}]*\}\s*)?\b(baton_\w+)\s*;")
AGGREGATE_RE = re.compile(r"\b(?:struct|enum|union)\s+(baton_\w+)\s*\{")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def public(name):
    return not name.startswith("baton__") and not name.endswith("_")


def symbols(header):
    """The public names one header defines, in order of appearance."""
    with open(header, encoding="utf-8") as f:
        code = strip_comments(f.read())
    found = []
    for rx in (FUNC_RE, INLINE_RE, TYPEDEF_RE, AGGREGATE_RE):
        for m in rx.finditer(code):
            name = next(g for g in m.groups() if g)
            if public(name) and name not in found:
                found.append(name)
    return found


def headers(include_dir):
    return sorted(os.path.join(include_dir, f) for f in os.listdir(include_dir)
                  if f.endswith(".h"))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def plain(troff):
    """A page's words without font escapes (\\fBname\\fP) and \\&."""
    return re.sub(r"\\f(?:\(..|\[[^]]*\]|.)|\\&", " ", troff)


def so_target(page_text):
    """The page a `.so man3/X.3` link names, or None if not a link."""
    m = re.match(r"\s*\.so\s+(\S+)\s*$", page_text)
    return m.group(1) if m else None


def render(man_dir, page):
    """Troff's complaints about a page ('' if none), run from man_dir so
    that .so requests resolve as man does."""
    groff = shutil.which("groff")
    if groff:
        cmd = [groff, "-man", "-Tutf8", "-ww", "-z", page]
        env = None
    elif shutil.which("man"):
        cmd = ["man", "--warnings=w", "-l", page]
        env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0")
    else:
        return ""
    r = subprocess.run(cmd, cwd=man_dir, capture_output=True, text=True, env=env)
    complaints = r.stderr.strip()
    if r.returncode != 0 and not complaints:
        complaints = f"exit status {r.returncode}"
    return complaints


def opening_comment(header):
    m = re.search(r"/\*\*(.*?)\*/", read(header), flags=re.S)
    return m.group(1) if m else ""


def check(include_dir, man3_dir):
    """Every fault found, as lines of text."""
    faults = []
    man_dir = os.path.dirname(os.path.abspath(man3_dir))
    rendered = set()

    def check_render(rel):
        if rel in rendered:
            return
        rendered.add(rel)
        complaints = render(man_dir, rel)
        if complaints:
            faults.append(f"{rel}: troff warns: {complaints.splitlines()[0]}")

    for header in headers(include_dir):
        hname = os.path.basename(header)
        for name in symbols(header):
            page = os.path.join(man3_dir, name + ".3")
            if not os.path.isfile(page) or os.path.getsize(page) == 0:
                faults.append(f"{hname}: {name} has no manual page ({name}.3)")
                continue
            text = read(page)
            target = so_target(text)
            if target is None:
                check_render(os.path.join("man3", name + ".3"))
                continue
            tpath = os.path.join(man_dir, target)
            if not os.path.isfile(tpath) or os.path.getsize(tpath) == 0:
                faults.append(f"{name}.3: links to {target}, which does not exist")
                continue
            if not re.search(r"\b" + re.escape(name) + r"\b", plain(read(tpath))):
                faults.append(f"{name}.3: links to {target}, which does not name {name}")
            check_render(target)
            # The header's page carries the header's example and rules.
            opening = opening_comment(header)
            tt = read(tpath)
            if "@code" in opening and "\n.nf\n" not in tt:
                faults.append(f"{target}: no example, though {hname} opens with one")
            if "Rules" in opening and "Rules" not in tt:
                faults.append(f"{target}: no rules, though {hname} states them")
    return faults


def self_test():
    """A page missing, a link to nothing and a page troff warns about must
    be caught; a complete set must pass."""
    with tempfile.TemporaryDirectory() as d:
        inc = os.path.join(d, "include")
        man3 = os.path.join(d, "man", "man3")
        os.makedirs(inc)
        os.makedirs(man3)
        with open(os.path.join(inc, "scratch.h"), "w") as f:
            f.write("/** @file baton/scratch.h\n * scratch.\n *\n * @code\n"
                    " *     baton_scratch_run();\n * @endcode\n *\n"
                    " * Rules:\n *  1. none.\n */\n"
                    "typedef struct baton_scratch baton_scratch_t;\n"
                    "/* a plain comment */\n"
                    "BATON_API int baton_scratch_run(void);\n"
                    "BATON_API int baton_scratch_missing(baton_scratch_t *s);\n"
                    "BATON_API extern int baton__scratch_internal;\n"
                    "struct baton_scratch_stats { long n; };\n"
                    "enum baton_scratch_kind { BATON_SCRATCH_A };\n")
        page = (".TH \"baton/scratch.h\" 3\n.SH NAME\nbaton/scratch.h \\- scratch\n"
                ".SH DESCRIPTION\nbaton_scratch_run baton_scratch_t baton_scratch_missing\n"
                "baton_scratch_stats baton_scratch_kind\n.PP\n.nf\n"
                "baton_scratch_run();\n.fi\n.PP\nRules:\n")
        with open(os.path.join(man3, "baton_scratch.h.3"), "w") as f:
            f.write(page)
        for name in ("baton_scratch_run", "baton_scratch_t", "baton_scratch_kind"):
            with open(os.path.join(man3, name + ".3"), "w") as f:
                f.write(".so man3/baton_scratch.h.3\n")
        with open(os.path.join(man3, "baton_scratch_stats.3"), "w") as f:
            f.write(".so man3/baton_nowhere.3\n")
        faults = check(inc, man3)
        expected = ["baton_scratch_missing has no manual page",
                    "baton_scratch_stats.3: links to man3/baton_nowhere.3"]
        for e in expected:
            assert any(e in x for x in faults), f"self-test: not caught: {e} ({faults})"
        assert len(faults) == len(expected), f"self-test: unexpected faults {faults}"
        assert "baton__scratch_internal" not in " ".join(faults)
        # Complete it: then it passes, until a page makes troff warn.
        with open(os.path.join(man3, "baton_scratch_missing.3"), "w") as f:
            f.write(".so man3/baton_scratch.h.3\n")
        with open(os.path.join(man3, "baton_scratch_stats.3"), "w") as f:
            f.write(".so man3/baton_scratch.h.3\n")
        faults = check(inc, man3)
        assert faults == [], f"self-test: a complete set fails: {faults}"
        if shutil.which("groff") or shutil.which("man"):
            with open(os.path.join(man3, "baton_scratch.h.3"), "a") as f:
                f.write("'quoted' at the start of a line is a control line\n")
            faults = check(inc, man3)
            assert any("troff warns" in x for x in faults), \
                f"self-test: a troff warning not caught ({faults})"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_manpages.py INCLUDE_DIR MAN3_DIR")
    include_dir, man3_dir = sys.argv[1], sys.argv[2]
    self_test()
    if not os.path.isdir(man3_dir):
        sys.exit(f"check_manpages: no directory {man3_dir} (build the docs target)")
    faults = check(include_dir, man3_dir)
    for line in faults:
        print(line, file=sys.stderr)
    if faults:
        sys.exit(1)
    n = sum(len(symbols(h)) for h in headers(include_dir))
    print(f"manpages: {n} public symbols, each with its page in {man3_dir}")


if __name__ == "__main__":
    main()
