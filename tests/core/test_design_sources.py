"""What other installed packages add (designs, commands) is read from entry points; a package that is gone but
left its metadata behind adds nothing and breaks nothing, while a plugin that is there but broken still fails."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from lg_harness.core.design_sources import installed


def test_an_entry_of_a_package_that_is_gone_adds_nothing():
    gone = EntryPoint(name="lab", value="lg_harness_gone_lab.cli:register", group="lg_harness.commands")
    assert installed(gone) is None


def test_an_entry_of_an_installed_package_loads():
    here = EntryPoint(name="x", value="lg_harness.core.design_sources:installed", group="lg_harness.commands")
    assert installed(here) is installed


def test_a_plugin_that_is_there_but_imports_something_missing_still_fails(tmp_path, monkeypatch):
    (tmp_path / "broken_plugin_probe.py").write_text("import lg_harness_no_such_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = EntryPoint(name="b", value="broken_plugin_probe:register", group="lg_harness.commands")
    with pytest.raises(ModuleNotFoundError, match="lg_harness_no_such_dependency"):
        installed(broken)
