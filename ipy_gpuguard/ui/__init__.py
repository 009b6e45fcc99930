"""What the person sees: pure text/HTML renderers of the protocol's data and of the panel, and
the card's buttons as thin ipywidgets wrappers (imported by the shell only when a kernel shows
them)."""

import lazy_loader

# Each name is imported from its module when first used (the names and their modules are in
# __init__.pyi, which type checkers read): loading the extension imports only what it needs.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
