r"""Identification of model parameters from measured natural frequencies.

Named parameters ``p`` of a model file (joint stiffnesses, masses, ...) are fitted so that the
computed frequencies match measured ones at one or more configurations:

    min_theta  1/2 sum_r w_r ((f_r(p) - f_r^meas) / f_r^meas)^2,      theta = ln p,

by ``scipy.optimize.least_squares`` (trust-region reflective, bounds on ``p``).  Log-parameters
make the problem scale-free and keep ``p > 0``.  Each configuration is the model file built with
its own parameter overrides (e.g. the Surgiscope's ``x, y, z``) and, optionally, an end-effector
``pose`` reached by :func:`sim.model.assembly.solve_pose`.  Measured modes are paired with computed
ones by MAC when measured shapes are given (:mod:`sim.solvers.tracking`), else by explicit model mode
numbers, else by sorted order (repeated model frequencies may be merged first).

Statistics at the solution, with ``J = d residual / d theta`` (m, n):

* ``sigma^2 = 2 cost / (m - n)`` and ``cov(theta) = sigma^2 (J^T J)^-1`` (pseudo-inverse); the
  relative standard deviation of ``p_j`` is ``sqrt(cov_jj)``;
* sensitivities ``d f_r / d ln p_j`` [Hz];
* identifiability: a parameter whose Jacobian column is (near) zero (norm below
  ``ZERO_RTOL`` of the largest), or (near) parallel to another one (|cos| > ``CORRELATION``), or
  carries a singular direction of the column-normalised ``J`` (``s_min / s_max <
  SINGULAR_RTOL``), is reported as not identifiable, with the reason; an identifiable one whose
  relative standard deviation exceeds ``POORLY_DETERMINED`` is reported as poorly determined.
"""
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from sim.errors import SimError

ZERO_RTOL = 1e-3
CORRELATION = 0.99
SINGULAR_RTOL = 1e-3
POORLY_DETERMINED = 0.25   # relative standard deviation above which a fitted value is reported as weak
MERGE_RTOL = 1e-4      # model frequencies closer than this (relative) are one repeated mode


@dataclass
class Configuration:
    """One measured configuration.

    Attributes
    ----------
    name : str
    measured : ndarray, shape (k,)
        Measured natural frequencies [Hz].
    parameters : dict
        Model-parameter overrides for this configuration.
    pose : sequence of float, optional
        End-effector pose reached by ``solve_pose`` (default: the model's home).
    modes : sequence of int, optional
        1-based computed mode numbers paired with the measured ones.
    merge_repeated : bool
        Pair with the distinct computed frequencies (repeated roots of a symmetric robot count
        once) when pairing by order.
    shapes : ndarray, shape (n_points, k), optional
        Measured shapes at ``shape_outputs`` (see :mod:`sim.solvers.frf` output strings): pairing by MAC.
    shape_outputs : sequence of str, optional
    fit : bool
        Used in the fit (True) or only predicted (False).
    weight : float
    """

    name: str
    measured: np.ndarray
    parameters: dict = field(default_factory=dict)
    pose: object = None
    modes: object = None
    merge_repeated: bool = False
    shapes: object = None
    shape_outputs: object = None
    fit: bool = True
    weight: float = 1.0


@dataclass
class ConfigurationResult:
    """Computed versus measured frequencies at one configuration.

    Attributes
    ----------
    name : str
    measured, computed : ndarray, shape (k,)
        Hz, paired.
    errors : ndarray, shape (k,)
        ``(computed - measured) / measured``.
    modes : ndarray of int, shape (k,)
        1-based computed mode numbers used.
    mac : ndarray, shape (k,) or None
        MAC of the pairs when shapes were measured.
    fit : bool
    """

    name: str
    measured: np.ndarray
    computed: np.ndarray
    errors: np.ndarray
    modes: np.ndarray
    mac: object
    fit: bool


@dataclass
class IdentificationResult:
    """Outcome of :func:`identify`.

    Attributes
    ----------
    names : list of str
    initial, values, lower, upper : ndarray, shape (n,)
    cost : float
        ``1/2 sum r^2`` of the relative residuals of the fitted configurations.
    rms_error : float
        RMS relative frequency error over the fitted modes.
    covariance : ndarray, shape (n, n)
        Of ``ln p`` (relative); ``std`` its diagonal square roots.
    std : ndarray, shape (n,)
    correlation : ndarray, shape (n, n)
    sensitivity : ndarray, shape (m, n)
        ``d f / d ln p`` [Hz] of the fitted modes, rows in configuration order.
    singular_values : ndarray, shape (n,)
        Of the column-normalised Jacobian, relative to the largest.
    identifiable : ndarray of bool, shape (n,)
    messages : list of str
        Why a parameter is not identifiable, and solver notes.
    configurations : list of ConfigurationResult
    evaluations : int
    wall_time_s : float
    success : bool
    """

    names: list
    initial: np.ndarray
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    cost: float
    rms_error: float
    covariance: np.ndarray
    std: np.ndarray
    correlation: np.ndarray
    sensitivity: np.ndarray
    singular_values: np.ndarray
    identifiable: np.ndarray
    messages: list
    configurations: list
    evaluations: int
    wall_time_s: float
    success: bool


