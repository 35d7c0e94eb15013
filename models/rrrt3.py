r"""3-RRRT translational parallel robot, rigid, for kineto-statics (paper 003).

Three identical legs at phi_i = 0, 120, 240 deg around the vertical axis; platform above the
base.  Leg i lies, at home, in the vertical plane spanned by the radial direction e_i and z;
t_i = z x e_i is the tangential direction::

                               P_i (platform, revolute about t_i)
                              /
                   link 3   /   0.8 m, 2 kg
                           /
                          C_i (revolute about t_i)
                          /  link 2: 0.1 m, 0.25 kg, along b_i
                        B_i (revolute about b_i)
                         \
                  link 1  \  0.4 m, 1 kg
                           \
            base  ---------- A_i (universal: t_i actuated, then b_i)

Joint axes read from the base: (t_i, b_i | b_i | t_i | t_i).  On the translational branch the
three t axes stay parallel and the two b axes stay parallel, so each leg transmits one
constraint couple along n_i = t_i x b_i and the three couples forbid every platform rotation.

Modelling of the universal joint at A_i
---------------------------------------
The engine drives only a revolute coordinate, so the universal joint is modelled as what it is
mechanically: the actuated revolute ``A_<i>`` about t_i from the ground to the joint's cross
(the motor's output yoke), then the revolute ``U_<i>`` about b_i from the cross to link 1.  The
cross is a rigid body ``cross_<i>`` at A_i of mass ``cross_mass`` (default 1e-3 kg, *assumed*,
negligible against the 3.25 kg of the leg; a massless body is not allowed by the engine) with
the inertia of a solid sphere of radius 0.02 m.  The three actuators ``theta_<i>`` are the
angles of these revolutes, zero at home.

Home posture (the builder's choice, documented)
-----------------------------------------------
Platform centre (0, 0, 0.8) m.  ``b_i = cos(beta) e_i + sin(beta) z`` with
``beta = atan(sqrt(2)) = 54.74 deg``, the angle for which the three constraint couples
``n_i = t_i x b_i = sin(beta) e_i - cos(beta) z`` are mutually orthogonal (their matrix has
rank 3 and condition number 1; a horizontal or vertical b_i makes them dependent, a constraint
singularity).  Link 2 points along b_i; links 1 and 3 close the leg in its vertical plane
with B_i on the outer side of the line A_i C_i (elbow out):
A1 = (0.4, 0, 0), B1 ~ (0.7006, 0, 0.2639), C1 ~ (0.7584, 0, 0.3455), P1 = (0.1, 0, 0.8).
At home the Jacobian of the constraints plus the end-effector coordinates (inverse
kinematics) and that of the constraints plus the locked actuators (direct kinematics) have
full rank 78 on the 78 reference coordinates, with condition numbers 89 and 103 (printed by
``python models/rrrt3.py``, checked in ``tests/test_inverse_dynamics.py``); along the
scenario's circle (radius 0.05 m) the direct one stays below 200.

Parameters
----------
Paper 003 §5: base radius R = 0.4 m, platform radius r = 0.1 m, link lengths 0.4, 0.1,
0.8 m and masses 1, 0.25, 2 kg from the base.  *Assumed*: links are solid rods of radius
0.01 m (paper 003 gives the inertia matrices only as symbols); platform 1.5 kg, a disc of
radius 0.1 m and thickness 0.02 m (paper 003 gives no value; paper 001's platform);
gravity 9.81 m/s^2 along -z.  End-effector coordinates ``x y z`` of the platform centre [m].
"""
import numpy as np

from sim import ModelBuilder

BASE_RADIUS = 0.4
PLATFORM_RADIUS = 0.1
HEIGHT = 0.8
LENGTHS = (0.4, 0.1, 0.8)
MASSES = (1.0, 0.25, 2.0)
ROD_RADIUS = 0.01
PLATFORM_MASS = 1.5
PLATFORM_THICKNESS = 0.02
CROSS_RADIUS = 0.02
BETA = np.arctan(np.sqrt(2.0))
PHI = (0.0, 2 * np.pi / 3, 4 * np.pi / 3)


def leg_frame(i):
    """Radial e_i, tangential t_i and b_i directions (each (3,)) of leg ``i`` (0-based) at home."""
    c, s = np.cos(PHI[i]), np.sin(PHI[i])
    e = np.array([c, s, 0.0])
    t = np.array([-s, c, 0.0])
    b = np.cos(BETA) * e + np.sin(BETA) * np.array([0.0, 0.0, 1.0])
    return e, t, b


def leg_points(i, centre=(0.0, 0.0, HEIGHT)):
    """Points A, B, C, P (each (3,)) of leg ``i`` at home orientation of its joints' axes.

    Links 1 and 3 stay in the leg's vertical plane; B is on the elbow-out branch.
    """
    e, t, b = leg_frame(i)
    L1, L2, L3 = LENGTHS
    A = BASE_RADIUS * e
    P = np.asarray(centre, dtype=float) + PLATFORM_RADIUS * e
    # Planar two-link closure A -> B -> C in the (e, z) plane, with C = P - L3 u3 unknown and
    # B -> C fixed (= L2 b): solve for B with |B - A| = L1 and |P - (B + L2 b)| = L3.
    D = P - L2 * b - A                                   # = L1 u1 + L3 u3
    d = np.linalg.norm(D)
    if not abs(L1 - L3) < d < L1 + L3:
        raise ValueError(f"leg {i + 1} cannot reach the platform point {np.round(P, 4).tolist()}")
    x = (L1**2 - L3**2 + d**2) / (2 * d)
    h = np.sqrt(L1**2 - x**2)
    along = D / d
    side = np.cross(t, along)                            # in the leg plane, perpendicular to D
    B = A + x * along - h * side                         # elbow out (away from the axis)
    if np.dot(B - A - x * along, e) < 0:
        B = A + x * along + h * side
    C = B + L2 * b
    return A, B, C, P


