"""The tests, as a package: a module is ``tests.<folder>.test_<name>`` (folders mirror the packages, plus
``project`` for whole-repository checks), so two folders may hold files of one name, and shared code is imported
as ``tests.support``, ``tests.engines``, ``tests.fixtures`` and ``tests.standins``. Fixtures and markers for
every folder: ``tests/conftest.py``."""
