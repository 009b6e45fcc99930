"""Retrying a cell that ran out of memory: find its batch size in its syntax, rewrite only that
number, choose the next size, run the attempts, decide how they stand, remember what worked.

Imports neither IPython nor widgets nor a framework: a cell runs through the ``run`` callable
the session gives, and what a card shows of a retry is built from its state in ``cards/``.
"""

import lazy_loader

# Each name is imported from its module when first used (the names and their modules are in
# __init__.pyi, which type checkers read): loading the extension imports only what it needs.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
