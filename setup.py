"""The one compiled part: the virtual node's hot path (grader/vgpu/_fastpath.c).

Optional: where no C compiler is found the build goes on without it, and the node runs its
same bookkeeping in Python (grader/vgpu/mode.py), only slower at small sizes.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("grader.vgpu._fastpath", ["grader/vgpu/_fastpath.c"],
                             extra_compile_args=["-O2"], optional=True)])
