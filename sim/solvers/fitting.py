r"""Least-squares fit of model parameters to measured natural frequencies (identification).

Named parameters ``p`` of a model file (joint stiffnesses, masses, ...) are fitted so that the
computed frequencies match measured ones at one or more configurations:

    min_theta  1/2 sum_r w_r ((f_r(p) - f_r^meas) / f_r^meas)^2,      theta = ln p,

by ``scipy.optimize.least_squares`` (trust-region reflective, bounds on ``p``).  Log-parameters
make the problem scale-free and keep ``p > 0``.  Each configuration is the model file built with
its own parameter overrides (e.g. the Surgiscope's ``x, y, z``) and, optionally, an end-effector
``pose`` reached by :func:`sim.model.assembly.solve_pose`.  Measured modes are paired with computed
ones by MAC when measured shapes are given (:mod:`sim.solvers.tracking`), else by explicit model mode
numbers, else by sorted order at the first configuration (the *reference*; repeated model
frequencies may be merged first) and, at the others, by **tracking**: measured mode ``i`` is
taken to be the same mode as the reference's measured mode ``i``, and the computed mode that
continues the reference's along a straight path of the configuration parameters (and poses)
between them, followed by mass-weighted MAC over ``PATH_STEPS`` steps, halved where a track's
MAC drops (:meth:`Problem.track`), is paired with it; a measured mode that the reference
merged from a repeated root continues every member of that root, which split on the way, and
is paired with the member nearest to it in frequency.  Sorted order pairs the wrong
modes wherever modes of different families cross between configurations; the tracking does
not, and reports where the two pairings differ.  Tracked pairings are frozen during a least-
squares run (a pairing that switches between neighbouring parameter values would make the
objective jump) and tracked again at its solution; the fit is repeated, at most
``PAIRING_ROUNDS`` times, until they no longer change.

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

from sim.errors import SimError

ZERO_RTOL = 1e-3
CORRELATION = 0.99
SINGULAR_RTOL = 1e-3
POORLY_DETERMINED = 0.25   # relative standard deviation above which a fitted value is reported as weak
MERGE_RTOL = 1e-4      # model frequencies closer than this (relative) are one repeated mode
PATH_STEPS = 10        # steps of the path along which modes are tracked between configurations
START = 1e-3           # where the path starts (a fraction of it): off a symmetric reference's repeated roots
MAC_REFINE = 0.97      # a step whose tracked MAC falls below this is halved ...
MIN_STEP = 1.0 / 512   # ... down to this
PAIRING_ROUNDS = 3     # least-squares runs with the tracked pairings frozen, at most
UNSEEN = 0.01          # a paired mode excited or seen below this fraction of the best is warned about
NEAR_RTOL = 0.01       # computed modes closer than this (relative) are near-degenerate for pairing by order
WEAK_TRACK = 0.6       # a tracked pair whose MAC drops below this along the path is reported


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
        Measured shapes at ``shape_outputs`` (see :mod:`sim.solvers.harmonic` output strings): pairing by MAC.
    shape_outputs : sequence of str, optional
    fit : bool
        Used in the fit (True) or only predicted (False).
    weight : float
    pairing : {"order", "tracked"}
        Without ``modes`` or ``shapes``: by sorted order, or tracked from the reference (the
        first configuration) by MAC along the path between them.
    excitation, sensors : tuple of str
        The test's inputs (:mod:`sim.solvers.harmonic` input strings: the hammer's point and
        direction) and response sensors (output strings): what it could see of each mode.
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
    pairing: str = "order"
    excitation: tuple = ()
    sensors: tuple = ()


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
        MAC of the pairs when shapes were measured; for tracked pairs, the lowest MAC of each
        track between consecutive steps of the path.
    fit : bool
    ordered : ndarray of int, shape (k,) or None
        For tracked pairs: the mode numbers sorted order would have paired.
    excitability, visibility : ndarray, shape (m,) or None
        Of the lowest ``m`` computed modes, relative to the best (:func:`observability`).
    families : ndarray of int, shape (k, g) or None
        For tracked pairs: the 1-based computed modes each measured mode's family ends on (more
        than one where it continues a repeated root of the reference), padded with 0.
    """

    name: str
    measured: np.ndarray
    computed: np.ndarray
    errors: np.ndarray
    modes: np.ndarray
    mac: object
    fit: bool
    ordered: object = None
    excitability: object = None
    visibility: object = None
    families: object = None


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
    starts_parameters : ndarray, shape (s, n)
        The minimum each start reached (row 0: from ``initial``).
    starts_cost : ndarray, shape (s,)
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
    starts_parameters: np.ndarray = None
    starts_cost: np.ndarray = None


