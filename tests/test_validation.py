"""okoco._validation: every public class rejects a wrong type (TypeError) and a wrong value
(ValueError) for each of its parameters, with one wording: ``Class: name must be ..., got ...``."""

from __future__ import annotations

import math
import re
from numbers import Integral, Real

import numpy as np
import pytest

from okoco import BinaryClassifier, kernels, losses
from okoco._validation import Interval, Options, Protocol, check_param, constraints_of
from okoco.datasets import synthetic
from okoco.dictionary import ALD, KORS, SQUEAK, INKEstimate, NystromKRR
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, FunctionalGD, SketchedKONS
from okoco.regret import (
    BestConstant,
    ClippedKernelERM,
    KernelERM,
    KernelRidge,
    NystromKernelERM,
    RegretTracker,
)

RBF = kernels.RBF(1.0)
INF = float("inf")


def tracker(**kw):
    return RegretTracker(**{"loss": losses.Squared(), "comparator": KernelRidge(RBF), **kw})


#: Where every value of the right type is allowed (a protocol object, a flag).
ANY = "any value of the right type is allowed"

#: class -> (factory taking keyword arguments, {parameter: (wrong type, wrong value)}).
CASES = {
    kernels.RBF: (kernels.RBF, {"gamma": ("1", 0.0)}),
    kernels.Laplacian: (kernels.Laplacian, {"gamma": (None, -1.0)}),
    kernels.Polynomial: (kernels.Polynomial, {
        "degree": (2.0, 0), "gamma": ([1.0], float("inf")), "coef0": ("0", -0.5),
        "normalize": ("yes", ANY)}),
    kernels.Linear: (kernels.Linear, {"normalize": (1, ANY)}),
    KONS: (KONS, {"kernel": ("rbf", ANY), "loss": (np.zeros(2), ANY), "C": ("1", 0.0),
                  "alpha": ("x", 0.0), "eta": ([0.1], "fast"), "max_size": (2.5, 0)}),
    SketchedKONS: (SketchedKONS, {"kernel": (1.0, ANY), "loss": ("squared", ANY),
                                  "C": (True, -1.0), "alpha": (None, float("nan")),
                                  "eta": ({}, -0.1), "eps": ("0.5", 0.0), "beta": ("1", -1.0),
                                  "p_min": ("0", 1.5), "seed": (1.5, -1),
                                  "max_size": ("9", -2)}),
    FunctionalGD: (FunctionalGD, {"kernel": (object(), ANY), "loss": (1, ANY),
                                  "C": ([1], 1e300), "eta": (b"sqrt", 0.0), "lam": ("x", -1.0),
                                  "budget": (2.5, 0)}),
    KRLS: (KRLS, {"kernel": ("rbf", ANY), "loss": ("squared", losses.Logistic()),
                  "C": ("1", 0.0), "nu": ("x", 0.0), "max_size": (3.0, 0),
                  "alpha": ("x", -1.0)}),
    BinaryClassifier: (BinaryClassifier, {"learner": ("kons", ANY),
                                          "pos_label": ([1], float("nan"))}),
    KORS: (lambda **kw: KORS(**{"kernel": RBF, **kw}), {"kernel": ("rbf", ANY), "alpha": ("1", 0.0),
                                         "eps": (None, 1.5), "beta": ("1", -1.0),
                                         "p_min": ([0], -0.1), "seed": ("0", -5)}),
    ALD: (lambda **kw: ALD(**{"kernel": RBF, "nu": 0.1, **kw}),
          {"kernel": (3, ANY), "nu": ("0.1", 0.0), "max_size": (1.5, 0),
           "alpha": ("0", -1.0)}),
    SQUEAK: (lambda **kw: SQUEAK(**{"kernel": RBF, **kw}),
             {"kernel": (None, ANY), "alpha": ("2", 0.0), "eps": ("x", 1.0),
              "qbar": (10.0, 0), "rule": (1, "median"), "seed": (0.5, -1)}),
    INKEstimate: (lambda **kw: INKEstimate(**{"kernel": RBF, **kw}),
                  {"kernel": ("rbf", ANY), "alpha": ("2", -2.0), "eps": (None, 0.0),
                   "qbar": ("100", 0.0), "seed": ([0], -1)}),
    PROSNKONS: (PROSNKONS, {"kernel": ("rbf", ANY), "loss": (1.0, ANY), "C": ("3", 0.0),
                            "alpha": (None, -1.0), "eta": ([1], "newton"),
                            "dictionary_alpha": ("1", 0.0), "eps": ("0.5", 2.0),
                            "beta": (None, -1.0), "p_min": ("0", 1.1), "max_size": (2.5, 0),
                            "seed": ("1", -1)}),
    CONKONS: (CONKONS, {"kernel": (2, ANY), "loss": ("squared", ANY), "C": (None, -3.0),
                        "alpha": ("1", 0.0), "eta": (None, -1.0),
                        "dictionary_alpha": ([1.0], -1.0), "eps": (None, 0.0),
                        "beta": ("1", -0.5), "p_min": (None, -0.5), "max_size": ("5", -1),
                        "seed": (2.0, -2)}),
    Auto: (Auto, {"kernel": (ANY, ANY), "loss": ("logistic", ANY), "C": ("3", 0.0),
                  "fast_rate": ("fast", 0.0), "fast_discount": ("slow", 1.5),
                  "max_size": (10.5, 4), "scale_target": ("yes", ANY),
                  "switch_rate": ("0.1", 1.0)}),
    kernels.Sum: (lambda **kw: kernels.Sum(**{"left": RBF, "right": RBF, **kw}),
                  {"left": ("rbf", ANY), "right": (np.zeros(1), ANY), "normalize": ("no", ANY)}),
    kernels.Product: (lambda **kw: kernels.Product(**{"left": RBF, "right": RBF, **kw}),
                      {"left": (None, ANY), "right": (1, ANY), "normalize": (0, ANY)}),
    kernels.Scaled: (lambda **kw: kernels.Scaled(**{"scale": 2.0, "kernel": RBF, **kw}),
                     {"scale": ("2", 0.0), "kernel": (lambda X, Y: X, ANY)}),
    RegretTracker: (tracker, {"loss": ("squared", ANY), "comparator": (object(), ANY)}),
    NystromKRR: (lambda **kw: NystromKRR(**{"kernel": RBF, **kw}),
                 {"kernel": ("rbf", ANY), "alpha": ("1", 0.0), "regularization": (None, -1.0)}),
    KernelRidge: (lambda **kw: KernelRidge(**{"kernel": RBF, **kw}),
                  {"kernel": (None, ANY), "alpha": ("1", -1.0)}),
    KernelERM: (lambda **kw: KernelERM(**{"kernel": RBF, "loss": losses.Logistic(), **kw}),
                {"kernel": (1, ANY), "loss": ("log", ANY), "alpha": ([1], 0.0),
                 "tol": ("0", 0.0), "max_iter": (10.0, 0)}),
    BestConstant: (lambda **kw: BestConstant(**{"loss": losses.Squared(), **kw}),
                   {"loss": (None, ANY), "C": ("1", -INF), "xtol": (None, 0.0)}),
    ClippedKernelERM: (lambda **kw: ClippedKernelERM(**{"kernel": RBF, "loss": losses.Squared(),
                                                        **kw}),
                       {"kernel": ("rbf", ANY), "loss": (0, ANY), "C": (None, 0.0),
                        "alpha": ("1", float("nan")), "jitter": ("0", -1.0), "tol": ("1", 0.0),
                        "max_iter": (1.5, -1)}),
    NystromKernelERM: (lambda **kw: NystromKernelERM(**{"kernel": RBF, **kw}),
                       {"kernel": ("rbf", ANY), "loss": ("log", ANY), "alpha": ("1", 0.0),
                        "n_components": (2.5, 0), "C": ("inf", -1.0),
                        "landmarks": (1, "leverage"), "seed": (0.5, -3), "tol": ([0], 0.0),
                        "max_iter": ("9", 0)}),
}


