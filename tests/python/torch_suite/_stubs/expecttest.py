"""Stand-in for the ``expecttest`` package (PyPI), put on PYTHONPATH by run_suite.py only when
the real one is not installed: torch.testing._internal.common_utils imports it for
``expecttest.TestCase`` (assertExpectedInline), which test_dataloader.py never uses."""

import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    pass
