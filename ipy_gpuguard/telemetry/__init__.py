"""GPU telemetry: device readings (NVML or simulated), framework allocator readings, the sampler.

Imports neither IPython, ipywidgets nor a framework, so it is tested without a shell or a GPU.
"""

import lazy_loader

# Each name is imported from its module when first used (the names and their modules are in
# __init__.pyi, which type checkers read): loading the extension imports only what it needs.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