def cases(kind: int):
    for cls, (factory, params) in CASES.items():
        for name, values in params.items():
            if values[kind] is not ANY:
                yield pytest.param(cls, factory, name, values[kind], id=f"{cls.__name__}-{name}")


def message(cls, name) -> str:
    return rf"^{re.escape(cls.__name__)}: {name} must be .*, got "


@pytest.mark.parametrize(("cls", "factory", "name", "value"), list(cases(0)))
def test_a_wrong_type_is_a_type_error(cls, factory, name, value):
    with pytest.raises(TypeError, match=message(cls, name)):
        factory(**{name: value})


@pytest.mark.parametrize(("cls", "factory", "name", "value"), list(cases(1)))
def test_a_wrong_value_is_a_value_error(cls, factory, name, value):
    with pytest.raises(ValueError, match=message(cls, name)):
        factory(**{name: value})


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_every_declared_parameter_is_covered_and_the_defaults_are_valid(cls):
    factory, params = CASES[cls]
    assert set(params) == set(constraints_of(cls))
    factory()  # the defaults pass their own constraints


@pytest.mark.parametrize("cls", [KONS, SketchedKONS, FunctionalGD, KRLS, KORS, ALD, SQUEAK,
                                 INKEstimate, kernels.RBF, kernels.Polynomial])
