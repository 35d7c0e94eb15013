r"""Natural modes at a configuration, actuators locked.

The constrained motions are ``v = N x`` with ``N`` a basis of the null space of ``C_q`` (joint
and locked-actuator rows; :func:`constrained_basis`).  The reduced eigenproblem

    (N^T K N) x = omega^2 (N^T M N) x

gives the modes; ``N^T M N`` is positive definite.  Free motions of the mechanism (an
unactuated joint left free) are the constrained motions that deform nothing: elastic
coordinates, lumped springs and compliant drives all at rest.  They are found from the null
space of those deformation rows (each of unit scale, so the decision does not depend on the
stiffness values), reported as rigid-body modes, and the elastic modes are solved in their
mass-orthogonal complement.  With every actuator locked and a regular configuration there is
none.

References
----------
S. Briot et al., natural frequencies of the NaVARo (paper 000 of this project), §4.
"""
from dataclasses import dataclass

import numpy as np

from sim.model import springs
from sim.model.constraints import actuator_values, constraints
from sim.model.dynamics import mass_matrix, stiffness_matrix
from sim.model.mobility import NULL_RTOL, free_basis
from sim.model.kinematics import markers
from sim.linalg import lstsq, null_space, partitioned_null_space, spd_solve
from sim.model.tables import compliant
from sim.solvers.blocks import BLOCK_MIN, PIVOT_RTOL

PARTITION_RTOL = 1e-3  # reference-coordinate rows at least this well conditioned (pivoted-QR diagonal
#                        ratio): elastic coordinates independent; the basis's condition number then
#                        stays near that of those rows, keeping the eigenvalues at round-off level
SIGN_TIE_RTOL = 1e-6   # entries within this fraction of a shape's largest magnitude are tied with it
#                        (signs: the first of them decides; a symmetric structure's equal entries
#                        differ by round-off)
SAME_MODE = 0.5        # mass-weighted MAC above which a mode along a path is the previous instant's (signs)
FROZEN_MIN = 600       # coordinates from which modes() takes at most FROZEN_COUNT_MAX modes from the
FROZEN_COUNT_MAX = 48  # frozen structure's solvers (_frozen_modes), 3-RRRU 6 modes: 6 against 15 ms at 348,
#                        16 against 91 at 636, 35 against 730 at 1212; below, every shipped model keeps
#                        the dense eigensolve's modes, exact to round-off


@dataclass(frozen=True)
class ModalResult:
    """Modes at one configuration.

    Attributes
    ----------
    frequencies_hz : ndarray, shape (k,)
        Elastic natural frequencies, ascending [Hz].
    omega : ndarray, shape (k,)
        The same in rad/s.
    shapes : ndarray, shape (n_v, k)
        Mass-normalised mode shapes (``shapes.T @ M @ shapes = 1``) in velocity coordinates,
        each with its entry of largest magnitude positive (:func:`signs`).
    rigid_count : int
        Number of free (rigid-body) motions, not among the elastic modes.
    rigid_shapes : ndarray, shape (n_v, rigid_count)
        Mass-normalised, signs as ``shapes``.
    body_energy : ndarray, shape (k, n_bodies)
        Share of each body in the modal kinetic energy (rows sum to 1).
    body_strain_energy : ndarray, shape (k, n_bodies)
        Share of each body in the modal strain energy (rows sum to 1).
    q : ndarray, shape (n_q,)
        The configuration.
    """

    frequencies_hz: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    rigid_count: int
    rigid_shapes: np.ndarray
    body_energy: np.ndarray
    body_strain_energy: np.ndarray
    q: np.ndarray


