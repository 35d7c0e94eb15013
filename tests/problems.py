"""Reference problems with their exact (closed-form or published) solutions.

Every number here comes from a cited source; none was produced by this code.
"""
import numpy as np

# -- Euler–Bernoulli beam -------------------------------------------------------------------

#: First three roots ``beta_r L`` of the frequency equation per support (SPEC §5; third roots
#: of free-free, clamped-clamped and clamped-pinned from Blevins, *Formulas for Natural
#: Frequency and Mode Shape*, 1979, table 8-1).
BETA_L = {
    "clamped-free": (1.87510407, 4.69409113, 7.85475744),
    "pinned-pinned": (np.pi, 2 * np.pi, 3 * np.pi),
    "free-free": (4.73004074, 7.85320462, 10.99560784),
    "clamped-pinned": (3.92660231, 7.06858275, 10.21017612),
    "clamped-clamped": (4.73004074, 7.85320462, 10.99560784),
}

#: Free motions of the beam on each support: the spherical (pinned) joints leave the spin
#: about the beam axis free; free-free has the six rigid-body motions.
BEAM_RIGID_MODES = {"clamped-free": 0, "pinned-pinned": 1, "free-free": 6, "clamped-pinned": 0,
                    "clamped-clamped": 0}


def bending_omega(beta_l, length, E, I, rho, A):
    """Euler–Bernoulli bending frequencies ``(beta L)^2 sqrt(E I / (rho A L^4))`` [rad/s]."""
    return np.asarray(beta_l, dtype=float) ** 2 * np.sqrt(E * I / (rho * A * length**4))


def cantilever_tip_deflection(P, length, E, I):
    """Tip deflection of a cantilever under a tip force: ``P L^3 / (3 E I)`` [m]."""
    return P * length**3 / (3.0 * E * I)


def bar_extension(P, length, E, A):
    """End displacement of a bar under an axial end force: ``P L / (E A)`` [m]."""
    return P * length / (E * A)


def shaft_twist(T, length, G, J):
    """End rotation of a shaft under an end torque: ``T L / (G J)`` [rad]."""
    return T * length / (G * J)


def slender_bar_inertia(length, rho, A, Iy, Iz, Ip, tip_mass=0.0):
    """Mass, first moment and inertia about the origin of a straight bar along x from the origin.

    Slender-bar translation inertia plus the rotary inertia of the sections (``rho I`` per
    unit length about each section axis, local y and z along body y and z), plus an optional
    point mass at ``x = L``.

    Returns
    -------
    m : float
    s : ndarray, shape (3,)
        First moment ``int rho r dV``.
    I_O : ndarray, shape (3, 3)
    """
    m_bar = rho * A * length
    m = m_bar + tip_mass
    s = np.array([m_bar * length / 2 + tip_mass * length, 0.0, 0.0])
    transverse = m_bar * length**2 / 3 + tip_mass * length**2
    I_O = np.diag([rho * Ip * length, transverse + rho * Iy * length, transverse + rho * Iz * length])
    return m, s, I_O