def _distinct(f, rtol=MERGE_RTOL):
    """Indices (into ascending ``f``) of the first of each group of repeated frequencies."""
    keep = [0] if f.size else []
    for i in range(1, f.size):
        if f[i] - f[keep[-1]] > rtol * max(f[i], 1e-300):
            keep.append(i)
    return np.array(keep, dtype=int)


def _repeated(f, rtol=MERGE_RTOL):
    """The groups of repeated frequencies of ascending ``f`` (index arrays), keyed by their
    first member (the one :func:`_distinct` keeps)."""
    first = _distinct(f, rtol)
    return {int(a): np.arange(a, b) for a, b in zip(first, np.append(first[1:], f.size))}


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

    def __init__(self, model_file, base, names, configurations, prior=None, prior_weight=None):
        from sim.model.loader import parameters
        known = parameters(model_file)
        for name in names:
            if name not in known:
                raise SimError(f"{model_file}: identification parameter `{name}` is not a model parameter "
                               f"(parameters: {', '.join(known)})")
        self.model_file, self.base, self.names = model_file, dict(base), list(names)
        self.configurations = list(configurations)
        self.evaluations = 0
        self.frozen = {}      # configuration name -> computed mode indices (tracked pairing) for a fit round
        # Tikhonov terms sqrt(w_j) ln(p_j / prior_j): none where the weight is zero.
        self.prior = None if prior is None else np.log(np.asarray(prior, dtype=float))
        self.prior_weight = None if prior is None else np.sqrt(np.asarray(prior_weight, dtype=float))
        self.defaults = {**known, **self.base}
        reference = self.configurations[0]
        for c in self.configurations[1:]:
            if self._tracked(c):
                for key in set(reference.parameters) | set(c.parameters):
                    a, b = self._ends(reference, c, key)
                    if a != b and not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
                        raise SimError(f"identification {c.name}: cannot track modes from {reference.name}: "
                                       f"parameter `{key}` ({a!r} -> {b!r}) is not a number in both")
                if (reference.pose is None) != (c.pose is None):
                    raise SimError(f"identification {c.name}: cannot track modes from {reference.name}: give a "
                                   f"pose in both or in neither")

    def _tracked(self, c):
        return c.pairing == "tracked" and c.modes is None and c.shapes is None and c is not self.configurations[0]

    def _modes(self, parameters, pose, values, count):
        """The model with the configuration ``parameters``, at ``pose``: ``(model, q, modes)``."""
        from sim.model.assembly import solve_pose
        from sim.model.loader import load_model
        from sim.solvers.modal import modes

        model = load_model(self.model_file, {**self.base, **parameters, **dict(zip(self.names, map(float, values)))})
        q = model.q_home if pose is None else solve_pose(model, pose)
        # The elastic modes of the structure; free motions (a strut spinning between spherical
        # joints) are found and set apart by sim.solvers.modal, not mistaken for zero frequencies.
        self.evaluations += 1
        return model, q, modes(model, q, count=count, energies=False)

    def _ends(self, reference, c, key):
        """Values of parameter ``key`` at the reference and at ``c`` (the defaults where unset)."""
        return reference.parameters.get(key, self.defaults.get(key)), c.parameters.get(key, self.defaults.get(key))

    @staticmethod
    def _by_order(c, f, k):
        """Indices into ascending ``f`` paired with ``k`` measured modes by sorted order."""
        index = _distinct(f) if c.merge_repeated else np.arange(f.size)
        return index[:k]

    def track(self, c, values):
        """Tracked pairing of configuration ``c`` from the reference: computed mode indices (k,),
        the lowest MAC of each track between consecutive steps (k,), the indices sorted order
        gives (k,), and for each measured mode the indices its family ends on (k arrays).

        The path starts a little off the reference (``s = START``): at a symmetric reference
        a repeated root has arbitrary shapes in its plane, which the path's direction splits
        into definite ones.  Every member of a repeated root the reference merged is tracked:
        the family of a merged measured mode ends on as many modes at ``c``, and without
        measured shapes the test cannot tell which of them it saw; it is paired with the one
        nearest to it in frequency.  A step is halved while a track's MAC is below
        ``MAC_REFINE``, down to ``MIN_STEP``.
        """
        from sim.model.dynamics import mass_matrix
        from sim.solvers.tracking import mac, pair_modes

        ref = self.configurations[0]
        k = c.measured.size
        count = 3 * max(k, ref.measured.size) + 6
        cache = {}

        def at(s):
            if s not in cache:
                parameters = {key: (1 - s) * a + s * b for key in set(ref.parameters) | set(c.parameters)
                              for a, b in [self._ends(ref, c, key)]}
                pose = None if c.pose is None else (1 - s) * np.asarray(ref.pose, float) + s * np.asarray(c.pose, float)
                model, q, result = self._modes(parameters, pose, values, count)
                cache[s] = (result.shapes, mass_matrix(model, q), result.frequencies_hz)
            return cache[s]

        f_ref = at(0.0)[2]
        start = self._by_order(ref, f_ref, k)
        if start.size < k:
            raise SimError(f"identification {c.name}: {ref.name} has fewer modes than {c.name} measures ({k})")
        # The members of each measured mode's (repeated) root; ``owner``: whose each track is.
        roots = _repeated(f_ref) if ref.merge_repeated else {}
        groups = [roots.get(int(i), np.array([i])) for i in start]
        columns = np.concatenate(groups)
        owner = np.repeat(np.arange(k), [g.size for g in groups])
        worst = np.ones(columns.size)
        a, steps = START, list(np.linspace(0.0, 1.0, PATH_STEPS + 1)[1:])
        while steps:
            b = steps[0]
            shapes_b, M_b, f_b = at(b)
            if f_b.size != at(a)[2].size:
                raise SimError(f"identification {c.name}: the number of elastic modes changes between {ref.name} "
                               f"and {c.name}; pair with `modes`")
            table = mac(at(a)[0][:, columns], shapes_b, M_b)
            new = np.array([j for _, j in pair_modes(table)])
            quality = table[np.arange(columns.size), new]
            if quality.min() < MAC_REFINE and b - a > MIN_STEP:
                steps.insert(0, 0.5 * (a + b))
                continue
            columns, worst, a = new, np.minimum(worst, quality), steps.pop(0)
        f_c = at(1.0)[2]
        chosen = np.array([np.flatnonzero(owner == i)[np.argmin(np.abs(f_c[columns[owner == i]] - c.measured[i]))]
                           for i in range(k)])
        families = [np.sort(columns[owner == i]) for i in range(k)]
        return columns[chosen], worst[chosen], self._by_order(c, f_c, k), families

    def evaluate(self, configuration, values):
        """Paired computed frequencies (k,), mode numbers (k,) and MAC (k,) or None."""
        c = configuration
        k = c.measured.size
        if self._tracked(c):
            index = self.frozen.get(c.name)
            macs = None
            if index is None:
                index, macs, _, _ = self.track(c, values)
            count = int(index.max()) + 1
            f = self._modes(c.parameters, c.pose, values, count)[2].frequencies_hz
            if f.size < count:
                raise SimError(f"identification {c.name}: the model has fewer modes than measured ({k})")
            return f[index], index + 1, macs
        need = k if c.modes is None else max(c.modes)
        if c.merge_repeated or c.shapes is not None:
            need = 3 * need + 6
        model, q, result = self._modes(c.parameters, c.pose, values, need)
        f = result.frequencies_hz
        if c.shapes is not None:
            from sim.solvers.harmonic import _rows
            from sim.solvers.tracking import mac, pair_modes
            rows, _ = _rows(model, q, c.shape_outputs, "output")
            table = mac(np.asarray(c.shapes), rows @ result.shapes)
            pairs = pair_modes(table)
            index = np.array([j for _, j in pairs])
            return f[index], index + 1, np.array([table[i, j] for i, j in pairs])
        index = np.asarray(c.modes, dtype=int) - 1 if c.modes is not None else self._by_order(c, f, k)
        if index.size < k or index.max() >= f.size:
            raise SimError(f"identification {c.name}: the model has fewer modes than measured ({k})")
        return f[index], index + 1, None

    def observability(self, c, values, count):
        """Excitability and visibility (each (m,), relative to the best of the ``m <= count``
        lowest computed modes) of configuration ``c``'s modes for its test, and those modes'
        frequencies [Hz]: the largest modal force ``|b^T phi|`` over the excitations ``b``
        (the generalised force of a unit input, :func:`sim.solvers.harmonic._rows`) and the
        sensors' response norm ``|C phi|``, for the mass-normalised shapes ``phi``; None where
        the test declares no excitation or sensors."""
        from sim.solvers.harmonic import _rows

        model, q, result = self._modes(c.parameters, c.pose, values, count)

        def relative(specs, what, combine):
            if not specs:
                return None
            rows = _rows(model, q, specs, what)[0]
            amount = combine(np.abs(rows @ result.shapes))
            return amount / amount.max() if amount.max() > 0 else amount
        return (relative(c.excitation, "input", lambda a: a.max(axis=0)),
                relative(c.sensors, "output", lambda a: np.sqrt((a**2).sum(axis=0))), result.frequencies_hz)

    def residuals(self, theta, which=None):
        """Weighted relative residuals of the fitted (or ``which``) configurations."""
        values = np.exp(theta)
        out = []
        for c in self.configurations:
            if (c.fit if which is None else c.name in which):
                f, _, _ = self.evaluate(c, values)
                out.append(np.sqrt(c.weight) * (f - c.measured) / c.measured)
        if self.prior is not None and which is None:
            out.append(self.prior_weight * (theta - self.prior))
        return np.concatenate(out)


