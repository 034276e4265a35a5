"""The validators of public inputs (dpreg._checks): what each accepts, what it returns and
the message it raises."""

import math
from fractions import Fraction

import numpy as np
import pytest

from dpreg._checks import integer_at_least, number_in, one_of, positive_number
from dpreg.exceptions import BudgetExceededError, OptionError


@pytest.mark.parametrize("value", [1, 2.5, np.float32(0.5), np.int64(3), Fraction(1, 3), 1e300])
def test_positive_number_accepts_and_returns_a_float(value):
    out = positive_number("clip", value)
    assert type(out) is float and out == float(value)


@pytest.mark.parametrize("value", [0, -1.0, math.inf, math.nan, True, "1", None, [1.0]])
def test_positive_number_refuses(value):
    with pytest.raises(OptionError, match=r"^clip must be a positive finite number, got "):
        positive_number("clip", value)


def test_the_error_class_is_the_callers():
    with pytest.raises(BudgetExceededError, match="^mu must"):
        positive_number("mu", -1, error=BudgetExceededError)
    with pytest.raises(BudgetExceededError, match=r"^delta must be a number in \(0, 1\)"):
        number_in("delta", 1.0, 0, 1, error=BudgetExceededError)


@pytest.mark.parametrize("value, low_closed, high_closed, ok", [
    (0.0, False, False, False), (0.0, True, False, True), (1.0, False, False, False),
    (1.0, False, True, True), (0.5, False, False, True), (math.nan, True, True, False),
    (-0.1, True, True, False), (False, True, True, False),
])
def test_number_in_ends(value, low_closed, high_closed, ok):
    if ok:
        assert number_in("q", value, 0, 1, low_closed=low_closed,
                         high_closed=high_closed) == value
    else:
        with pytest.raises(OptionError, match="^q must be a number in "):
            number_in("q", value, 0, 1, low_closed=low_closed, high_closed=high_closed)


def test_number_in_names_the_interval():
    with pytest.raises(OptionError, match=r"rho must be a number in \[0, 1\), got 1"):
        number_in("rho", 1, 0, 1, low_closed=True)
    with pytest.raises(OptionError, match=r"noise_sd must be a number in \[0, inf\), got inf"):
        number_in("noise_sd", math.inf, 0, math.inf, low_closed=True)
    with pytest.raises(OptionError, match=r"lr_decay must be a number in \(0.5, 1\)"):
        number_in("lr_decay", 0.5, 0.5, 1)


@pytest.mark.parametrize("value, low, message", [
    (0, 1, "a positive integer"), (-1, 0, "a non-negative integer"),
    (3, 4, "an integer >= 4"), (2.0, 1, "a positive integer"), (True, 0, "a non-negative"),
])
def test_integer_at_least_refuses(value, low, message):
    with pytest.raises(OptionError, match=f"^runs must be {message}"):
        integer_at_least("runs", value, low)


def test_integer_at_least_returns_an_int():
    out = integer_at_least("n", np.int64(7))
    assert type(out) is int and out == 7
    assert integer_at_least("seed", 0, 0) == 0


def test_one_of_returns_the_choice_and_lists_the_others():
    assert one_of("layout", "long", ("wide", "long")) == "long"
    with pytest.raises(OptionError, match=r"^layout must be one of \('wide', 'long'\), "
                                          r"got 'tall'$"):
        one_of("layout", "tall", ("wide", "long"))


@pytest.mark.parametrize("value", [["wide"], np.array(["wide", "long"]), None, 1])
def test_one_of_refuses_unhashable_and_array_values(value):
    with pytest.raises(OptionError, match="^layout must be one of"):
        one_of("layout", value, ("wide", "long"))
