"""The GPU measurements' command: python3 -m utils.measure [--only NAME ...] [--fake] [--archive F.tar.gz] ...

The harness itself lives in utils/gpu/harness.py (it imports only the standard library until something is
measured, so this works on the GPU machines, which have no pint, sympy or Jupyter)."""
import sys

from utils.gpu.harness import main

if __name__ == "__main__":
    sys.exit(main())
