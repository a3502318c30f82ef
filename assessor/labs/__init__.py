"""Hands-on labs: loading and validating them, their lifecycle on a target, grading, attempts and skill levels.

Modules: :mod:`.model` (dataclasses), :mod:`.loader` (find, load, validate), :mod:`.grading` (points,
partial credit), :mod:`.lifecycle` (start, solve, reset, capture), :mod:`.attempts` (the SQLite record),
:mod:`.levels` (the level rule), :mod:`.cli` (``gpulab lab`` and ``gpulab progress``).
"""
