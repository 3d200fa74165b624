"""Workflow hygiene and the CLI's surface: snakemake --lint, snakefmt, the config reference, the
profiles, help texts, exit codes and the dry run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml
from conftest import GSM8K, HF_JSON, REPO, SNAKEFILE, run_cli

from mintdim.commands import COMMANDS
from mintdim.paths import schema_file

WORKFLOW_FILES = ["Snakefile", "workflow"]


def example_config(ws) -> str:
    """The shipped example with absolute inputs and its output under `ws`."""
    with open(os.path.join(REPO, "config", "config.yaml"), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg["source"]["files"] = [GSM8K]
    cfg["tokenizer"] = {"hf_json": {"path": HF_JSON}}
    cfg["output"]["dir"] = "out"
    path = os.path.join(str(ws), "cfg.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    return path


def snakemake(ws, *args) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        str(ws),
        "--configfile",
        example_config(ws),
        *args,
    ]
    return subprocess.run(cmd, cwd=str(ws), capture_output=True, text=True)


def test_snakemake_lint_passes(tmp_path):
    res = snakemake(tmp_path, "--lint", "--workflow-profile", "none")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations" in res.stdout + res.stderr


def test_snakefmt_check_passes():
    beside = os.path.join(os.path.dirname(sys.executable), "snakefmt")  # this environment's, first
    exe = beside if os.path.exists(beside) else shutil.which("snakefmt")
    if not exe:
        pytest.fail("snakefmt is pinned in the test extra: pip install -e '.[test]'")
    res = subprocess.run([exe, "--check", *WORKFLOW_FILES], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _ruff() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "ruff")  # this environment's, first
    exe = beside if os.path.exists(beside) else shutil.which("ruff")
    if not exe:
        pytest.fail("ruff is pinned in the test extra: pip install -e '.[test]'")
    return exe


def test_ruff_format_check_passes():
    """Every Python file (package, scripts, benchmarks, tests, data/*.py, setup.py) is as `ruff format`
    writes it, under pyproject.toml's [tool.ruff]."""
    res = subprocess.run([_ruff(), "format", "--check", "."], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_check_passes():
    """pyproject.toml's [tool.ruff.lint] rules hold on every Python file: `ruff check` finds nothing."""
    res = subprocess.run([_ruff(), "check", "."], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_rule_has_log_timing_record_and_resources():
    """Each job writes its timing record itself (`--bench`, mintdim/run/job.py write_timing), not through
    Snakemake's `benchmark:`, whose sampling thread took CPU from the tokenize jobs."""
    rules_dir = os.path.join(REPO, "workflow", "rules")
    for name in sorted(os.listdir(rules_dir)):
        text = open(os.path.join(rules_dir, name), encoding="utf-8").read()
        for rule in re.split(r"^rule ", text, flags=re.M)[1:]:
            for directive in (
                "log:",
                "bench=bench(",
                "--bench {params.bench:q}",
                "resources:",
                "mem_mb=",
                "runtime=",
                "conda:",
            ):
                assert directive in rule, (name, rule.split(":")[0], directive)
            assert "benchmark:" not in rule, (name, rule.split(":")[0])


def _schema_keys(node, out):
    for key, sub in (node.get("properties") or {}).items():
        out.add(key)
        _schema_keys(sub, out)
    for sub in (node.get("oneOf") or []) + (node.get("anyOf") or []):
        if isinstance(sub, dict):
            _schema_keys(sub, out)
    return out


def test_config_reference_documents_every_key_with_parsable_examples():
    with open(schema_file(), encoding="utf-8") as f:
        schema = yaml.safe_load(f)
    keys = _schema_keys(schema, set())
    keys |= _schema_keys({"properties": schema.get("$defs", {})}, set()) - set(schema.get("$defs", {}))
    doc = open(os.path.join(REPO, "config", "README.md"), encoding="utf-8").read()
    missing = sorted(k for k in keys if f"`{k}`" not in doc)
    assert not missing, f"config/README.md does not document {missing}"
    blocks = re.findall(r"```yaml\n(.*?)```", doc, flags=re.S)
    assert blocks
    for block in blocks:
        assert isinstance(yaml.safe_load(block), dict)


def test_conda_env_matches_the_package_dependencies():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    with open(os.path.join(REPO, "workflow", "envs", "mintdim.yaml"), encoding="utf-8") as f:
        env = yaml.safe_load(f)
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(d for d in deps if not d.startswith("snakemake"))


def test_slurm_profile_dry_runs(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    # each job's rule block (profiles/default hides them)
    res = snakemake(
        tmp_path, "--profile", os.path.join(REPO, "profiles", "slurm"), "--dry-run", "--quiet", "host", "-p"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "slurm_partition=CHANGE_ME" in res.stdout
    assert "--threads 4" in res.stdout  # set-threads reaches the tokenize command
    assert not os.path.exists(tmp_path / "out")


def test_profiles_are_complete():
    default = yaml.safe_load(open(os.path.join(REPO, "profiles", "default", "config.yaml")))
    assert default["rerun-incomplete"] is True
    # a short console
    assert default["quiet"] == ["rules", "host"] and default["printshellcmds"] is False
    local = os.path.join(REPO, "profiles", "local-cluster")
    cfg = yaml.safe_load(open(os.path.join(local, "config.yaml")))
    assert cfg["executor"] == "cluster-generic" and cfg["seconds-between-status-checks"] == 1
    for key in ("cluster-generic-submit-cmd", "cluster-generic-status-cmd", "cluster-generic-cancel-cmd"):
        assert os.access(os.path.join(local, cfg[key]), os.X_OK)


def test_help_is_complete_and_documents_exit_codes(tmp_path):
    res = run_cli(tmp_path, "--help")
    assert res.returncode == 0
    for name in COMMANDS:
        assert name.replace("_", "-") in res.stdout
    for code in ("0 ", "1 ", "2 "):
        assert f"\n  {code}" in res.stdout
    for name in COMMANDS:
        sub = run_cli(tmp_path, name.replace("_", "-"), "--help")
        assert sub.returncode == 0 and "Exit codes" in sub.stdout, name
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    assert "## Exit codes" in readme
    assert run_cli(tmp_path, "no-such-command").returncode == 2
    assert run_cli(tmp_path, "build").returncode == 2


def test_build_dry_run_shows_the_planned_jobs_and_builds_nothing(tmp_path):
    res = run_cli(tmp_path, "build", example_config(tmp_path), "--dry-run", "--cores", "2")
    assert res.returncode == 0, res.stderr
    text = res.stdout + res.stderr
    for rule in ("validate", "tokenize", "plan", "write", "aggregate", "finalize"):
        assert re.search(rf"^{rule}\s+\d+$", text, flags=re.M), rule
    assert not re.search(r"^report\s+\d+$", text, flags=re.M)  # opt-in: --report
    assert not os.path.exists(tmp_path / "out")
    res = run_cli(tmp_path, "build", example_config(tmp_path), "--dry-run", "--cores", "2", "--report")
    assert res.returncode == 0, res.stderr
    assert re.search(r"^report\s+1$", res.stdout + res.stderr, flags=re.M)
    assert re.search(r"^finalize\s+1$", res.stdout + res.stderr, flags=re.M)  # the build, then its report
    assert not os.path.exists(tmp_path / "out")


def test_the_core_imports_neither_snakemake_nor_the_cli():
    """The layers are subpackages. The core (config, schema, errors, sources/, tokenizers/,
    formats/, units/, stages/, reading/) imports nothing from Snakemake, the CLI (cli, commands/) or
    the run machinery (run/); function-level imports included. Only the entry points (cli,
    commands/, api, __main__) and run/ may."""
    import ast

    pkg = os.path.join(REPO, "mintdim")
    entry_points = {"cli.py", "__main__.py", "api.py"}
    offenders, checked = [], 0
    for root, _dirs, files in os.walk(pkg):
        rel_root = os.path.relpath(root, pkg)
        layer = rel_root.split(os.sep)[0]
        if layer in ("commands", "run", "__pycache__"):
            continue
        for name in files:
            if not name.endswith(".py") or (rel_root == "." and name in entry_points):
                continue
            path = os.path.join(root, name)
            checked += 1
            depth = 0 if rel_root == "." else len(rel_root.split(os.sep))
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _absolute(node.level, node.module, rel_root, depth)
                    mods = [base] + [f"{base}.{a.name}" for a in node.names]
                else:
                    continue
                offenders += [
                    f"{os.path.relpath(path, REPO)}:{node.lineno}: {m}" for m in mods if _above_core(m)
                ]
    assert checked > 30  # the walk saw the package
    assert not offenders, offenders


def _absolute(level: int, module: str | None, rel_root: str, depth: int) -> str:
    """An import's module as an absolute name (`from ..run import dag` in stages/ -> mintdim.run)."""
    if not level:
        return module or ""
    parts = ["mintdim"] + ([] if rel_root == "." else rel_root.split(os.sep))
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def _above_core(mod: str) -> bool:
    """Snakemake, or the package's CLI or run layer (mintdim.cli, mintdim.commands, mintdim.run)."""
    return mod.split(".")[0] == "snakemake" or mod.startswith(
        ("mintdim.cli", "mintdim.commands", "mintdim.run")
    )


MAX_FUNCTION_LINES = 80  # from `def` to the end of the body, docstring and comments included


def _package_modules():
    """(path relative to the repository, module name, parsed tree) of every .py file of the package."""
    import ast

    pkg = os.path.join(REPO, "mintdim")
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, REPO).replace(os.sep, "/")
                module = rel[:-3].replace("/", ".").removesuffix(".__init__")
                yield rel, module, ast.parse(open(path, encoding="utf-8").read())


def test_no_function_of_the_package_is_over_80_lines():
    import ast

    long, seen = [], 0
    for rel, _module, tree in _package_modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seen += 1
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append((rel, node.name, lines))
    assert seen > 500  # the walk saw the package
    assert long == [], long


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in it: functions and TYPE_CHECKING blocks
    included). `from pkg import name` imports the module pkg.name when there is one, else pkg."""
    import ast

    modules = {module: (rel, tree) for rel, module, tree in _package_modules()}
    graph = {}
    for module, (rel, tree) in modules.items():
        rel_root = (
            os.path.dirname(os.path.relpath(os.path.join(REPO, rel), os.path.join(REPO, "mintdim"))) or "."
        )
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node.level, node.module, rel_root, 0)
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[module] = {d for d in deps if d in modules and d != module}
    return graph


def test_the_package_imports_form_no_cycle():
    """No import cycles, function-level imports included: what two modules share lives in a
    module below both."""
    graph = _import_graph()
    assert {"mintdim.config", "mintdim.reading.reader", "mintdim.tokenizers.kinds"} <= set(graph)
    assert "mintdim.formats.shards" in graph["mintdim.reading.reader"]  # `from ..formats import shards as fs`

    def reach(start: str) -> set[str]:
        found, todo = set(), [start]
        while todo:
            for dep in graph[todo.pop()] - found:
                found.add(dep)
                todo.append(dep)
        return found

    reachable = {m: reach(m) for m in graph}
    cycles = {
        tuple(sorted({m} | {n for n in reachable[m] if m in reachable[n]}))
        for m in graph
        if m in reachable[m]
    }
    assert not cycles, sorted(cycles)


def _dag(ws, *args) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """`snakemake --dag` (dot), as a user would draw it: the rule name of each job, and the edges."""
    res = snakemake(ws, "--cores", "2", "--dag", "--workflow-profile", "none", *args)
    assert res.returncode == 0, res.stdout + res.stderr
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)', res.stdout, flags=re.M))
    return names, set(re.findall(r"^\s*(\d+) -> (\d+)", res.stdout, flags=re.M))


def _dag_edges(ws, *args) -> set[tuple[str, str]]:
    """The rule names on each edge of `snakemake --dag`."""
    names, edges = _dag(ws, *args)
    return {(names[a], names[b]) for a, b in edges}


def test_finalize_waits_for_write_and_aggregate_and_packed_aggregate_for_write(tmp_path):
    """What each job reads is made before it runs: aggregate reads the plan, finalize what write and
    aggregate made; with packed rows aggregate also reads what the write jobs kept."""
    edges = _dag_edges(tmp_path)
    assert ("plan", "aggregate") in edges
    assert {("write", "finalize"), ("aggregate", "finalize")} <= edges
    with open(example_config(tmp_path), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg["units"] = {"pack": [512], "build_batch": [64]}
    packed = tmp_path / "packed.yaml"
    packed.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    edges = _dag_edges(tmp_path, "--configfile", str(packed))
    assert {("write", "aggregate"), ("write", "finalize"), ("aggregate", "finalize")} <= edges


# --- the README's "Repository layout" matches the tree ------------------------------------------------------


def _layout_block() -> list[str]:
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    section = readme.split("\n## Repository layout\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```\n(.*?)```", section, flags=re.S).group(1).splitlines()


def _layout_entries(lines: list[str]) -> list[tuple[str, str]]:
    """(path, description) per entry: a line starts an entry with its path(s) at column 0 (the repository)
    or 2 (inside mintdim/), then two spaces; deeper-indented lines continue the description."""
    entries = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if indent >= 4 and entries:
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
            continue
        head, _, desc = line.strip().partition("  ")
        prefix = "mintdim/" if indent == 2 else ""
        for name in (n.strip() for n in head.split(",")):
            entries.append((prefix + name, desc.strip()))
    return entries


def _ignored_by_git(rel: str) -> bool:
    import fnmatch

    patterns = [
        p.strip().strip("/")
        for p in open(os.path.join(REPO, ".gitignore"), encoding="utf-8")
        if p.strip() and not p.startswith("#")
    ]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(os.path.basename(rel), p) for p in patterns)


def test_readme_layout_names_every_directory_and_module_and_only_what_exists():
    """The layout section stays true: every path it names exists; every top-level directory of the
    repository, every file of mintdim/ and every module of each mintdim/ subpackage is named."""
    entries = _layout_entries(_layout_block())
    named = {path.rstrip("/") for path, _ in entries}
    missing = sorted(p for p in named if not os.path.exists(os.path.join(REPO, p)))
    assert not missing, f"README's layout names paths that do not exist: {missing}"
    tops = [
        d
        for d in os.listdir(REPO)
        if os.path.isdir(os.path.join(REPO, d)) and not d.startswith(".") and not _ignored_by_git(d)
    ]
    unnamed = sorted(d for d in tops if not any(p == d or p.startswith(d + "/") for p in named))
    assert not unnamed, f"README's layout does not name the top-level directories {unnamed}"
    pkg = os.path.join(REPO, "mintdim")
    for name in sorted(os.listdir(pkg)):
        rel = f"mintdim/{name}"
        if name == "__pycache__" or _ignored_by_git(rel):
            continue
        assert rel in named, f"README's layout does not name {rel}"
        if os.path.isdir(os.path.join(pkg, name)):
            listed = _listed_modules(next(d for p, d in entries if p.rstrip("/") == rel))
            modules = {
                m[:-3]
                for m in os.listdir(os.path.join(pkg, name))
                if m.endswith(".py") and m != "__init__.py"
            }
            assert not modules - listed, (
                f"README's layout line for {rel}/ does not name {sorted(modules - listed)}"
            )
            assert not listed - modules, (
                f"README's layout line for {rel}/ names no module {sorted(listed - modules)}"
            )


def _listed_modules(description: str) -> set[str]:
    """A subpackage's line lists its modules after its last colon (or from its start), comma-separated,
    each perhaps followed by a note in brackets: `the run machinery: runner (mintdim build), dag, guard`."""
    listing = re.sub(r"\([^)]*\)", "", description).rsplit(":", 1)[-1]
    return {item.split()[0] for item in listing.split(",") if item.strip()}


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_document_links_resolve_and_the_readme_links_every_page():
    """Every relative link of the README, config/README.md, benchmarks/README.md and docs/*.md names a
    file of the repository and, with #anchor, one of its headings; the README links every docs/ page."""
    docs = sorted(f"docs/{n}" for n in os.listdir(os.path.join(REPO, "docs")) if n.endswith(".md"))
    broken = []
    for page in ["README.md", "config/README.md", "benchmarks/README.md", *docs]:
        text = open(os.path.join(REPO, page), encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (
                os.path.normpath(os.path.join(os.path.dirname(os.path.join(REPO, page)), path))
                if path
                else os.path.join(REPO, page)
            )
            if not os.path.exists(file):
                broken.append(f"{page}: {target} (no such file)")
            elif anchor and file.endswith(".md"):
                body = re.sub(r"```.*?```", "", open(file, encoding="utf-8").read(), flags=re.S)
                if anchor not in {_slug(h) for h in re.findall(r"^#+ (.*)$", body, flags=re.M)}:
                    broken.append(f"{page}: {target} (no such heading)")
    assert not broken, broken
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    assert not [d for d in docs if f"]({d})" not in readme], "the README does not link every docs/ page"
