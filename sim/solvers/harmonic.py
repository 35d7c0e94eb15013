r"""Harmonic response: frequency response functions at a configuration.

On the constrained, linearised system (:mod:`sim.solvers.damping`), for inputs ``f = B u`` and outputs
``y = C_out v``-displacements,

    H(omega) = C_out N (-omega^2 M_n + i omega C_n + K_n (1 + i eta))^-1 N^T B     (n_out, n_in).

Inputs (strings): ``force:<marker>:<x|y|z>`` (a force along a world axis at a marker, N),
``torque:<marker>:<x|y|z>`` (N m), ``actuator:<name>`` (force or torque on the actuator's
joint coordinate).  Outputs: ``displacement:<marker>:<x|y|z>`` (m), ``rotation:<marker>:<x|y|z>``
(small rotation about a world axis, rad), ``pose:<name>`` (an end-effector coordinate),
``actuator:<name>`` (joint coordinate).  A force and a displacement at the same marker and axis
are collocated: ``H_ij = H_ji`` (Maxwell–Betti reciprocity).

Methods: ``modal`` -- superposition over *all* undamped modes (exact when damping is
proportional: structural, Rayleigh, modal ratios), ``state`` -- superposition over all complex
modes of the state-space form (exact for any damping), ``direct`` -- one complex solve per
frequency (reference).  ``auto`` picks ``modal`` when the damping is proportional, else ``state``.
"""
from dataclasses import dataclass

import numpy as np

from sim.solvers import damping as dmp
from sim.errors import SimError

AXES = {"x": 0, "y": 1, "z": 2}
FREE_RTOL = 1e-6   # natural frequencies below this fraction of the highest are free motions
METHODS = ("auto", "modal", "state", "direct")


@dataclass(frozen=True)
class FRF:
    """Frequency response functions.

    Attributes
    ----------
    frequencies_hz : ndarray, shape (n_f,)
    H : ndarray, complex, shape (n_f, n_out, n_in)
    inputs, outputs : tuple of str
    input_units, output_units : tuple of str
    natural_hz : ndarray, shape (k,)
        Undamped natural frequencies of the constrained system.
    damped_hz : ndarray, shape (k,)
        Damped natural frequencies ``|Im lambda| / 2 pi`` (complex modes).
    ratios : ndarray, shape (k,)
        ``-Re lambda / |lambda|``.
    method : str
    """

    frequencies_hz: np.ndarray
    H: np.ndarray
    inputs: tuple
    outputs: tuple
    input_units: tuple
    output_units: tuple
    natural_hz: np.ndarray
    damped_hz: np.ndarray
    ratios: np.ndarray
    method: str

    @property
    def units(self):
        """Units of ``H[:, i, j]`` as ``"out/in"`` (n_out, n_in) nested tuples."""
        return tuple(tuple(f"{o}/{i}" for i in self.input_units) for o in self.output_units)


def _marker(model, name, spec):
    for i, m in enumerate(model.markers):
        if m.name == name:
            return i
    raise SimError(f"FRF `{spec}`: unknown marker `{name}`")


def _axis(text, spec):
    if text not in AXES:
        raise SimError(f"FRF `{spec}`: axis must be x, y or z, got `{text}`")
    return AXES[text]


def _actuator(model, name, spec):
    if name not in model.actuator_names:
        raise SimError(f"FRF `{spec}`: unknown actuator `{name}` (actuators: "
                       f"{', '.join(model.actuator_names) or 'none'})")
    return list(model.actuator_names).index(name)


