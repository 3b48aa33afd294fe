"""The project's one native module, built by ``pip install -e .`` (and so by ``make test``):
``log._record_scan``, the produce path's walk over a batch's records (log/_record_scan.c;
log/record_validation.py falls back to its pure-Python twin when it is not built).
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("log._record_scan", ["log/_record_scan.c"], extra_compile_args=["-O3"])])
