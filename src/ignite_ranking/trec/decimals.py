"""The exact number parser of the TREC readers: decimal tokens to ``float64``, correctly rounded
like ``strtod``, vectorized over a block's token matrix; :func:`numbers` refuses, with its line,
a token that is not a number (or, for grades, not an integer of magnitude below ``MAX_GRADE``).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from .tokens import LineError, line_text, token_text

MAX_GRADE = 2**53  # grades are integers of smaller magnitude: exact in float64 and in int64
_POW10 = 10.0 ** np.arange(23)


def _parse_numbers(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parses decimal numbers exactly; returns ``(values, done)``, ``done`` False where it could not.

    Most tokens are plain decimals, ``[+-]digits[.digits]``: those are read here with a few
    operations per column; the others (exponents, lone signs...) go through
    :func:`_parse_general`. ``matrix`` is ``(n, width)`` uint8, zero-padded on the right (a token
    holds no zero byte, so zeros are padding only).
    """
    n, width = matrix.shape
    columns = np.ascontiguousarray(matrix.T)
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int32)
    fraction = np.zeros(n, dtype=np.int32)
    seen_dot = np.zeros(n, dtype=bool)
    plain = (columns[0] == 45) | (columns[0] == 43)  # bytes that are not digits, dots or padding
    plain |= columns[0] - np.uint8(48) < 10
    plain |= columns[0] == 46
    for j in range(width):
        ch = columns[j]
        value = ch - np.uint8(48)
        is_digit = value < 10
        is_dot = ch == 46
        if j:
            plain &= is_digit | (ch == 0) | (is_dot & ~seen_dot)
        mantissa = np.where(is_digit, mantissa * 10 + value, mantissa)
        digits += is_digit
        fraction += is_digit & seen_dot
        seen_dot |= is_dot
    # Clinger's fast path: with at most 18 digits (no int64 overflow), a mantissa below 2**53 and
    # at most 22 fraction digits, mantissa and 10**fraction are exact doubles and one division
    # rounds correctly, as strtod does.
    done = plain & (digits >= 1) & (digits <= 18) & (mantissa < 2**53) & (fraction <= 22)
    values = mantissa / _POW10[np.minimum(fraction, 22)]
    values = np.where(columns[0] == 45, -values, values)
    other = np.flatnonzero(~done)
    if other.size:
        values[other], done[other] = _parse_general(matrix[other])
    return values, done


def _parse_general(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_parse_numbers` for any layout, exponents included (slower: more work per column).

    It takes ``[+-]digits[.digits][(e|E)[+-]digits]`` with at most 18 digits of
    mantissa and a decimal exponent within what ``float64`` holds exactly: the integer mantissa and
    a power of ten are then both exact and one multiplication or division rounds correctly, as
    ``strtod`` does (Clinger's fast path). ``matrix`` is ``(n, width)`` uint8, zero-padded.
    """
    n, width = matrix.shape
    columns = np.ascontiguousarray(matrix.T)
    mantissa = np.zeros(n, dtype=np.int64)
    exponent = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int32)
    fraction = np.zeros(n, dtype=np.int32)
    exp_digits = np.zeros(n, dtype=np.int32)
    seen_dot = np.zeros(n, dtype=bool)
    in_exp = np.zeros(n, dtype=bool)
    after_e = np.zeros(n, dtype=bool)
    exp_negative = np.zeros(n, dtype=bool)
    ok = np.ones(n, dtype=bool)
    for j in range(width):
        ch = columns[j]
        value = ch - np.uint8(48)
        is_digit = value < 10
        is_dot = ch == 46
        is_e = (ch | 32) == 101
        is_sign = (ch == 43) | (ch == 45)
        in_mantissa = is_digit & ~in_exp
        mantissa = np.where(in_mantissa, mantissa * 10 + value, mantissa)
        digits += in_mantissa
        fraction += in_mantissa & seen_dot
        in_exponent = is_digit & in_exp
        exponent = np.where(in_exponent, exponent * 10 + value, exponent)
        exp_digits += in_exponent
        sign_ok = after_e if j else np.ones(n, dtype=bool)
        ok &= (
            is_digit
            | (ch == 0)
            | (is_dot & ~seen_dot & ~in_exp)
            | (is_e & ~in_exp & (digits > 0))
            | (is_sign & sign_ok)
        )
        exp_negative |= after_e & (ch == 45)
        seen_dot |= is_dot
        after_e = is_e & ~in_exp
        in_exp |= is_e
    ok &= (digits >= 1) & (digits <= 18) & (~in_exp | ((exp_digits >= 1) & (exp_digits <= 4)))
    exponent = np.where(exp_negative, -exponent, exponent) - fraction
    ok &= (mantissa < 2**53) & (np.abs(exponent) <= 22)
    power = _POW10[np.minimum(np.abs(exponent), 22)]
    magnitude = mantissa.astype(np.float64)
    values = np.where(exponent >= 0, magnitude * power, magnitude / power)
    values = np.where(columns[0] == 45, -values, values)
    return values, ok


def numbers(matrix, wide, name, first_line, lines, buf, what: str, integer: bool) -> np.ndarray:
    """The numbers of :func:`narrow`'s ``(matrix, wide)`` (a wide token is read by ``float``: a
    token of more than 26 bytes is never one that the vectorized parsers take); the first that is
    not one (NaN included) is refused with its line, and so, when ``integer``, is the first that is
    not an integer of magnitude below ``MAX_GRADE``."""
    values, done = _parse_numbers(matrix)
    done[list(wide)] = False
    refused = np.zeros(len(values), dtype=bool)
    for i in np.flatnonzero(~done):
        token = token_text(matrix, wide, int(i))
        try:
            values[i] = float(token) if "_" not in token else math.nan
        except ValueError:
            values[i] = math.nan
        refused[i] = integer and not _exact_integer(token, values[i])
    if integer:  # the parser's values are exact: below 2**53, an integer value is an integer token
        refused |= (values != np.round(values)) | ~(np.abs(values) < MAX_GRADE)
    refused |= np.isnan(values)
    wrong = np.flatnonzero(refused)
    if wrong.size:
        i = int(wrong[0])
        if math.isnan(values[i]):
            kind = "a number"
        elif abs(values[i]) >= MAX_GRADE:
            kind = f"an integer of magnitude below 2**53 ({MAX_GRADE})"
        else:
            kind = "an integer"
        raise LineError(
            int(lines[i]),
            f"{name}:{first_line + int(lines[i])}: {what} must be {kind}, got "
            f"{token_text(matrix, wide, i)!r}: {line_text(buf, int(lines[i]))!r}",
        )
    return values


def _exact_integer(token: str, value: float) -> bool:
    """Whether ``token``, which ``float`` reads as ``value``, is exactly an integer of magnitude
    below ``MAX_GRADE`` (``1.00000000000000000001`` reads as 1.0 but is not)."""
    if not abs(value) < MAX_GRADE:
        return False
    try:
        exact = Decimal(token)
    except (ArithmeticError, ValueError):
        return False
    return exact == exact.to_integral_value()
