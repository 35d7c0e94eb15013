r"""3-RRRU spatial parallel robot with flexible passive links (paper 001, Zhang et al.).

Leg i (i = 1, 2, 3) at angle phi_i = 0, 120, 240 deg about the vertical z axis; e_r is the
leg's radial direction, t = z x e_r its tangential direction::

        A_i  o----------------------------------------  base, z = 0 (radius 0.4 m)
              \  driving link A_iB_i (0.4 m, 2 kg, rigid), actuated revolute A_i (axis t)
               \
                o B_i     revolute B_i (axis t)
                |  intermediate link B_iC_i (0.1 m, 0.3 kg, rigid), ~60 deg below horizontal
                o C_i     revolute C_i (axis along B_iC_i)
               /
              /  passive link C_iP_i (0.8 m, aluminium rod r = 0.01 m, FLEXIBLE, FFR beam)
             /
        P_i o   universal joint: 1st axis parallel to C_i's axis (fixed in C_iP_i),
                2nd axis t (fixed in the platform); platform = disc r = 0.1 m, 1.5 kg

Home posture (platform centre at (0, 0, -0.7) m), leg 1: A1 = (0.4, 0, 0),
B1 ~ (0.7403, 0, -0.2101), C1 ~ (0.7908, 0, -0.2965), P1 = (0.1, 0, -0.7); legs 2 and 3 by
rotation about z.  A_iB_i points outward and down, C_iP_i is perpendicular to B_iC_i.  With
this arrangement of axes each leg is a translational leg and the platform only translates,
as paper 001 states.

Sources: paper 001 (link lengths 0.4 / 0.1 / 0.8 m, masses 2 / 0.3 kg, platform 1.5 kg, rod
radius 0.01 m, aluminium E = 71.7 GPa, rho = 2700 kg/m^3, base radius 0.4 m, platform
radius 0.1 m); the axis arrangement and home posture are the project's, as the
paper's figures are lost.

*Assumed*: shear modulus from nu = 0.3 (27.6 GPa; the paper's 80 GPa is a steel value);
the rigid links are slender rods (inertia m L^2 / 12 about their transverse axes, a
1e-3 fraction of that about their axis); the platform is a uniform disc of thickness
0.02 m; gravity 9.81 m/s^2 along -z.

Discretisation: ``elements_per_link`` beam elements per rod (default 4), clamped reference
at C_i.  End-effector coordinates ``x y z`` of the platform centre.  Sensors:
``rod1_midspan_deflection`` (deflection of rod 1's mid node from its chord, in the leg
plane; needs an even number of elements), and the actuated angles are the joint
coordinates of A_i.
"""
import numpy as np

from sim import ModelBuilder, Section

BASE_RADIUS = 0.4
PLATFORM_RADIUS = 0.1
LEG_ANGLES = (0.0, 2 * np.pi / 3, 4 * np.pi / 3)
#: Leg-1 home points in (radial, vertical) components [m].
HOME_POINTS = {"A": (0.4, 0.0), "B": (0.7403, -0.2101), "C": (0.7908, -0.2965), "P": (0.1, -0.7)}
LINK_MASSES = {"AB": 2.0, "BC": 0.3}
PLATFORM_MASS = 1.5
PLATFORM_THICKNESS = 0.02


def _leg_frame(phi):
    e_r = np.array([np.cos(phi), np.sin(phi), 0.0])
    t = np.array([-np.sin(phi), np.cos(phi), 0.0])
    return e_r, t, np.array([0.0, 0.0, 1.0])


def _axes(z, x_hint):
    """Right-handed frame (columns) with z axis ``z`` and x axis as close as possible to ``x_hint``."""
    z = z / np.linalg.norm(z)
    x = x_hint - z * (z @ x_hint)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _rod_inertia(mass, p, q, axial_fraction=1e-3):
    """World inertia about the centre of a slender rod from p to q."""
    e = (q - p) / np.linalg.norm(q - p)
    I_t = mass * np.sum((q - p) ** 2) / 12.0
    return I_t * (np.eye(3) - np.outer(e, e)) + axial_fraction * I_t * np.outer(e, e)


