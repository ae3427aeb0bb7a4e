"""The fork server imports the grader's runtime once for every run it forks
(grader/vgpu/fork_server.py `_import_runtime`): the runs inherit it instead of each rank importing
(and, where its bytecode is stale, compiling) about 50 modules. Importing it must leave torch as
it was, start no thread, and leave the runners (run as scripts) unimported."""
import json
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent('''
    import json, sys, threading
    import torch, torch.nn, torch.distributed, torch.nn.functional
    watched = {"torch": torch, "Tensor": torch.Tensor, "TensorBase": torch._C.TensorBase,
               "Module": torch.nn.Module, "cuda": torch.cuda, "distributed": torch.distributed,
               "autograd": torch.autograd, "functional": torch.nn.functional}
    def attributes():
        return {f"{name}.{key}": id(value) for name, space in watched.items()
                for key, value in list(vars(space).items())}
    before, hooks = attributes(), list(sys.meta_path)
    from grader.vgpu import fork_server
    fork_server._import_runtime()
    after = attributes()
    print(json.dumps({
        "changed": sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)),
        "meta_path_same": hooks == sys.meta_path,
        "threads": threading.active_count(),
        "imported": sorted(name for name in sys.modules if name.startswith("grader.vgpu.")),
    }))
''')


def test_the_fork_servers_runtime_import_changes_nothing_and_imports_the_runtime():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["changed"] == [] and found["meta_path_same"], (
        f"expected importing the runtime in the fork server to leave torch as it is; observed "
        f"{found['changed'][:10]} changed (meta_path the same: {found['meta_path_same']}): a "
        f"module of grader/vgpu patches something as it is imported, which every forked run "
        f"would inherit before its node exists; look at fork_server._import_runtime")
    assert found["threads"] == 1, (
        f"expected one thread after the import (fork copies only the caller); observed "
        f"{found['threads']}: look at the modules grader/vgpu imports")
    for name in ("grader.vgpu.observe", "grader.vgpu.mode", "grader.vgpu.grad_writes",
                 "grader.vgpu.distributed", "grader.vgpu.trace"):
        assert name in found["imported"], (
            f"expected {name} imported by the server (each run would import it again); "
            f"observed only {found['imported']}")
    assert "grader.vgpu.run_on_node" not in found["imported"], (
        "expected the runner grader/vgpu/run_on_node.py left to the run (it runs as a script, "
        "as __main__); observed it imported as a module too")
