"""The engine catalog: engines register themselves, and the campaign schema accepts exactly what is registered."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from paretotune.campaign.schema import SearchSpec
from paretotune.search import catalog
from paretotune.search.catalog import EngineInfo, engine_names, knob_engines, register


def test_every_engine_module_is_registered_in_message_order() -> None:
    assert engine_names() == ("auto", "compileiq", "nsga2", "random", "grid", "helion")
    assert knob_engines() == ("compileiq", "nsga2", "random", "grid")  # helion searches its own space
    assert catalog.ENGINE_INFO["helion"].native == "helion"


def test_the_schema_reads_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="unknown engine 'extra'"):
        SearchSpec(engine="extra")
    monkeypatch.setitem(catalog.ENGINE_INFO, "extra", EngineInfo("extra", lambda space, options: None, "a test"))
    assert SearchSpec(engine="extra").engine == "extra"


def test_a_name_registered_twice_is_refused() -> None:
    info = catalog.ENGINE_INFO["random"]
    assert register(info) is info  # the same entry again (a module imported twice) is harmless
    with pytest.raises(ValueError, match="registered twice"):
        register(EngineInfo("random", info.create, "another random"))
