"""The versioned contract between the kernel and its frontends: cards, actions, kernel state.

Everything that crosses the kernel boundary is one of these frozen dataclasses turned into JSON
by :func:`to_json`. ``schema.json`` (shipped in the package) describes the same JSON for the
TypeScript side and for tests; a test keeps the two equal. Imports nothing of the rest of the
package, nor IPython or widgets: the server extension reads it too.
"""

import lazy_loader

# Each name is imported from its module when first used (the names and their modules are in
# __init__.pyi, which type checkers read): loading the extension imports only what it needs.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
