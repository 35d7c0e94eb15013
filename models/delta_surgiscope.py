r"""Delta-like Surgiscope: three R-(R-Pa-R) legs with compliant joints (paper 004, Rognant et al.).

Leg k (k = 1, 2, 3) in direction gamma_k about the vertical axis, base at z = 0, platform below:

    A_k  actuated revolute at radius R_b, axis u_k (horizontal, tangent to the base circle)
    arm  A_k -> B_k, length L_b = 0.75 m (paper §III-A), 3 beam elements (Table III(b))
    upper bar  along u_k, centred at B_k, half-width L_c = 0.125 m, 2 elements; joint 2 at
               B_k turns it about u_k (its own axis)
    parallelogram  two bars of L_p = 0.95 m from B_k +- L_c u_k to C_k +- L_c u_k, 3 elements
               each, hinged at both ends about h_k = u_k x d_k (d_k: bar direction)
    lower bar  along u_k, centred at C_k = P + R_n e_k, 2 elements; joint 5 at C_k turns the
               platform about u_k
    platform   rigid, 6.64 kg (paper §III-A), centre P in the wrist joints' plane, ``wrist_height``
               above the end effector E = (x, y, z)

The legs follow the paper's geometric table (Table III(a)): the short bars of the
parallelogram are two beams of length L_c each, so the parallelogram is 2 L_c = 0.25 m wide
and 0.95 m long (the "0.125 m x 0.95 m" of the data names L_c).

Joints (paper 004 §II-B-2 and §II-D): the paper replaces the kinematic relations between the
elastic coordinates of adjacent bodies by a joint stiffness matrix -- a penalty formulation.
Here, accordingly, every joint is a 6x6 lumped spring between coincident markers (marker z =
joint axis) with zero stiffness about the free axis and NO rigid constraint
(``joints = "compliant"``, the default).  Since the springs carry no constraint rows, the
configuration cannot be reached by the constraint-based inverse kinematics: the builder places
the robot at the end-effector position ``(x, y, z)`` itself (closed-form Delta inverse
kinematics, knee-out branch) and that placement is the home configuration, where every spring
is unloaded.  Use the model parameters ``x, y, z`` (not ``--pose``) to choose the
configuration.  ``joints = "rigid"`` gives ideal revolute joints with the brake as a compliant
actuator (``k_actuator``) instead: the rigid kinematics then works everywhere (``--pose``), but
the bearing and hinge compliances are absent.

Spring stiffness (marker-i axes: translations x y z, rotations x y z; z is the joint axis):

    base bearing A_k            diag(k_t, k_t, k_t, k_arm_bearing, k_arm_bearing, k_actuator)
    joints 2 and 5 (about u_k)  diag(k_t, k_t, k_t, k_knee_joint, k_knee_joint, 0)
    parallelogram hinges (h_k)  diag(k_t, k_t, k_t, k_parallelogram_joint, k_parallelogram_joint, 0)

with k_t = ``k_joint_translation``.  The paper identified its 21 joint stiffnesses from a
static test (its ref. [32]) but does not list them; every stiffness value below is *assumed*
(order of magnitude of preloaded ball bearings and a locked brake behind a belt reduction), to
be identified (``scenarios/delta_identify.toml``).

Sections (*assumed*; the paper's Table III(b) names them S_b, S_p, S_c, S_r without values):
arms aluminium tube 60 x 4 mm, parallelogram bars aluminium tube 25 x 2 mm, short bars steel
tube 30 x 3 mm ("ac" = acier in Table III(b)).  Aluminium E = 70 GPa, G = 26.3 GPa,
rho = 2700 kg/m^3; steel E = 210 GPa, G = 80.8 GPa, rho = 7850 kg/m^3.  Joint masses are not
modelled.

Geometry and inertia: source and effect (the symbols of Table III(a) without values are
*assumed*; the identified values are those of ``scenarios/delta_identify.toml``, configuration
1 alone, and ``delta_identify_both.toml``, both configurations):

    quantity                  default          source         identified (1 / both)   moves
    L_b, L_c, L_p, M_n        0.75, 0.125,     paper §III-A   --                      --
                              0.95 m, 6.64 kg
    base_radius R_b           0.30 m           assumed        -- / 0.276 m            vertical vs horizontal
    platform_radius R_n       0.10 m           assumed        0.151 / 0.182 m         vertical vs horizontal
    platform_disk_radius      0.15 m           assumed        --                      rotation about z (Rz)
    platform_height           0                assumed        0.33 / 0.54 m           platform rocking
    leg_angle gamma_1         90 deg           assumed        -- / 101.5 deg          configuration 2 only
    wrist_height              0                assumed        -- / 0.050 m            legs' angles, both

The platform's inertia is that of its 6.64 kg spread over a cylinder (``platform_disk_radius``,
``platform_height``).  The paper's platform is a three-spoke beam star; a flat platform of any
shape has half its inertia about z about the horizontal axes, and with it the platform-rocking
family lies above the rotation about z and the base-bearing tilt.  The measurements put it
below them (measured mode 3 falls from 31.2 to 26.1 Hz between the configurations, as only
the rocking family does): both fits find a height of 0.3-0.55 m, inertia about the horizontal
axes from what the platform carries below or above its plane (the wrist and instrument of
the Surgiscope).  R_b and R_n set the ratio of the vertical to the horizontal frequencies
(1.29 measured; 1.15 with the assumed radii), which no joint stiffness changes.
``leg_angle`` leaves the symmetric configuration 1 unchanged; ``wrist_height`` moves both
configurations, differently (their legs stand at other angles).  All are model parameters so
that they can be identified.

Measured configurations (paper 004 §III-C): (0, 0, -1.1) m and (0.19, -0.33, -0.9) m.
"""
import numpy as np