def _observation_notes(c, index, excitability, visibility, f):
    """Warnings on configuration ``c``'s paired computed modes (0-based ``index``): those its
    test hardly excites or sees (below ``UNSEEN`` of the best), and those with a computed
    neighbour within ``NEAR_RTOL`` that pairing by order cannot tell apart."""
    notes = []
    for name, amount, how in (("excitation", excitability, "excites"), ("sensors", visibility, "sees")):
        if amount is None:
            continue
        specs = ", ".join(getattr(c, name))
        for i in index:
            if i < amount.size and amount[i] < UNSEEN:
                notes.append(f"{c.name}: the test ({specs}) hardly {how} computed mode {i + 1} ({f[i]:.4g} Hz, "
                             f"{100 * amount[i]:.2g} % of the best): check that the measured mode paired with it "
                             f"is that one")
    if not c.merge_repeated and c.modes is None and c.shapes is None and c.pairing == "order":
        for i in index:
            others = np.delete(np.arange(f.size), i)
            near = others[np.abs(f[others] - f[i]) < NEAR_RTOL * f[i]]
            if near.size:
                notes.append(f"{c.name}: computed mode {i + 1} ({f[i]:.4g} Hz) lies within {100 * NEAR_RTOL:g} % of "
                             f"mode {near[0] + 1} ({f[near[0]]:.4g} Hz): sorted order cannot tell them apart; "
                             f"give `merge_repeated`, `modes` or measured `shapes`")
    return notes


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


