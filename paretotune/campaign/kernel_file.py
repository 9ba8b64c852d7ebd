"""Import a kernel named by its file (``path/to/file.py:name``) the way the program that defined it imported it.

A file inside a package is imported as part of that package, by its dotted name, with the folder above the
package on ``sys.path``: its relative imports and its imports of sibling modules work, wherever the program
found it (a ``sys.path`` edit, ``PYTHONPATH``, site-packages). The package is known from the folders'
``__init__.py`` files, or from ``module`` (the dotted name a capture recorded: a namespace package has no
``__init__.py``). A file in no package is loaded under a private module name (so a program file's
``if __name__ == "__main__":`` block does not run), with its own folder on ``sys.path`` (for the modules beside
it, as under ``python file.py``). No module of the paretotune package is imported here: the trial import's
child uses this too.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def package_of(path: Path, module: str | None = None) -> tuple[Path, str | None]:
    """(folder to import from, dotted module name) of the file ``path``; (its folder, None) for a file in no
    package. ``module``: the name the file had in the program, used where the file's path ends with it."""
    parts = path.with_suffix("").parts
    if path.name == "__init__.py":
        parts = parts[:-1]
    if module and module != "__main__":
        names = tuple(module.split("."))
        if len(parts) > len(names) and parts[-len(names):] == names:
            return Path(*parts[:-len(names)]), module
    folder, names_up = Path(*parts).parent, [parts[-1]]
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        names_up.insert(0, folder.name)
        folder = folder.parent
    if len(names_up) > 1 or path.name == "__init__.py":
        return folder, ".".join(names_up)
    return path.parent, None


def load_file(path: Path, module: str | None = None, *, private: str = "paretotune_user") -> ModuleType:
    """The module of the kernel file ``path`` (absolute), imported as :func:`package_of` says; whatever its code
    raises propagates. Its folder is added at the end of ``sys.path`` (a file of the user's named like a module
    of the standard library or a dependency never shadows it); a package of that name found elsewhere first, or
    already imported from elsewhere: the file is loaded privately."""
    root, name = package_of(path, module)
    if str(root) not in sys.path:
        sys.path.append(str(root))
    if name is not None and _found_in(name.partition(".")[0], root):
        loaded = importlib.import_module(name)
        if _is_file(loaded, path):
            return loaded
    # named by a digest of the path, the same in every process (``hash`` of a str is not): Helion's generated code
    # imports the module by name, and the build workers' and the GPU worker's code must be the same
    return _load_private(path, f"{private}_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:16]}")


def _found_in(top: str, root: Path) -> bool:
    """Whether the top-level package ``top`` is (or would be) imported from the folder ``root``; nothing is run."""
    module = sys.modules.get(top)
    if module is not None:
        places = [getattr(module, "__file__", None)] + [os.path.join(p, "__init__.py")
                                                         for p in getattr(module, "__path__", [])]
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        places = [spec.origin] + [os.path.join(p, "__init__.py") for p in spec.submodule_search_locations or []]
    return any(p and Path(p).resolve().parent.parent == root.resolve() for p in places)


def _is_file(module: ModuleType, path: Path) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and Path(file).resolve() == path.resolve()


def _load_private(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
