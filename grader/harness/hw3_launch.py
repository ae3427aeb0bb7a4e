"""The HW3 probe's process starts here: this small module is its `__main__`.

    python -m grader.harness.hw3_launch MODEL_FILE OUT_JSONL PLAN_JSON

The probe itself (hw3_probe.py) is loaded from its file under a name no `import` statement can
spell and is kept out of `sys.modules`, so code in the student's model cannot find it, its
classes or its records' sealer by name (`sys.modules["__main__"]` is this module: a function).
"""
import sys


def main(argv: list[str]) -> int:
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hw3_probe.py")
    spec = importlib.util.spec_from_file_location("pdl-hw3-probe", path)
    probe = importlib.util.module_from_spec(spec)
    # Its records are sealed for its own code only, which no name in sys.modules leads to.
    from grader.vgpu.trace import admit_unlisted_module
    admit_unlisted_module(probe)
    spec.loader.exec_module(probe)
    return probe.run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
