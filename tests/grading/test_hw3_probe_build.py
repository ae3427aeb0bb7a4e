"""How the HW3 probe imports and builds a student's LargeLinearModelMP: every way the course
writes the constructor, helper modules beside the script, a helper named like a standard
module, and one clear message for a constructor it cannot call. (No torch needed: the classes
here only record how they were called.)"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

from grader.harness.hw3_build import CannotBuild, construct


def module_with(source: str) -> types.ModuleType:
    module = types.ModuleType("model_parallel")
    module.DIM, module.DEPTH = 1024, 6  # the template's constants, before the probe sets them
    exec(textwrap.dedent(source), module.__dict__)
    return module


@pytest.mark.parametrize("source", [
    # the template's: keyword parameters with the constants as defaults
    """
    class LargeLinearModelMP:
        def __init__(self, dim=DIM, depth=DEPTH):
            self.built = (dim, depth)
    """,
    # the handout's: __init__(self) reading the module's constants
    """
    class LargeLinearModelMP:
        def __init__(self):
            self.built = (DIM, DEPTH)
    """,
    # other names the course's students use, in either order
    """
    class LargeLinearModelMP:
        def __init__(self, num_layers, hidden_size):
            self.built = (hidden_size, num_layers)
    """,
    # names the probe does not know: positional (dim, depth), as the lecture calls it
    """
    class LargeLinearModelMP:
        def __init__(self, a, b):
            self.built = (a, b)
    """,
    # only the depth is a parameter: the width comes from the module's constant
    """
    class LargeLinearModelMP:
        def __init__(self, depth):
            self.built = (DIM, depth)
    """,
    # extra optional parameters are left alone
    """
    class LargeLinearModelMP:
        def __init__(self, dim, depth, num_gpus=None, *, verbose=False):
            self.built = (dim, depth)
    """,
    # a TA's audit: names of torch's own layers (nn.LSTM's input_size, num_layers), which the
    # probe had not known, so the width kept its default and every Task scored 0
    """
    class LargeLinearModelMP:
        def __init__(self, input_size=DIM, num_layers=DEPTH):
            self.built = (input_size, num_layers)
    """,
    """
    class LargeLinearModelMP:
        def __init__(self, hidden_size=DIM, num_hidden_layers=DEPTH):
            self.built = (hidden_size, num_hidden_layers)
    """,
    # any names, with the module's constants as their defaults: read by those defaults
    """
    class LargeLinearModelMP:
        def __init__(self, breadth=DIM, stack=DEPTH, gpus=None):
            self.built = (breadth, stack)
    """,
    """
    class LargeLinearModelMP:
        def __init__(self, stack=DEPTH, *, breadth=DIM):
            self.built = (breadth, stack)
    """,
], ids=["keywords", "module-constants", "other-names", "positional", "depth-only", "extras",
        "torch-layer-names", "hidden-layers", "defaults-any-names", "defaults-keyword-only"])
def test_every_course_style_builds_the_asked_configuration(source):
    model = construct(module_with(source), dim=16, depth=20)
    assert model.built == (16, 20)


def test_a_default_is_read_as_the_constant_only_where_it_tells_which_one():
    """Two parameters defaulted to DIM, or DIM equal to DEPTH, say nothing about which is the
    width: no guess is made, and the call the probe made is told (a configuration built
    from the defaults shows in the layer count and the feedback names the call)."""
    calls = []
    twice = module_with("""
    class LargeLinearModelMP:
        def __init__(self, a=DIM, b=DIM):
            self.built = (a, b)
    """)
    assert construct(twice, dim=16, depth=20, calls=calls).built == (1024, 1024)
    equal = types.ModuleType("model_parallel")
    equal.DIM = equal.DEPTH = 8
    exec(textwrap.dedent("""
    class LargeLinearModelMP:
        def __init__(self, stack=DEPTH, breadth=DIM):
            self.built = (breadth, stack)
    """), equal.__dict__)
    assert construct(equal, dim=16, depth=20, calls=calls).built == (8, 8)
    assert calls == ["LargeLinearModelMP(); left to its default: a=1024, b=1024",
                     "LargeLinearModelMP(); left to its default: stack=8, breadth=8"]
    named = module_with("""
    class LargeLinearModelMP:
        def __init__(self, input_size=DIM, num_layers=DEPTH):
            pass
    """)
    construct(named, dim=16, depth=20, calls=calls)
    assert calls[-1] == "LargeLinearModelMP(input_size=16, num_layers=20)"


def test_the_constants_as_imported_are_remembered_across_builds():
    """The probe builds one module many times and sets DIM and DEPTH before each build: the
    defaults are compared with the module's constants as its import set them."""
    module = module_with("""
    class LargeLinearModelMP:
        def __init__(self, breadth=DIM, stack=DEPTH):
            self.built = (breadth, stack)
    """)
    assert construct(module, dim=16, depth=20).built == (16, 20)
    assert construct(module, dim=32, depth=5).built == (32, 5)