def consistent_mass(L, rho, A, Iy, Iz, Ip):
    """Textbook consistent mass of the 12-dof beam element, local frame.

    Przemieniecki, *Theory of Matrix Structural Analysis*, 1968, eq. 11.32 (translation) and
    the rotary-inertia matrix of §11.5; dof order ``(u, v, w, theta_x, theta_y, theta_z)`` per
    node, bending in x–z with the sign flips of ``theta_y = -dw/dx``.
    """
    M = np.zeros((12, 12))
    pair = np.array([[2.0, 1.0], [1.0, 2.0]]) / 6.0
    M[np.ix_([0, 6], [0, 6])] = rho * A * L * pair
    M[np.ix_([3, 9], [3, 9])] = rho * Ip * L * pair
    translational = rho * A * L / 420.0 * np.array([
        [156, 22 * L, 54, -13 * L],
        [22 * L, 4 * L**2, 13 * L, -3 * L**2],
        [54, 13 * L, 156, -22 * L],
        [-13 * L, -3 * L**2, -22 * L, 4 * L**2]])
    rotary = np.array([
        [36, 3 * L, -36, 3 * L],
        [3 * L, 4 * L**2, -3 * L, -L**2],
        [-36, -3 * L, 36, -3 * L],
        [3 * L, -L**2, -3 * L, 4 * L**2]]) / (30.0 * L)
    flip = np.outer([1, -1, 1, -1], [1, -1, 1, -1])
    M[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = translational + rho * Iz * rotary
    M[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = (translational + rho * Iy * rotary) * flip
    return M


# -- Flexible arm (MacLean et al. 2007, as in MBDyn's tests; SPEC §4.6) -----------------------

#: Exact in-plane elastic frequencies of the hinged, tip-mass-loaded arm [rad/s].
FLEXIBLE_ARM_OMEGA = (5.283, 20.842, 46.770, 83.068)

# -- NaVARo (paper 000, Germain et al., Table 3, pose 1; SPEC §4.1) --------------------------

#: Cast3M's five lowest frequencies [Hz] (f4 out of the plane) by pose of ``models.navaro.POSES``;
#: the project's copy of Table 3 holds pose 1 only (the other columns are withheld from it).
NAVARO_TABLE3_HZ = {1: (44.10, 44.10, 53.98, 60.63, 95.62)}
#: Independent coordinates of the discretised NaVARo with the actuators locked (paper 000 §5.1).
NAVARO_INDEPENDENT_COORDINATES = 90
#: Pose indices of ``models.navaro.POSES`` that are images of each other under the robot's
#: 120° symmetry (paper 000 Fig. 4).
NAVARO_SYMMETRIC_POSES = ((3, 5, 7), (4, 6, 8))


# A rigid planar slider-crank modelled in 3D (redundant constraints), driven at the slider; its
# end effector is the crank angle, so angle 0 (dead centre) is a parallel singularity.  Model
# source text, written to a file by the tests that load it by path.
SLIDER_CRANK = '''\
"""Rigid planar slider-crank in 3D (redundant constraints), driven at the slider (test model)."""
import numpy as np
from sim import ModelBuilder

def build(angle=0.6):
    b = ModelBuilder("slider_crank_rigid", gravity=(0.0, -9.81, 0.0))
    l1, l2 = 0.1, 0.3
    B = l1 * np.array([np.cos(angle), np.sin(angle), 0.0])
    C = np.array([B[0] + np.sqrt(l2**2 - B[1]**2), 0.0, 0.0])
    c, s = np.cos(angle), np.sin(angle)
    frame = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])         # rz = crank angle
    slide = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # z along world x
    b.add_rigid_body("crank", 0.5, B / 2, 0.5 * l1**2 / 12 * np.eye(3))
    b.add_rigid_body("rod", 0.8, (B + C) / 2, 0.8 * l2**2 / 12 * np.eye(3), position=B)
    b.add_rigid_body("slider", 0.3, C, 1e-4 * np.eye(3), position=C)
    b.add_marker("O0", None, np.zeros(3)); b.add_marker("O1", "crank", np.zeros(3), frame)
    b.add_marker("B1", "crank", B); b.add_marker("B2", "rod", B)
    b.add_marker("C2", "rod", C); b.add_marker("C3", "slider", C)
    b.add_marker("S0", None, C, slide); b.add_marker("S3", "slider", C, slide)
    b.add_joint("O", "revolute", "O0", "O1")
    b.add_joint("B", "revolute", "B1", "B2")
    b.add_joint("C", "revolute", "C2", "C3")
    b.add_joint("S", "prismatic", "S0", "S3")
    b.add_actuator("s", "S")
    b.set_end_effector("O1", ("rz",), ("theta",))
    return b.build()
'''