def signs(shapes, mass_shapes=None, previous=None):
    """The sign convention of mode shapes: ``+1.0`` or ``-1.0`` (..., r) per column of
    ``shapes`` (..., n, r), which makes the column's entry of largest magnitude positive (the
    first of the entries within :data:`SIGN_TIE_RTOL` of it, so that round-off between equal
    entries does not decide; a zero column: ``+1``).  Along a path, with the ``previous``
    instant's shapes (..., n, r; already signed) and ``mass_shapes = M shapes`` of this one
    (mass-normalised both): the previous shape's sign instead where a mode is the same mode
    (their mass-weighted MAC ``(previous^T M shapes)^2`` above :data:`SAME_MODE`), so that a
    mode does not change sign along the path where its largest entry moves.

    Eigensolvers leave the sign arbitrary; multiplied by these, a flipped column comes out
    the same, bitwise (negation is exact).  The shapes of a degenerate pair (equal
    frequencies) are any basis of their plane: the sign alone does not fix them."""
    A = np.abs(shapes)
    top = A.max(axis=-2, keepdims=True, initial=0.0)
    first = np.argmax(A >= (1.0 - SIGN_TIE_RTOL) * top, axis=-2)
    lead = np.take_along_axis(shapes, first[..., None, :], axis=-2)[..., 0, :]
    s = np.where(lead < 0, -1.0, 1.0)
    if previous is None:
        return s
    same, flip = continued(np.einsum("...ir,...ir->...r", previous, mass_shapes))
    return np.where(same, flip, s)


def continued(c):
    """From ``c = previous^T M shapes`` (..., r) of mass-normalised shapes at two instants:
    whether each mode is the same mode (mass-weighted MAC ``c^2`` above :data:`SAME_MODE`) and
    the sign (+-1) that keeps it pointing as the previous one (:func:`signs`)."""
    return c * c > SAME_MODE, np.where(c < 0, -1.0, 1.0)


def phased(shapes):
    """Complex mode shapes (n, r) scaled to unit norm, each column's leading entry real and
    positive (the first of the entries within :data:`SIGN_TIE_RTOL` of the largest magnitude,
    as :func:`signs` takes for real shapes; a zero column is left zero): the phase
    convention of damped modes, whose eigenvectors any complex factor leaves eigenvectors."""
    shapes = np.asarray(shapes, dtype=complex)
    shapes = shapes / np.maximum(np.linalg.norm(shapes, axis=0), 1e-300)
    A = np.abs(shapes)
    first = np.argmax(A >= (1.0 - SIGN_TIE_RTOL) * A.max(axis=0, initial=0.0), axis=0)
    lead = shapes[first, np.arange(shapes.shape[1])]
    return shapes * (np.abs(lead) / np.where(lead == 0, 1, lead))


def constraint_jacobian(model, q, locked=True, ms=None):
    """Constraint Jacobian (n_c, n_v) of the joints, plus the rigid actuators' rows when
    ``locked`` (their targets are the current values, so one evaluation of the primitives
    serves both)."""
    ms = markers(model, q) if ms is None else ms
    if locked:
        return constraints(model, q, targets=np.zeros(len(model.actuators)), ms=ms)[1]
    return constraints(model, q, ms=ms)[1]


def locked_jacobian(model, J, J_s):
    """Constraint Jacobian (n_c, n_v) with the actuators locked, from the joint rows ``J`` and
    the actuator rows ``J_s`` (n_a, n_v): the compliant actuators stay springs."""
    return np.vstack([J, J_s[~compliant(model)]])


def constraint_null_space(model, q, locked=True, ms=None):
    """Orthonormal basis (n_v, n_v - rank) of the null space of the constraint Jacobian."""
    return null_space(constraint_jacobian(model, q, locked, ms), NULL_RTOL)


def constrained_basis(model, J):
    """Basis (n_v, n_v - rank) of the constrained motions, the null space of ``J`` (n_c, n_v).

    The modal problem needs a basis, not an orthonormal one: when the rows fix the reference
    coordinates in terms of the elastic ones (no redundant rows, a regular configuration),
    the elastic coordinates are the independent ones (:func:`sim.linalg.partitioned_null_space`,
    half the cost of :func:`sim.linalg.null_space` on the robots here); otherwise, or near a
    singular configuration where that basis would be ill-conditioned, the orthonormal basis.
    """
    N = partitioned_null_space(J, model.v_rigid, model.v_elastic, PARTITION_RTOL)
    return null_space(J, NULL_RTOL) if N is None else N