def _rod_inertia(mass, axis, length):
    """Inertia (3, 3) about the centre of a solid rod of radius ROD_RADIUS along unit ``axis``."""
    axial = 0.5 * mass * ROD_RADIUS**2
    transverse = mass * (3 * ROD_RADIUS**2 + length**2) / 12
    uu = np.outer(axis, axis)
    return transverse * (np.eye(3) - uu) + axial * uu


def _frame(x, z):
    """Right-handed axes (columns) with z along ``z`` and x along ``x`` (perpendicular)."""
    z = z / np.linalg.norm(z)
    x = x - z * (x @ z)
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def build(cross_mass=1e-3, platform_mass=PLATFORM_MASS, gravity=9.81):
    """3-RRRT model at its home posture (platform centre (0, 0, 0.8) m).

    Parameters
    ----------
    cross_mass : float
        Mass of each universal joint's cross [kg] (see the module docstring).
    platform_mass : float
        Platform mass [kg] (disc of radius 0.1 m, thickness 0.02 m).
    gravity : float
        Gravity along -z [m/s^2].
    """
    if not cross_mass > 0:
        raise ValueError(f"`cross_mass` must be > 0, got {cross_mass!r}")
    if not platform_mass > 0:
        raise ValueError(f"`platform_mass` must be > 0, got {platform_mass!r}")
    b = ModelBuilder("rrrt3", gravity=(0.0, 0.0, -gravity))
    centre = np.array([0.0, 0.0, HEIGHT])
    R_disc, h_disc = PLATFORM_RADIUS, PLATFORM_THICKNESS
    I_disc = platform_mass * np.diag([(3 * R_disc**2 + h_disc**2) / 12] * 2 + [R_disc**2 / 2])
    b.add_rigid_body("platform", platform_mass, centre, I_disc, position=centre)
    b.add_marker("P", "platform", centre)
    for i in range(3):
        s = f"{i + 1}"
        e, t, bi = leg_frame(i)
        A, B, C, P = leg_points(i)
        T_axes = _frame(e, t)           # joints about t_i: z = t_i, x = e_i
        B_axes = _frame(t, bi)          # joints about b_i: z = b_i, x = t_i
        I_cross = 0.4 * cross_mass * CROSS_RADIUS**2 * np.eye(3)
        b.add_rigid_body(f"cross_{s}", cross_mass, A, I_cross, position=A, orientation=T_axes)
        for k, (name, p, q) in enumerate((("link1", A, B), ("link2", B, C), ("link3", C, P))):
            u = (q - p) / np.linalg.norm(q - p)
            b.add_rigid_body(f"{name}_{s}", MASSES[k], 0.5 * (p + q), _rod_inertia(MASSES[k], u, LENGTHS[k]),
                             position=p, orientation=_frame(u, t if k != 1 else np.cross(u, t)))
        for name, body, p, axes in ((f"A0_{s}", None, A, T_axes), (f"A1_{s}", f"cross_{s}", A, T_axes),
                                    (f"U1_{s}", f"cross_{s}", A, B_axes), (f"U2_{s}", f"link1_{s}", A, B_axes),
                                    (f"B1_{s}", f"link1_{s}", B, B_axes), (f"B2_{s}", f"link2_{s}", B, B_axes),
                                    (f"C2_{s}", f"link2_{s}", C, T_axes), (f"C3_{s}", f"link3_{s}", C, T_axes),
                                    (f"P3_{s}", f"link3_{s}", P, T_axes), (f"P4_{s}", "platform", P, T_axes)):
            b.add_marker(name, body, p, axes)
        b.add_joint(f"A_{s}", "revolute", f"A0_{s}", f"A1_{s}")
        b.add_joint(f"U_{s}", "revolute", f"U1_{s}", f"U2_{s}")
        b.add_joint(f"B_{s}", "revolute", f"B1_{s}", f"B2_{s}")
        b.add_joint(f"C_{s}", "revolute", f"C2_{s}", f"C3_{s}")
        b.add_joint(f"P_{s}", "revolute", f"P3_{s}", f"P4_{s}")
        b.add_actuator(f"theta_{s}", f"A_{s}")
    b.set_end_effector("P", ("x", "y", "z"), ("x", "y", "z"))
    b.notes = ("paper 003 (3-RRRT kineto-statics) §5 dimensions and masses; rods of radius 0.01 m, "
               "platform 1.5 kg disc and cross masses assumed")
    return b.build()


if __name__ == "__main__":
    from sim.model.assembly import regularity

    model = build()
    inverse, direct = regularity(model, model.q_home)
    print(f"home pose {model.pose_home}, ranks {model.home_ranks}, condition numbers: "
          f"inverse {1 / inverse:.4g}, direct {1 / direct:.4g}")
    for i in range(3):
        print(f"leg {i + 1}:", *(np.round(p, 4).tolist() for p in leg_points(i)))