def _fit(problem, theta, lo, hi, diff_step, max_evaluations):
    """Least squares from ``theta`` (ln p) with the tracked pairings frozen for each run and
    re-tracked at its solution, until they no longer change (at most ``PAIRING_ROUNDS`` runs):
    ``(fit, stable)``, ``fit`` scipy's result of the last run."""
    import scipy.optimize
    tracked = [c for c in problem.configurations if problem._tracked(c) and c.fit]
    stable = False
    pairing = {c.name: problem.track(c, np.exp(theta))[0] for c in tracked}
    for _ in range(PAIRING_ROUNDS):
        problem.frozen = pairing
        fit = scipy.optimize.least_squares(problem.residuals, theta, bounds=(lo, hi), method="trf",
                                           diff_step=diff_step, x_scale=1.0, max_nfev=max_evaluations)
        theta = fit.x
        # The tracking at the solution: the check, and the next run's frozen pairing.
        pairing = {c.name: problem.track(c, np.exp(theta))[0] for c in tracked}
        if all(np.array_equal(pairing[c.name], problem.frozen[c.name]) for c in tracked):
            stable = True
            break
    problem.frozen = {}
    return fit, stable


def fit_start(problem, theta, lo, hi, diff_step, max_evaluations):
    """One start of a multi-start search (a sweep case: module level, picklable): ``(ln p,
    cost, pairings stable, evaluations)``."""
    fit, stable = _fit(problem, np.asarray(theta, dtype=float), lo, hi, diff_step, max_evaluations)
    return fit.x, float(fit.cost), stable, problem.evaluations