def build(elements_per_link=4, E=71.7e9, rho=2700.0, nu=0.3, rod_radius=0.01, gravity=9.81, rotor_inertia=0.0,
          gear_ratio=1.0, drive_stiffness=None, drive_damping=0.0):
    """3-RRRU robot at its home posture.

    Parameters
    ----------
    elements_per_link : int
        Beam elements along each flexible rod C_iP_i.
    E, rho, nu : float
        Rod material: Young's modulus [Pa], density [kg/m^3], Poisson's ratio [-].
    rod_radius : float
        Radius of the solid circular rod section [m].
    gravity : float
        Gravity along -z [m/s^2].
    rotor_inertia : float
        Each actuator's motor rotor (and gear input) inertia, motor side [kg m^2] (0: none).
    gear_ratio : float
        Each actuator's gear ratio, motor angle per joint angle [-]; the joint sees
        ``gear_ratio^2 rotor_inertia``.
    drive_stiffness, drive_damping : float, optional
        Each transmission's torsional stiffness [N m/rad] and damping [N m s/rad], joint side:
        a compliant drive (the motor its own coordinate under a servo); None: rigid.
    """
    n = int(elements_per_link)
    if n != elements_per_link or n < 1:
        raise ValueError(f"`elements_per_link` must be a positive integer, got {elements_per_link!r}")
    for name, value in (("E", E), ("rho", rho), ("rod_radius", rod_radius)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive, got {value!r}")
    rod = Section.circle(rod_radius, E=E, rho=rho, nu=nu)
    b = ModelBuilder("rrru3", gravity=(0.0, 0.0, -gravity))
    centre = np.array([0.0, 0.0, -0.7])
    I_disc = np.diag([1.0, 1.0, 0.0]) * PLATFORM_MASS * (3 * PLATFORM_RADIUS**2 + PLATFORM_THICKNESS**2) / 12
    I_disc[2, 2] = PLATFORM_MASS * PLATFORM_RADIUS**2 / 2
    b.add_rigid_body("platform", PLATFORM_MASS, centre, I_disc, position=centre, substructure="platform")
    b.add_marker("platform_centre", "platform", centre)
    for i, phi in enumerate(LEG_ANGLES):
        s = f"{i + 1}"
        e_r, t, z = _leg_frame(phi)
        A, B, C, P = (r * e_r + h * z for r, h in (HOME_POINTS[k] for k in "ABCP"))
        P = PLATFORM_RADIUS * e_r + centre
        b.add_rigid_body(f"AB_{s}", LINK_MASSES["AB"], 0.5 * (A + B), _rod_inertia(LINK_MASSES["AB"], A, B),
                         position=A, substructure="driving links")
        b.add_rigid_body(f"BC_{s}", LINK_MASSES["BC"], 0.5 * (B + C), _rod_inertia(LINK_MASSES["BC"], B, C),
                         position=B, substructure="intermediate links")
        nodes = np.linspace(C, P, n + 1)
        b.add_beam_body(f"CP_{s}", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), rod,
                        z_ref=t, clamp=0, substructure="flexible rods")
        c_axis = (C - B) / np.linalg.norm(C - B)
        rod_dir = (P - C) / np.linalg.norm(P - C)
        frame_t = _axes(t, e_r)                 # revolute A, B: axis t
        frame_c = _axes(c_axis, rod_dir)         # revolute C and universal 1st axis
        frame_u2 = _axes(t, rod_dir)             # universal 2nd axis t, on the platform
        b.add_marker(f"A0_{s}", None, A, frame_t)
        b.add_marker(f"A_{s}", f"AB_{s}", A, frame_t)
        b.add_marker(f"B1_{s}", f"AB_{s}", B, frame_t)
        b.add_marker(f"B2_{s}", f"BC_{s}", B, frame_t)
        b.add_marker(f"C2_{s}", f"BC_{s}", C, frame_c)
        b.add_marker(f"C3_{s}", f"CP_{s}", C, frame_c)
        b.add_marker(f"P3_{s}", f"CP_{s}", P, frame_c)
        b.add_marker(f"P4_{s}", "platform", P, frame_u2)
        b.add_joint(f"A_{s}", "revolute", f"A0_{s}", f"A_{s}")
        b.add_joint(f"B_{s}", "revolute", f"B1_{s}", f"B2_{s}")
        b.add_joint(f"C_{s}", "revolute", f"C2_{s}", f"C3_{s}")
        b.add_joint(f"P_{s}", "universal", f"P3_{s}", f"P4_{s}")
        b.add_actuator(f"theta_{s}", f"A_{s}", stiffness=drive_stiffness, damping=drive_damping,
                       rotor_inertia=rotor_inertia, gear_ratio=gear_ratio)
        # Sensor frame on the rod: x along the rod, y in the leg plane (main bending direction).
        b.add_marker(f"rod_start_{s}", f"CP_{s}", C, frame_u2)
        if n % 2 == 0 and i == 0:
            b.add_marker(f"rod_mid_{s}", f"CP_{s}", nodes[n // 2])
            b.add_sensor(f"rod{s}_midspan_deflection", "deflection", (f"rod_start_{s}", f"rod_mid_{s}", f"P3_{s}"),
                         axis=1, units="m", description=f"rod {s}: mid-node distance from the chord C_{s}P_{s}, "
                                                        "in the leg plane")
    b.set_end_effector("platform_centre", ("x", "y", "z"))
    b.notes = "3-RRRU with flexible passive links (paper 001)"
    return b.build()