def _distinct(f, rtol=MERGE_RTOL):
    """Indices (into ascending ``f``) of the first of each group of repeated frequencies."""
    keep = [0] if f.size else []
    for i in range(1, f.size):
        if f[i] - f[keep[-1]] > rtol * max(f[i], 1e-300):
            keep.append(i)
    return np.array(keep, dtype=int)


class Problem:
    """Computes paired frequencies of the configurations for given parameter values.

    Parameters
    ----------
    model_file : str or Path
    base : dict
        Model parameters common to all configurations.
    names : sequence of str
        Parameters being fitted.
    configurations : sequence of Configuration
    """

    def __init__(self, model_file, base, names, configurations):
        from sim.model.loader import parameters
        known = parameters(model_file)
        for name in names:
            if name not in known:
                raise SimError(f"{model_file}: identification parameter `{name}` is not a model parameter "
                               f"(parameters: {', '.join(known)})")
        self.model_file, self.base, self.names = model_file, dict(base), list(names)
        self.configurations = list(configurations)
        self.evaluations = 0

    def evaluate(self, configuration, values):
        """Paired computed frequencies (k,), mode numbers (k,) and MAC (k,) or None."""
        from sim.model.assembly import solve_pose
        from sim.model.loader import load_model
        from sim.solvers.modal import modes

        c = configuration
        params = {**self.base, **c.parameters, **dict(zip(self.names, map(float, values)))}
        model = load_model(self.model_file, params)
        q = model.q_home if c.pose is None else solve_pose(model, c.pose)
        k = c.measured.size
        need = k if c.modes is None else max(c.modes)
        if c.merge_repeated or c.shapes is not None:
            need = 3 * need + 6
        # The elastic modes of the structure; free motions (a strut spinning between spherical
        # joints) are found and set apart by sim.solvers.modal, not mistaken for zero frequencies.
        result = modes(model, q, count=need, energies=False)
        f = result.frequencies_hz
        self.evaluations += 1
        if c.shapes is not None:
            from sim.solvers.frf import _rows
            from sim.solvers.tracking import mac, pair_modes
            rows, _ = _rows(model, q, c.shape_outputs, "output")
            table = mac(np.asarray(c.shapes), rows @ result.shapes)
            pairs = pair_modes(table)
            index = np.array([j for _, j in pairs])
            return f[index], index + 1, np.array([table[i, j] for i, j in pairs])
        if c.modes is not None:
            index = np.asarray(c.modes, dtype=int) - 1
        else:
            index = _distinct(f) if c.merge_repeated else np.arange(f.size)
            index = index[:k]
        if index.size < k or index.max() >= f.size:
            raise SimError(f"identification {c.name}: the model has fewer modes than measured ({k})")
        return f[index], index + 1, None

    def residuals(self, theta, which=None):
        """Weighted relative residuals of the fitted (or ``which``) configurations."""
        values = np.exp(theta)
        out = []
        for c in self.configurations:
            if (c.fit if which is None else c.name in which):
                f, _, _ = self.evaluate(c, values)
                out.append(np.sqrt(c.weight) * (f - c.measured) / c.measured)
        return np.concatenate(out)