def start_points(p0, lo, hi, starts, seed=0):
    """``starts`` starting points (starts, n) in ln p: ``p0`` first, the others a scrambled
    Latin hypercube of the box ``[lo, hi]`` in ln p (a fixed seed: the same starts every run)."""
    from scipy.stats import qmc

    points = [np.log(p0)]
    if starts > 1:
        sample = qmc.LatinHypercube(d=len(p0), seed=seed).random(starts - 1)
        points += list(np.log(lo) + sample * (np.log(hi) - np.log(lo)))
    return np.array(points)


@dataclass(frozen=True)
class Search:
    """How :func:`identify` searches.

    Attributes
    ----------
    diff_step : float
        Relative finite-difference step on ``ln p``.
    max_evaluations : int
        Per start.
    prior, prior_weight : array_like, shape (n,), optional
        Tikhonov regularisation toward ``prior`` (e.g. static-test stiffnesses): residuals
        ``sqrt(w_j) ln(p_j / prior_j)`` join the relative frequency errors (weight 1: a
        parameter a factor e off its prior costs as much as a 100 % frequency error; 0: none).
    starts : int
        Local least-squares runs: from ``initial`` and from ``starts - 1`` points of a Latin
        hypercube of the bounds in ``ln p``; the best is kept and the spread of the minima
        reported (``starts_parameters``, ``starts_cost``).
    scheduler, workers
        Where the starts run (:func:`sim.solvers.cases.run_cases`: a local process pool by
        default, or a Dask scheduler address).
    """

    diff_step: float = 1e-4
    max_evaluations: int = 200
    prior: object = None
    prior_weight: object = None
    starts: int = 1
    scheduler: str = None
    workers: int = None


