#!/usr/bin/env python3
"""Runs README.md as a reader would.

    python3 test/readme/check_readme.py [--only sh|cpp] [--list] [--keep] [--workdir DIR]

from the source root.

- Every ```sh block runs, line by line and in README order, in one scratch copy of the tree (the
  files git lists: tracked and untracked-but-not-ignored), with `bash -e -o pipefail -c LINE` and
  the scratch root as working directory, so that the blocks share its state as they would for a
  reader who types them in order. A line fails when it exits non-zero or prints a line that looks
  like an error (see ERROR_PATTERNS).
- An optional form `[a | b]` in a line gives the line without it and one line per alternative;
  inside an alternative, `x|y` gives one line per value. `N` stands for a GPU count (1..the number
  of visible GPUs) and `gpu:N` for a GPU index (0..count-1); a form that names a GPU is skipped on a
  machine without one.
- `bash .ci/run` is not run: it is the job that runs this check.
- NDG_TRAIN_EPOCHS=1 is set for the sh lines only when the README names that variable.
- Every ```cpp block compiles on its own. A block without main() is a fragment: its #include,
  namespace-alias and using lines stay at file scope and the rest becomes the body of main(). A
  Boost.Test suite (BOOST_TEST_MODULE: Boost.Test supplies main) is compiled as it stands, against
  ndgluon-testing; a block whose first line names a file of the tree (`// test/consumer/suite.cpp:
  ...`) must also be that file, character for character.
  Blocks are compiled and linked against the library the sh blocks built in the scratch tree
  (`build`), or only checked for syntax against the source headers when there is none (--only cpp).

Each sh line and each cpp block is one case. The script ends with "readme: P passed, F failed,
S skipped", appends "readme P F S" to $NDG_TEST_COUNTS when it is set (.ci/run sums those lines),
and exits 1 when a case failed.
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# Output lines that make a command fail even when it exits 0. meson test's summary ("Fail: 0") and
# Boost's "*** No errors detected" do not match.
ERROR_PATTERNS = [re.compile(p) for p in (
    r"^\s*(error|ERROR):",          # meson, shell tools
    r": (fatal )?error:",           # compilers, Boost.Test check failures
    r"Traceback \(most recent call last\)",
    r"Segmentation fault",
    r"AddressSanitizer",
    r"runtime error:",              # UndefinedBehaviorSanitizer
    r"FAILED",                      # ninja, Boost.Test
)]
TRAIN_EPOCHS_VARIABLE = "NDG_TRAIN_EPOCHS"
NOT_RUN = {("bash", ".ci/run"): "it is the job that runs this check"}


class Case:
    def __init__(self, kind, where, text, skip=None):
        self.kind, self.where, self.text, self.skip = kind, where, text, skip


def fenced_blocks(readme):
    """(language, first line number, lines) of every fenced block."""
    blocks, current = [], None
    for number, line in enumerate(readme.splitlines(), 1):
        fence = re.match(r"^```\s*([\w+-]*)", line)
        if fence and current is None:
            current = (fence.group(1), number + 1, [])
        elif fence:
            blocks.append(current)
            current = None
        elif current is not None:
            current[2].append(line)
    return blocks


def joined_lines(block_start, lines):
    """(line number, command) with backslash continuations joined."""
    out, pending, start = [], "", None
    for offset, line in enumerate(lines):
        if start is None:
            start = block_start + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending, start = "", None
    return out


def gpu_count():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def expand(command, gpus):
    """[(command, reason to skip or None)] for every form of an optional `[a | b]`."""
    group = re.search(r"\[(\S[^][]*)\]", command)
    if group is None:
        return [(command, None)]
    before, after = command[:group.start()], command[group.end():]
    forms = [(before.rstrip() + (" " + after.lstrip() if after.strip() else ""), None)]
    for alternative in group.group(1).split(" | "):
        words = [[]]
        for word in alternative.split():
            values = word.split("|") if re.match(r"^[\w:.=-]+(\|[\w:.=-]+)+$", word) else [word]
            words = [w + [v] for w in words for v in values]
        for chosen in words:
            text = " ".join(chosen)
            if not re.search(r"\bgpus?\b", text):
                forms.append((before + text + after, None))
            elif gpus == 0:
                forms.append((before + text + after, "needs a GPU; nvidia-smi lists none"))
            elif re.search(r"\bN\b", text):
                values = range(gpus) if re.search(r"\bgpu:N\b", text) else range(1, gpus + 1)
                forms += [(before + re.sub(r"\bN\b", str(n), text) + after, None) for n in values]
            else:
                forms.append((before + text + after, None))
    result = []
    for form, skip in forms:  # a second group in the same line
        result += [(f, skip or s) for f, s in expand(form, gpus)]
    return result


def sh_cases(blocks, gpus):
    cases = []
    for language, start, lines in blocks:
        if language != "sh":
            continue
        for number, line in joined_lines(start, lines):
            if not line.strip() or line.strip().startswith("#"):
                continue
            for command, skip in expand(line.strip(), gpus):
                launched = re.search(r"ndgluon-run -n (\d+)", command)
                if launched and int(launched.group(1)) > gpus:  # one process per GPU
                    skip = skip or f"needs {launched.group(1)} GPUs; nvidia-smi lists {gpus}"
                try:
                    words = tuple(shlex.split(command, comments=True))
                except ValueError:
                    words = ()
                cases.append(Case("sh", number, command, skip or NOT_RUN.get(words)))
    return cases


FILE_SCOPE = re.compile(r"^\s*(#|((namespace\s+\w+\s*=\s*[\w:]+|using\s+[^;]+)\s*;\s*)+(//.*)?$)")


def cpp_source(lines):
    """The block as a translation unit: fragments are wrapped in main()."""
    text = "\n".join(lines) + "\n"
    if re.search(r"\bint\s+main\s*\(", text) or "BOOST_TEST_MODULE" in text:
        return text
    head = [line for line in lines if FILE_SCOPE.match(line)]
    body = [line for line in lines if not FILE_SCOPE.match(line)]
    while body and not body[0].strip():
        body.pop(0)
    return "\n".join(head) + "\n\nint main() {\n" + "\n".join("  " + line for line in body) + "\n}\n"


def cpp_cases(blocks):
    return [Case("cpp", start, cpp_source(lines)) for language, start, lines in blocks if language == "cpp"]


def matching_error(output):
    for line in output.splitlines():
        if any(pattern.search(line) for pattern in ERROR_PATTERNS):
            return line
    return None


def run_logged(argv, cwd, env, log_path, timeout):
    """Runs argv with its output in log_path; returns (exit status, output, seconds)."""
    started = time.monotonic()
    with open(log_path, "w+", errors="replace") as log:
        try:
            status = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout} s"
        log.seek(0)
        return status, log.read(), time.monotonic() - started


def report_failure(why, output, out=print):
    out(f"  FAILED: {why}")
    for line in output.splitlines()[-40:]:
        out("  | " + line)


def tracked_files(source):
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=source, capture_output=True, check=True).stdout
    return [path for path in listing.decode().split("\0") if path]


def copy_tree(source, destination, skip_under):
    for path in tracked_files(source):
        origin = os.path.join(source, path)
        top = path.split("/", 1)[0]
        if top == ".git" or top.startswith("build") or os.path.abspath(origin).startswith(skip_under + os.sep):
            continue
        if not os.path.lexists(origin):  # deleted in the working tree
            continue
        target = os.path.join(destination, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(origin):
            os.symlink(os.readlink(origin), target)
        elif os.path.isfile(origin):
            shutil.copy2(origin, target)


def check_sh(case, tree, env, logs, index, timeout):
    print(f"$ {case.text}    (README line {case.where})", flush=True)
    status, output, seconds = run_logged(["bash", "-e", "-o", "pipefail", "-c", case.text], tree, env,
                                         os.path.join(logs, f"sh-{index:02d}.log"), timeout)
    if status != 0:
        report_failure(f"exit status {status}", output)
        return False
    error = matching_error(output)
    if error is not None:
        report_failure(f"exit status 0, but it printed: {error.strip()}", output)
        return False
    print(f"  ok ({seconds:.0f} s)", flush=True)
    return True


def compile_flags(source_root, tree, package="ndgluon"):
    """How a block is compiled: linked against the scratch tree's build when there is one
    (package: ndgluon, or ndgluon-testing for a Boost.Test suite)."""
    uninstalled = os.path.join(tree, "build", "meson-uninstalled") if tree else None
    if uninstalled and os.path.exists(os.path.join(uninstalled, package + "-uninstalled.pc")):
        env = dict(os.environ, PKG_CONFIG_PATH=uninstalled + os.pathsep + os.environ.get("PKG_CONFIG_PATH", ""))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", package + "-uninstalled"], env=env,
                               capture_output=True, text=True, check=True).stdout.split()
        return "compiled and linked against build/", flags, True
    flags = subprocess.run(["pkg-config", "--cflags", "xtensor"], capture_output=True, text=True,
                           check=True).stdout.split()
    return "syntax-checked", ["-I" + source_root] + flags, False


FILE_NAMED = re.compile(r"^// ([\w./-]+\.(?:cpp|hpp)):")


def check_cpp(case, flags, link, scratch, index, timeout, source_root):
    """Compiles one block; returns whether it passed and the lines to print for it (the blocks
    compile side by side, their reports are printed in the README's order)."""
    lines = [f"cpp block at README line {case.where}"]
    named = FILE_NAMED.match(case.text)
    if named:
        with open(os.path.join(source_root, named.group(1))) as named_file:
            if named_file.read() != case.text:
                report_failure(f"the block differs from {named.group(1)}, which it names", case.text, lines.append)
                return False, lines
    path = os.path.join(scratch, f"block-{index:02d}.cpp")
    with open(path, "w") as out:
        out.write(case.text)
    compiler = os.environ.get("CXX", "c++").split()
    output_args = ["-o", path[:-4]] if link else ["-fsyntax-only"]
    status, output, seconds = run_logged(compiler + ["-std=c++20", "-Wall", "-x", "c++", path, "-x", "none"] + output_args + flags,
                                         scratch, None, path[:-4] + ".log", timeout)
    if status != 0:
        numbered = "\n".join(f"{n:4} {line}" for n, line in enumerate(case.text.splitlines(), 1))
        report_failure(f"the compiler exited with {status}", numbered + "\n" + output, lines.append)
        return False, lines
    lines.append(f"  ok ({seconds:.0f} s)")
    return True, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["sh", "cpp"], help="check only these blocks")
    parser.add_argument("--list", action="store_true", help="print the cases without running them")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    parser.add_argument("--workdir", help="where the scratch copy is made (default: $TMPDIR)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds allowed per command (3600)")
    args = parser.parse_args()

    source = os.getcwd()
    with open(os.path.join(source, "README.md")) as readme_file:
        readme = readme_file.read()
    blocks = fenced_blocks(readme)
    gpus = gpu_count()
    cases = []
    if args.only != "cpp":
        cases += sh_cases(blocks, gpus)
    if args.only != "sh":
        cases += cpp_cases(blocks)
    env = dict(os.environ)
    if TRAIN_EPOCHS_VARIABLE in readme:
        env[TRAIN_EPOCHS_VARIABLE] = "1"

    if args.list:
        print(f"{gpus} GPUs visible; {TRAIN_EPOCHS_VARIABLE}="
              f"{env.get(TRAIN_EPOCHS_VARIABLE, '(not set: the README does not name it)')}")
        for case in cases:
            if case.kind == "sh":
                print(f"sh  line {case.where:3}: {case.text}" + (f"    [skipped: {case.skip}]" if case.skip else ""))
            else:
                print(f"cpp line {case.where:3}:\n" + "".join("    " + l + "\n" for l in case.text.splitlines()))
        return 0

    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    scratch = os.path.abspath(tempfile.mkdtemp(prefix="readme-", dir=args.workdir))
    tree, logs = os.path.join(scratch, "tree"), os.path.join(scratch, "logs")
    os.makedirs(logs)
    passed = failed = skipped = 0
    try:
        if any(case.kind == "sh" for case in cases):
            print(f"readme: copying the tree to {tree}", flush=True)
            copy_tree(source, tree, scratch)
        else:
            tree = None
        compiles = []  # the cpp blocks, compiled after the commands (which build what they link)
        for index, case in enumerate(cases):
            if case.skip:
                print(f"SKIPPED: {case.text}    (README line {case.where}): {case.skip}")
                skipped += 1
            elif case.kind == "sh":
                ok = check_sh(case, tree, env, logs, index, args.timeout)
                passed += ok
                failed += not ok
            else:
                compiles.append((index, case))
        if compiles:
            compile_mode = compile_flags(source, tree)
            print(f"readme: the cpp blocks are {compile_mode[0]}", flush=True)
            testing_mode = None
            if any("BOOST_TEST_MODULE" in case.text for _, case in compiles):
                testing_mode = compile_flags(source, tree, "ndgluon-testing")
            # One compiler per core: the blocks are independent.
            with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
                futures = [pool.submit(check_cpp, case, mode[1], mode[2], logs, index, args.timeout, source)
                           for index, case in compiles
                           for mode in [testing_mode if "BOOST_TEST_MODULE" in case.text else compile_mode]]
                for future in futures:
                    ok, lines = future.result()
                    print("\n".join(lines), flush=True)
                    passed += ok
                    failed += not ok
    finally:
        if args.keep:
            print(f"readme: the scratch copy is kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    print(f"readme: {passed} passed, {failed} failed, {skipped} skipped")
    if os.environ.get("NDG_TEST_COUNTS"):
        with open(os.environ["NDG_TEST_COUNTS"], "a") as counts:
            counts.write(f"readme {passed} {failed} {skipped}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
