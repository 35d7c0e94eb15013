r"""Delta pick-and-place robot with flexible upper arms (issue 39; a design of this project,
sized like the 1 kg class of industrial Deltas, *assumed* throughout).

Three legs at 0, 120, 240 deg about the vertical axis, base at z = 0, platform below:

    A_k   actuated revolute on the base at radius ``base_radius`` (0.20 m), axis t_k (horizontal,
          tangent to the base circle)
    arm   A_k -> B_k, ``arm_length`` 0.35 m, aluminium tube ``arm_radius`` 14 mm x ``arm_wall``
          1.5 mm, ``elements`` beam elements (clamped at the shoulder), 0.15 kg elbow fitting at B_k
    forearm  B_k -> C_k, 0.80 m, rigid (two carbon rods and their cups, 0.18 kg), universal
          joints at both ends: at B_k about t_k (on the arm) and n_k (on the forearm), at C_k
          about n_k (on the forearm) and t_k (on the platform), n_k = t_k x (C_k - B_k) at home:
          the parallelogram of an industrial Delta as its kinematic equivalent (Tsai's 3-RUU),
          so the platform only translates
    platform  rigid, ``platform_mass`` 0.6 kg (0.4 kg plate and gripper, 0.2 kg payload),
          joints at radius 0.05 m, centre P the end effector ``x y z``

At home the arms point 25 deg below the horizontal (platform at z = -0.797 m).  The arms
carry the elastic modes: with the arms locked at their actuators the lowest modes are the
platform's horizontal translations on the arms' bending and twist (26.8 Hz twice at home,
22.8 and 26.7 Hz at (0.15, 0, -0.85) m), then its vertical translation (44.6 Hz), which a pick-and-place move
excites; the forearms' spins are held by their universal joints.  Gravity along -z.
"""
import numpy as np

from sim import ALUMINIUM, ModelBuilder, Section

ANGLES = np.radians([0.0, 120.0, 240.0])
FOREARM_LENGTH = 0.80            # m
PLATFORM_RADIUS = 0.05           # m
FOREARM_MASS = 0.18              # kg
ELBOW_MASS = 0.15                # kg
HOME_ANGLE = np.radians(25.0)    # arms below the horizontal at home


def _axes(z, x_hint):
    """Right-handed frame (columns) with z axis ``z`` and x axis as close as possible to ``x_hint``."""
    z = z / np.linalg.norm(z)
    x = x_hint - z * (z @ x_hint)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _rod_inertia(mass, p, q):
    """World inertia about the centre of a slender rod from p to q (a small axial share keeps it regular)."""
    e = (q - p) / np.linalg.norm(q - p)
    I_t = mass * np.sum((q - p) ** 2) / 12.0
    return I_t * (np.eye(3) - np.outer(e, e)) + 1e-3 * I_t * np.outer(e, e)


def build(elements=3, arm_radius=0.014, arm_wall=0.0015, arm_length=0.35, base_radius=0.20, platform_mass=0.6,
          gravity=9.81):
    """Delta pick-and-place robot at its home pose.

    Parameters
    ----------
    elements : int
        Beam elements per upper arm.
    arm_radius, arm_wall : float
        Outer radius and wall of the aluminium arm tubes [m].
    arm_length : float
        Shoulder-to-elbow length [m].
    base_radius : float
        Radius of the shoulder axes' circle [m].
    platform_mass : float
        Platform with gripper and payload [kg].
    gravity : float
        Along -z [m/s^2].
    """
    n = int(elements)
    if n != elements or n < 1:
        raise ValueError(f"`elements` must be a positive integer, got {elements!r}")
    arm = Section.tube(arm_radius, arm_wall, ALUMINIUM)
    up = np.array([0.0, 0.0, 1.0])
    reach = base_radius + arm_length * np.cos(HOME_ANGLE) - PLATFORM_RADIUS
    z_home = -arm_length * np.sin(HOME_ANGLE) - np.sqrt(FOREARM_LENGTH**2 - reach**2)
    centre = np.array([0.0, 0.0, z_home])
    b = ModelBuilder("delta_pick", gravity=(0.0, 0.0, -gravity))
    I_plate = platform_mass * PLATFORM_RADIUS**2 * np.diag([0.25, 0.25, 0.5])
    b.add_rigid_body("platform", platform_mass, centre, I_plate, position=centre, substructure="platform")
    b.add_marker("P", "platform", centre)
    for k, phi in enumerate(ANGLES):
        radial = np.array([np.cos(phi), np.sin(phi), 0.0])
        t = np.array([-np.sin(phi), np.cos(phi), 0.0])
        A = base_radius * radial
        B = A + arm_length * (np.cos(HOME_ANGLE) * radial - np.sin(HOME_ANGLE) * up)
        C = centre + PLATFORM_RADIUS * radial
        nodes = np.linspace(A, B, n + 1)
        b.add_beam_body(f"arm{k}", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), arm, z_ref=t,
                        clamp=0, substructure="arms")
        b.add_point_mass(f"arm{k}", ELBOW_MASS, node=n)
        b.add_rigid_body(f"forearm{k}", FOREARM_MASS, 0.5 * (B + C), _rod_inertia(FOREARM_MASS, B, C), position=B,
                         substructure="forearms")
        along = (C - B) / np.linalg.norm(C - B)
        normal = np.cross(t, along)
        shoulder, hinge_t, hinge_n = _axes(t, radial), _axes(t, along), _axes(normal, along)
        b.add_marker(f"A0{k}", None, A, shoulder)
        b.add_marker(f"A{k}", f"arm{k}", A, shoulder)
        b.add_joint(f"A{k}", "revolute", f"A0{k}", f"A{k}")
        b.add_actuator(f"theta{k}", f"A{k}")
        b.add_marker(f"B{k}a", f"arm{k}", B, hinge_t)
        b.add_marker(f"B{k}b", f"forearm{k}", B, hinge_n)
        b.add_joint(f"B{k}", "universal", f"B{k}a", f"B{k}b")
        b.add_marker(f"C{k}a", f"forearm{k}", C, hinge_n)
        b.add_marker(f"C{k}b", "platform", C, hinge_t)
        b.add_joint(f"C{k}", "universal", f"C{k}a", f"C{k}b")
    b.set_end_effector("P", ("x", "y", "z"))
    b.notes = "Delta pick-and-place robot with flexible upper arms (issue 39; assumed design)"
    return b.build()