def modes(model, q, count=None, locked=True, M=None, K=None, free=None, energies=True, J=None, J_s=None):
    """Natural modes of the linearised model at ``q``.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
        An assembled configuration.
    count : int, optional
        Number of elastic modes to return (default: all).
    locked : bool
        Lock the actuators (default) or leave them free.
    M, K : ndarray, shape (n_v, n_v), optional
        Mass and stiffness to use instead of the model's (design studies).
    free : bool, optional
        Whether free motions exist; ``None`` (default) finds out.  ``False`` skips the search
        (the caller knows, e.g. from the first of many configurations along a path).
    energies : bool
        Compute the per-body energy shares (default); ``False`` leaves them empty.
    J, J_s : ndarray, optional
        Constraint Jacobian at ``q`` (joint rows, plus the rigid actuators' rows when
        ``locked``) and actuator Jacobian (all actuators), when the caller has them already.

    Returns
    -------
    ModalResult
    """
    import scipy.linalg
    if (M is None and K is None and J is None and locked and count is not None
            and model.n_v >= FROZEN_MIN and 0 < count <= FROZEN_COUNT_MAX):
        found = _frozen_modes(model, q, int(count), energies)
        if found is not None:
            return found
    M = mass_matrix(model, q) if M is None else M
    K = stiffness_matrix(model, q) if K is None else K
    N = constrained_basis(model, constraint_jacobian(model, q, locked) if J is None else J)
    Mn = N.T @ M @ N
    Mn = 0.5 * (Mn + Mn.T)
    Z = np.zeros((N.shape[1], 0))
    if free is None or free:
        # Free motions: constrained motions that deform nothing (structural, not a threshold
        # on eigenvalues, which fails when stiffnesses span many decades).
        Z = free_basis(model, q, N, J_s)
    n_rigid = Z.shape[1]
    # Elastic subspace: the mass-orthogonal complement of the free motions.
    Y = null_space(Z.T @ Mn, 1e-12) if n_rigid else None
    NY = N if Y is None else N @ Y
    Ke = NY.T @ K @ NY
    Me = Mn if Y is None else Y.T @ Mn @ Y
    n_el = NY.shape[1]
    k = n_el if count is None else min(int(count), n_el)
    if k:
        lam, X = scipy.linalg.eigh(0.5 * (Ke + Ke.T), 0.5 * (Me + Me.T), subset_by_index=[0, k - 1],
                                   check_finite=False)
    else:
        lam, X = np.zeros(0), np.zeros((n_el, 0))
    elastic = NY @ X
    elastic *= signs(elastic)
    rigid = N @ Z
    if n_rigid:   # mass-normalise the free motions too
        rigid = rigid @ np.linalg.inv(np.linalg.cholesky(rigid.T @ M @ rigid)).T
        rigid *= signs(rigid)
    omega = np.sqrt(np.maximum(lam, 0.0))
    kin, strain = _shares(model, q, elastic, energies, M=M)
    return ModalResult(frequencies_hz=omega / (2 * np.pi), omega=omega, shapes=elastic, rigid_count=n_rigid,
                       rigid_shapes=rigid, body_energy=kin, body_strain_energy=strain, q=q)


def _shares(model, q, shapes, energies, M=None, mass_shapes=None):
    """The bodies' shares of each mode's kinetic and strain energy (k, n_b) of
    :class:`ModalResult` (:func:`body_energies`), or empty (k, 0) without ``energies``."""
    if not energies:
        return np.zeros((shapes.shape[1], 0)), np.zeros((shapes.shape[1], 0))
    kin, strain = body_energies(model, q, shapes, M, mass_shapes)
    kin /= np.maximum(kin.sum(axis=1, keepdims=True), 1e-300)
    strain /= np.maximum(strain.sum(axis=1, keepdims=True), 1e-300)
    return kin, strain


