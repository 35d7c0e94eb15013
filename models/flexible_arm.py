r"""Flexible arm on an unactuated revolute with a tip mass (MacLean et al. 2007, MBDyn tests).

        z (revolute axis)
        |
     A  o==================================* tip mass m_t      -> x
      hinge            flexible link, length L

Sources: ``rho A = 2.82 kg/m``, ``sqrt(E I / rho A) = 5.974 m^2/s``, ``L = 3.372 m``, tip mass
``5.18`` times the link mass; exact in-plane frequencies 5.283, 20.842, 46.770, 83.068 rad/s
(hinged–mass-loaded beam).  The hinge is free, so the rigid rotation about z is a free motion,
reported as a rigid-body mode and not among the elastic frequencies.

*Assumed* (not in the source, which is planar): steel ``E = 2.1e11 Pa``; a flat section whose
in-plane width follows from ``E I`` and ``rho A`` and whose out-of-plane height makes the
out-of-plane bending 500 times stiffer.  The hinge clamps the out-of-plane bending, so an
out-of-plane mode (the tip mass on a clamped strip, 8.77 rad/s) sits between the in-plane
ones in the full list of frequencies; the in-plane modes are the source's;
``nu = 0.3``; no gravity (the source's frequencies are those of the unloaded arm).
End-effector coordinates: tip ``x y``.
"""
import numpy as np

from sim import ModelBuilder, Section


def build(rho_A=2.82, c=5.974, length=3.372, tip_mass_ratio=5.18, elements=8, E=2.1e11, nu=0.3):
    """Flexible arm.

    Parameters
    ----------
    rho_A : float
        Mass per unit length [kg/m].
    c : float
        ``sqrt(E I / rho A)`` [m^2/s] (in-plane bending).
    length : float
        [m].
    tip_mass_ratio : float
        Tip mass over link mass [-].
    elements : int
        Beam elements along the link.
    E, nu : float
        Young's modulus [Pa] and Poisson's ratio of the assumed material.
    """
    for name, value in (("rho_A", rho_A), ("c", c), ("length", length), ("E", E)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    if not tip_mass_ratio >= 0:
        raise ValueError(f"`tip_mass_ratio` must be >= 0, got {tip_mass_ratio!r}")
    if int(elements) != elements or elements < 1:
        raise ValueError(f"`elements` must be a positive integer, got {elements!r}")
    EI = c**2 * rho_A
    rho = 7850.0 * E / 2.1e11             # any density: only rho A matters, kept steel-like
    area = rho_A / rho
    width = np.sqrt(12.0 * EI / E / area)  # in-plane (local y) width from I_z = h b^3 / 12
    height = area / width
    section = Section.rectangle(width, height, E=E, rho=rho, nu=nu)
    n = int(elements)
    nodes = np.zeros((n + 1, 3))
    nodes[:, 0] = np.linspace(0.0, length, n + 1)
    b = ModelBuilder("flexible_arm", gravity=(0.0, 0.0, 0.0))
    b.add_beam_body("link", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), section,
                    z_ref=(0, 0, 1), clamp=0)
    if tip_mass_ratio > 0:
        b.add_point_mass("link", tip_mass_ratio * rho_A * length, node=n)
    b.add_marker("hinge_ground", None, nodes[0])
    b.add_marker("hinge", "link", nodes[0])
    b.add_marker("tip", "link", nodes[n])
    b.add_joint("hinge", "revolute", "hinge_ground", "hinge")
    b.set_end_effector("tip", ("x", "y"))
    return b.build()
