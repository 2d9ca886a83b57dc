"""habitat-lab as a test oracle, imported without its compiled dependencies.

habitat-lab (pure Python, ``pip install habitat-lab``) imports the C++ modules ``magnum``,
``corrade`` and ``habitat_sim`` (the simulator, conda-only) at module level, even in the files
whose classes these tests use: the dataset loaders (``PointNavDatasetV1``, ``ObjectNavDatasetV1``)
and the measures (``DistanceToGoal``, ``Success``, ``SPL``, ``SoftSPL``). Those classes never call
into them for what the tests do, so this module puts placeholder modules under those three names
in ``sys.modules`` before importing habitat, plus one pure-Python package the checks never call:
``habitat.utils.visualizations`` (top-down map drawing for the TopDownMap measure; its import-time
colour table assumes OpenCV 4's ``applyColorMap`` shape and fails under the OpenCV 5 installed
here). Every attribute of a placeholder is a placeholder class; calling one returns another placeholder (habitat builds a few at import
time), and turning one into a number, a truth value or a sequence raises ``HabitatStubCalled``, so
a check whose numbers came through stubbed code fails loudly rather than passing on a fake. Everything else habitat imports (gym, numpy-quaternion, hydra, attrs, ...) is the real
package, and the classes under test are habitat-lab's own code.

``habitat()`` returns the ``habitat`` module, or skips the calling test with the reason when
habitat-lab is not installed (``make setup`` installs it; see the Makefile).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

import pytest

STUBBED = ("magnum", "corrade", "habitat_sim")
STUBBED_PURE = ("habitat.utils.visualizations",)


class HabitatStubCalled(RuntimeError):
    """A habitat-lab code path reached a stubbed compiled module."""


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        return _stub_class(f"{cls.__qualname__}()")

    def __float__(cls):
        raise HabitatStubCalled(f"{cls.__qualname__} is a stub of compiled habitat code")

    __int__ = __index__ = __bool__ = __float__

    def __iter__(cls):
        raise HabitatStubCalled(f"{cls.__qualname__} is a stub of compiled habitat code")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__


def _stub_class(qualname: str):
    return _StubMeta(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stub_class(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if _stubbed(fullname):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


# Every habitat module the oracle tests use, imported while the placeholders are in place.
ORACLE_MODULES = (
    "habitat.core.embodied_task",
    "habitat.datasets.pointnav.pointnav_dataset",
    "habitat.datasets.object_nav.object_nav_dataset",
    "habitat.tasks.nav.nav",
    "habitat.tasks.nav.object_nav_task",
)


def _stubbed(name: str) -> bool:
    return name.split(".")[0] in STUBBED or any(
        name == p or name.startswith(p + ".") for p in STUBBED_PURE
    )


def _install_stubs() -> _StubFinder | None:
    """The placeholder finder, put first on ``sys.meta_path``; None when the real habitat-sim
    is installed (then nothing is stubbed)."""
    if importlib.util.find_spec("habitat_sim") is not None and not any(
        isinstance(f, _StubFinder) for f in sys.meta_path
    ):
        return None
    finder = _StubFinder()
    sys.meta_path.insert(0, finder)
    return finder


def habitat():
    """The ``habitat`` module with the compiled modules stubbed; skips the test without it."""
    if importlib.util.find_spec("habitat") is None:
        pytest.skip("habitat-lab is not installed (make setup installs it; see the Makefile)")
    finder = _install_stubs()
    try:
        import habitat as hab

        for name in ORACLE_MODULES:
            importlib.import_module(name)
    finally:
        # The placeholders stay only inside the habitat modules that imported them: nothing
        # else (a later ``find_spec("habitat_sim")``, say) sees a stub for the real package.
        if finder is not None:
            sys.meta_path.remove(finder)
            for name in [m for m in sys.modules if _stubbed(m)]:
                if isinstance(sys.modules[name], _StubModule):
                    del sys.modules[name]
    return hab
