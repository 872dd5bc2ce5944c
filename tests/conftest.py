import signal

import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture
def sigint_raises():
    """SIGINT raises ``KeyboardInterrupt`` during the test, as in a terminal, also where the
    suite runs with SIGINT ignored (a background job inherits it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` of a subprocess that gets a SIGINT: Python's own Ctrl-C handling in the
    child, whatever the suite's process ignores."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(params=["portable", "avx"])
def isa(request):
    """Run the test on one instruction set of okoco._core._linalg's kernels, then restore the
    default (test_linalg_fused, test_lazy_rank)."""
    from okoco._core import _linalg

    default = _linalg.kernels()
    if request.param == "avx" and default != "avx":
        pytest.skip("no AVX on this processor")
    _linalg.kernels(request.param)
    yield request.param
    _linalg.kernels(default)