def _frozen_modes(model, q, count, energies):
    """:func:`modes` with ``count`` modes (actuators locked, the model's own mass and
    stiffness) by the frozen structure's solvers (:func:`sim.solvers.frames.frozen`: subspace
    iteration on the bodies' blocks or the saddle-point form, to a relative residual of
    :data:`sim.solvers.subspace.RESIDUAL_TOL`; linear in the model where the basis and the
    dense eigensolve are cubic), no (n_v, n_v) array: the free motions among the reference
    motions (:func:`sim.model.mobility.free_count`'s), mass-normalised by the compiled mass
    products, the bodies' kinetic energies from ``M Phi``.  None where the structure has no
    positive stiffness (the dense solve then says what it has)."""
    from sim.model.evaluator import Evaluator
    from sim.model.mobility import _reference_free
    from sim.solvers.frames import frozen

    ev = Evaluator(model)
    fr, free = frozen(ev, q, count)
    if fr is None:
        return None
    s = signs(fr.shapes)
    shapes, mass_shapes = fr.shapes * s, fr.mass_shapes * s
    rigid = np.zeros((model.n_v, 0))
    if free:
        E = ev.kinematics(q)
        N_r, Z = _reference_free(model, q, locked_jacobian(model, E.J, E.J_s), E.J_s)
        rigid = np.zeros((model.n_v, Z.shape[1]))
        rigid[model.v_rigid] = N_r @ Z
        M_rigid = ev.mass_products(np.asarray(q, dtype=float)[None], rigid[None])[0]
        rigid = rigid @ np.linalg.inv(np.linalg.cholesky(rigid.T @ M_rigid)).T
        rigid *= signs(rigid)
    kin, strain = _shares(model, q, shapes, energies, mass_shapes=mass_shapes)
    return ModalResult(frequencies_hz=fr.omega / (2 * np.pi), omega=fr.omega, shapes=shapes,
                       rigid_count=rigid.shape[1], rigid_shapes=rigid, body_energy=kin, body_strain_energy=strain,
                       q=np.asarray(q))


# Coordinates from which a stiffness given, or with springs, compliant drives or stiffening,
# goes to the saddle-point system (its sparse matrices made per call; the bodies' K_ff alone:
# from BLOCK_MIN).  The 6-PSS's compliance (compliant screws, free spins): the basis 1.0, 2.5,
# 6.4 and 20.7 ms at 186, 258, 366 and 510 coordinates, the saddle-point system 2.1, 2.5, 2.9
# and 3.5 ms.
STATIC_SADDLE_MIN = 300


def static_response(model, q, loads, K=None, J=None, J_s=None, N=None):
    """Static displacements of the linearised model at ``q`` under ``loads``, actuators locked.

    ``u = N (N^T K N)^-1 N^T f`` for each column ``f`` of ``loads`` (n_v, m), with ``N`` the
    constrained motions (:func:`constrained_basis`): the elastic deflection the structure
    takes under a load held constant, the reactions of joints and locked drives taking the
    rest.  A model with free motions has no unique deflection: the minimum-norm one (in
    ``N``'s coordinates) of the loads' part they leave is returned.  From
    :data:`sim.solvers.blocks.BLOCK_MIN` coordinates (:data:`STATIC_SADDLE_MIN` where ``K`` is
    given or has other terms than the bodies' ``K_ff``, or the rows leave reference motions
    free) by the saddle-point form
    (:func:`_static_saddle`), the same numbers, linear in the model where the basis is cubic.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
    loads : ndarray, shape (n_v, m)
    K : ndarray or scipy.sparse matrix, shape (n_v, n_v), optional
        Stiffness (default :func:`sim.model.dynamics.stiffness_matrix` at ``q``).
    J, J_s, N : ndarray, optional
        As :func:`modes`.

    Returns
    -------
    ndarray, shape (n_v, m)
    """
    from sim.model.dynamics import _has_lumped
    from sim.model.tables import stretched
    general = K is not None or _has_lumped(model) or stretched(model)
    if N is None and model.n_v >= BLOCK_MIN:
        J = constraint_jacobian(model, q) if J is None else J
        # Below STATIC_SADDLE_MIN the saddle-point system only for the bodies' K_ff with the
        # reference coordinates held (its matrices quickly made, no free motions to find).
        if model.n_v >= STATIC_SADDLE_MIN or not (general or null_space(J[:, model.v_rigid], NULL_RTOL).shape[1]):
            u = _static_saddle(model, q, J, loads, K, J_s)
            if u is not None:
                return u
    K = stiffness_matrix(model, q) if K is None else K
    if N is None:
        N = constrained_basis(model, constraint_jacobian(model, q) if J is None else J)
    Kn = N.T @ K @ N
    b = N.T @ loads
    y = spd_solve(Kn, b)     # (a Cholesky of a singular Kn may pass: its condition says so)
    if y is None:
        # Free motions (a strut's spin): the minimum-norm solution, by a complete orthogonal
        # factorisation (gelsy; the SVD's gelsd gives the same to round-off in 2.4 times the time).
        y = lstsq(Kn, b, NULL_RTOL)
    return N @ y


