"""The wrappers from several threads: no crash, and the state of some sequential order.

Four threads share one wrapper and call ``learn_one``, ``predict_proba_one`` /
``predict_one`` and ``learn_many`` on it. Each wrapper runs one call at a time (its lock), so
the order in which its steps ran (recorded inside the lock) is a sequential replay: a fresh
wrapper fed the same rows in that order must predict exactly as the shared one. Without the
lock ``MulticlassClassifier`` aborted with heap corruption ("free(): invalid size"), so each
workload runs in a child process: a crash fails the test instead of the test session.
"""

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
KINDS = ["multiclass-logistic-kons", "multiclass-default", "multiclass-fgd", "interval-krls",
         "binary-kons"]


def make(kind: str):
    from okoco import BinaryClassifier, losses
    from okoco.intervals import IntervalRegressor
    from okoco.learners import KONS, KRLS, FunctionalGD, MulticlassClassifier

    return {
        "multiclass-logistic-kons": lambda: MulticlassClassifier(KONS(loss=losses.Logistic(),
                                                                      max_size=40)),
        "multiclass-default": lambda: MulticlassClassifier(KONS(max_size=40)),
        "multiclass-fgd": lambda: MulticlassClassifier(FunctionalGD(loss=losses.Logistic())),
        "interval-krls": lambda: IntervalRegressor(KRLS()),
        "binary-kons": lambda: BinaryClassifier(KONS(loss=losses.Logistic())),
    }[kind]()


def data(kind: str, thread: int, n: int):
    rng = np.random.default_rng(thread)
    rows = []
    for _ in range(n):
        v = rng.normal(size=3)
        x = {"a": float(v[0]), "b": float(v[1]), "c": float(v[2])}
        if kind.startswith("interval"):
            y = float(np.sin(v[0]))
        elif kind.startswith("binary"):
            y = bool(v[0] > 0)
        else:
            y = f"class-{int(abs(v[0]) * 3) % 4}-{thread % 2}"
        rows.append((x, y))
    return rows


def record_steps(model, order: list) -> None:
    """Record each step's row inside the wrapper's lock (the order the steps really ran)."""
    inner = model._learn_one if hasattr(model, "_learn_one") else None
    if inner is not None:  # MulticlassClassifier: learn_one and learn_many both step here
        def recorded(x, y):
            inner(x, y)
            order.append((x, y))
        model._learn_one = recorded
        return
    cls_learn = type(model).learn_one.__wrapped__  # under the lock of one_at_a_time

    def learn_one(x, y, **kwargs):
        with model._lock:
            cls_learn(model, x, y, **kwargs)
            order.append((x, y))
    model.learn_one = learn_one


def workload(kind: str, n: int = 60) -> dict:
    model = make(kind)
    order: list = []
    record_steps(model, order)
    predict = getattr(model, "predict_proba_one", model.predict_one)
    errors = []

    def run(thread: int):
        try:
            rows = data(kind, thread, n)
            for i, (x, y) in enumerate(rows):
                predict(x)
                if thread == 3 and i % 10 == 0 and hasattr(model, "learn_many") and \
                        kind.startswith("multiclass"):
                    chunk = rows[i:i + 3]
                    model.learn_many([x for x, _ in chunk], [y for _, y in chunk])
                else:
                    model.learn_one(x, y)
        except Exception as error:  # reported, not swallowed
            errors.append(repr(error))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    replay = make(kind)
    for x, y in order:
        replay.learn_one(x, y)
    probes = [x for x, _ in data(kind, 99, 20)]
    if kind.startswith("interval"):
        same = all(model.predict_one(x, with_interval=True) ==
                   replay.predict_one(x, with_interval=True) for x in probes)
    else:
        same = all(predict(x) == getattr(replay, predict.__name__)(x) for x in probes)
    return {"errors": errors, "steps": len(order), "same": bool(same)}


@pytest.mark.parametrize("kind", KINDS)
def test_four_threads_leave_the_state_of_a_sequential_replay(kind):
    proc = subprocess.run([sys.executable, str(Path(__file__)), kind], capture_output=True,
                          text=True, timeout=600, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["errors"] == []
    assert result["steps"] >= 4 * 60
    assert result["same"]


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    print(json.dumps(workload(sys.argv[1])))
