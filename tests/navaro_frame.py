"""NaVARo as a plain linear 3D frame (paper 000 §5.1), independent of ffrsim's formulation.

The reference the tests hold ``models/navaro.py`` to at every pose of paper 000 Fig. 4, where the
project's copy of Table 3 gives pose 1 only.  Classical finite elements, as Cast3M's beams:
Euler-Bernoulli elements with consistent mass (translation, section rotary inertia rho I_y,
rho I_z, torsional rho I_p), one per link and two for link 4i, on nodal displacements and
rotations in world axes.  Links 1i and 2i are clamped at A_i (clutches locked); a revolute joint
(axis along z) shares the translations and the x, y rotations of the bodies it joins and gives
each body but one its own z rotation; the platform's three segments share the node P.  That is
90 coordinates, the paper's count.  Only the geometry (``leg_points``: the closed-form inverse
kinematics) and the inputs are taken from the model file; no ffrsim code.
"""
import numpy as np
import scipy.linalg


def _plane(L, E, I, rho, A):
    """Bending in the element's x-y plane (v, theta_z at both ends): stiffness, mass (4, 4)."""
    k = E * I / L**3 * np.array([[12, 6 * L, -12, 6 * L], [6 * L, 4 * L**2, -6 * L, 2 * L**2],
                                 [-12, -6 * L, 12, -6 * L], [6 * L, 2 * L**2, -6 * L, 4 * L**2]])
    m = rho * A * L / 420 * np.array([[156, 22 * L, 54, -13 * L], [22 * L, 4 * L**2, 13 * L, -3 * L**2],
                                      [54, 13 * L, 156, -22 * L], [-13 * L, -3 * L**2, -22 * L, 4 * L**2]])
    m += rho * I / (30 * L) * np.array([[36, 3 * L, -36, 3 * L], [3 * L, 4 * L**2, -3 * L, -L**2],
                                        [-36, -3 * L, 36, -3 * L], [3 * L, -L**2, -3 * L, 4 * L**2]])
    return k, m


def element(a, b, E, G, rho, A, Iy, Iz, J, Ip):
    """Stiffness and mass (12, 12) in world axes of the beam from ``a`` to ``b`` (in the x-y plane).

    Local x along the beam, local z the world z; nodal order u, v, w, theta_x, theta_y,
    theta_z at ``a`` then at ``b``.
    """
    L = np.linalg.norm(b - a)
    k, m = np.zeros((12, 12)), np.zeros((12, 12))
    bar = np.array([[1.0, -1.0], [-1.0, 1.0]])
    pair = np.array([[2.0, 1.0], [1.0, 2.0]]) / 6
    for dofs, kk, mm in (([0, 6], E * A / L * bar, rho * A * L * pair), ([3, 9], G * J / L * bar, rho * Ip * L * pair)):
        k[np.ix_(dofs, dofs)] += kk
        m[np.ix_(dofs, dofs)] += mm
    # x-z bending is x-y bending with theta_y = -dw/dx: the rotations change sign
    flip = np.diag([1.0, -1.0, 1.0, -1.0])
    for dofs, I, S in (([1, 5, 7, 11], Iz, np.eye(4)), ([2, 4, 8, 10], Iy, flip)):
        kk, mm = _plane(L, E, I, rho, A)
        k[np.ix_(dofs, dofs)] += S @ kk @ S
        m[np.ix_(dofs, dofs)] += S @ mm @ S
    ex = (b - a) / L
    R = np.array([ex, np.cross([0.0, 0.0, 1.0], ex), [0.0, 0.0, 1.0]])
    T = np.kron(np.eye(4), R)
    return T.T @ k @ T, T.T @ m @ T


def frequencies(module, pose, E=74e9, G=None, platform_Iy=3.333e-9, rho=2800.0):
    """Natural frequencies [Hz], ascending, of the frame at ``pose`` (x, y, theta).

    Parameters
    ----------
    module : module
        ``models/navaro.py`` (for ``leg_points``, ``SECTION_LEG``, ``SECTION_PLATFORM``).
    pose : sequence of float
    E, G, platform_Iy, rho : float
        As ``build``'s; ``G`` None takes ``module.SHEAR_MODULUS``.
    """
    G = module.SHEAR_MODULUS if G is None else G
    leg = dict(module.SECTION_LEG)
    plate = dict(module.SECTION_PLATFORM, Iy=platform_Iy, Ip=platform_Iy + module.SECTION_PLATFORM["Iz"])
    count = [0]

    def new(k):
        count[0] += k
        return list(range(count[0] - k, count[0]))

    P = new(6)
    beams = []
    for i in range(3):
        A, B, C, D, E_ = module.leg_points(i, *pose)
        clamped = [None] * 6
        # one node per joint (its second body's own z rotation apart), link 4 continuous through D
        nB, nC, nD, nE = new(6), new(6), new(6), new(6)
        own = {name: node[:5] + new(1) for name, node in (("B", nB), ("C", nC), ("D", nD), ("E", nE))}
        beams += [(A, D, clamped, own["D"], leg), (A, B, clamped, nB, leg), (B, C, own["B"], nC, leg),
                  (C, D, own["C"], nD, leg), (D, E_, nD, nE, leg), (np.array([*pose[:2], 0.0]), E_, P, own["E"], plate)]
    n = count[0]
    K, M = np.zeros((n, n)), np.zeros((n, n))
    for a, b, da, db, section in beams:
        k, m = element(a, b, E, G, rho, **section)
        dofs = np.array([-1 if d is None else d for d in da + db])
        keep = dofs >= 0
        index = np.ix_(dofs[keep], dofs[keep])
        K[index] += k[np.ix_(keep, keep)]
        M[index] += m[np.ix_(keep, keep)]
    omega2 = scipy.linalg.eigh(K, M, eigvals_only=True)
    return np.sqrt(omega2) / (2 * np.pi)
