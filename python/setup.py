"""The optional C extension ivytrace._speedups (the recorder's hot path; see ivytrace/_speedups.c).
Everything else is in pyproject.toml. `optional=True`: without a compiler or Python headers the
package installs without it and the recorder runs its pure-Python path (slower, same records)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("ivytrace._speedups", ["ivytrace/_speedups.c"], libraries=["z"],
                             extra_compile_args=["-O2", "-std=c11", "-D_GNU_SOURCE"], optional=True)])
