"""``python -m probesim``: the same command line as the ``probesim`` script (useful where the
script is not on PATH, or to run a checkout with ``PYTHONPATH=src``)."""

from probesim.cli import main

main()