def _static_saddle(model, q, J, loads, K=None, J_s=None):
    """:func:`static_response` by the saddle-point system ``[[K + rho N_f N_f^T, J^T], [J, 0]]
    (u, mu) = (f, 0)``, a sparse LU (memory linear in the coordinates; the constrained basis
    and ``N^T K N`` are dense, their product cubic); None where that system is singular to
    ``PIVOT_RTOL`` (redundant rows, a stiffness that holds no motion), for the basis to take.

    ``K`` (n_v, n_v), dense or sparse: the stiffness given (its nonzeros taken), else the bodies' ``K_ff``,
    body by body, with the tangent of the springs, compliant drives and stiffening
    (:func:`sim.model.dynamics.stiffness_matrix` at ``q``) where the model has them.  The free
    motions ``N_f`` (reference motions the rows and the other deformation rows leave free:
    :func:`sim.model.mobility.free_count`'s, orthonormal; a strut's spin) get a penalty
    ``rho`` (the mean of ``K``'s diagonal on the elastic coordinates) on the reference
    coordinates.  The loads' part along them is taken off first (``f - N_f N_f^T f``: what
    the basis's least squares leave of them), so ``N_f^T u = 0`` and ``K u + J^T mu = f``:
    with ``N`` orthonormal (as it is with free motions), the basis's minimum-norm answer."""
    import scipy.sparse
    import scipy.sparse.linalg

    from sim.model.dynamics import _has_lumped
    from sim.model.mobility import _reference_free
    from sim.model.tables import stretched
    n_v, rigid, elastic = model.n_v, model.v_rigid, model.v_elastic
    if K is None and (_has_lumped(model) or stretched(model)):
        K = stiffness_matrix(model, q)
    K = body_stiffness(model) if K is None else scipy.sparse.csr_matrix(K)
    if K is None:
        return None
    N_r, Z = _reference_free(model, q, J, J_s)
    f = np.array(loads, dtype=float)
    N_f = np.zeros((n_v, Z.shape[1]))
    if Z.shape[1]:
        N_f[rigid] = N_r @ Z
        f -= N_f @ (N_f.T @ f)
        rho = float(np.mean(K.diagonal()[elastic])) if len(elastic) else 1.0
        P = rho * (N_f[rigid] @ N_f[rigid].T)
        K = K + scipy.sparse.coo_matrix((P.ravel(), (np.repeat(rigid, len(rigid)), np.tile(rigid, len(rigid)))),
                                        shape=(n_v, n_v))
    Js = scipy.sparse.csr_matrix(J)
    A = scipy.sparse.bmat([[K, Js.T], [Js, None]], format="csr")
    # Symmetric equilibration (each row and column by the root of its largest entry: stiffness
    # ~1e9 beside rows ~1), so that the pivots' spread says how singular the system is.
    big = np.maximum(abs(A).max(axis=1).toarray().ravel(), np.finfo(float).tiny)
    d = 1.0 / np.sqrt(big)
    scale = scipy.sparse.diags(d)
    try:
        lu = scipy.sparse.linalg.splu((scale @ A @ scale).tocsc())
    except RuntimeError:      # exactly singular
        return None
    pivots = np.abs(lu.U.diagonal())
    if not (np.isfinite(pivots).all() and pivots.min() > PIVOT_RTOL * pivots.max()):
        return None
    rhs = np.zeros((A.shape[0], f.shape[1]))
    rhs[:n_v] = f
    u = (d[:, None] * lu.solve(d[:, None] * rhs))[:n_v]
    return u - N_f @ (N_f.T @ u)     # (round-off's part along the free motions)


