"""Where the installation has no bytecode for torch (the lent 16-core node's image: no .pyc
and PYTHONDONTWRITEBYTECODE set), the grader compiles it once into a cache of its own and
every sandboxed run reads it read-only (grader/common/bytecode.py). Without it each run
compiled torch again: 9.4 of a practical4 grading's 10.7 CPU-seconds there, 5.4 with it."""
from __future__ import annotations

import importlib.util
import marshal
import os
import stat
import sys
import time
from pathlib import Path

import pytest

import grader.common.bytecode as bytecode
import grader.sandbox
from grader.common.bytecode import PREFIX_ENV, cached_path, stale_or_missing, warm_cache
from grader.sandbox import SandboxPolicy, confined_run, run_sandboxed, sandbox_available

needs_sandbox = pytest.mark.skipif(not sandbox_available()[0],
                                   reason=f"bwrap unusable: {sandbox_available()[1]}")


@pytest.fixture
def site_folder(area: Path) -> Path:
    """An 'installation' of one package, without bytecode, readable by the sandbox's user."""
    site = area / "site"
    package = site / "fakepkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from fakepkg.part import WHERE\n")
    (package / "part.py").write_text("WHERE = 'source'\n")
    for path in (site, package):
        path.chmod(0o755)
    return site


@pytest.fixture
def fresh_decision():
    bytecode.shared_bytecode.cache_clear()
    yield
    bytecode.shared_bytecode.cache_clear()


