"""Validation: build and run the reference and the candidates in subprocesses,
compare their outputs, record golden data. ``validate_region`` (in
:mod:`validation.region`) is the whole protocol for one region.

The package imports nothing itself: ``python -m validation.worker`` runs in the sandbox,
where only the worker's own modules are visible."""