def body_stiffness(model):
    """The bodies' stiffness (:func:`sim.model.dynamics.stiffness_matrix` without ``q``) as a
    ``scipy.sparse.csr_matrix`` (n_v, n_v), body by body; None without flexible bodies."""
    import scipy.sparse
    rows, cols, vals = [], [], []
    for b, body in enumerate(model.bodies):
        if body.n_f:
            i = model.q_index[b][1] + 6
            r, c, v = body.stiffness_ff.entries()
            rows.append(r + i)
            cols.append(c + i)
            vals.append(v)
    if not rows:
        return None
    return scipy.sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(model.n_v, model.n_v)).tocsr()


def _lumped_owner(model, marker_i, marker_j):
    """The body a lumped spring's energy is booked to: that of marker j (or i on the ground)."""
    b = model.markers[marker_j].body
    return b if b >= 0 else model.markers[marker_i].body


def strain_energies(model, q, shapes, ms=None):
    """Strain energy ``phi^T K_c phi`` of each deformable part ``c`` in each column of ``shapes``
    (n_v, r): the flexible bodies' ``K_ff``, the linearised lumped springs and the compliant
    drives.

    Returns
    -------
    parts : list of str
        Body names, ``spring:<name>``, ``actuator:<name>``.
    energy : ndarray, shape (r, n_c)
        Unnormalised (twice the energy); each row sums to ``phi^T K phi`` without the
        geometric stiffness.
    owners : ndarray of int, shape (n_c,)
        The body each part's energy is booked to (a spring's and a drive's: that of its marker
        j, or i on the ground).
    """
    parts, energy, owners = [], [], []
    for b, body in enumerate(model.bodies):
        if body.n_f:
            f = shapes[model.v_slice(b)][6:]
            parts.append(body.name)
            energy.append(body.stiffness_ff.quadratic(f))
            owners.append(b)
    ms = markers(model, q) if ms is None else ms
    if model.springs:
        _, Jd = springs.deflections(model, ms)
        for s, (spring, K6) in enumerate(zip(model.springs, model.spring_tables["K"])):
            d = Jd[s] @ shapes
            parts.append(f"spring:{spring.name}")
            energy.append(np.einsum("ik,ij,jk->k", d, K6, d))
            owners.append(_lumped_owner(model, spring.marker_i, spring.marker_j))
    mask = compliant(model)
    if mask.any():
        J_s = actuator_values(model, q, ms)[1]
        for a, act in enumerate(model.actuators):
            if mask[a]:
                joint = model.joints[act.joint]
                parts.append(f"actuator:{act.name}")
                energy.append(act.stiffness * (J_s[a] @ shapes) ** 2)
                owners.append(_lumped_owner(model, joint.marker_i, joint.marker_j))
    r = shapes.shape[1]
    return parts, np.array(energy).T.reshape(r, len(parts)), np.array(owners, dtype=int)


def body_energies(model, q, shapes, M=None, mass_shapes=None):
    """Kinetic and elastic energy of each body in each mode (per unit ``omega^2`` / 2 for the
    kinetic part: ``phi_b^T M_bb phi_b``; elastic ``phi^T K_b phi`` including lumped springs,
    booked to their owners, :func:`strain_energies`).  ``mass_shapes``: ``M shapes``, if at
    hand (``M`` is block diagonal over the bodies: ``M_bb phi_b`` is its body's rows).

    Returns
    -------
    kinetic, elastic : ndarray, shape (r, n_b)
        Unnormalised; each row of ``elastic`` sums to ``phi^T K phi``.
    """
    if mass_shapes is None:
        M = mass_matrix(model, q) if M is None else M
    n_b, r = len(model.bodies), shapes.shape[1]
    kin = np.zeros((r, n_b))
    ela = np.zeros((r, n_b))
    for b in range(n_b):
        sl = model.v_slice(b)
        kin[:, b] = np.einsum("ik,ij,jk->k", shapes[sl], M[sl, sl], shapes[sl]) if mass_shapes is None else \
            np.einsum("ik,ik->k", shapes[sl], mass_shapes[sl])
    _, energy, owners = strain_energies(model, q, shapes)
    np.add.at(ela.T, owners, energy.T)
    return kin, ela