def _forge_cached(source: Path, cache: Path, text: str) -> None:
    """Bytecode under `cache` for `source` that runs `text` instead, with the header Python
    checks (the source's time and size): which of the two runs shows which one was read."""
    code = compile(text, str(source), "exec")
    info = source.stat()
    header = (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
              + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
              + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    target = cached_path(source, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(header + marshal.dumps(code))
    for folder in [cache, *[p for p in target.parents if p.is_relative_to(cache)]]:
        folder.chmod(0o755)
    target.chmod(0o644)


def test_warming_compiles_what_the_modules_import_into_the_cache_only(site_folder, area,
                                                                       monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(site_folder))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")     # as the node's image sets it
    cache = area / "cache"
    extra = area / "runtime"
    extra.mkdir()
    (extra / "helper.py").write_text("X = 1\n")
    assert warm_cache(cache, modules=["fakepkg"], folders=[extra]) is None
    for source in (site_folder / "fakepkg" / "__init__.py", site_folder / "fakepkg" / "part.py",
                   extra / "helper.py"):
        assert not stale_or_missing(source, cache), f"no bytecode for {source} under {cache}"
        assert stat.S_IMODE(cached_path(source, cache).stat().st_mode) == 0o644
        assert stale_or_missing(source), "the installation itself was written to"
    assert not list(site_folder.rglob("*.pyc"))


def test_a_source_edited_after_warming_is_stale_again(site_folder, area, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(site_folder))
    cache = area / "cache"
    assert warm_cache(cache, modules=["fakepkg"], folders=[]) is None
    part = site_folder / "fakepkg" / "part.py"
    part.write_text("WHERE = 'edited source'\n")
    os.utime(part, (time.time() + 5, time.time() + 5))
    assert stale_or_missing(part, cache)


def test_a_module_that_fails_to_import_is_reported_not_raised(area, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(area))
    (area / "broken.py").write_text("raise ImportError('no such thing here')\n")
    problem = warm_cache(area / "cache", modules=["broken"], folders=[])
    assert problem and "no such thing here" in problem, problem


@needs_sandbox
def test_a_sandboxed_run_reads_the_cache_and_cannot_write_it(site_folder, area, scratch,
                                                           monkeypatch):
    cache = area / "cache"
    _forge_cached(site_folder / "fakepkg" / "part.py", cache, "WHERE = 'cache'\n")
    monkeypatch.setattr(confined_run, "shared_bytecode", lambda: cache)
    code = ("import os, sys, fakepkg\n"
            "print(fakepkg.WHERE, os.environ.get('PYTHONPYCACHEPREFIX') == sys.pycache_prefix)\n"
            "try:\n"
            f"    open({str(cache / 'planted.pyc')!r}, 'w')\n"
            "    print('written')\n"
            "except OSError as error:\n"
            "    print('refused', error.errno)\n")
    result = run_sandboxed([sys.executable, "-c", code],
                           SandboxPolicy(readonly=[site_folder], writable=[scratch], timeout_s=60,
                                         env={"PYTHONPATH": str(site_folder)}))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "cache True", (
        f"expected the run to read fakepkg.part from the cache {cache}; it printed "
        f"{result.stdout!r}")
    assert result.stdout.splitlines()[1].startswith("refused"), result.stdout
    assert not (cache / "planted.pyc").exists()


def test_an_unsandboxed_run_never_gets_the_cache(site_folder, area, scratch, monkeypatch):
    """Code running as the grader's user outside a sandbox could write bytecode that every
    later run would load: without bwrap the runs compile for themselves."""
    cache = area / "cache"
    monkeypatch.setattr(confined_run, "shared_bytecode", lambda: cache)
    monkeypatch.setattr(confined_run, "sandbox_available", lambda: (False, "test: no bwrap"))
    result = run_sandboxed([sys.executable, "-c", "import sys; print(sys.pycache_prefix)"],
                           SandboxPolicy(writable=[scratch], timeout_s=60))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None", result.stdout


def test_a_run_that_names_its_own_prefix_keeps_it(scratch, area, monkeypatch):
    monkeypatch.setattr(confined_run, "shared_bytecode", lambda: area / "cache")
    policy = SandboxPolicy(writable=[scratch], env={PREFIX_ENV: str(area / "own")})
    env, same = confined_run.with_shared_bytecode(dict(policy.env), policy)
    assert env[PREFIX_ENV] == str(area / "own") and same is policy


# -- when the cache is used ------------------------------------------------------------------

@pytest.fixture
def fake_torch(area: Path) -> Path:
    folder = area / "torch"
    for name in bytecode.PROBES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x = 1\n")
    return folder


def _decide(monkeypatch, torch_folder: Path, cache: Path, mode: str | None = None,
            warm=None):
    monkeypatch.setattr(bytecode, "installed_torch_folder", lambda: torch_folder)
    monkeypatch.setenv(bytecode.CACHE_ENV, str(cache))
    if mode is None:
        monkeypatch.delenv(bytecode.SWITCH_ENV, raising=False)
    else:
        monkeypatch.setenv(bytecode.SWITCH_ENV, mode)
    monkeypatch.setattr(bytecode, "GRADER_MODULES", ())
    monkeypatch.setattr(grader.sandbox, "sandbox_available", lambda: (True, "test"))
    calls = []

    def warm_instead(folder):
        calls.append(folder)
        # What warming writes, for the fake torch and the grader's probe alone.
        return warm(folder) if warm else warm_cache(
            folder, modules=[], optional=[],
            folders=[torch_folder, bytecode.RUNTIME_PROBE.parent])
    monkeypatch.setattr(bytecode, "warm_cache", warm_instead)
    return calls


def test_an_installation_with_bytecode_needs_no_cache(fake_torch, area, monkeypatch,
                                                      fresh_decision):
    import compileall
    compileall.compile_dir(str(fake_torch), quiet=1)
    calls = _decide(monkeypatch, fake_torch, area / "cache")
    assert bytecode.shared_bytecode() is None
    assert calls == [] and not (area / "cache").exists()


def test_missing_bytecode_is_compiled_once_and_then_found(fake_torch, area, monkeypatch,
                                                          fresh_decision, capsys):
    calls = _decide(monkeypatch, fake_torch, area / "cache")
    assert bytecode.shared_bytecode() == area / "cache"
    assert "compiled torch's bytecode once" in capsys.readouterr().err
    assert (area / "cache" / bytecode.MARKER).exists()
    bytecode.shared_bytecode.cache_clear()           # a batch's next worker process
    assert bytecode.shared_bytecode() == area / "cache"
    assert len(calls) == 1, "a warm cache was compiled again"


def test_workers_asking_at_once_compile_once(fake_torch, area, monkeypatch, fresh_decision):
    """A batch's workers (or SLURM jobs sharing a home folder) ask together: one compiles, the
    others wait for it and find the cache warm."""
    import threading
    calls = _decide(monkeypatch, fake_torch, area / "cache")
    compile_slowly = bytecode.warm_cache

    def slow(folder):
        time.sleep(0.3)
        return compile_slowly(folder)
    monkeypatch.setattr(bytecode, "warm_cache", slow)
    found = []
    workers = [threading.Thread(target=lambda: found.append(bytecode.shared_bytecode.__wrapped__()))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert found == [area / "cache"] * 3 and len(calls) == 1, calls


def test_a_cache_that_cannot_be_made_falls_back_with_a_warning(fake_torch, area, monkeypatch,
                                                               fresh_decision, capsys):
    _decide(monkeypatch, fake_torch, area / "cache", warm=lambda folder: "disk full")
    assert bytecode.shared_bytecode() is None
    assert "disk full" in capsys.readouterr().err


def test_processes_claiming_a_new_cache_folder_together_all_get_it(area):
    """Each sees the others' mark (or lock) appear while it looks: those are not someone
    else's things."""
    import threading
    for attempt in range(40):
        folder = area / f"cache{attempt}"
        start = threading.Barrier(4)
        answers = []

        def claim():
            start.wait()
            answers.append(bytecode._claim(folder))
            (folder / ".lock").touch()
        claimers = [threading.Thread(target=claim) for _ in range(4)]
        for claimer in claimers:
            claimer.start()
        for claimer in claimers:
            claimer.join()
        assert answers == [None] * 4, answers


def test_a_folder_that_is_not_the_caches_is_refused_untouched(fake_torch, area, monkeypatch,
                                                              fresh_decision, capsys):
    """Warming makes everything in the cache world-readable: PDL_BYTECODE_CACHE set to a
    folder holding other things (a home, /tmp) is refused, and nothing in it is changed."""
    busy = area / "home"
    busy.mkdir()
    private = busy / "notes.txt"
    private.write_text("mine\n")
    private.chmod(0o600)
    calls = _decide(monkeypatch, fake_torch, busy)
    assert bytecode.shared_bytecode() is None
    assert "not the grader's bytecode cache" in capsys.readouterr().err
    assert calls == [] and stat.S_IMODE(private.stat().st_mode) == 0o600
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]


def test_without_a_sandbox_there_is_no_cache(fake_torch, area, monkeypatch, fresh_decision):
    """Unsandboxed runs could write into it, and the checks' pytest would load what they
    wrote: nothing uses it, so nothing compiles it."""
    calls = _decide(monkeypatch, fake_torch, area / "cache")
    monkeypatch.setattr(grader.sandbox, "sandbox_available", lambda: (False, "test: no bwrap"))
    assert bytecode.shared_bytecode() is None
    assert calls == [] and not (area / "cache").exists()


def test_the_staff_switch(fake_torch, area, monkeypatch, fresh_decision):
    _decide(monkeypatch, fake_torch, area / "cache", mode="off")
    assert bytecode.shared_bytecode() is None
    bytecode.shared_bytecode.cache_clear()
    import compileall
    compileall.compile_dir(str(fake_torch), quiet=1)   # the installation's own would serve...
    _decide(monkeypatch, fake_torch, area / "cache", mode="on")
    assert bytecode.shared_bytecode() == area / "cache"   # ...but `on` asks for the cache


# -- the grader's own processes --------------------------------------------------------------

def test_the_checks_process_reads_the_cache_and_writes_none(area, monkeypatch):
    """The checks' pytest (trusted, never sandboxed) imports pytest and the grader from the
    same cache; it writes no bytecode of its own."""
    import subprocess
    import grader.grading.run as grading_run
    cache = area / "cache"
    monkeypatch.setattr(grading_run, "shared_bytecode", lambda: cache)
    seen = {}

    def started(command, **options):
        seen.update(options["env"])
        raise subprocess.TimeoutExpired(command, 1)
    monkeypatch.setattr(grading_run.subprocess, "run", started)
    results, why = grading_run.run_checks("practical4", area, area, 10)
    assert results is None and "took longer" in why
    assert seen[PREFIX_ENV] == str(cache) and seen["PYTHONDONTWRITEBYTECODE"] == "1"


def test_the_recompute_child_is_told_on_its_command_line(area, monkeypatch):
    """HW3's recomputation runs `python -I` (no environment): the cache goes on its argv (the
    sandbox mounts it read-only)."""
    from grader.harness.hw3_recompute import _bytecode_options
    cache = area / "cache"
    monkeypatch.setattr(bytecode, "shared_bytecode", lambda: cache)
    assert _bytecode_options() == ["-X", f"pycache_prefix={cache}"]
    monkeypatch.setattr(bytecode, "shared_bytecode", lambda: None)
    assert _bytecode_options() == []


def test_the_staffs_parts_of_the_grader_are_not_compiled_where_runs_can_read(area, monkeypatch):
    """The cache is mounted in every run's sandbox: it holds what students have anyway (the
    kit's grader), never what the kit leaves out (grader/edition.py's STAFF_ONLY)."""
    from grader.common.locations import GRADER_PACKAGE
    cache = area / "cache"
    assert warm_cache(cache, modules=[], optional=[]) is None
    assert not stale_or_missing(bytecode.RUNTIME_PROBE, cache)
    assert not stale_or_missing(GRADER_PACKAGE / "scoring" / "rubric.py", cache)
    for staff in (GRADER_PACKAGE / "batch" / "pipeline.py", GRADER_PACKAGE / "student_kit.py",
                  GRADER_PACKAGE / "reports" / "instructor.py"):
        assert staff.exists() and not cached_path(staff, cache).exists(), staff