def identify(model_file, names, initial, configurations, bounds=(None, None), base=None, search=None):
    """Fit model parameters to measured frequencies.

    Parameters
    ----------
    model_file : str or Path
    names : sequence of str
        Model parameters to fit (positive quantities).
    initial : array_like, shape (n,)
    configurations : sequence of Configuration
    bounds : (lower, upper), each array_like, shape (n,), or None
        Bounds (default: initial / 100 and initial * 100).
    base : dict, optional
        Model parameters common to every configuration.
    search : Search, optional
        Finite-difference step, evaluations, prior, starts and where they run.

    Returns
    -------
    IdentificationResult
    """
    import scipy.optimize
    search = Search() if search is None else search
    lower, upper = bounds
    diff_step, max_evaluations, starts = search.diff_step, search.max_evaluations, search.starts
    prior, prior_weight = search.prior, search.prior_weight
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
    if prior is not None:
        prior = np.asarray(prior, dtype=float)
        prior_weight = np.ones(n) if prior_weight is None else np.asarray(prior_weight, dtype=float)
        if prior.shape != (n,) or not np.all(np.isfinite(prior)) or np.any(prior <= 0):
            raise SimError(f"identification `prior` must be {n} positive numbers, got {prior.tolist()}")
        if prior_weight.shape != (n,) or not np.all(np.isfinite(prior_weight)) or np.any(prior_weight < 0):
            raise SimError(f"identification `prior_weight` must be {n} numbers >= 0, got {prior_weight.tolist()}")
    problem = Problem(model_file, base or {}, names, configurations, prior, prior_weight)
    m = sum(c.measured.size for c in configurations if c.fit) + (0 if prior is None else int(np.sum(prior_weight > 0)))
    messages = []
    if m < n:
        messages.append(f"{n} parameters from {m} frequencies: the problem is under-determined")
    bounds = np.log(lo), np.log(hi)
    points = start_points(p0, lo, hi, int(starts))
    if len(points) == 1:
        fit, stable = _fit(problem, points[0], *bounds, diff_step, max_evaluations)
        runs = [(fit.x, float(fit.cost), stable, problem.evaluations)]
    else:
        from sim.solvers.cases import run_cases
        cases = [(problem, theta, *bounds, diff_step, max_evaluations) for theta in points]
        outcomes = run_cases(fit_start, cases, scheduler=search.scheduler, workers=search.workers)
        failed = [r.error for r in outcomes if not r.ok]
        if len(failed) == len(outcomes):
            raise SimError(f"identification: every start failed; the first: {failed[0]}")
        if failed:
            messages.append(f"{len(failed)} of {len(outcomes)} starts failed; the first: {failed[0]}")
        runs = [r.value for r in outcomes if r.ok]
        problem.evaluations = sum(r[3] for r in runs)
        best = min(range(len(runs)), key=lambda i: runs[i][1])
        costs = np.array([r[1] for r in runs])
        near = int(np.sum(costs <= 1.01 * costs.min() + 1e-12))
        messages.append(f"{len(runs)} starts: best cost {costs.min():.3g} ({near} within 1 % of it), "
                        f"median {np.median(costs):.3g}, worst {costs.max():.3g}")
        # The Jacobian at the best minimum, for the statistics below.
        fit = scipy.optimize.least_squares(problem.residuals, runs[best][0], bounds=bounds, method="trf",
                                           diff_step=diff_step, x_scale=1.0, max_nfev=1)
        fit.x, fit.cost = runs[best][0], runs[best][1]
        stable = runs[best][2]
    if not stable:
        messages.append(f"the tracked pairings still changed after {PAIRING_ROUNDS} fits")
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
        ordered = None
        if problem._tracked(c):
            # One tracking gives the pairing, its MAC and sorted order's pairing.
            columns, macs, ordered, families = problem.track(c, values)
            problem.frozen = {c.name: columns}
            f, index, _ = problem.evaluate(c, values)
            problem.frozen = {}
            ordered = ordered + 1
        else:
            f, index, macs = problem.evaluate(c, values)
            families = None
        if ordered is not None:
            if not np.array_equal(ordered, index):
                crossed = ", ".join(f"{i + 1} -> {m}" for i, (m, o) in enumerate(zip(index, ordered)) if m != o)
                messages.append(f"{c.name}: tracked from {configurations[0].name}, measured modes pair with "
                                f"computed modes {index.tolist()}, not {ordered.tolist()} by sorted order "
                                f"(measured -> computed: {crossed})")
            split = [i for i, g in enumerate(families) if g.size > 1]
            if split:
                listed = ", ".join(f"{i + 1} -> {index[i]} of {(families[i] + 1).tolist()}" for i in split)
                messages.append(f"{c.name}: measured modes {', '.join(str(i + 1) for i in split)} continue repeated "
                                f"roots of {configurations[0].name}, which split on the way; each is paired with the "
                                f"member nearest to it in frequency (measured -> computed: {listed})")
            for i in np.flatnonzero(macs < WEAK_TRACK):
                messages.append(f"{c.name}: measured mode {i + 1} tracked with MAC down to {macs[i]:.2f} "
                                f"between steps of the path: its family changes character; check the pairing")
        *seen, computed = problem.observability(c, values, int(index.max()) + 3)
        messages += _observation_notes(c, index - 1, *seen, computed)
        if families is not None:
            # 1-based, one row per measured mode, padded with 0.
            width = max(g.size for g in families)
            families = np.array([np.pad(g + 1, (0, width - g.size)) for g in families])
        results.append(ConfigurationResult(c.name, c.measured, f, (f - c.measured) / c.measured, index, macs, c.fit,
                                           ordered, *seen, families))
    # Sensitivities in Hz: the Jacobian rows are relative residuals times sqrt(weight).
    scale = np.concatenate([c.measured / np.sqrt(c.weight) for c in configurations if c.fit])
    J = J[:scale.size]       # the prior's rows are no frequencies
    fitted_errors = np.concatenate([res.errors for res in results if res.fit])
    return IdentificationResult(
        names=names, initial=p0, values=values, lower=lo, upper=hi, cost=float(fit.cost),
        rms_error=float(np.sqrt(np.mean(fitted_errors**2))), covariance=cov, std=std, correlation=corr,
        sensitivity=J * scale[:, None], singular_values=sv, identifiable=identifiable, messages=messages,
        configurations=results, evaluations=problem.evaluations, wall_time_s=time.perf_counter() - start,
        success=bool(fit.success), starts_parameters=np.exp(np.array([r[0] for r in runs])),
        starts_cost=np.array([r[1] for r in runs]))