from sim import ModelBuilder, Section

ARM = 0.75            # L_b [m]
HALF_WIDTH = 0.125    # L_c [m]
BAR = 0.95            # L_p [m]
PLATFORM_MASS = 6.64  # M_n [kg]
PLATFORM_DISK_RADIUS = 0.15   # [m], the platform's inertia as a uniform disk's (assumed)
ALUMINIUM = dict(E=70e9, G=26.3e9, rho=2700.0)
STEEL = dict(E=210e9, G=80.8e9, rho=7850.0)
#: The two measured configurations of paper 004 §III-C (x, y, z) [m].
CONFIGURATIONS = {1: (0.0, 0.0, -1.1), 2: (0.19, -0.33, -0.9)}


def tube(outer_diameter, wall, material):
    """Thin-walled circular tube section (outer diameter and wall thickness in m)."""
    ro, ri = outer_diameter / 2, outer_diameter / 2 - wall
    area = np.pi * (ro**2 - ri**2)
    inertia = np.pi / 4 * (ro**4 - ri**4)
    return Section(A=area, Iy=inertia, Iz=inertia, J=2 * inertia, Ip=2 * inertia, **material)


def _frame(z, x_hint):
    """Right-handed axes (columns) with third axis ``z`` and first axis near ``x_hint``."""
    z = z / np.linalg.norm(z)
    x = x_hint - (x_hint @ z) * z
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def leg_points(k, position, base_radius, platform_radius, leg_angle=np.pi / 2):
    """Points A, B, C (each (3,)) and unit vectors e, u of leg ``k`` at platform centre ``position``.

    Raises
    ------
    ValueError
        The position is out of reach of the leg.
    """
    g = leg_angle + 2 * np.pi * k / 3
    e = np.array([np.cos(g), np.sin(g), 0.0])
    u = np.array([-np.sin(g), np.cos(g), 0.0])
    A = base_radius * e
    C = np.asarray(position, dtype=float) + platform_radius * e
    D = C - A
    de, dz = D @ e, D[2]
    # |D - L_b (cos t e - sin t z)| = L_p  <=>  de cos t - dz sin t = K
    K = (D @ D + ARM**2 - BAR**2) / (2 * ARM)
    R = np.hypot(de, dz)
    if not (R > 0 and abs(K) <= R):
        raise ValueError(f"leg {k + 1} cannot reach the platform position {np.round(position, 4).tolist()}")
    phi = np.arctan2(-dz, de)
    t = phi - np.arccos(K / R)    # knee-out branch: the arm leaves the base outwards and down
    B = A + ARM * (np.cos(t) * e - np.sin(t) * np.array([0.0, 0.0, 1.0]))
    return A, B, C, e, u


