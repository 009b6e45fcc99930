"""Progress and stalls of a guarded cell: heartbeats, the watchdog thread, the GPU's timeout.

Renders nothing itself: what it finds is data (:class:`Stall`, :class:`GpuTimeout`) that the
panel and the cards show. Imports no framework: Keras is wrapped only once the cell imported it.
"""

import lazy_loader

# Each name is imported from its module when first used (the names and their modules are in
# __init__.pyi, which type checkers read): loading the extension imports only what it needs.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
