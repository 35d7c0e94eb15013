"""Spatial four-bar mechanism with a misaligned hinge: the flexible multibody benchmark of
Bauchau et al. (2016), whose rigid counterpart cannot move.

Three steel bars in the x-y plane, A = (0, 0, 0), B = (0, 0.12, 0), C = (0.24, 0.12, 0),
D = (0.24, 0, 0): the crank AB (0.12 m) and the coupler BC (0.24 m), square 16 x 16 mm, the
follower CD (0.12 m), square 8 x 8 mm; E = 207 GPa, nu = 0.3, rho = 7800 kg/m^3.  Revolute
joints at A (to the ground), B and D (to the ground) about z; the hinge at C is turned by
``tilt`` (5 degrees) about the follower's axis DC, its axis (sin(tilt), 0, cos(tilt)).  The
crank is driven at ``omega`` = 0.6 rad/s.  With ``tilt = 0`` the mechanism is a
parallelogram linkage (one degree of freedom, change points at every half turn of the crank);
with the tilt the rigid linkage is locked at its initial configuration (Grubler: 3 x 6 - 4 x 5
- 1 = -3) and only the bars' bending lets the crank turn: the coupler and the follower bend
out of the plane, by up to about 1 cm.

Each bar is a floating frame of reference beam clamped at its first joint (A, B, D).
End-effector coordinates: the position of the coupler's mid-span (x, y, z); z is its
out-of-plane displacement.

References
----------
O. A. Bauchau, P. Betsch, A. Cardona, J. Gerstmayr, B. Jonker, P. Masarati, V. Sonneville,
"Validation of flexible multibody dynamics beam formulations using benchmark problems",
Multibody System Dynamics 37 (2016) 29-48, §7 (the four-bar mechanism).
"""
import numpy as np

from sim import ModelBuilder, Section

A, B, C, D = (np.array(p, dtype=float) for p in ((0, 0, 0), (0, 0.12, 0), (0.24, 0.12, 0), (0.24, 0, 0)))
E, NU, RHO = 207e9, 0.3, 7800.0
THICK, THIN = 0.016, 0.008      # m, square sections of bars 1-2 and bar 3


def build(tilt=5.0, elements=4, gravity=0.0):
    """Four-bar at its initial configuration (crank AB along y).

    Parameters
    ----------
    tilt : float
        Angle [deg] of the hinge at C about the follower's axis DC (0: a planar parallelogram).
    elements : int
        Beam elements per bar (even: the coupler's mid-span is a node).
    gravity : float
        Gravity along -z [m/s^2] (the benchmark has none).
    """
    n = int(elements)
    if n != elements or n < 2 or n % 2:
        raise ValueError(f"`elements` must be an even integer >= 2, got {elements!r}")
    b = ModelBuilder("four_bar", gravity=(0.0, 0.0, -float(gravity)))
    thick, thin = (Section.rectangle(w, w, E=E, rho=RHO, nu=NU) for w in (THICK, THIN))
    for name, p, q, section, z in (("crank", A, B, thick, (0, 0, 1)), ("coupler", B, C, thick, (0, 0, 1)),
                                   ("follower", D, C, thin, (0, 0, 1))):
        b.add_beam_body(name, np.linspace(p, q, n + 1), np.column_stack([np.arange(n), np.arange(1, n + 1)]),
                        section, z_ref=z, clamp=0)
    t = np.radians(tilt)
    hinge = np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])   # R_y(tilt): z tilted
    b.add_marker("A_ground", None, A)
    b.add_marker("A_crank", "crank", A)
    b.add_marker("B_crank", "crank", B)
    b.add_marker("B_coupler", "coupler", B)
    b.add_marker("C_coupler", "coupler", C, hinge)
    b.add_marker("C_follower", "follower", C, hinge)
    b.add_marker("D_follower", "follower", D)
    b.add_marker("D_ground", None, D)
    b.add_marker("mid", "coupler", 0.5 * (B + C))
    b.add_joint("A", "revolute", "A_ground", "A_crank")
    b.add_joint("B", "revolute", "B_crank", "B_coupler")
    b.add_joint("C", "revolute", "C_coupler", "C_follower")
    b.add_joint("D", "revolute", "D_ground", "D_follower")
    b.add_actuator("crank_angle", "A")
    b.set_end_effector("mid", ("x", "y", "z"))
    b.notes = "Bauchau et al. (2016) four-bar benchmark"
    return b.build()