def _rows(model, q, specs, what, locked=True):
    """Rows (len(specs), n_v) mapping velocities to the named quantities, and their units."""
    from sim.model.constraints import actuator_values
    from sim.model.kinematics import markers, pose_jacobian

    ms = markers(model, q)
    rows, units = [], []
    for spec in specs:
        parts = spec.split(":")
        kind = parts[0]
        allowed = {"input": ("force", "torque", "actuator"),
                   "output": ("displacement", "rotation", "pose", "actuator")}[what]
        if kind not in allowed:
            raise SimError(f"FRF {what} `{spec}`: kind must be one of {', '.join(allowed)}")
        if kind in ("force", "torque", "displacement", "rotation"):
            if len(parts) != 3:
                raise SimError(f"FRF {what} `{spec}`: expected `{kind}:<marker>:<x|y|z>`")
            m, k = _marker(model, parts[1], spec), _axis(parts[2], spec)
            translational = kind in ("force", "displacement")
            rows.append((ms.Jp if translational else ms.Jw)[m, k])
            units.append({"force": "N", "torque": "N m", "displacement": "m", "rotation": "rad"}[kind])
        elif kind == "actuator":
            if len(parts) != 2:
                raise SimError(f"FRF {what} `{spec}`: expected `actuator:<name>`")
            a = _actuator(model, parts[1], spec)
            if locked and model.actuators[a].stiffness is None:
                # A locked rigid actuator is a constraint: it neither moves nor takes a load.
                raise SimError(f"FRF {what} `{spec}`: actuator `{parts[1]}` is rigid and locked; only "
                               f"compliant actuators (or free ones, locked = false) can be inputs or outputs")
            rows.append(actuator_values(model, q, ms)[1][a])
            angle = model.actuators[a].kind == "angle"
            units.append(("N m" if angle else "N") if what == "input" else ("rad" if angle else "m"))
        else:
            if len(parts) != 2 or parts[1] not in model.pose_names:
                raise SimError(f"FRF output `{spec}`: expected `pose:<name>` with a name from "
                               f"{' '.join(model.pose_names)}")
            i = list(model.pose_names).index(parts[1])
            rows.append(pose_jacobian(model, q, ms)[1][i])
            units.append(model.pose_units[i])
    return np.array(rows).reshape(len(specs), model.n_v), tuple(units)


def frf_reduced(red, B, Cout, frequencies_hz, damping, method="auto"):
    """FRFs of a reduced system.

    Parameters
    ----------
    red : sim.solvers.damping.Reduced
    B : ndarray, shape (n, n_in)
        Reduced input map ``N^T B``.
    Cout : ndarray, shape (n_out, n)
        Reduced output map ``C_out N``.
    frequencies_hz : ndarray, shape (n_f,)
    damping : sim.solvers.damping.Damping
    method : {"auto", "modal", "state", "direct"}

    Returns
    -------
    H : ndarray, complex, shape (n_f, n_out, n_in)
    omega : ndarray, shape (n,)
        Undamped natural frequencies [rad/s].
    cm : sim.solvers.damping.ComplexModes
    method : str
        The method used.
    """
    import scipy.linalg
    if method not in METHODS:
        raise SimError(f"FRF method must be one of {', '.join(METHODS)}, got `{method}`")
    w = 2 * np.pi * np.asarray(frequencies_hz, dtype=float)
    omega, X = dmp.undamped_modes(red)
    C = dmp.viscous_matrix(red, damping, omega, X)
    lumped_proportional = dmp.is_proportional(red.M, C, red.K)
    if method == "auto":
        method = "modal" if lumped_proportional else "state"
    if method == "modal" and not lumped_proportional:
        raise SimError("FRF method `modal` needs proportional damping (the lumped dampers are not); "
                       "use `state` or `direct`")
    if method == "modal":
        # Undamped modes diagonalise C: c_r = X_r^T C X_r, and each mode's eigenvalues are the
        # roots of lambda^2 + c_r lambda + omega_r^2 (1 + i eta) = 0.
        c = np.einsum("ir,ij,jr->r", X, C, X)
        root = np.sqrt(c.astype(complex) ** 2 - 4 * omega**2 * (1 + 1j * damping.eta))
        lam = np.where(((-c + root) / 2).imag >= ((-c - root) / 2).imag, (-c + root) / 2, (-c - root) / 2)
        cm = dmp.from_eigenpairs(lam, X)
        denom = omega**2 * (1 + 1j * damping.eta) - w[:, None] ** 2 + 1j * w[:, None] * c
        L, R = Cout @ X, X.T @ B                     # (n_out, n), (n, n_in)
        H = (L[None] * (1.0 / denom)[:, None, :]) @ R
    elif method == "state":
        A, Bs = dmp.state_space(red.M, C, red.K, damping.eta)
        lam, V = scipy.linalg.eig(A)
        n = red.M.shape[0]
        cm = dmp.from_eigenpairs(lam, V[:n])
        L = Cout @ V[:n]                              # (n_out, 2n)
        R = np.linalg.solve(V, Bs @ B)                # (2n, n_in)
        H = (L[None] * (1.0 / (1j * w[:, None] - lam[None, :]))[:, None, :]) @ R
    else:
        cm = dmp.complex_modes(red.M, C, red.K, damping.eta)
        Kc = red.K * (1 + 1j * damping.eta)
        Z = -w[:, None, None] ** 2 * red.M + 1j * w[:, None, None] * C + Kc
        H = Cout @ np.linalg.solve(Z, np.broadcast_to(B, (w.size,) + B.shape))
    return H, omega, cm, method


