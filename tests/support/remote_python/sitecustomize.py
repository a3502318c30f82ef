"""Bytecode for the code Ansible sends to a test bed node, compiled once per test session instead of per task.

The SSH test bed (tests/support/sshbed.py) puts this directory on the ``PYTHONPATH`` of its nodes' sessions
and names a cache directory in ``GPULAB_TEST_CODE_CACHE``. Ansible ships every task's module with the
``module_utils`` it imports as a zip archive, and Python imports from a zip by compiling each source file
again: about half of what a task costs the node. Here a zip's source file is compiled once, keyed by its
bytes, and the same code object is read back for the next task. What runs is unchanged: the code is
``zipimport``'s own compilation of the same source, under the same file name. Anything unexpected (another
Python's ``zipimport``, an unreadable cache) falls back to ``zipimport`` itself.

Python imports ``sitecustomize`` at start-up; nothing else here runs without ``GPULAB_TEST_CODE_CACHE``.
"""

from __future__ import annotations

import contextlib
import os
import sys


def _install(cache: str) -> None:
    import _imp
    import hashlib
    import importlib.util
    import marshal
    import zipimport

    salt = b"%s\0%s\0%d\0" % (importlib.util.MAGIC_NUMBER, sys.version.encode(), sys.flags.optimize)

    class CachingZipImporter(zipimport.zipimporter):
        def _source_entry(self, fullname):  # (path in the archive, its table entry) of a module's .py, or None
            files = self._get_files() if hasattr(self, "_get_files") else self._files
            path = zipimport._get_module_path(self, fullname)
            for suffix in ("/__init__.py", ".py"):
                entry = files.get(path + suffix)
                if entry is not None:
                    return entry
            return None

        def get_filename(self, fullname):  # zipimport compiles the module just to name its file
            try:
                entry = self._source_entry(fullname)
            except Exception:
                entry = None
            return entry[0] if entry is not None else super().get_filename(fullname)

        def get_code(self, fullname):
            try:
                entry = self._source_entry(fullname)
                if entry is None:
                    return super().get_code(fullname)
                source = zipimport._get_data(self.archive, entry)
                where = os.path.join(cache, hashlib.sha256(salt + source).hexdigest())
            except Exception:
                return super().get_code(fullname)
            try:
                with open(where, "rb") as f:
                    code = marshal.loads(f.read())
                _imp._fix_co_filename(code, entry[0])
                return code
            except Exception:
                pass
            code = zipimport._compile_source(entry[0], source)
            try:
                part = f"{where}.{os.getpid()}"
                with open(part, "wb") as f:
                    f.write(marshal.dumps(code))
                os.replace(part, where)
            except OSError:
                pass
            return code

    hooks = sys.path_hooks
    hooks.insert(hooks.index(zipimport.zipimporter) if zipimport.zipimporter in hooks else 0, CachingZipImporter)


if os.environ.get("GPULAB_TEST_CODE_CACHE"):
    with contextlib.suppress(Exception):
        _install(os.environ["GPULAB_TEST_CODE_CACHE"])
