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

Each bar is ``parts`` floating-frame-of-reference beams welded end to end, the first clamped
at its bar's first joint (A, B, D).
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


def build(tilt=5.0, elements=2, parts=4, gravity=0.0):
    """Four-bar at its initial configuration (crank AB along y).

    Parameters
    ----------
    tilt : float
        Angle [deg] of the hinge at C about the follower's axis DC (0: a planar parallelogram).
    elements : int
        Beam elements per part (even where the coupler's mid-span falls inside a part).
    parts : int
        Floating-frame bodies per bar, welded end to end (``fixed`` joints).  A linear FFR body
        misses the second-order shortening of a bar bent and turned by its own frame's motion;
        past the change points, where first-order kinematics no longer fixes the linkage, that
        decides the motion.  Against Exudyn's geometrically exact beams (16 elements a bar) the
        coupler's out-of-plane z differs by 0.96 % RMS over the first 7.6 s with one body a
        bar, 0.23 % with four (0.21 % with six); 3.6 and 0.2 % around the first change point.
    gravity : float
        Gravity along -z [m/s^2] (the benchmark has none).
    """
    n, k = int(elements), int(parts)
    if n != elements or n < 1:
        raise ValueError(f"`elements` must be a positive integer, got {elements!r}")
    if k != parts or k < 1:
        raise ValueError(f"`parts` must be a positive integer, got {parts!r}")
    if k % 2 and n % 2:
        raise ValueError(f"with an odd number of `parts` ({k}), `elements` must be even (the coupler's mid-span "
                         f"is a node), got {n}")
    b = ModelBuilder("four_bar", gravity=(0.0, 0.0, -float(gravity)))
    thick, thin = (Section.rectangle(w, w, E=E, rho=RHO, nu=NU) for w in (THICK, THIN))
    for name, p, q, section in (("crank", A, B, thick), ("coupler", B, C, thick), ("follower", D, C, thin)):
        for j in range(k):
            pj, qj = p + (q - p) * j / k, p + (q - p) * (j + 1) / k
            b.add_beam_body(f"{name}{j}", np.linspace(pj, qj, n + 1), np.column_stack([np.arange(n), np.arange(1, n + 1)]),
                            section, z_ref=(0, 0, 1), clamp=0, substructure=name)
            if j:
                b.add_marker(f"{name}{j - 1}_end", f"{name}{j - 1}", pj)
                b.add_marker(f"{name}{j}_start", f"{name}{j}", pj)
                b.add_joint(f"{name}_weld{j}", "fixed", f"{name}{j - 1}_end", f"{name}{j}_start")
    t = np.radians(tilt)
    hinge = np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])   # R_y(tilt): z tilted
    last = k - 1
    b.add_marker("A_ground", None, A)
    b.add_marker("A_crank", "crank0", A)
    b.add_marker("B_crank", f"crank{last}", B)
    b.add_marker("B_coupler", "coupler0", B)
    b.add_marker("C_coupler", f"coupler{last}", C, hinge)
    b.add_marker("C_follower", f"follower{last}", C, hinge)
    b.add_marker("D_follower", "follower0", D)
    b.add_marker("D_ground", None, D)
    b.add_marker("mid", f"coupler{k // 2}", 0.5 * (B + C))      # its first node (k even) or its middle one
    b.add_joint("A", "revolute", "A_ground", "A_crank")
    b.add_joint("B", "revolute", "B_crank", "B_coupler")
    b.add_joint("C", "revolute", "C_coupler", "C_follower")
    b.add_joint("D", "revolute", "D_ground", "D_follower")
    b.add_actuator("crank_angle", "A")
    b.set_end_effector("mid", ("x", "y", "z"))
    b.notes = "Bauchau et al. (2016) four-bar benchmark"
    return b.build()