def frf(model, q, inputs, outputs, frequencies_hz, damping=None, method="auto", locked=True, servo=None):
    """FRFs between named inputs and outputs at configuration ``q``.

    Parameters
    ----------
    model : Model
    q : ndarray, shape (n_q,)
    inputs, outputs : sequence of str
        See the module docstring.
    frequencies_hz : array_like, shape (n_f,)
    damping : sim.solvers.damping.Damping, optional
        Default: undamped (apart from the model's lumped dampers).
    method : {"auto", "modal", "state", "direct"}
    locked : bool
        Actuators locked (default).
    servo : sim.solvers.closed_loop.Servo, optional
        The robot closed by these servo drives instead (motors, rotors and transmissions,
        :mod:`sim.solvers.closed_loop`; inputs and outputs of :func:`sim.solvers.closed_loop.signals`,
        ``eta`` ignored): one solve per frequency (method ``direct``).

    Returns
    -------
    FRF
    """
    inputs, outputs = tuple(inputs), tuple(outputs)
    if not inputs or not outputs:
        raise SimError("FRF needs at least one input and one output")
    damping = dmp.Damping() if damping is None else damping
    if servo is not None:
        return _servo_frf(model, q, inputs, outputs, frequencies_hz, damping, servo)
    red = dmp.reduce(model, q, locked)
    Bv, in_units = _rows(model, q, inputs, "input", locked)
    Cv, out_units = _rows(model, q, outputs, "output", locked)
    H, omega, cm, used = frf_reduced(red, red.N.T @ Bv.T, Cv @ red.N, frequencies_hz, damping, method)
    natural = omega / (2 * np.pi)
    # Free motions (a strut spinning between spherical joints) are not modes of vibration:
    # their zero roots, and the round-off roots next to them, are left out of the report.
    floor = FREE_RTOL * max(natural.max(initial=0.0), 1e-300)
    keep = cm.damped_hz > floor
    return FRF(frequencies_hz=np.asarray(frequencies_hz, dtype=float), H=H, inputs=inputs, outputs=outputs,
               input_units=in_units, output_units=out_units, natural_hz=natural[natural > floor],
               damped_hz=cm.damped_hz[keep], ratios=cm.ratios[keep], method=used)


def _servo_frf(model, q, inputs, outputs, frequencies_hz, damping, servo):
    """:func:`frf` of the robot closed by ``servo``."""
    from sim.solvers import closed_loop as sv

    p = sv.plant(model, q, damping)
    in_units = sv.signals(model, q, p, inputs, "input")[1]
    out_units = sv.signals(model, q, p, outputs, "output")[1]
    H = sv.frequency_response(model, q, inputs, outputs, frequencies_hz, servo, damping, p)
    closed = sv.modes(sv.closed_loop(p, servo), sv.free_motions(model, q))
    return FRF(frequencies_hz=np.asarray(frequencies_hz, dtype=float), H=H, inputs=inputs, outputs=outputs,
               input_units=in_units, output_units=out_units, natural_hz=closed.frequencies_hz,
               damped_hz=np.abs(closed.eigenvalues.imag) / (2 * np.pi), ratios=closed.damping_ratios,
               method="direct")


def static_compliance(model, q, inputs, outputs, locked=True):
    """Static compliance ``C_out N K_n^-1 N^T B`` (n_out, n_in) (requires no free motion)."""
    red = dmp.reduce(model, q, locked)
    Bv, _ = _rows(model, q, inputs, "input", locked)
    Cv, _ = _rows(model, q, outputs, "output", locked)
    return Cv @ red.N @ np.linalg.solve(red.K, red.N.T @ Bv.T)