def build(x=0.0, y=0.0, z=-1.1, joints="compliant", k_actuator=2.0e4, k_arm_bearing=2.0e5,
          k_knee_joint=5.0e4, k_parallelogram_joint=2.0e4, k_joint_translation=1.0e8,
          base_radius=0.30, platform_radius=0.10, platform_mass=PLATFORM_MASS, platform_disk_radius=PLATFORM_DISK_RADIUS,
          platform_height=0.0, leg_angle=np.pi / 2, wrist_height=0.0, gravity=9.81):
    """Surgiscope model placed with its platform centre at ``(x, y, z)``.

    Parameters
    ----------
    x, y, z : float
        Platform centre [m]; the home configuration (springs unloaded there).
    joints : {"compliant", "rigid"}
        Joints as lumped springs without constraints (paper 004), or ideal revolutes with a
        compliant brake.
    k_actuator : float
        Torsional stiffness of the locked brake/drive about the arm axis [N m/rad].
    k_arm_bearing : float
        Tilting stiffness of the base bearing about the two axes normal to u_k [N m/rad].
    k_knee_joint : float
        Tilting stiffness of joints 2 and 5 (the short bars' own-axis pivots) [N m/rad].
    k_parallelogram_joint : float
        Tilting stiffness of the four parallelogram hinges [N m/rad].
    k_joint_translation : float
        Translational stiffness of every joint [N/m].
    base_radius : float
        R_b, radius of the arms' base bearings [m] (assumed).
    platform_radius : float
        R_n, radius of the wrist joints on the platform [m] (assumed).
    platform_mass : float
        M_n [kg] (paper 004).
    platform_disk_radius : float
        Radius of the uniform disk of the platform's mass that has its inertia [m] (assumed
        0.15 m; the radius of gyration about the vertical axis is 1/sqrt(2) of it).
    platform_height : float
        Height of the solid cylinder (radius ``platform_disk_radius``) the platform's mass is
        spread over, centred on P [m] (assumed 0: a disk).  A flat platform, a disk or a
        three-spoke star alike, has half the inertia about a horizontal axis as about the
        vertical one; what the platform carries (the microscope of the Surgiscope) adds
        inertia about the horizontal axes only, ``m h^2 / 12``: this moves the rocking
        modes and leaves the rotation about z.
    leg_angle : float
        gamma_1, the direction of leg 1 from the x axis about z [rad]; legs 2 and 3 follow at
        120 and 240 deg (assumed pi/2).  It places the legs relative to the measured
        configurations: it leaves the symmetric configuration 1 unchanged and moves
        configuration 2 (which lies at -60 deg from the x axis) relative to the legs.  Only
        its value modulo 120 deg matters, and configuration 2 lies (within 0.1 deg) on a
        vertical mirror plane of the leg set turned by -gamma: gamma and -gamma (30 and 90
        deg) give nearly the same frequencies.
    wrist_height : float
        Height of the wrist joints' plane (where the legs hold the platform, its centre P)
        above the point E whose coordinates ``x, y, z`` are given [m] (assumed 0).  The
        measured configurations are those of E, "the centre of the platform" (paper 004); the
        joints' axes lie some distance above or below it on a real platform, and the frame
        origin of the paper's coordinates need not be at the height of the arms' bearings.
        Either offset moves the legs' angles at both configurations, differently.
    gravity : float
        Along -z [m/s^2].
    """
    if joints not in ("compliant", "rigid"):
        raise ValueError(f"`joints` must be `compliant` or `rigid`, got {joints!r}")
    stiffness = dict(k_actuator=k_actuator, k_arm_bearing=k_arm_bearing, k_knee_joint=k_knee_joint,
                     k_parallelogram_joint=k_parallelogram_joint, k_joint_translation=k_joint_translation)
    for name, value in stiffness.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be > 0, got {value!r}")
    E = np.array([x, y, z], dtype=float)
    P = E + [0.0, 0.0, wrist_height]
    arm = tube(0.060, 0.004, ALUMINIUM)
    bar = tube(0.025, 0.002, ALUMINIUM)
    short = tube(0.030, 0.003, STEEL)
    b = ModelBuilder("delta_surgiscope", gravity=(0.0, 0.0, -gravity))
    kt = k_joint_translation

    def joint(name, body_i, body_j, point, axes, tilt, twist=0.0):
        mi = b.add_marker(f"{name}_i", body_i, point, axes)
        mj = b.add_marker(f"{name}_j", body_j, point, axes)
        if joints == "compliant":
            b.add_spring(name, mi, mj, np.diag([kt, kt, kt, tilt, tilt, twist]))
        else:
            b.add_joint(name, "revolute", mi, mj)
        return name

    if not (np.isfinite(platform_disk_radius) and platform_disk_radius > 0):
        raise ValueError(f"`platform_disk_radius` must be > 0, got {platform_disk_radius!r}")
    if not np.isfinite(wrist_height):
        raise ValueError(f"`wrist_height` must be a number, got {wrist_height!r}")
    if not (np.isfinite(platform_height) and platform_height >= 0):
        raise ValueError(f"`platform_height` must be >= 0, got {platform_height!r}")
    r2, h2 = platform_disk_radius**2, platform_height**2
    inertia = platform_mass * np.diag([r2 / 4 + h2 / 12, r2 / 4 + h2 / 12, r2 / 2])
    b.add_rigid_body("platform", platform_mass, P, inertia, position=P, substructure="platform")
    for k in range(3):
        A, B, C, e, u = leg_points(k, P, base_radius, platform_radius, leg_angle)
        d = (C - B) / np.linalg.norm(C - B)
        h = np.cross(u, d)
        h /= np.linalg.norm(h)
        s = f"{k + 1}"
        b.add_beam_body(f"arm_{s}", np.linspace(A, B, 4), [[0, 1], [1, 2], [2, 3]], arm, z_ref=u,
                        substructure="arms")
        b.add_beam_body(f"upper_{s}", [B - HALF_WIDTH * u, B, B + HALF_WIDTH * u], [[0, 1], [1, 2]], short,
                        z_ref=d, clamp=1, substructure="short bars")
        b.add_beam_body(f"lower_{s}", [C - HALF_WIDTH * u, C, C + HALF_WIDTH * u], [[0, 1], [1, 2]], short,
                        z_ref=d, clamp=1, substructure="short bars")
        for side, sign in (("a", 1.0), ("b", -1.0)):
            start, end = B + sign * HALF_WIDTH * u, C + sign * HALF_WIDTH * u
            b.add_beam_body(f"bar_{s}{side}", np.linspace(start, end, 4), [[0, 1], [1, 2], [2, 3]], bar,
                            z_ref=h, substructure="parallelogram bars")
            hinge = _frame(h, d)
            joint(f"hinge_top_{s}{side}", f"upper_{s}", f"bar_{s}{side}", start, hinge, k_parallelogram_joint)
            joint(f"hinge_bottom_{s}{side}", f"bar_{s}{side}", f"lower_{s}", end, hinge, k_parallelogram_joint)
        along_u = _frame(u, e)
        base = joint(f"base_{s}", None, f"arm_{s}", A, along_u, k_arm_bearing, k_actuator)
        joint(f"knee_{s}", f"arm_{s}", f"upper_{s}", B, along_u, k_knee_joint)
        joint(f"wrist_{s}", f"lower_{s}", "platform", C, along_u, k_knee_joint)
        if joints == "rigid":
            b.add_actuator(f"q{s}", base, stiffness=k_actuator)
    b.add_marker("E", "platform", E)
    b.set_end_effector("E", ("x", "y", "z"))
    b.notes = ("paper 004 (Rognant et al.) §III; joints as lumped springs (penalty, §II-D); "
               "sections, radii and stiffnesses assumed (see model docstring)")
    return b.build()
