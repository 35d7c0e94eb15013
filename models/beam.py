r"""One straight beam on classical supports: the Euler–Bernoulli benchmark.

    support at x = 0                               support at x = L
    ||=====o=====o=====o=====o=====o=====o=====o=====||   -> x
         node 0 ...            elements ...     node n

The beam lies along world x, section ``width`` (y) x ``height`` (z).  Supports: ``clamped``
(fixed joint), ``pinned`` (spherical joint: translations held, rotations free -- the rotation
about the beam axis is then a free motion, reported as a rigid-body mode), ``free``.

Closed forms (Blevins, *Formulas for Natural Frequency and Mode Shape*, table 8-1):
``omega_r = (beta_r L)^2 sqrt(E I / (rho A L^4))`` with ``beta_r L`` = 1.87510407, 4.69409113,
7.85475744 (clamped-free); r pi (pinned-pinned); 4.73004074, 7.85320462 (free-free,
clamped-clamped); 3.92660231, 7.06858275 (clamped-pinned).

Nominal values (a steel bar 1 m x 20 mm x 10 mm) are for illustration only; every one can be
set.  End-effector coordinates: the tip position ``x y z``.
"""
import numpy as np

from sim import ModelBuilder, Section

SUPPORTS = ("clamped-free", "pinned-pinned", "free-free", "clamped-pinned", "clamped-clamped")
JOINT_OF = {"clamped": "fixed", "pinned": "spherical"}


def build(length=1.0, width=0.02, height=0.01, E=2.1e11, rho=7800.0, nu=0.3, elements=8,
          support="clamped-free", gravity=0.0):
    """Beam model.

    Parameters
    ----------
    length, width, height : float
        [m]; ``width`` along y, ``height`` along z.
    E, rho, nu : float
        Young's modulus [Pa], density [kg/m^3], Poisson's ratio [-].
    elements : int
        Number of beam elements.
    support : str
        One of ``SUPPORTS``.
    gravity : float
        Gravity along -z [m/s^2] (0 by default: free vibration).
    """
    if support not in SUPPORTS:
        raise ValueError(f"`support` must be one of {', '.join(SUPPORTS)}, got {support!r}")
    if int(elements) != elements or elements < 1:
        raise ValueError(f"`elements` must be a positive integer, got {elements!r}")
    for name, value in (("length", length), ("width", width), ("height", height), ("E", E), ("rho", rho)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    if not -1.0 < nu < 0.5:
        raise ValueError(f"`nu` must be in (-1, 0.5), got {nu!r}")
    n = int(elements)
    nodes = np.zeros((n + 1, 3))
    nodes[:, 0] = np.linspace(0.0, length, n + 1)
    b = ModelBuilder("beam", gravity=(0.0, 0.0, -gravity))
    b.add_beam_body("beam", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]),
                    Section.rectangle(width, height, E=E, rho=rho, nu=nu), z_ref=(0, 0, 1), clamp=0)
    left, right = support.split("-")
    for end, node in ((left, 0), (right, n)):
        b.add_marker(f"node{node}", "beam", nodes[node])
        if end != "free":
            b.add_marker(f"ground{node}", None, nodes[node])
            b.add_joint(f"support{node}", JOINT_OF[end], f"ground{node}", f"node{node}")
    b.add_marker("mid", "beam", nodes[n // 2])
    b.set_end_effector(f"node{n}", ("x", "y", "z"))
    return b.build()
