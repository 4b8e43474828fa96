"""sympy checks of the closed form for alpha_c(kappa).

The theta substitution s = 2 sin(theta) gives
    kappa = 1 - (2 theta + sin 2 theta)/pi,   F = 1 - (2 theta - sin(4 theta)/2)/pi.
A wrong closed form cannot pass: both are checked against the symbolic integrals
and the small-kappa series F = 4 kappa - (6 pi)^(5/3) kappa^(5/3) / (10 pi) + ... is
derived by series reversion and compared with the float64 implementation.
"""

import math

import pytest
import sympy as sp

from replica import tail_second_moment, truncation_point

s, theta, t = sp.symbols("s theta t", positive=True)
rho = sp.sqrt(4 - s**2) / sp.pi
kappa_closed = 1 - (2 * theta + sp.sin(2 * theta)) / sp.pi
f_closed = 1 - (2 * theta - sp.sin(4 * theta) / 2) / sp.pi


def test_closed_forms_have_the_right_derivative_and_endpoint():
    # d/dtheta Int_{2 sin theta}^2 g(s) ds = -g(2 sin theta) * 2 cos theta
    s_theta = 2 * sp.sin(theta)
    jac = sp.diff(s_theta, theta)
    d_kappa = sp.diff(kappa_closed, theta) + rho.subs(s, s_theta) * jac
    d_f = sp.diff(f_closed, theta) + (s_theta**2 * rho).subs(s, s_theta) * jac
    # on 0 < theta < pi/2, sqrt(4 - 4 sin^2) = 2 cos(theta)
    for expr in (d_kappa, d_f):
        expr = expr.subs(sp.sqrt(4 - 4 * sp.sin(theta) ** 2), 2 * sp.cos(theta))
        assert sp.simplify(sp.expand_trig(expr)) == 0
    assert kappa_closed.subs(theta, sp.pi / 2) == 0
    assert f_closed.subs(theta, sp.pi / 2) == 0
    assert kappa_closed.subs(theta, 0) == 1 and f_closed.subs(theta, 0) == 1


@pytest.mark.parametrize("theta_value", [sp.Rational(1, 7), sp.pi / 5, sp.Rational(6, 5)])
def test_closed_forms_match_symbolic_integrals(theta_value):
    lower = 2 * sp.sin(theta_value)
    kappa_int = sp.integrate(rho, (s, lower, 2))  # symbolic integral in s
    # F in the substituted variable s = 2 sin(phi), ds = 2 cos(phi) dphi, sqrt(4 - s^2) = 2 cos(phi)
    phi = sp.symbols("phi")
    f_int = sp.integrate((2 * sp.sin(phi)) ** 2 * 2 * sp.cos(phi) / sp.pi * 2 * sp.cos(phi),
                         (phi, theta_value, sp.pi / 2))
    assert float(sp.N(kappa_int - kappa_closed.subs(theta, theta_value), 30)) == pytest.approx(0, abs=1e-25)
    assert float(sp.N(f_int - f_closed.subs(theta, theta_value), 30)) == pytest.approx(0, abs=1e-25)
    # and the float64 implementation reproduces the closed form at this kappa
    k = float(sp.N(kappa_closed.subs(theta, theta_value), 30))
    assert truncation_point(k) == pytest.approx(float(sp.N(lower, 30)), rel=1e-13)
    assert tail_second_moment(k) == pytest.approx(float(sp.N(f_closed.subs(theta, theta_value), 30)), rel=1e-13)


def test_small_kappa_series():
    # y = pi - 2 theta -> 0: kappa = (y - sin y)/pi, F = (2y - sin 2y)/(2 pi).  Revert kappa(y).
    y, k = sp.symbols("y k", positive=True)
    kappa_y = sp.series((y - sp.sin(y)) / sp.pi, y, 0, 10).removeO()
    f_y = sp.series((2 * y - sp.sin(2 * y)) / (2 * sp.pi), y, 0, 10).removeO()
    # make sure these are the closed forms in the y variable
    assert sp.simplify(kappa_closed.subs(theta, (sp.pi - y) / 2) - (y - sp.sin(y)) / sp.pi) == 0
    assert sp.simplify(sp.expand_trig(f_closed.subs(theta, (sp.pi - y) / 2)
                                      - (2 * y - sp.sin(2 * y)) / (2 * sp.pi))) == 0
    # revert kappa(y) with u = kappa^(1/3): y = c1 u + c3 u^3 + O(u^5)
    u, c3 = sp.symbols("u c3")
    c1 = sp.cbrt(6 * sp.pi)
    assert sp.simplify(kappa_y.coeff(y, 3) * c1**3 - 1) == 0  # leading order fixes c1
    y_u = c1 * u + c3 * u**3
    kappa_u = sp.expand(sum(kappa_y.coeff(y, n) * y_u**n for n in (3, 5)))
    c3_value = sp.solve(sp.Eq(kappa_u.coeff(u, 5), 0), c3)[0]
    f_u = sp.expand(sum(f_y.coeff(y, n) * y_u.subs(c3, c3_value) ** n for n in (3, 5)))
    assert sp.simplify(f_u.coeff(u, 3) - 4) == 0  # F ~ 4 kappa
    assert f_u.coeff(u, 4) == 0
    c5 = sp.simplify(f_u.coeff(u, 5))
    assert sp.simplify(c5 + (6 * sp.pi) ** sp.Rational(5, 3) / (10 * sp.pi)) == 0
    # the float64 implementation follows the series at small kappa
    c5f = float(c5)
    for kv in (1e-9, 1e-7, 1e-5):
        series = 4 * kv + c5f * kv ** (5 / 3)
        assert abs(tail_second_moment(kv) - series) <= 50 * kv ** (7 / 3) + 1e-16 * kv
    assert tail_second_moment(1e-3) < 4e-3
    assert math.isclose(tail_second_moment(1e-12) / 1e-12, 4.0, rel_tol=1e-6)