def test_a_constructor_it_cannot_call_gets_one_message_naming_the_signatures():
    module = module_with("""
    class LargeLinearModelMP:
        def __init__(self, config):
            pass
    """)
    with pytest.raises(CannotBuild) as raised:
        construct(module, dim=16, depth=20)
    message = str(raised.value)
    assert message.startswith("hw3/model_parallel.py: LargeLinearModelMP(config) cannot be built")
    for signature in ("LargeLinearModelMP(dim=..., depth=...)", "LargeLinearModelMP(DIM, DEPTH)",
                      "LargeLinearModelMP() with the module constants DIM and DEPTH"):
        assert signature in message


def test_a_type_error_inside_the_students_init_is_theirs():
    module = module_with("""
    class LargeLinearModelMP:
        def __init__(self, dim, depth):
            raise TypeError("unsupported operand type(s) for //: 'int' and 'NoneType'")
    """)
    with pytest.raises(TypeError, match="unsupported operand") as raised:
        construct(module, dim=16, depth=20)
    assert not isinstance(raised.value, CannotBuild)


def test_no_class_of_that_name():
    with pytest.raises(CannotBuild, match="defines no class LargeLinearModelMP"):
        construct(module_with("class Model:\n    pass\n"), dim=16, depth=20)


def test_helpers_beside_the_script_even_one_named_like_a_standard_module(tmp_path):
    """In a fresh interpreter that has imported the standard `profile` (as the grader may):
    the student's hw3/profile.py and hw3/layout.py are what their script imports, and
    afterwards the standard modules are back for the grader (cProfile needs profile.run)."""
    folder = tmp_path / "hw3"
    folder.mkdir()
    (folder / "profile.py").write_text("def timer():\n    return 'student profile'\n")
    (folder / "layout.py").write_text("def gpus(depth, n):\n    return [i * n // depth for i in range(depth)]\n")
    (folder / "model_parallel.py").write_text(
        "from profile import timer\nfrom layout import gpus\nWHO = timer()\nLAYOUT = gpus(6, 2)\n")
    script = textwrap.dedent(f"""
        import sys, profile
        from grader.harness.hw3_import import import_student_module
        module = import_student_module({str(folder / "model_parallel.py")!r})
        assert module.WHO == "student profile", module.WHO
        assert module.LAYOUT == [0, 0, 0, 1, 1, 1], module.LAYOUT
        assert sys.modules["profile"] is profile, "the standard profile is back"
        import cProfile  # reads profile.run: breaks if the student's profile.py stayed
        assert sys.path[-1] == {str(folder)!r} and sys.path[0] != {str(folder)!r}
        again = import_student_module({str(folder / "model_parallel.py")!r})
        assert again.WHO == "student profile"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_feedback_names_a_call_that_left_the_configuration_to_defaults():
    from grader.checks.test_hw3 import constructor_note
    left = constructor_note({"depth": 20, "built_as": "LargeLinearModelMP(); left to its "
                             "default: a=1024, b=1024"})
    assert "The grader built the model as LargeLinearModelMP(); left to its default" in left
    assert "def __init__(self, dim=DIM, depth=DEPTH)" in left
    assert constructor_note({"depth": 20, "built_as": "LargeLinearModelMP(dim=16, depth=20)"}) == ""
    assert constructor_note({"depth": 20}) == ""