def _diagnose(names, J, messages):
    """Identifiability flags (n,), normalised singular values (n,) and messages appended."""
    n = J.shape[1]
    norms = np.linalg.norm(J, axis=0)
    ok = np.ones(n, dtype=bool)
    top = max(norms.max(initial=0.0), 1e-300)
    for j in range(n):
        if norms[j] < ZERO_RTOL * top:
            ok[j] = False
            messages.append(f"`{names[j]}` is not identifiable: the fitted frequencies do not depend on it "
                            f"(sensitivity {norms[j] / top:.2g} of the largest)")
    Jn = J / np.maximum(norms, 1e-300)
    cos = Jn.T @ Jn
    for i in range(n):
        for j in range(i + 1, n):
            if ok[i] and ok[j] and abs(cos[i, j]) > CORRELATION:
                ok[i] = ok[j] = False
                messages.append(f"`{names[i]}` and `{names[j]}` are not separately identifiable: their "
                                f"effects on the frequencies are collinear (|cos| = {abs(cos[i, j]):.4f})")
    live = np.where(norms >= ZERO_RTOL * top)[0]
    s = np.zeros(n)
    if live.size:
        _, sv, Vt = np.linalg.svd(Jn[:, live], full_matrices=True)
        s[:sv.size] = sv / sv[0]
        for k in range(live.size):
            if k >= sv.size or sv[k] < SINGULAR_RTOL * sv[0]:
                involved = live[np.abs(Vt[k]) > 0.3]
                if ok[involved].any():
                    ok[involved] = False
                    messages.append("parameters " + ", ".join(f"`{names[i]}`" for i in involved)
                                    + " are not identifiable together: a combination of them leaves the "
                                    "fitted frequencies unchanged")
    return ok, s


def identify(model_file, names, initial, configurations, lower=None, upper=None, base=None,
             diff_step=1e-4, max_evaluations=200):
    """Fit model parameters to measured frequencies.

    Parameters
    ----------
    model_file : str or Path
    names : sequence of str
        Model parameters to fit (positive quantities).
    initial : array_like, shape (n,)
    configurations : sequence of Configuration
    lower, upper : array_like, shape (n,), optional
        Bounds (default: initial / 100 and initial * 100).
    base : dict, optional
        Model parameters common to every configuration.
    diff_step : float
        Relative finite-difference step on ``ln p``.
    max_evaluations : int

    Returns
    -------
    IdentificationResult
    """
    start = time.perf_counter()
    names = list(names)
    p0 = np.asarray(initial, dtype=float)
    lo = p0 / 100 if lower is None else np.asarray(lower, dtype=float)
    hi = p0 * 100 if upper is None else np.asarray(upper, dtype=float)
    n = len(names)
    for label, arr in (("initial", p0), ("lower", lo), ("upper", hi)):
        if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise SimError(f"identification `{label}` must be {n} positive numbers, got {arr.tolist()}")
    if np.any(lo >= hi) or np.any(p0 < lo) or np.any(p0 > hi):
        raise SimError("identification bounds must satisfy lower < upper and lower <= initial <= upper")
    if not any(c.fit for c in configurations):
        raise SimError("identification needs at least one configuration to fit")
    problem = Problem(model_file, base or {}, names, configurations)
    m = sum(c.measured.size for c in configurations if c.fit)
    messages = []
    if m < n:
        messages.append(f"{n} parameters from {m} frequencies: the problem is under-determined")
    fit = scipy.optimize.least_squares(problem.residuals, np.log(p0), bounds=(np.log(lo), np.log(hi)),
                                       method="trf", diff_step=diff_step, x_scale=1.0, max_nfev=max_evaluations)
    theta = fit.x
    values = np.exp(theta)
    J = fit.jac
    dof = m - n
    sigma2 = 2 * fit.cost / dof if dof > 0 else np.nan
    cov = sigma2 * np.linalg.pinv(J.T @ J) if dof > 0 else np.full((n, n), np.nan)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cov / np.outer(std, std)
    identifiable, sv = _diagnose(names, J, messages)
    for j in np.where(identifiable & (std > POORLY_DETERMINED))[0]:
        messages.append(f"`{names[j]}` is poorly determined by these data (relative standard deviation "
                        f"{100 * std[j]:.0f} %)")
    active = (np.abs(theta - np.log(lo)) < 1e-6) | (np.abs(theta - np.log(hi)) < 1e-6)
    for j in np.where(active)[0]:
        messages.append(f"`{names[j]}` stopped at a bound ({values[j]:.4g})")
    results = []
    for c in configurations:
        f, index, macs = problem.evaluate(c, values)
        results.append(ConfigurationResult(c.name, c.measured, f, (f - c.measured) / c.measured, index, macs, c.fit))
    # Sensitivities in Hz: the Jacobian rows are relative residuals times sqrt(weight).
    scale = np.concatenate([c.measured / np.sqrt(c.weight) for c in configurations if c.fit])
    fitted_errors = np.concatenate([res.errors for res in results if res.fit])
    return IdentificationResult(
        names=names, initial=p0, values=values, lower=lo, upper=hi, cost=float(fit.cost),
        rms_error=float(np.sqrt(np.mean(fitted_errors**2))), covariance=cov, std=std, correlation=corr,
        sensitivity=J * scale[:, None], singular_values=sv, identifiable=identifiable, messages=messages,
        configurations=results, evaluations=problem.evaluations, wall_time_s=time.perf_counter() - start,
        success=bool(fit.success))
