import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    """The learners factorize and solve many small systems: BLAS threads only add contention
    (measured 20-40x slower on a loaded 2-core machine), so the suite pins them to one."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        yield
        return
    with threadpool_limits(limits=1):
        yield
