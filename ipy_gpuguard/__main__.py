"""``python -m ipy_gpuguard doctor``: see :mod:`ipy_gpuguard.cli`."""

from .cli import main

raise SystemExit(main())