def test_numbers_are_stored_as_python_numbers(cls):
    factory, params = CASES[cls]
    obj = factory()
    for name, allowed in constraints_of(cls).items():
        value = getattr(obj, name)
        if any(isinstance(c, Interval) for c in allowed) and value is not None \
                and not callable(value) and not isinstance(value, str):
            assert type(value) in (float, int), (name, value)


@pytest.mark.parametrize(("loss", "method"), [(loss, method) for loss in
                                              (losses.Squared(), losses.Logistic(),
                                               losses.SquaredHinge())
                                              for method in ("curvature", "lipschitz")])
def test_the_losses_check_C(loss, method):
    with pytest.raises(TypeError, match="C must be a real number > 0, got '1'"):
        getattr(loss, method)("1")
    with pytest.raises(ValueError, match="C must be a real number > 0, got 0"):
        getattr(loss, method)(0)
    assert math.isfinite(getattr(loss, method)(1e150))  # large but finite: no OverflowError


@pytest.mark.parametrize(("generator", "kwargs", "error", "name"), [
    ("adversarial", {"n": "10"}, TypeError, "n"),
    ("adversarial", {"C": 0.0}, ValueError, "C"),
    ("rkhs", {"gamma": "1"}, TypeError, "gamma"),
    ("rkhs", {"n_centers": 0}, ValueError, "n_centers"),
    ("sinc", {"noise": -1.0}, ValueError, "noise"),
    ("sinc", {"low": None}, TypeError, "low"),
    ("friedman", {"d": 4}, ValueError, "d"),
    ("friedman", {"d": 6.0}, TypeError, "d"),
    ("mackey_glass", {"tau": 0.0}, ValueError, "tau"),
    ("mackey_glass", {"embedding": "7"}, TypeError, "embedding"),
    ("bernoulli_kernel", {"design": "circle"}, ValueError, "design"),
    ("bernoulli_kernel", {"a": [0.2]}, TypeError, "a"),
    ("uniform", {"d": 0}, ValueError, "d"),
    ("normal", {"noise": "0"}, TypeError, "noise"),
    ("cauchy", {"n": True}, TypeError, "n"),
])
def test_synthetic_generators(generator, kwargs, error, name):
    with pytest.raises(error, match=rf"^{generator}: {name} must be .*, got "):
        getattr(synthetic, generator)(**kwargs)


def test_low_must_be_below_high():
    with pytest.raises(ValueError, match="sinc: need low < high"):
        synthetic.sinc(low=1.0, high=1.0)


def test_the_checker_itself():
    positive = [Interval(Real, 0, None, closed="neither")]
    assert check_param("x", 3, positive) == 3.0 and type(check_param("x", 3, positive)) is float
    assert check_param("k", np.int64(4), [Interval(Integral, 1, None)]) == 4
    with pytest.raises(ValueError, match=r"x must be a real number > 0, got -~1e\+400$"):
        check_param("x", -(10**400), positive)  # a short message, not 401 digits
    with pytest.raises(ValueError, match=r"got an integer of more than 4000 digits$"):
        check_param("x", -(10**5000), positive)  # whose repr would raise ValueError
    with pytest.raises(TypeError, match=r"x must be a real number > 0, got True \(bool\)"):
        check_param("x", True, positive)
    with pytest.raises(ValueError, match=r"p must be a real number in \[0, 1\], got nan"):
        check_param("p", float("nan"), [Interval(Real, 0, 1)])
    eta = [Options({"sqrt"}, "a policy name"), *positive, "callable"]
    with pytest.raises(ValueError, match=r"eta must be a policy name \('sqrt'\), a real number "
                                         r"> 0 or a callable, got 'fast'"):
        check_param("eta", "fast", eta)
    assert check_param("eta", print, eta) is print
    kernel = [Protocol("a kernel", "diag", callable_object=True)]
    with pytest.raises(TypeError, match="k must be a kernel, got"):
        check_param("k", np.zeros(2), kernel)
    assert check_param("seed", None, ["seed"]) is None
    rng = np.random.default_rng(0)
    assert check_param("seed", rng, ["seed"]) is rng
